// The anthropic-messages provider against a local server replaying streams
// written from Anthropic's streaming documentation
// (tests/fixtures/sse/anthropic-messages/), and its request bodies checked
// field by field.
#include "cairn/llm/anthropic_messages.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/anthropic_wire.hpp"
#include "support/http_test_server.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ScriptedResponse;
using Clock = std::chrono::steady_clock;
// Bodies are compared as unordered JSON: key order is not the API's concern.
using Plain = nlohmann::json;

const std::string kApiKey = "sk-ant-api03-cairn-TEST-key-do-not-leak-7f3a9c";

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(CAIRN_FIXTURES_DIR) + "/sse/anthropic-messages/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The fixture's first `count` events, one HTTP chunk each.
std::vector<ScriptedResponse::Piece> events_of(const std::string& sse, std::size_t count = SIZE_MAX) {
  std::vector<ScriptedResponse::Piece> pieces;
  std::size_t pos = 0;
  while (pos < sse.size() && pieces.size() < count) {
    std::size_t end = sse.find("\n\n", pos);
    end = end == std::string::npos ? sse.size() : end + 2;
    pieces.push_back({.bytes = sse.substr(pos, end - pos)});
    pos = end;
  }
  return pieces;
}

// The fixture cut every `size` bytes, wherever that falls.
std::vector<ScriptedResponse::Piece> slices_of(const std::string& sse, std::size_t size) {
  std::vector<ScriptedResponse::Piece> pieces;
  for (std::size_t pos = 0; pos < sse.size(); pos += size) pieces.push_back({.bytes = sse.substr(pos, size)});
  return pieces;
}

ScriptedResponse stream_of(std::vector<ScriptedResponse::Piece> pieces,
                           ScriptedResponse::End end = ScriptedResponse::End::finish) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream; charset=utf-8"}, {"request-id", "req_018EeWyXxfu5pfWkrYcMdjWG"}};
  script.body = std::move(pieces);
  script.end = end;
  return script;
}

ScriptedResponse error_of(int status, std::string reason, std::string body,
                          std::vector<std::pair<std::string, std::string>> headers = {}) {
  ScriptedResponse script;
  script.status = status;
  script.reason = std::move(reason);
  script.headers = std::move(headers);
  script.headers.emplace_back("Content-Type", "application/json");
  script.body = {{.bytes = std::move(body)}};
  script.framing = ScriptedResponse::Framing::content_length;
  return script;
}

Model claude(const HttpTestServer& server) {
  return Model{.provider = "anthropic",
               .id = "claude-sonnet-4-5",
               .api = "anthropic-messages",
               .context_window = 200000,
               .max_tokens = 64000,
               .reasoning = true,
               .input = {"text", "image"},
               .prices = {.input = 3, .output = 15, .cache_read = 0.3, .cache_write = 3.75},
               .base_url = server.url("/v1")};
}

// Built field by field: g++ 12 takes a designated initializer of it for a
// read of uninitialised memory (-Wmaybe-uninitialized).
AssistantMessage assistant_from(std::string provider, std::string api, std::string model,
                           std::vector<AssistantBlock> content, StopReason reason) {
  AssistantMessage message;
  message.provider = std::move(provider);
  message.api = std::move(api);
  message.model = std::move(model);
  message.content = std::move(content);
  message.stop_reason = reason;
  return message;
}

LlmContext say_hello() {
  LlmContext context;
  context.system_prompt = "You are terse.";
  context.messages.push_back(UserMessage{.content = std::string("Say hello")});
  return context;
}

// "text_delta 0 Hel": the event's type, content index and delta.
std::string describe(const ProviderEvent& event) {
  std::string out(to_string(event.type));
  if (event.content_index >= 0) out += fmt::format(" {}", event.content_index);
  if (!event.delta.empty()) out += " " + event.delta;
  return out;
}

struct Outcome {
  ProviderResponse response;
  std::vector<std::string> events;
  std::vector<Json> partial_arguments;  // the tool call's arguments at each toolcall_delta
  bool every_event_had_partial = true;
};

Outcome run(const Model& model, const LlmContext& context, const StreamOptions& options = {},
            const PayloadHook& hook = {}, std::stop_token cancel = {},
            const std::function<void(const ProviderEvent&)>& also = {}) {
  Outcome outcome;
  auto provider = make_anthropic_messages_provider(kApiKey);
  outcome.response = provider->stream(
      model, context, options, hook,
      [&](const ProviderEvent& event) {
        outcome.events.push_back(describe(event));
        if (event.partial == nullptr) {
          outcome.every_event_had_partial = false;
        } else if (event.type == ProviderEvent::Type::toolcall_delta) {
          outcome.partial_arguments.push_back(
              std::get<ToolCall>(event.partial->content.at(static_cast<std::size_t>(event.content_index))).arguments);
        }
        if (also) also(event);
      },
      cancel);
  return outcome;
}

Plain body_of(const HttpTestServer& server, std::size_t request = 0) {
  auto requests = server.requests();
  EXPECT_GT(requests.size(), request);
  if (requests.size() <= request) return {};
  return Plain::parse(requests[request].body);
}

// Every failure: an error event last, an error message without the key.
void expect_failed(const Outcome& outcome, StopReason reason = StopReason::error) {
  const auto& message = outcome.response.message;
  EXPECT_EQ(message.stop_reason, reason);
  ASSERT_TRUE(message.error_message.has_value());
  EXPECT_FALSE(message.error_message->empty());
  EXPECT_EQ(message.error_message->find(kApiKey), std::string::npos) << *message.error_message;
  ASSERT_FALSE(outcome.events.empty());
  EXPECT_EQ(outcome.events.back(), "error");
  EXPECT_TRUE(outcome.every_event_had_partial);
}

class AnthropicMessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The servers are local; a proxy configured on the machine must not be asked.
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  }
};

// ---- streams ----------------------------------------------------------------

TEST_F(AnthropicMessagesTest, StreamsPlainTextWithUsageAndCost) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"))));
  Model model = claude(server);
  model.headers = {{"anthropic-beta", "fine-grained-tool-streaming-2025-05-14"}};
  StreamOptions options;
  options.headers = {{"x-trace-id", "trace-1"}};
  Outcome outcome = run(model, say_hello(), options);

  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "text_start 0", "text_delta 0 Hel", "text_delta 0 lo",
                                                      "text_delta 0  there!", "text_end 0", "done"}));
  EXPECT_TRUE(outcome.every_event_had_partial);
  const AssistantMessage& message = outcome.response.message;
  ASSERT_EQ(message.content.size(), 1u);
  EXPECT_EQ(std::get<TextContent>(message.content[0]).text, "Hello there!");
  EXPECT_EQ(message.stop_reason, StopReason::stop);
  EXPECT_FALSE(message.error_message);
  EXPECT_EQ(message.api, "anthropic-messages");
  EXPECT_EQ(message.provider, "anthropic");
  EXPECT_EQ(message.model, "claude-sonnet-4-5");
  EXPECT_GT(message.timestamp, 0);
  EXPECT_EQ(outcome.response.status, 200);
  EXPECT_EQ(outcome.response.headers.at("request-id"), "req_018EeWyXxfu5pfWkrYcMdjWG");

  // Input and cache counts from message_start, output from message_delta.
  EXPECT_EQ(message.usage.input, 25);
  EXPECT_EQ(message.usage.output, 15);
  EXPECT_EQ(message.usage.cache_read, 3000);
  EXPECT_EQ(message.usage.cache_write, 1200);
  EXPECT_EQ(message.usage.total_tokens, 25 + 15 + 3000 + 1200);
  EXPECT_DOUBLE_EQ(message.usage.cost.input, 25 * 3 / 1e6);
  EXPECT_DOUBLE_EQ(message.usage.cost.output, 15 * 15 / 1e6);
  EXPECT_DOUBLE_EQ(message.usage.cost.cache_read, 3000 * 0.3 / 1e6);
  EXPECT_DOUBLE_EQ(message.usage.cost.cache_write, 1200 * 3.75 / 1e6);
  EXPECT_DOUBLE_EQ(message.usage.cost.total, (25 * 3 + 15 * 15 + 3000 * 0.3 + 1200 * 3.75) / 1e6);

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/messages");
  EXPECT_EQ(requests[0].header("x-api-key"), kApiKey);
  EXPECT_EQ(requests[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  EXPECT_EQ(requests[0].header("anthropic-beta"), "fine-grained-tool-streaming-2025-05-14");
  EXPECT_EQ(requests[0].header("x-trace-id"), "trace-1");
  EXPECT_EQ(body_of(server), Plain::parse(R"({
    "model": "claude-sonnet-4-5", "max_tokens": 64000, "stream": true,
    "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": [
      {"type": "text", "text": "Say hello", "cache_control": {"type": "ephemeral"}}]}]})"));
}

TEST_F(AnthropicMessagesTest, RequestHeadersOverrideModelHeadersWhichOverrideTheDefaults) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"))));
  Model model = claude(server);
  model.base_url += "/";  // a trailing slash is not doubled
  model.headers = {{"Anthropic-Version", "2024-01-01"}, {"x-team", "model"}};
  StreamOptions options;
  options.headers = {{"X-Team", "request"}};
  Outcome outcome = run(model, say_hello(), options);
  EXPECT_EQ(outcome.events.back(), "done");
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/v1/messages");
  EXPECT_EQ(requests[0].header("anthropic-version"), "2024-01-01");
  EXPECT_EQ(requests[0].header("x-team"), "request");
  int versions = 0;
  for (const auto& [name, value] : requests[0].headers) versions += name == "anthropic-version";
  EXPECT_EQ(versions, 1);
}

TEST_F(AnthropicMessagesTest, ThinkingWithItsSignatureIsStreamedAndReplayed) {
  HttpTestServer server(stream_of(events_of(fixture("thinking.sse"))));
  Model model = claude(server);
  StreamOptions options;
  options.thinking_level = ThinkingLevel::medium;
  options.max_tokens = 4000;
  options.temperature = 0.5;  // refused by the API beside thinking: not sent
  LlmContext context;
  context.messages.push_back(UserMessage{.content = std::string("What is the GCD of 1071 and 462?")});
  Outcome outcome = run(model, context, options);

  EXPECT_EQ(outcome.events,
            (std::vector<std::string>{
                "start", "thinking_start 0",
                "thinking_delta 0 I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n",
                "thinking_delta 0 1071 = 2 × 462 + 147", "thinking_end 0", "text_start 1",
                "text_delta 1 The greatest common divisor of 1071 and 462 is **21**.", "text_end 1", "done"}));
  const AssistantMessage& message = outcome.response.message;
  ASSERT_EQ(message.content.size(), 2u);
  const auto& thinking = std::get<ThinkingContent>(message.content[0]);
  EXPECT_EQ(thinking.thinking,
            "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147");
  EXPECT_EQ(thinking.thinking_signature, "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds");
  EXPECT_FALSE(thinking.redacted.value_or(false));
  EXPECT_EQ(std::get<TextContent>(message.content[1]).text, "The greatest common divisor of 1071 and 462 is **21**.");
  EXPECT_EQ(message.stop_reason, StopReason::stop);
  EXPECT_EQ(message.usage.input, 38);
  EXPECT_EQ(message.usage.output, 236);

  // The budget is added to max_tokens so the answer keeps its room.
  Plain body = body_of(server);
  EXPECT_EQ(body["max_tokens"], 4000 + 8192);
  EXPECT_EQ(body["thinking"], Plain::parse(R"({"type": "enabled", "budget_tokens": 8192})"));
  EXPECT_FALSE(body.contains("temperature"));

  // The next request hands the thinking back, signature and all.
  HttpTestServer next(stream_of(events_of(fixture("text.sse"))));
  context.messages.push_back(message);
  context.messages.push_back(UserMessage{.content = std::string("And of 10 and 4?")});
  Outcome second = run(claude(next), context, options);
  EXPECT_EQ(second.events.back(), "done");
  Plain replayed = body_of(next);
  ASSERT_EQ(replayed["messages"].size(), 3u);
  EXPECT_EQ(replayed["messages"][1], Plain::parse(R"({"role": "assistant", "content": [
    {"type": "thinking",
     "thinking": "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147",
     "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
    {"type": "text", "text": "The greatest common divisor of 1071 and 462 is **21**."}]})"));
}

TEST_F(AnthropicMessagesTest, RedactedThinkingIsKeptOpaqueAndReplayedAsItCame) {
  HttpTestServer server(stream_of(events_of(fixture("redacted_thinking.sse"))));
  Model model = claude(server);
  StreamOptions options;
  options.thinking_level = ThinkingLevel::low;
  LlmContext context;
  context.messages.push_back(UserMessage{.content = std::string("ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING")});
  Outcome outcome = run(model, context, options);

  EXPECT_EQ(outcome.events,
            (std::vector<std::string>{"start", "thinking_start 0", "thinking_end 0", "text_start 1",
                                      "text_delta 1 Some of my reasoning was redacted.", "text_end 1", "done"}));
  const AssistantMessage& message = outcome.response.message;
  ASSERT_EQ(message.content.size(), 2u);
  const auto& redacted = std::get<ThinkingContent>(message.content[0]);
  EXPECT_EQ(redacted.thinking, "[Reasoning redacted]");
  EXPECT_EQ(redacted.redacted, true);
  const std::string data = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj";
  EXPECT_EQ(redacted.thinking_signature, data);
  EXPECT_EQ(std::get<TextContent>(message.content[1]).text, "Some of my reasoning was redacted.");

  context.messages.push_back(message);
  context.messages.push_back(UserMessage{.content = std::string("Go on.")});
  Plain again = Plain::parse(anthropic::build_payload(model, context, options).dump());
  EXPECT_EQ(again["messages"][1], Plain::parse(fmt::format(R"({{"role": "assistant", "content": [
    {{"type": "redacted_thinking", "data": "{}"}},
    {{"type": "text", "text": "Some of my reasoning was redacted."}}]}})", data)));

  // Only the model that made it can read it: another one is not sent it.
  Model other = model;
  other.id = "claude-opus-4-1";
  Plain elsewhere = Plain::parse(anthropic::build_payload(other, context, options).dump());
  EXPECT_EQ(elsewhere["messages"][1], Plain::parse(R"({"role": "assistant", "content": [
    {"type": "text", "text": "Some of my reasoning was redacted."}]})"));
}

const std::vector<std::string> kToolUseEvents = {
    "start",
    "text_start 0",
    "text_delta 0 Okay",
    "text_delta 0 , let's check the weather and the time:",
    "text_end 0",
    "toolcall_start 1",
    R"(toolcall_delta 1 {"location":)",
    R"(toolcall_delta 1  "San)",
    "toolcall_delta 1  Francisc",
    R"(toolcall_delta 1 o, CA")",
    R"(toolcall_delta 1 , "unit": "fah)",
    R"(toolcall_delta 1 renheit"})",
    "toolcall_end 1",
    "toolcall_start 2",
    R"(toolcall_delta 2 {"timezone": "America/)",
    R"(toolcall_delta 2 Los_Angeles"})",
    "toolcall_end 2",
    "done",
};

void expect_tool_use_message(const AssistantMessage& message) {
  ASSERT_EQ(message.content.size(), 3u);
  EXPECT_EQ(std::get<TextContent>(message.content[0]).text, "Okay, let's check the weather and the time:");
  const auto& weather = std::get<ToolCall>(message.content[1]);
  EXPECT_EQ(weather.id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
  EXPECT_EQ(weather.name, "get_weather");
  EXPECT_EQ(weather.arguments, Json::parse(R"({"location": "San Francisco, CA", "unit": "fahrenheit"})"));
  const auto& time = std::get<ToolCall>(message.content[2]);
  EXPECT_EQ(time.id, "toolu_01NRLabsLyVHZPKxbKvkfSMn");
  EXPECT_EQ(time.name, "get_time");
  EXPECT_EQ(time.arguments, Json::parse(R"({"timezone": "America/Los_Angeles"})"));
  EXPECT_EQ(message.stop_reason, StopReason::tool_use);
  EXPECT_EQ(message.usage.input, 472);
  EXPECT_EQ(message.usage.output, 89);
}

TEST_F(AnthropicMessagesTest, SeveralToolCallsWithArgumentsSplitAcrossChunks) {
  HttpTestServer server(stream_of(events_of(fixture("tool_use.sse"))));
  LlmContext context = say_hello();
  context.tools.push_back(ToolDefinition{
      .name = "get_weather",
      .description = "Get the current weather in a given location",
      .parameters = Json::parse(R"({"type": "object", "properties": {"location": {"type": "string"},
                                   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                                   "required": ["location"]})")});
  context.tools.push_back(ToolDefinition{
      .name = "get_time",
      .description = "Get the current time in a given time zone",
      .parameters = Json::parse(R"({"properties": {"timezone": {"type": "string"}}, "required": ["timezone"]})")});
  Outcome outcome = run(claude(server), context);

  EXPECT_EQ(outcome.events, kToolUseEvents);
  expect_tool_use_message(outcome.response.message);
  // The arguments grow as they arrive, parsed from the partial JSON.
  ASSERT_EQ(outcome.partial_arguments.size(), 8u);
  EXPECT_EQ(outcome.partial_arguments[1], Json::parse(R"({"location": "San"})"));
  EXPECT_EQ(outcome.partial_arguments[3], Json::parse(R"({"location": "San Francisco, CA"})"));
  EXPECT_EQ(outcome.partial_arguments[5], Json::parse(R"({"location": "San Francisco, CA", "unit": "fahrenheit"})"));
  EXPECT_EQ(outcome.partial_arguments[6], Json::parse(R"({"timezone": "America/"})"));

  EXPECT_EQ(body_of(server)["tools"], Plain::parse(R"([
    {"name": "get_weather", "description": "Get the current weather in a given location",
     "input_schema": {"type": "object", "properties": {"location": {"type": "string"},
                      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}},
    {"name": "get_time", "description": "Get the current time in a given time zone",
     "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}}])"));
}

TEST_F(AnthropicMessagesTest, AStreamCutAnywhereDecodesTheSame) {
  for (std::size_t size : {1u, 7u, 64u}) {
    HttpTestServer server(stream_of(slices_of(fixture("tool_use.sse"), size)));
    Outcome outcome = run(claude(server), say_hello());
    EXPECT_EQ(outcome.events, kToolUseEvents) << "pieces of " << size << " bytes";
    expect_tool_use_message(outcome.response.message);
  }
}

TEST_F(AnthropicMessagesTest, ImagesToolResultsAndCacheControlInTheRequest) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"))));
  Model model = claude(server);
  LlmContext context;
  context.system_prompt = "You look at pictures.";
  context.tools.push_back(ToolDefinition{.name = "zoom", .description = "Zoom into the picture",
                                         .parameters = Json::parse(R"({"type": "object", "properties": {}})")});
  context.messages.push_back(UserMessage{.content = std::vector<UserBlock>{
                                             TextContent{.text = "What is in this picture?"},
                                             ImageContent{.data = "iVBORw0KGgo=", .mime_type = "image/png"}}});
  // Asked by another model, whose tool call ids Anthropic would refuse.
  AssistantMessage asked = assistant_from("openai", "openai-responses", "gpt-5",
                                     {TextContent{.text = "Let me zoom in twice."},
                                      ToolCall{.id = "toolu_01A", .name = "zoom", .arguments = Json::parse(R"({"x": 1})")},
                                      ToolCall{.id = "call_7|fc_9", .name = "zoom", .arguments = Json::object()}},
                                     StopReason::tool_use);
  context.messages.push_back(asked);
  context.messages.push_back(ToolResultMessage{.tool_call_id = "toolu_01A", .tool_name = "zoom",
                                               .content = {TextContent{.text = "a cat"}, TextContent{.text = "grey"}}});
  context.messages.push_back(ToolResultMessage{.tool_call_id = "call_7|fc_9", .tool_name = "zoom",
                                               .content = {ImageContent{.data = "R0lGODlh", .mime_type = "image/gif"}},
                                               .is_error = false});
  Outcome outcome = run(model, context);
  EXPECT_EQ(outcome.events.back(), "done");

  // The system prompt and the last user message (here the tool results,
  // merged into one) carry cache_control; nothing else does.
  EXPECT_EQ(body_of(server), Plain::parse(R"json({
    "model": "claude-sonnet-4-5", "max_tokens": 64000, "stream": true,
    "system": [{"type": "text", "text": "You look at pictures.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
      {"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Let me zoom in twice."},
        {"type": "tool_use", "id": "toolu_01A", "name": "zoom", "input": {"x": 1}},
        {"type": "tool_use", "id": "call_7_fc_9", "name": "zoom", "input": {}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "a cat\ngrey", "is_error": false},
        {"type": "tool_result", "tool_use_id": "call_7_fc_9", "is_error": false, "cache_control": {"type": "ephemeral"},
         "content": [{"type": "text", "text": "(see attached image)"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGODlh"}}]}]}],
    "tools": [{"name": "zoom", "description": "Zoom into the picture",
               "input_schema": {"type": "object", "properties": {}}}]})json"));
}

TEST_F(AnthropicMessagesTest, HistoryIsMadeAcceptableToTheApi) {
  Model model{.provider = "anthropic", .id = "claude-haiku-4-5", .api = "anthropic-messages", .max_tokens = 8000,
              .input = {"text"}};
  auto from = [&](std::string id, std::vector<AssistantBlock> content, StopReason reason = StopReason::stop) {
    return assistant_from("anthropic", "anthropic-messages", std::move(id), std::move(content), reason);
  };
  LlmContext context;
  // A model without image input is not sent the image; blank text is dropped.
  context.messages.push_back(UserMessage{.content = std::vector<UserBlock>{
                                             TextContent{.text = "look"}, TextContent{.text = "  "},
                                             ImageContent{.data = "iVBORw0KGgo=", .mime_type = "image/png"}}});
  // Another model's thinking becomes text; unsigned thinking too; blank text goes.
  context.messages.push_back(from("claude-opus-4-1", {ThinkingContent{.thinking = "theirs", .thinking_signature = "sig-o"},
                                                      TextContent{.text = ""}, TextContent{.text = "seen"}}));
  context.messages.push_back(UserMessage{.content = std::string("again")});
  context.messages.push_back(from("claude-haiku-4-5", {ThinkingContent{.thinking = "cut short"},
                                                       TextContent{.text = "partial"}}));
  // A failed turn is not replayed; its tool call is not answered either.
  context.messages.push_back(from("claude-haiku-4-5", {ToolCall{.id = "toolu_lost", .name = "ls"}}, StopReason::error));
  // A tool call left unanswered gets an error result before the conversation moves on.
  context.messages.push_back(UserMessage{.content = std::string("and?")});
  context.messages.push_back(from("claude-haiku-4-5", {ToolCall{.id = "toolu_1", .name = "ls"},
                                                       ToolCall{.id = "toolu_2", .name = "pwd"}},
                                  StopReason::tool_use));
  context.messages.push_back(ToolResultMessage{.tool_call_id = "toolu_2", .tool_name = "pwd",
                                               .content = {TextContent{.text = "/tmp"}}, .is_error = false});
  context.messages.push_back(UserMessage{.content = std::string("stop")});

  Plain body = Plain::parse(anthropic::build_payload(model, context, {}).dump());
  EXPECT_EQ(body["messages"], Plain::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "look"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "theirs"}, {"type": "text", "text": "seen"}]},
    {"role": "user", "content": "again"},
    {"role": "assistant", "content": [{"type": "text", "text": "cut short"}, {"type": "text", "text": "partial"}]},
    {"role": "user", "content": "and?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}},
                                      {"type": "tool_use", "id": "toolu_2", "name": "pwd", "input": {}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_2", "content": "/tmp", "is_error": false},
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "No result provided", "is_error": true}]},
    {"role": "user", "content": [{"type": "text", "text": "stop", "cache_control": {"type": "ephemeral"}}]}])"));
  EXPECT_FALSE(body.contains("system"));
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_FALSE(body.contains("thinking"));  // the model does not reason
}

TEST_F(AnthropicMessagesTest, ThinkingLevelsBecomeBudgets) {
  using anthropic::plan_thinking;
  EXPECT_FALSE(plan_thinking(ThinkingLevel::off, 4000, 64000));
  auto expect_plan = [](std::optional<anthropic::ThinkingPlan> plan, std::int64_t max_tokens, std::int64_t budget) {
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->max_tokens, max_tokens);
    EXPECT_EQ(plan->budget_tokens, budget);
  };
  expect_plan(plan_thinking(ThinkingLevel::minimal, 4000, 64000), 5024, 1024);
  expect_plan(plan_thinking(ThinkingLevel::low, 4000, 64000), 6048, 2048);
  expect_plan(plan_thinking(ThinkingLevel::medium, 4000, 64000), 12192, 8192);
  expect_plan(plan_thinking(ThinkingLevel::high, 4000, 64000), 20384, 16384);
  expect_plan(plan_thinking(ThinkingLevel::xhigh, 4000, 64000), 20384, 16384);
  // The model's limit caps max_tokens; the budget then leaves 1024 for the answer.
  expect_plan(plan_thinking(ThinkingLevel::high, 4000, 8000), 8000, 6976);
  expect_plan(plan_thinking(ThinkingLevel::low, 64000, 64000), 64000, 2048);
  expect_plan(plan_thinking(ThinkingLevel::medium, 4000, 64000, Json::parse(R"({"medium": 3000})")), 7000, 3000);

  // A model that does not reason is asked for no thinking at any level.
  Model plain{.id = "claude-3-5-haiku", .api = "anthropic-messages", .max_tokens = 8192, .reasoning = false};
  StreamOptions high;
  high.thinking_level = ThinkingLevel::high;
  high.temperature = 0.2;
  Plain body = Plain::parse(anthropic::build_payload(plain, say_hello(), high).dump());
  EXPECT_FALSE(body.contains("thinking"));
  EXPECT_EQ(body["max_tokens"], 8192);
  EXPECT_EQ(body["temperature"], 0.2);
}

TEST_F(AnthropicMessagesTest, BeforePayloadSeesAndReplacesThePayload) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"))));
  Model model = claude(server);
  Json seen;
  PayloadHook hook = [&](const Model& m, Json payload) {
    EXPECT_EQ(m.id, "claude-sonnet-4-5");
    seen = payload;
    payload["max_tokens"] = 77;
    payload["metadata"] = {{"user_id", "user-42"}};
    return payload;
  };
  Outcome outcome = run(model, say_hello(), {}, hook);
  EXPECT_EQ(outcome.events.back(), "done");
  EXPECT_EQ(seen["model"], "claude-sonnet-4-5");
  EXPECT_EQ(seen["max_tokens"], 64000);
  EXPECT_EQ(seen["messages"].size(), 1u);
  Plain sent = body_of(server);
  EXPECT_EQ(sent["max_tokens"], 77);
  EXPECT_EQ(sent["metadata"], Plain::parse(R"({"user_id": "user-42"})"));
}

// ---- failures ---------------------------------------------------------------

// Unparseable data is retryable, as in the OpenAI providers: the bytes were
// most likely mangled on the way.
TEST_F(AnthropicMessagesTest, AMalformedChunkIsARetryableError) {
  HttpTestServer server(stream_of(events_of(fixture("malformed.sse"))));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "text_start 0", "text_delta 0 Hel", "error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable) << *outcome.response.message.error_message;
  EXPECT_FALSE(outcome.response.context_overflow);
  EXPECT_NE(outcome.response.message.error_message->find("malformed"), std::string::npos)
      << *outcome.response.message.error_message;
  // What arrived before it is kept.
  ASSERT_EQ(outcome.response.message.content.size(), 1u);
  EXPECT_EQ(std::get<TextContent>(outcome.response.message.content[0]).text, "Hel");
}

// Well-formed JSON that breaks the protocol is the server's dialect, not
// line noise: another attempt would get the same, so it is not retried.
TEST_F(AnthropicMessagesTest, AnEventOutOfProtocolIsAnErrorNotRetried) {
  std::string sse = fixture("text.sse");
  std::string head = sse.substr(0, sse.find("event: content_block_start"));
  head += "event: content_block_delta\n"
          "data: {\"type\": \"content_block_delta\", \"index\": 3, \"delta\": {\"type\": \"text_delta\", \"text\": \"x\"}}\n\n";
  HttpTestServer server(stream_of(events_of(head)));
  Outcome outcome = run(claude(server), say_hello());
  expect_failed(outcome);
  EXPECT_FALSE(outcome.response.retryable);
  EXPECT_NE(outcome.response.message.error_message->find("content_block_delta for a block that is not open"),
            std::string::npos)
      << *outcome.response.message.error_message;
}

// The model's own output, not a failed response: the call is made with its
// text kept, for the error result that tells the model what it sent.
TEST_F(AnthropicMessagesTest, ToolArgumentsThatAreNotJsonAreKeptRaw) {
  HttpTestServer server(stream_of(events_of(fixture("invalid_tool_arguments.sse"))));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "toolcall_start 0",
                                                      R"(toolcall_delta 0 {"path": "a.txt", )",
                                                      R"(toolcall_delta 0 "content": )", "toolcall_end 0", "done"}));
  const auto& message = outcome.response.message;
  EXPECT_EQ(message.stop_reason, StopReason::tool_use);
  EXPECT_FALSE(message.error_message);
  const auto& call = std::get<ToolCall>(message.content.at(0));
  EXPECT_EQ(call.id, "toolu_01A09q90qw90lq917835lq9");
  EXPECT_EQ(call.arguments, Json::object());
  EXPECT_EQ(call.raw_arguments, R"({"path": "a.txt", "content": )");
}

TEST_F(AnthropicMessagesTest, ADisconnectMidStreamIsRetryable) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"), 4), ScriptedResponse::End::close));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "text_start 0", "text_delta 0 Hel", "error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
  EXPECT_EQ(outcome.response.status, 200);
  EXPECT_EQ(std::get<TextContent>(outcome.response.message.content.at(0)).text, "Hel");
  EXPECT_EQ(outcome.response.message.usage.input, 25);
}

TEST_F(AnthropicMessagesTest, AStreamEndingBeforeMessageStopIsRetryable) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"), 6)));  // a clean end, too early
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "text_start 0", "text_delta 0 Hel", "text_delta 0 lo",
                                                      "text_delta 0  there!", "error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
}

TEST_F(AnthropicMessagesTest, AStallIsAnIdleTimeoutAndRetryable) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"), 4), ScriptedResponse::End::stall));
  StreamOptions options;
  options.extra = {{"idleTimeoutMs", 300}};
  auto start = Clock::now();
  Outcome outcome = run(claude(server), say_hello(), options);
  auto elapsed = Clock::now() - start;
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "text_start 0", "text_delta 0 Hel", "error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 3000ms);
  EXPECT_TRUE(server.wait_for_client_close(2000ms));
}

TEST_F(AnthropicMessagesTest, A429HonoursRetryAfter) {
  HttpTestServer server(error_of(429, "Too Many Requests", fixture("error_429.json"),
                                 {{"retry-after", "7"}, {"anthropic-ratelimit-requests-remaining", "0"}}));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
  EXPECT_EQ(outcome.response.retry_after_ms, 7000);
  EXPECT_EQ(outcome.response.status, 429);
  EXPECT_FALSE(outcome.response.context_overflow);
  EXPECT_NE(outcome.response.message.error_message->find("exceed the rate limit"), std::string::npos)
      << *outcome.response.message.error_message;
  EXPECT_TRUE(outcome.response.message.content.empty());
}

TEST_F(AnthropicMessagesTest, A500IsRetryable) {
  HttpTestServer server(error_of(500, "Internal Server Error", fixture("error_500.json")));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
  EXPECT_EQ(outcome.response.status, 500);
  EXPECT_FALSE(outcome.response.context_overflow);
}

TEST_F(AnthropicMessagesTest, A529OverloadedIsRetryable) {
  HttpTestServer server(error_of(529, "Overloaded", fixture("error_529.json")));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
  EXPECT_EQ(outcome.response.status, 529);
  EXPECT_NE(outcome.response.message.error_message->find("Overloaded"), std::string::npos)
      << *outcome.response.message.error_message;
}

TEST_F(AnthropicMessagesTest, AnOverloadedErrorEventMidStreamIsRetryable) {
  HttpTestServer server(stream_of(events_of(fixture("overloaded_event.sse"))));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "text_start 0", "text_delta 0 Hel", "error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
  EXPECT_FALSE(outcome.response.context_overflow);
  EXPECT_NE(outcome.response.message.error_message->find("Overloaded"), std::string::npos)
      << *outcome.response.message.error_message;
}

TEST_F(AnthropicMessagesTest, PromptTooLongIsAContextOverflowNotRetried) {
  HttpTestServer server(error_of(400, "Bad Request", fixture("error_400_prompt_too_long.json")));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"error"}));
  expect_failed(outcome);
  EXPECT_FALSE(outcome.response.retryable);
  EXPECT_TRUE(outcome.response.context_overflow);
  EXPECT_EQ(outcome.response.status, 400);
  EXPECT_NE(outcome.response.message.error_message->find("prompt is too long"), std::string::npos)
      << *outcome.response.message.error_message;
}

TEST_F(AnthropicMessagesTest, ARefusalEndsAsAnError) {
  std::string sse = fixture("text.sse");
  const std::string end_turn = R"("stop_reason": "end_turn")";
  sse.replace(sse.find(end_turn), end_turn.size(), R"("stop_reason": "refusal")");
  HttpTestServer server(stream_of(events_of(sse)));
  Outcome outcome = run(claude(server), say_hello());
  EXPECT_EQ(outcome.events.back(), "error");
  expect_failed(outcome);
  EXPECT_FALSE(outcome.response.retryable);
  EXPECT_NE(outcome.response.message.error_message->find("refusal"), std::string::npos);
}

TEST_F(AnthropicMessagesTest, ARefusedConnectionIsRetryable) {
  Model model{.provider = "anthropic", .id = "claude-sonnet-4-5", .api = "anthropic-messages", .max_tokens = 1000,
              .base_url = fmt::format("http://127.0.0.1:{}/v1", HttpTestServer::closed_port())};
  Outcome outcome = run(model, say_hello());
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"error"}));
  expect_failed(outcome);
  EXPECT_TRUE(outcome.response.retryable);
  EXPECT_EQ(outcome.response.status, 0);
}

TEST_F(AnthropicMessagesTest, TheApiKeyAppearsInNoErrorText) {
  // A server (or a proxy in front of it) that echoes the key back.
  HttpTestServer server(error_of(
      401, "Unauthorized",
      fmt::format(R"({{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key: {}"}}}})",
                  kApiKey)));
  Outcome outcome = run(claude(server), say_hello());
  expect_failed(outcome);  // checks the message for the key
  EXPECT_FALSE(outcome.response.retryable);
  EXPECT_EQ(outcome.response.status, 401);
  EXPECT_NE(outcome.response.message.error_message->find("invalid x-api-key"), std::string::npos)
      << *outcome.response.message.error_message;
  // The key did go out, in its header.
  EXPECT_EQ(server.requests().at(0).header("x-api-key"), kApiKey);
}

TEST_F(AnthropicMessagesTest, AbortingMidStreamReturnsAtOnceAndClosesTheConnection) {
  HttpTestServer server(stream_of(events_of(fixture("text.sse"), 4), ScriptedResponse::End::stall));
  Model model = claude(server);
  std::stop_source stop;
  std::promise<void> first_delta;
  bool signalled = false;
  std::promise<std::pair<Outcome, Clock::time_point>> finished;
  std::jthread client([&] {
    Outcome outcome = run(model, say_hello(), {}, {}, stop.get_token(), [&](const ProviderEvent& event) {
      if (event.type == ProviderEvent::Type::text_delta && !signalled) {
        signalled = true;
        first_delta.set_value();
      }
    });
    finished.set_value({std::move(outcome), Clock::now()});
  });
  ASSERT_EQ(first_delta.get_future().wait_for(5s), std::future_status::ready);
  std::this_thread::sleep_for(30ms);  // the client is waiting on the stalled stream
  auto stop_at = Clock::now();
  stop.request_stop();
  auto [outcome, returned_at] = finished.get_future().get();
  auto latency = std::chrono::duration<double, std::milli>(returned_at - stop_at).count();

  EXPECT_LT(latency, 50.0);
  EXPECT_EQ(outcome.events, (std::vector<std::string>{"start", "text_start 0", "text_delta 0 Hel", "error"}));
  expect_failed(outcome, StopReason::aborted);
  EXPECT_FALSE(outcome.response.retryable);
  EXPECT_EQ(std::get<TextContent>(outcome.response.message.content.at(0)).text, "Hel");
  ASSERT_TRUE(server.wait_for_client_close(2000ms)) << "the server never saw the connection closed";
  fmt::print("abort: stream() returned {:.2f} ms after the stop request\n", latency);
}

}  // namespace
}  // namespace cairn
