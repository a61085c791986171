// The harness over the real wire: for each API kind, a run with tools goes
// through several steps against the local server, a 429 is retried with its
// attempts in the log, and the API key — sent on every request — appears in
// no record, no event and no error, even when the server echoes it back.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cairn/harness/harness.hpp"
#include "cairn/llm/wire_providers.hpp"
#include "cairn/store/store.hpp"
#include "llm/provider_test_support.hpp"
#include "support/http_test_server.hpp"

namespace cairn::testing {
namespace {

constexpr const char* kWireKey = "sk-cairn-wire-7f3a9c1d5e";

struct WireCase {
  std::string api;
  std::string tool_stream;  // a response with get_weather and get_time calls
  std::string text_stream;  // a final answer
  std::string key_header;   // where the key travels
};

std::string case_name(const ::testing::TestParamInfo<WireCase>& info) {
  std::string name = info.param.api;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

ScriptedResponse json_error(int status, std::string reason, std::string body,
                            std::vector<std::pair<std::string, std::string>> headers = {}) {
  ScriptedResponse response;
  response.status = status;
  response.reason = std::move(reason);
  response.headers = std::move(headers);
  response.headers.emplace_back("Content-Type", "application/json");
  response.body = {{.bytes = std::move(body)}};
  response.framing = ScriptedResponse::Framing::content_length;
  return response;
}

Tool tool(std::string name, Json parameters) {
  return Tool{.name = name,
              .description = "test tool " + name,
              .parameters = std::move(parameters),
              .replay = Replay::safe,
              .parallel = true,
              .execute = [name](const Json& args, const ToolContext&) {
                return ToolResult::text(name + " of " + args.dump());
              }};
}

class WireHarnessTest : public ::testing::TestWithParam<WireCase> {};

TEST_P(WireHarnessTest, AToolRunThroughTheWireRetriesA429AndNeverShowsTheKey) {
  const WireCase& wire = GetParam();
  HttpTestServer server({
      json_error(429, "Too Many Requests", R"({"error":{"type":"rate_limit_error","message":"slow down"}})",
                 {{"Retry-After", "0"}}),
      sse_script(wire.tool_stream),
      sse_script(wire.text_stream),
      // The next run: a server that echoes the key it was given, as OpenAI's
      // "Incorrect API key provided: sk-…" does.
      json_error(401, "Unauthorized",
                 std::string(R"({"error":{"type":"authentication_error","message":"Incorrect API key provided: )") +
                     kWireKey + R"("}})"),
  });

  auto store = open_store("memory:");
  ASSERT_TRUE(store);
  auto session = (*store)->create(CreateOptions{});
  ASSERT_TRUE(session);
  Model model{.provider = "wire", .id = "test-model", .api = wire.api, .context_window = 200000, .max_tokens = 4096};
  model.base_url = server.url("/v1");
  auto provider = make_wire_provider(wire.api, kWireKey);
  ASSERT_TRUE(provider);
  HarnessOptions options;
  options.session = *session;
  options.models.add(model, provider);
  options.model = model;
  options.tools = {tool("get_weather", Json::parse(R"({"type":"object","properties":{"location":{"type":"string"}}})")),
                   tool("get_time", Json::parse(R"({"type":"object"})"))};
  options.retry = RetryPolicy{.max_attempts = 3, .base_delay = std::chrono::milliseconds(1),
                              .max_delay = std::chrono::milliseconds(5)};
  auto created = AgentHarness::create(std::move(options));
  ASSERT_TRUE(created) << created.error().message;
  AgentHarness& harness = created->harness;
  std::vector<std::string> events;
  auto listening = harness.on_event([&](const Event& e) { events.push_back(encode(e).dump()); });

  RunResult result = harness.main().prompt("What is the weather and the time?");
  ASSERT_TRUE(result.ok()) << result.error->message;
  ASSERT_TRUE(result.final_message);

  // The records: the 429'd attempt and its retry, both durable; two tool
  // calls executed; a second step answered.
  std::vector<std::int64_t> attempts;
  int tools_started = 0, tool_results = 0;
  auto log = (*session)->get_log();
  ASSERT_TRUE(log);
  for (const LogLine& line : *log) {
    auto record = (*session)->get_record(line.seq);
    ASSERT_TRUE(record && *record);
    if (const auto* h = std::get_if<HarnessRecord>(&(*record)->body)) {
      if (const auto* g = std::get_if<GenerationStarted>(&h->body)) attempts.push_back(g->attempt);
      if (std::holds_alternative<ToolStarted>(h->body)) ++tools_started;
    } else if (const auto* t = std::get_if<TreeEntry>(&(*record)->body)) {
      if (const auto* m = std::get_if<MessageBody>(&t->body); m && std::holds_alternative<ToolResultMessage>(m->message)) {
        EXPECT_FALSE(std::get<ToolResultMessage>(m->message).is_error) << line.json;
        ++tool_results;
      }
    }
  }
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{1, 2, 1}));
  EXPECT_EQ(tools_started, 2);
  EXPECT_EQ(tool_results, 2);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& request : requests) {
    const auto sent = request.header(wire.key_header);
    ASSERT_TRUE(sent) << wire.key_header;
    EXPECT_NE(sent->find(kWireKey), std::string::npos);  // the key is used…
  }
  EXPECT_NE(requests[2].body.find("get_weather of"), std::string::npos);  // the results went back

  // A failure whose body holds the key.
  RunResult failed = harness.main().prompt("again");
  ASSERT_FALSE(failed.ok());
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->message.find(kWireKey), std::string::npos) << failed.error->message;

  // …and shown nowhere.
  auto all = (*session)->get_log();
  ASSERT_TRUE(all);
  for (const LogLine& line : *all) EXPECT_EQ(line.json.find(kWireKey), std::string::npos) << line.json;
  for (const std::string& event : events) EXPECT_EQ(event.find(kWireKey), std::string::npos) << event;
  EXPECT_GT(events.size(), 10u);
}

INSTANTIATE_TEST_SUITE_P(
    Apis, WireHarnessTest,
    ::testing::Values(WireCase{"openai-completions", "openai-completions/parallel_tool_calls.sse",
                               "openai-completions/text.sse", "authorization"},
                      WireCase{"openai-responses", "openai-responses/function_calls.sse", "openai-responses/text.sse",
                               "authorization"},
                      WireCase{"anthropic-messages", "anthropic-messages/tool_use.sse", "anthropic-messages/text.sse",
                               "x-api-key"}),
    case_name);

}  // namespace
}  // namespace cairn::testing
