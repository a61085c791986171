// The client against the reference server, server-everything, over stdio and
// over Streamable HTTP: the handshake, the annotated tool list, calls whose
// results carry text, images, structured content and resource links,
// progress, cancellation and timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "cairn/harness/tool.hpp"
#include "cairn/tools/mcp.hpp"
#include "mcp/mcp_test_support.hpp"

namespace cairn::mcp {
// Its own namespace: the test sources are compiled together (unity build).
namespace everything_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::text_of;

enum class Via { stdio, http };

const ServerTool* find_tool(const std::vector<ServerTool>& tools, const std::string& name) {
  for (const auto& tool : tools) {
    if (tool.name == name) return &tool;
  }
  return nullptr;
}

class McpEverything : public ::testing::TestWithParam<Via> {
 protected:
  static void TearDownTestSuite() { http_.reset(); }

  void SetUp() override {
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    ServerConfig config;
    if (GetParam() == Via::stdio) {
      config = test::stdio_server("everything", test::everything_js(), {"stdio"});
    } else {
      // One server process for the suite; every test a session of its own.
      if (!http_) http_ = std::make_unique<test::EverythingHttpServer>();
      ASSERT_TRUE(http_->running()) << "server-everything did not listen; its log: " << http_->log();
      config.name = "everything";
      config.transport = HttpTransport{http_->url(), {}};
    }
    client_ = Client::start(std::move(config));
    ASSERT_EQ(client_->wait_started(20s), ServerState::ready) << client_->state_message();
  }

  void TearDown() override { client_.reset(); }

  Result<Json> call(const std::string& name, const Json& args, std::chrono::milliseconds timeout = 10s) {
    return client_->call_tool(name, args, {}, {}, timeout);
  }

  static inline std::unique_ptr<test::EverythingHttpServer> http_;
  std::shared_ptr<Client> client_;
};

TEST_P(McpEverything, NegotiatesTheNewestVersionAndListsAnnotatedTools) {
  EXPECT_EQ(client_->protocol_version(), "2025-11-25");
  const auto tools = client_->tools();
  for (const char* name : {"echo", "get-sum", "get-tiny-image", "get-structured-content", "get-resource-links",
                           "trigger-long-running-operation", "toggle-simulated-logging"}) {
    EXPECT_NE(find_tool(tools, name), nullptr) << name;
  }

  const ServerTool* echo = find_tool(tools, "echo");
  ASSERT_NE(echo, nullptr);
  EXPECT_FALSE(echo->description.empty());
  EXPECT_EQ(echo->annotations.read_only, true);
  EXPECT_EQ(echo->annotations.destructive, false);
  EXPECT_EQ(echo->annotations.idempotent, true);
  EXPECT_EQ(echo->input_schema["type"], "object");
  EXPECT_TRUE(echo->input_schema["properties"].contains("message")) << echo->input_schema.dump();
  EXPECT_EQ(replay_from(echo->annotations), Replay::safe);
  EXPECT_EQ(approval_from(echo->annotations), ApprovalDecision::allow);

  const ServerTool* logging = find_tool(tools, "toggle-simulated-logging");
  ASSERT_NE(logging, nullptr);
  EXPECT_EQ(logging->annotations.read_only, false);
  EXPECT_EQ(logging->annotations.idempotent, false);
  EXPECT_EQ(replay_from(logging->annotations), Replay::never);
  EXPECT_EQ(approval_from(logging->annotations), ApprovalDecision::ask);
}

TEST_P(McpEverything, EveryInputSchemaCompiles) {
  const auto tools = client_->tools();
  ASSERT_FALSE(tools.empty());
  bool saw_draft7 = false;
  for (const auto& tool : tools) {
    saw_draft7 = saw_draft7 || tool.input_schema.contains("$schema");
    auto compiled = ArgumentValidator::compile(tool.input_schema);
    ASSERT_TRUE(compiled) << tool.name << ": " << compiled.error().message << "\n" << tool.input_schema.dump();
  }
  // The draft-07 `$schema` of the server's schemas is what this test is about.
  EXPECT_TRUE(saw_draft7);
  // And a compiled schema still checks: get-sum wants numbers.
  auto sum = ArgumentValidator::compile(find_tool(tools, "get-sum")->input_schema);
  ASSERT_TRUE(sum);
  EXPECT_TRUE(sum->validate(Json{{"a", 1}, {"b", 2}}));
  EXPECT_FALSE(sum->validate(Json{{"a", "one"}, {"b", 2}}));
}

TEST_P(McpEverything, CallsAnswerWithTextImagesStructuredContentAndLinks) {
  auto echo = call("echo", Json{{"message", "hello from cairn"}});
  ASSERT_TRUE(echo) << echo.error().message;
  EXPECT_NE(text_of(*echo).find("hello from cairn"), std::string::npos) << echo->dump();
  EXPECT_FALSE(to_tool_result(*echo).is_error);

  auto sum = call("get-sum", Json{{"a", 19}, {"b", 23}});
  ASSERT_TRUE(sum) << sum.error().message;
  EXPECT_NE(text_of(*sum).find("42"), std::string::npos) << sum->dump();

  auto image = call("get-tiny-image", Json::object());
  ASSERT_TRUE(image) << image.error().message;
  ToolResult shown = to_tool_result(*image);
  const ImageContent* png = nullptr;
  for (const auto& block : shown.content) {
    if (const auto* found = std::get_if<ImageContent>(&block)) png = found;
  }
  ASSERT_NE(png, nullptr) << image->dump().substr(0, 500);
  EXPECT_EQ(png->mime_type, "image/png");
  // The server's base64 data, untouched.
  std::string data;
  for (const Json& block : (*image)["content"]) {
    if (block["type"] == "image") data = block["data"].get<std::string>();
  }
  EXPECT_FALSE(data.empty());
  EXPECT_EQ(png->data, data);

  auto weather = call("get-structured-content", Json{{"location", "Chicago"}});
  ASSERT_TRUE(weather) << weather.error().message;
  ASSERT_TRUE(weather->contains("structuredContent")) << weather->dump();
  ToolResult structured = to_tool_result(*weather);
  ASSERT_TRUE(structured.details.has_value());
  EXPECT_EQ((*structured.details)["structuredContent"], (*weather)["structuredContent"]);
  EXPECT_TRUE((*structured.details)["structuredContent"].contains("temperature"));

  auto links = call("get-resource-links", Json{{"count", 2}});
  ASSERT_TRUE(links) << links.error().message;
  int link_blocks = 0;
  std::string first_uri;
  for (const Json& block : (*links)["content"]) {
    if (block["type"] == "resource_link") {
      ++link_blocks;
      if (first_uri.empty()) first_uri = block["uri"].get<std::string>();
    }
  }
  EXPECT_EQ(link_blocks, 2) << links->dump();
  const std::string described = text_of(to_tool_result(*links));
  EXPECT_NE(described.find("[resource link:"), std::string::npos) << described;
  EXPECT_NE(described.find(first_uri), std::string::npos) << described;
}

TEST_P(McpEverything, AnUnknownToolIsAnError) {
  auto answer = call("no-such-tool", Json::object());
  // Either a JSON-RPC error or a result with isError: never a success.
  if (answer) {
    EXPECT_TRUE(to_tool_result(*answer).is_error) << answer->dump();
  } else {
    EXPECT_EQ(answer.error().code, to_string(Errc::server_error));
    EXPECT_NE(answer.error().message.find("everything"), std::string::npos) << answer.error().message;
  }
}

TEST_P(McpEverything, ALongOperationReportsProgress) {
  std::mutex mu;
  std::vector<CallProgress> steps;
  auto answer = client_->call_tool(
      "trigger-long-running-operation", Json{{"duration", 0.3}, {"steps", 3}},
      [&](const CallProgress& step) {
        std::lock_guard lock(mu);
        steps.push_back(step);
      },
      {}, 10s);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_NE(text_of(*answer).find("Steps: 3"), std::string::npos) << answer->dump();
  std::lock_guard lock(mu);
  ASSERT_EQ(steps.size(), 3u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].progress, static_cast<double>(i + 1));
    EXPECT_EQ(steps[i].total, 3.0);
  }
}

TEST_P(McpEverything, ACancelledCallReturnsPromptly) {
  std::stop_source stop;
  std::atomic<int> progressed{0};
  auto pending = std::async(std::launch::async, [&] {
    auto answer = client_->call_tool(
        "trigger-long-running-operation", Json{{"duration", 20}, {"steps", 100}},
        [&](const CallProgress&) { ++progressed; }, stop.get_token(), 30s);
    return std::make_pair(std::move(answer), Clock::now());
  });
  // Under way: the server has reported a step.
  ASSERT_TRUE(test::wait_until([&] { return progressed.load() > 0; }, 10s));
  const auto requested = Clock::now();
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(5s), std::future_status::ready);
  auto [answer, returned] = pending.get();
  EXPECT_LT(returned - requested, 50ms);
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::cancelled)) << answer.error().message;
  // The connection lives on.
  auto echo = call("echo", Json{{"message", "still here"}});
  ASSERT_TRUE(echo) << echo.error().message;
  EXPECT_NE(text_of(*echo).find("still here"), std::string::npos);
}

TEST_P(McpEverything, ACancelledCallDoesNotReturnWhileItsProgressCallbackRuns) {
  // The callback uses what the caller holds on its stack: the call must not
  // return (and the caller's frame go) while it runs.
  std::stop_source stop;
  std::atomic<bool> inside{false};
  std::atomic<bool> finished{false};
  std::thread stopper([&] {
    test::wait_until([&] { return inside.load(); }, 10s);
    stop.request_stop();
  });
  auto answer = client_->call_tool(
      "trigger-long-running-operation", Json{{"duration", 20}, {"steps", 100}},
      [&](const CallProgress&) {
        if (inside.exchange(true)) return;
        // A slow observer: the stop request comes meanwhile.
        std::this_thread::sleep_for(300ms);
        finished = true;
      },
      stop.get_token(), 30s);
  const bool finished_at_return = finished.load();
  stopper.join();
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::cancelled));
  EXPECT_TRUE(finished_at_return);
}

TEST_P(McpEverything, ACallPastItsTimeoutTimesOut) {
  const auto started = Clock::now();
  auto answer = client_->call_tool("trigger-long-running-operation", Json{{"duration", 20}, {"steps", 2}}, {}, {}, 300ms);
  const auto took = Clock::now() - started;
  ASSERT_FALSE(answer);
  EXPECT_EQ(answer.error().code, to_string(Errc::timed_out)) << answer.error().message;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_EQ(client_->state(), ServerState::ready);
  EXPECT_TRUE(client_->ping());
}

INSTANTIATE_TEST_SUITE_P(McpTransports, McpEverything, ::testing::Values(Via::stdio, Via::http),
                         [](const ::testing::TestParamInfo<Via>& info) {
                           return info.param == Via::stdio ? "stdio" : "http";
                         });

}  // namespace
}  // namespace everything_test
}  // namespace cairn::mcp
