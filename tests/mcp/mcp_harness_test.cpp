// MCP tools in a harness run, against our misbehaving server: an abort
// during a long call tells the server (notifications/cancelled) and the run
// ends at once; a call past the configured timeout gets an error result; progress becomes tool updates; a tool list that changes
// during a run is taken up at the next step; a server that exits mid-call
// gives that call an error result and the run goes on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cairn/tools/mcp.hpp"
#include "harness/harness_support.hpp"
#include "support/test_support.hpp"

namespace cairn::mcp_harness_testing {

using namespace std::chrono_literals;
using testing::HarnessTest;

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int lines_starting(const std::string& text, const std::string& prefix) {
  int count = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) count += line.starts_with(prefix) ? 1 : 0;
  return count;
}

class McpHarnessTest : public HarnessTest {
 protected:
  McpHarnessTest() : marker_(dir_.path() / "marker") {
    mcp::ServerConfig config;
    config.name = "bad";
    config.transport = mcp::StdioTransport{.command = "node",
                                           .args = {std::string(CAIRN_MCP_DIR) + "/misbehaving-server.mjs"},
                                           .env = {{"MARKER", marker_.string()}}};
    config.timeout = 1500ms;  // the longest one call may take
    mcp::ClientOptions options;
    options.max_backoff = 200ms;
    options.on_tools_changed = [this] {
      std::lock_guard lock(mu_);
      if (!harness_ready_) return;
      (void)harness_->set_tools(all_tools());
      ++tools_changes_;
    };
    client_ = mcp::Client::start(std::move(config), std::move(options));
  }

  ~McpHarnessTest() override {
    {
      std::lock_guard lock(mu_);
      harness_ready_ = false;
    }
    client_.reset();  // before the harness: its callback reaches the harness
  }

  std::vector<Tool> all_tools() const {
    auto tools = testing::test_tools(effects_);
    for (auto& made : mcp::make_tools({client_})) tools.push_back(std::move(made.tool));
    return tools;
  }

  AgentHarness& start() {
    EXPECT_EQ(client_->wait_started(20s), mcp::ServerState::ready) << client_->state_message();
    auto options = this->options();
    options.tools = all_tools();
    auto created = AgentHarness::create(std::move(options));
    EXPECT_TRUE(created) << created.error().message;
    std::lock_guard lock(mu_);
    harness_.emplace(std::move(created->harness));
    listener_ = harness_->on_event([this](const Event& e) { events_.add(e); });
    harness_ready_ = true;
    return *harness_;
  }

  // Waits until the marker file has a line starting with `prefix`.
  bool marked(const std::string& prefix, int times = 1, std::chrono::milliseconds limit = 20s) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (lines_starting(file_text(marker_), prefix) < times) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(2ms);
    }
    return true;
  }

  std::string result_text(const std::string& call_id) {
    const auto results = testing::results_for(records(), call_id);
    if (results.size() != 1) return fmt::format("<{} results>", results.size());
    std::string text;
    for (const auto& block : results[0].content) {
      if (const auto* t = std::get_if<TextContent>(&block)) text += t->text;
    }
    return text;
  }

  testing::TempDir dir_;
  std::filesystem::path marker_;
  std::shared_ptr<mcp::Client> client_;
  std::mutex mu_;
  bool harness_ready_ = false;
  std::atomic<int> tools_changes_{0};  // tool lists the harness took from the client
};

TEST_F(McpHarnessTest, AnAbortDuringALongCallTellsTheServerAndTheRunEndsWithinFiftyMilliseconds) {
  auto& harness = start();
  faux_->push(FauxResponse::tool_call("long", "mcp__bad__slow_never", Json{{"ms", 60000}}));
  RunResult result;
  std::thread run([&] { result = harness.main().prompt("wait"); });
  ASSERT_TRUE(marked("called slow_never"));
  const auto aborted_at = std::chrono::steady_clock::now();
  const auto aborted = harness.main().abort();
  run.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - aborted_at);
  EXPECT_TRUE(aborted.ok());
  EXPECT_EQ(result.outcome, Outcome::aborted);
  EXPECT_LT(took.count(), 50) << "the run ended " << took.count() << " ms after the abort";
  RecordProperty("run_ended_ms_after_abort", static_cast<int>(took.count()));
  EXPECT_TRUE(marked("cancelled ")) << file_text(marker_);  // notifications/cancelled reached the server
  EXPECT_NE(result_text("long").find("cancelled"), std::string::npos) << result_text("long");
}

TEST_F(McpHarnessTest, ACallPastItsTimeoutGetsAnErrorResultAndTheServerIsTold) {
  auto& harness = start();
  faux_->push(FauxResponse::tool_call("h", "mcp__bad__hang", Json::object()));
  faux_->push(FauxResponse::text("done"));
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(harness.main().prompt("go").ok());
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, 1500ms);
  EXPECT_LT(took, 10s);
  const auto results = testing::results_for(records(), "h");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].is_error);
  EXPECT_NE(result_text("h").find("'bad'"), std::string::npos) << result_text("h");
  EXPECT_TRUE(marked("cancelled ")) << file_text(marker_);
}

TEST_F(McpHarnessTest, ProgressNotificationsBecomeToolUpdates) {
  auto& harness = start();
  faux_->push(FauxResponse::tool_call("p", "mcp__bad__progress", Json{{"steps", 3}}));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  std::vector<std::string> updates;
  for (const auto& event : events_.all()) {
    if (event.type == EventType::tool_update) updates.push_back(event.data.dump());
  }
  ASSERT_EQ(updates.size(), 3u);
  EXPECT_NE(updates[2].find("progress 3/3: step 3"), std::string::npos) << updates[2];
  EXPECT_EQ(result_text("p"), "3 steps");
}

TEST_F(McpHarnessTest, AToolListThatChangesDuringARunIsTakenUpAtTheNextStep) {
  auto& harness = start();
  faux_->push(FauxResponse::tool_call("c", "mcp__bad__change_tools", Json::object()));
  faux_->push(FauxResponse::tool_call("a", "mcp__bad__added", Json::object()));
  faux_->push(FauxResponse::text("done"));
  // The new tool is there once the client has listed it again.
  std::thread run([&] { EXPECT_TRUE(harness.main().prompt("go").ok()); });
  run.join();
  EXPECT_EQ(result_text("c"), "changed");
  // The second step may have begun before the relist; whichever it met, the
  // call has exactly one result, and once relisted the tool answers.
  const std::string added = result_text("a");
  EXPECT_TRUE(added == "added answers" || added.starts_with("Tool mcp__bad__added not found")) << added;
  // The relist runs on the client's thread after the server's
  // notification: the next prompt waits until it has reached the harness.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (tools_changes_.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  ASSERT_GT(tools_changes_.load(), 0) << "the server's tool list change never reached the harness";
  faux_->push(FauxResponse::tool_call("a2", "mcp__bad__added", Json::object()));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness.main().prompt("again").ok());
  EXPECT_EQ(result_text("a2"), "added answers");
}

TEST_F(McpHarnessTest, AServerThatExitsMidCallGivesAnErrorResultAndIsStartedAgain) {
  auto& harness = start();
  faux_->push(FauxResponse::tool_call("x", "mcp__bad__exit", Json::object()));
  faux_->push(FauxResponse::tool_call("e", "mcp__bad__slow_safe", Json{{"ms", 0}}));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  const auto results = testing::results_for(records(), "x");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].is_error);
  EXPECT_NE(result_text("x").find("'bad'"), std::string::npos) << result_text("x");  // names the server
  // Restarted with backoff: the next call reached a new process (or, if it
  // came first, says the server is restarting).
  EXPECT_TRUE(marked("started", 2)) << file_text(marker_);
  faux_->push(FauxResponse::tool_call("after", "mcp__bad__slow_safe", Json{{"ms", 0}}));
  faux_->push(FauxResponse::text("done"));
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (client_->state() != mcp::ServerState::ready && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(client_->state(), mcp::ServerState::ready) << client_->state_message();
  ASSERT_TRUE(harness.main().prompt("again").ok());
  EXPECT_EQ(result_text("after"), "slow_safe done");
}

}  // namespace cairn::mcp_harness_testing
