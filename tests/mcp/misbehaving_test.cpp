// The client against a server that misbehaves on request
// (misbehaving-server.mjs): garbage on its output, a huge answer, a call
// that never ends, a process that exits mid-call, a changing tool list,
// progress, failures and cancellation.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "cairn/tools/mcp.hpp"
#include "mcp/mcp_test_support.hpp"
#include "support/test_support.hpp"

namespace cairn::mcp {
// Its own namespace: the test sources are compiled together (unity build).
namespace misbehaving_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::text_of;

bool has_tool(const std::vector<ServerTool>& tools, const std::string& name) {
  for (const auto& tool : tools) {
    if (tool.name == name) return true;
  }
  return false;
}

class McpMisbehaving : public ::testing::Test {
 protected:
  // Starts the server as "mis", MARKER set, its stderr (and our notes of its
  // garbage) in log_.
  void start(std::map<std::string, std::string> env = {}) {
    env["MARKER"] = marker_.string();
    ClientOptions options;
    options.stderr_log = log_;
    options.request_timeout = 10s;
    options.on_tools_changed = [this] { ++tools_changed_; };
    client_ = Client::start(test::stdio_server("mis", test::misbehaving_js(), {}, std::move(env)), std::move(options));
    ASSERT_EQ(client_->wait_started(15s), ServerState::ready) << client_->state_message();
  }

  Result<Json> call(const std::string& name, const Json& args = Json::object(), std::chrono::milliseconds timeout = 10s,
                    std::stop_token cancel = {}) {
    return client_->call_tool(name, args, {}, std::move(cancel), timeout);
  }

  std::vector<std::string> marks(const std::string& prefix) const { return test::lines_starting(marker_, prefix); }

  // The request id the server saw for the (only) call of `tool`.
  std::string call_id(const std::string& tool) const {
    auto called = marks("called " + tool + " ");
    return called.empty() ? std::string() : called.back().substr(("called " + tool + " ").size());
  }

  testing::TempDir dir_;
  std::filesystem::path marker_ = dir_.path() / "marker";
  std::filesystem::path log_ = dir_.path() / "server.log";
  std::atomic<int> tools_changed_{0};
  std::shared_ptr<Client> client_;
};

TEST_F(McpMisbehaving, GarbageLinesAreIgnoredAndTheCallStillAnswers) {
  start();
  auto answer = call("garbage");
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(text_of(*answer), "after garbage");
  EXPECT_EQ(client_->state(), ServerState::ready);
  // The client goes on as before.
  auto next = call("slow_safe", Json{{"ms", 1}});
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(text_of(*next), "slow_safe done");
  // What was ignored is noted in the server's log.
  const std::string log = test::read_text(log_);
  EXPECT_NE(log.find("cairn: ignored a line that is not JSON-RPC: this is not json"), std::string::npos) << log;
  EXPECT_EQ(marks("started ").size(), 1u);
}

TEST_F(McpMisbehaving, GarbageBeforeTheHandshakeStillStarts) {
  start({{"GARBAGE_AT_START", "1"}});
  EXPECT_EQ(client_->state(), ServerState::ready);
  EXPECT_TRUE(has_tool(client_->tools(), "slow_never"));
  EXPECT_NE(test::read_text(log_).find("garbage before the handshake"), std::string::npos);
  auto answer = call("fail");
  ASSERT_TRUE(answer) << answer.error().message;
}

TEST_F(McpMisbehaving, ATenMegabyteAnswerArrivesWholeAndIsCutForTheModel) {
  start();
  // Parsing 10 MB takes a second in a release build, ten under TSan (the
  // test binary's unoptimised nlohmann instantiations serve the library
  // too): the time limit is not what this test is about.
  auto answer = call("big", Json{{"mb", 10}}, 60s);
  ASSERT_TRUE(answer) << answer.error().message;
  const std::string text = text_of(*answer);
  EXPECT_EQ(text.size(), std::size_t{10} << 20);
  EXPECT_EQ(text.find_first_not_of('x'), std::string::npos);

  ToolResult shown = to_tool_result(*answer);
  const std::string shown_text = text_of(shown);
  EXPECT_LT(shown_text.size(), std::size_t{51} << 10);
  EXPECT_TRUE(shown_text.starts_with(std::string(1000, 'x')));
  EXPECT_NE(shown_text.find("[The result was cut at 50 KB of its 10240 KB of text.]"), std::string::npos)
      << shown_text.substr(shown_text.size() - 200);
  EXPECT_FALSE(shown.is_error);
}

TEST_F(McpMisbehaving, AHangingCallTimesOutAndTheServerIsTold) {
  start();
  const auto started = Clock::now();
  auto answer = call("hang", Json::object(), 300ms);
  const auto took = Clock::now() - started;
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::timed_out)) << answer.error().message;
  EXPECT_NE(answer.error().message.find("'mis'"), std::string::npos) << answer.error().message;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 1s);
  const std::string id = call_id("hang");
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(test::wait_until([&] { return !marks("cancelled " + id).empty(); }, 3s));
  EXPECT_EQ(client_->state(), ServerState::ready);
}

TEST_F(McpMisbehaving, ACancelReturnsAtOnceAndTellsTheServer) {
  start();
  std::stop_source stop;
  auto pending = std::async(std::launch::async, [&] {
    auto answer = call("slow_never", Json{{"ms", 60000}}, 30s, stop.get_token());
    return std::make_pair(std::move(answer), Clock::now());
  });
  ASSERT_TRUE(test::wait_until([&] { return !call_id("slow_never").empty(); }));
  const auto requested = Clock::now();
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(5s), std::future_status::ready);
  auto [answer, returned] = pending.get();
  EXPECT_LT(returned - requested, 50ms);
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::cancelled)) << answer.error().message;
  const std::string id = call_id("slow_never");
  EXPECT_TRUE(test::wait_until([&] { return !marks("cancelled " + id).empty(); }, 3s))
      << test::read_text(marker_);
}

TEST_F(McpMisbehaving, AStopRequestedBeforeTheCallCancelsIt) {
  start();
  std::stop_source stop;
  stop.request_stop();
  const auto started = Clock::now();
  auto answer = call("slow_never", Json{{"ms", 60000}}, 30s, stop.get_token());
  EXPECT_LT(Clock::now() - started, 500ms);
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::cancelled));
}

TEST_F(McpMisbehaving, AnExitMidCallFailsTheCallNamingTheServerAndTheServerRestarts) {
  start();
  const auto first_pid = marks("started ");
  ASSERT_EQ(first_pid.size(), 1u);
  const auto started = Clock::now();
  auto answer = call("exit", Json::object(), 20s);
  EXPECT_LT(Clock::now() - started, 2s);
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::server_unavailable)) << answer.error().message;
  EXPECT_NE(answer.error().message.find("'mis'"), std::string::npos) << answer.error().message;
  EXPECT_NE(answer.error().message.find("exited with status 3"), std::string::npos) << answer.error().message;

  // Started again (a second process), and ready.
  ASSERT_TRUE(test::wait_until(
      [&] { return marks("started ").size() == 2 && client_->state() == ServerState::ready; }, 10s))
      << test::read_text(marker_) << " state " << to_string(client_->state());
  EXPECT_NE(marks("started ")[1], first_pid[0]);
  // A restarted server may have other tools: the client says so.
  EXPECT_TRUE(test::wait_until([&] { return tools_changed_.load() >= 1; }, 3s));
  auto again = call("slow_safe", Json{{"ms", 1}});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(text_of(*again), "slow_safe done");
}

TEST_F(McpMisbehaving, AChangedToolListIsListedAgainAndAnnounced) {
  start();
  EXPECT_FALSE(has_tool(client_->tools(), "added"));
  auto answer = call("change_tools");
  ASSERT_TRUE(answer) << answer.error().message;
  ASSERT_TRUE(test::wait_until([&] { return tools_changed_.load() >= 1 && has_tool(client_->tools(), "added"); }, 5s));
  auto added = call("added");
  ASSERT_TRUE(added) << added.error().message;
  EXPECT_EQ(text_of(*added), "added answers");
}

TEST_F(McpMisbehaving, ProgressReachesTheCallback) {
  start();
  std::mutex mu;
  std::vector<CallProgress> steps;
  auto answer = client_->call_tool(
      "progress", Json{{"steps", 4}},
      [&](const CallProgress& step) {
        std::lock_guard lock(mu);
        steps.push_back(step);
      },
      {}, 10s);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(text_of(*answer), "4 steps");
  std::lock_guard lock(mu);
  ASSERT_EQ(steps.size(), 4u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].progress, static_cast<double>(i + 1));
    EXPECT_EQ(steps[i].total, 4.0);
    EXPECT_EQ(steps[i].message, fmt::format("step {}", i + 1));
  }
}

TEST_F(McpMisbehaving, AFailureIsAnErrorResult) {
  start();
  auto answer = call("fail");
  ASSERT_TRUE(answer) << answer.error().message;
  ToolResult shown = to_tool_result(*answer);
  EXPECT_TRUE(shown.is_error);
  EXPECT_EQ(text_of(shown), "it failed");
  // A JSON-RPC error is the call's error, naming the server.
  auto unknown = call("nonexistent");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, to_string(Errc::server_error));
  EXPECT_NE(unknown.error().message.find("'mis'"), std::string::npos) << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("Unknown tool: nonexistent"), std::string::npos) << unknown.error().message;
}

TEST_F(McpMisbehaving, CallsAtOnceEachGetTheirOwnAnswer) {
  start();
  std::vector<std::future<Result<Json>>> calls;
  for (int ms : {200, 10, 100, 1}) {
    calls.push_back(std::async(std::launch::async, [this, ms] { return call("slow_safe", Json{{"ms", ms}}); }));
  }
  calls.push_back(std::async(std::launch::async, [this] { return call("progress", Json{{"steps", 2}}); }));
  for (std::size_t i = 0; i + 1 < calls.size(); ++i) {
    auto answer = calls[i].get();
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_EQ(text_of(*answer), "slow_safe done");
  }
  auto last = calls.back().get();
  ASSERT_TRUE(last);
  EXPECT_EQ(text_of(*last), "2 steps");
}

TEST_F(McpMisbehaving, DestroyingTheClientEndsTheServer) {
  start();
  const auto started = marks("started ");
  ASSERT_EQ(started.size(), 1u);
  const pid_t pid = std::stoi(started[0].substr(8));
  ASSERT_EQ(::kill(pid, 0), 0);
  client_.reset();
  // Gone (or a zombie of init's, which kill(0) still finds: then not for long).
  EXPECT_TRUE(test::wait_until([&] { return ::kill(pid, 0) != 0 && errno == ESRCH; }, 5s));
}

TEST_F(McpMisbehaving, AProgramThatCannotRunFailsToStartNamingIt) {
  ServerConfig config;
  config.name = "ghost";
  config.transport = StdioTransport{.command = "cairn-no-such-program-4711"};
  client_ = Client::start(std::move(config));
  ASSERT_EQ(client_->wait_started(5s), ServerState::failed);
  EXPECT_NE(client_->state_message().find("cairn-no-such-program-4711"), std::string::npos)
      << client_->state_message();
  auto answer = call("anything");
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::server_unavailable));
  EXPECT_NE(answer.error().message.find("'ghost'"), std::string::npos) << answer.error().message;
  EXPECT_FALSE(client_->ping());
}

}  // namespace
}  // namespace misbehaving_test
}  // namespace cairn::mcp
