#include "cairn/llm/openai_responses.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <fmt/format.h>

#include "llm/provider_test_support.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ScriptedResponse;
using Strings = std::vector<std::string>;
using Clock = std::chrono::steady_clock;

constexpr const char* kResponsesKey = "sk-test-RESPONSES-SECRET-987";

class OpenAiResponsesTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::no_proxy_for_the_test_server(); }

  static Model model_at(const HttpTestServer& server, std::string id = "gpt-4.1", bool reasoning = false) {
    Model model;
    model.provider = "openai";
    model.id = std::move(id);
    model.api = "openai-responses";
    model.base_url = server.url("/v1");
    model.reasoning = reasoning;
    model.input = {"text", "image"};
    model.prices = {.input = 2, .output = 8, .cache_read = 0.5};
    return model;
  }

  static testing::Run run(const Model& model, const LlmContext& context = testing::hello_context(),
                          const StreamOptions& options = {}, const PayloadHook& hook = {}) {
    auto provider = make_openai_responses_provider(kResponsesKey);
    return testing::run_provider(*provider, model, context, options, hook);
  }

  static nlohmann::json sent_body(const HttpTestServer& server) {
    auto requests = server.requests();
    EXPECT_EQ(requests.size(), 1u);
    return requests.empty() ? nlohmann::json() : nlohmann::json::parse(requests[0].body);
  }

  static AssistantMessage earlier_turn(std::string model, std::vector<AssistantBlock> content) {
    AssistantMessage message;
    message.api = "openai-responses";
    message.provider = "openai";
    message.model = std::move(model);
    message.stop_reason = StopReason::tool_use;
    message.content = std::move(content);
    return message;
  }
};

// --- streams --------------------------------------------------------------

TEST_F(OpenAiResponsesTest, PlainTextStreamsAsDeltasWithUsage) {
  HttpTestServer server(testing::sse_script("openai-responses/text.sse"));
  testing::Run run = this->run(model_at(server));

  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hi", "text_delta 0  there!", "text_end 0", "done"}));
  const AssistantMessage& message = run.response.message;
  EXPECT_EQ(message.stop_reason, StopReason::stop);
  ASSERT_EQ(message.content.size(), 1u);
  const auto& text = std::get<TextContent>(message.content[0]);
  EXPECT_EQ(text.text, "Hi there!");
  EXPECT_EQ(text.text_signature, R"({"v":1,"id":"msg_67c9fdcf37fc8190"})");
  EXPECT_EQ(message.api, "openai-responses");
  // input_tokens 2037 holds the 2000 cached ones.
  EXPECT_EQ(message.usage.input, 37);
  EXPECT_EQ(message.usage.cache_read, 2000);
  EXPECT_EQ(message.usage.output, 11);
  EXPECT_EQ(message.usage.total_tokens, 2048);
  EXPECT_DOUBLE_EQ(message.usage.cost.total, (37 * 2 + 11 * 8 + 2000 * 0.5) / 1e6);

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/v1/responses");
  EXPECT_EQ(requests[0].header("authorization"), fmt::format("Bearer {}", kResponsesKey));
  EXPECT_EQ(requests[0].header("accept"), "text/event-stream");
  EXPECT_EQ(nlohmann::json::parse(requests[0].body), nlohmann::json::parse(R"({
    "model": "gpt-4.1",
    "input": [{"role": "system", "content": "You are terse."},
              {"role": "user", "content": [{"type": "input_text", "text": "Say hello."}]}],
    "stream": true,
    "store": false
  })"));
}

TEST_F(OpenAiResponsesTest, ReasoningSummariesStreamAsThinkingAndTheItemIsKeptForReplay) {
  HttpTestServer server(testing::sse_script("openai-responses/reasoning.sse"));
  StreamOptions options;
  options.thinking_level = ThinkingLevel::high;
  testing::Run run = this->run(model_at(server, "o4-mini", true), testing::hello_context(), options);

  EXPECT_EQ(run.events, (Strings{"start", "thinking_start 0", "thinking_delta 0 **Comparing decimals**",
                                 "thinking_delta 0 \n\n", "thinking_delta 0 0.90 beats 0.11.", "thinking_end 0",
                                 "text_start 1", "text_delta 1 9.9 is larger.", "text_end 1", "done"}));
  const AssistantMessage& message = run.response.message;
  ASSERT_EQ(message.content.size(), 2u);
  const auto& thinking = std::get<ThinkingContent>(message.content[0]);
  EXPECT_EQ(thinking.thinking, "**Comparing decimals**\n\n0.90 beats 0.11.");
  ASSERT_TRUE(thinking.thinking_signature);
  EXPECT_EQ(Json::parse(*thinking.thinking_signature), Json::parse(R"({"id":"rs_6820f383d7c08191","type":"reasoning",
      "encrypted_content":"gAAAAABoIPOEncryptedReasoning==",
      "summary":[{"type":"summary_text","text":"**Comparing decimals**"},{"type":"summary_text","text":"0.90 beats 0.11."}]})"));
  const auto& text = std::get<TextContent>(message.content[1]);
  EXPECT_EQ(text.text, "9.9 is larger.");
  EXPECT_EQ(text.text_signature, R"({"v":1,"id":"msg_6820f3847c","phase":"final_answer"})");
  EXPECT_EQ(message.stop_reason, StopReason::stop);
  EXPECT_EQ(message.usage.output, 300);

  auto body = sent_body(server);
  EXPECT_EQ(body["reasoning"], nlohmann::json({{"effort", "high"}, {"summary", "auto"}}));
  EXPECT_EQ(body["include"], nlohmann::json({"reasoning.encrypted_content"}));
  EXPECT_EQ(body["input"][0]["role"], "developer");
}

TEST_F(OpenAiResponsesTest, SeveralFunctionCallsWithArgumentsSplitAcrossEvents) {
  HttpTestServer server(testing::sse_script("openai-responses/function_calls.sse"));
  testing::Run run = this->run(model_at(server));

  EXPECT_EQ(run.events, (Strings{"start", "toolcall_start 0", "toolcall_delta 0 {\"location\":",
                                 "toolcall_delta 0  \"Paris, Fr", "toolcall_delta 0 ance\"}", "toolcall_end 0",
                                 "toolcall_start 1", "toolcall_delta 1 {\"zone\": [\"CET\",",
                                 "toolcall_delta 1  \"UTC\"]}", "toolcall_end 1", "done"}));
  std::vector<Json> expected_partials = {Json::object(), {{"location", "Paris, Fr"}}, {{"location", "Paris, France"}},
                                         {{"zone", {"CET"}}}, {{"zone", {"CET", "UTC"}}}};
  EXPECT_EQ(run.partial_arguments, expected_partials);
  const AssistantMessage& message = run.response.message;
  EXPECT_EQ(message.stop_reason, StopReason::tool_use);
  ASSERT_EQ(message.content.size(), 2u);
  const auto& weather = std::get<ToolCall>(message.content[0]);
  EXPECT_EQ(weather.id, "call_12345xyz|fc_12345xyz");
  EXPECT_EQ(weather.name, "get_weather");
  EXPECT_EQ(weather.arguments, Json({{"location", "Paris, France"}}));
  const auto& time = std::get<ToolCall>(message.content[1]);
  EXPECT_EQ(time.id, "call_67890abc|fc_67890abc");
  EXPECT_EQ(time.arguments, Json({{"zone", {"CET", "UTC"}}}));
}

TEST_F(OpenAiResponsesTest, AnIncompleteResponseStopsForLength) {
  HttpTestServer server(testing::sse_script("openai-responses/incomplete.sse"));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Once upon a", "text_end 0", "done"}));
  EXPECT_EQ(run.response.message.stop_reason, StopReason::length);
  EXPECT_EQ(run.response.message.usage.output, 3);
}

// --- the request ----------------------------------------------------------

TEST_F(OpenAiResponsesTest, TheRequestReplaysTheConversationAsItems) {
  HttpTestServer server(testing::sse_script("openai-responses/text.sse"));
  Model model = model_at(server, "o4-mini", true);
  LlmContext context;
  context.system_prompt = "sys";
  context.messages.emplace_back(UserMessage{
      .content = std::vector<UserBlock>{TextContent{.text = "What is in this image?"},
                                        ImageContent{.data = "aGVsbG8=", .mime_type = "image/png"}}});
  context.messages.emplace_back(earlier_turn(
      "o4-mini",
      {ThinkingContent{.thinking = "look",
                       .thinking_signature =
                           R"({"type":"reasoning","id":"rs_1","encrypted_content":"enc==","summary":[{"type":"summary_text","text":"look"}]})"},
       TextContent{.text = "A cat.", .text_signature = R"({"v":1,"id":"msg_abc"})"},
       ToolCall{.id = "call_1|fc_1", .name = "read", .arguments = {{"path", "cat.txt"}}}}));
  context.messages.emplace_back(ToolResultMessage{
      .tool_call_id = "call_1|fc_1",
      .tool_name = "read",
      .content = {TextContent{.text = "meow"}, ImageContent{.data = "Y2F0", .mime_type = "image/jpeg"}}});
  context.messages.emplace_back(UserMessage{.content = "Thanks"});
  context.tools.push_back(ToolDefinition{
      .name = "read",
      .description = "Read a file",
      .parameters = Json::parse(R"({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]})")});
  StreamOptions options;
  options.max_tokens = 2048;
  options.temperature = 1.0;
  options.thinking_level = ThinkingLevel::medium;
  options.extra = {{"reasoningSummary", "detailed"}, {"toolChoice", "required"}};

  testing::Run run = this->run(model, context, options);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop) << run.response.message.error_message.value_or("");
  EXPECT_EQ(sent_body(server), nlohmann::json::parse(R"({
    "model": "o4-mini",
    "input": [
      {"role": "developer", "content": "sys"},
      {"role": "user", "content": [
        {"type": "input_text", "text": "What is in this image?"},
        {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,aGVsbG8="}]},
      {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc==", "summary": [{"type": "summary_text", "text": "look"}]},
      {"type": "message", "role": "assistant", "status": "completed", "id": "msg_abc",
       "content": [{"type": "output_text", "text": "A cat.", "annotations": []}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"cat.txt\"}"},
      {"type": "function_call_output", "call_id": "call_1", "output": "meow"},
      {"role": "user", "content": [
        {"type": "input_text", "text": "Attached image(s) from tool result:"},
        {"type": "input_image", "detail": "auto", "image_url": "data:image/jpeg;base64,Y2F0"}]},
      {"role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}
    ],
    "stream": true,
    "store": false,
    "max_output_tokens": 2048,
    "temperature": 1.0,
    "tools": [{"type": "function", "name": "read", "description": "Read a file", "strict": false,
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}],
    "tool_choice": "required",
    "reasoning": {"effort": "medium", "summary": "detailed"},
    "include": ["reasoning.encrypted_content"]
  })"));
}

TEST_F(OpenAiResponsesTest, ItemsThatCannotBeReplayedAreLeftOutWithTheIdsPairedToThem) {
  HttpTestServer server(testing::sse_script("openai-responses/text.sse"));
  Model model = model_at(server, "o4-mini", true);
  LlmContext context;
  context.messages.emplace_back(UserMessage{.content = "hi"});
  // Reasoning without encrypted content cannot be seen again with store
  // false; the call's item id, paired with it, must go too.
  context.messages.emplace_back(earlier_turn(
      "o4-mini", {ThinkingContent{.thinking = "", .thinking_signature = R"({"type":"reasoning","id":"rs_2","summary":[]})"},
                  TextContent{.text = "no signature"},
                  ToolCall{.id = "call_2|fc_2", .name = "ls", .arguments = Json::object()}}));
  context.messages.emplace_back(ToolResultMessage{.tool_call_id = "call_2|fc_2", .tool_name = "ls", .content = {TextContent{.text = "x"}}});
  // Another model's call carries no item id either.
  context.messages.emplace_back(earlier_turn("gpt-4.1", {ToolCall{.id = "call_3|fc_3", .name = "ls", .arguments = Json::object()}}));
  context.messages.emplace_back(ToolResultMessage{.tool_call_id = "call_3|fc_3", .tool_name = "ls", .content = {ImageContent{.data = "AA==", .mime_type = "image/png"}}});

  testing::Run run = this->run(model, context);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop);
  auto body = sent_body(server);
  EXPECT_EQ(body["input"], nlohmann::json::parse(R"json([
    {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    {"type": "message", "role": "assistant", "status": "completed", "id": "msg_1",
     "content": [{"type": "output_text", "text": "no signature", "annotations": []}]},
    {"type": "function_call", "call_id": "call_2", "name": "ls", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_2", "output": "x"},
    {"type": "function_call", "call_id": "call_3", "name": "ls", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_3", "output": "(see attached image)"},
    {"role": "user", "content": [
      {"type": "input_text", "text": "Attached image(s) from tool result:"},
      {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AA=="}]}
  ])json"));
  // Thinking off: no effort asked for, but a reasoning model still reasons,
  // and only encrypted items can be replayed.
  EXPECT_FALSE(body.contains("reasoning"));
  EXPECT_EQ(body["include"], nlohmann::json({"reasoning.encrypted_content"}));
}

TEST_F(OpenAiResponsesTest, BeforePayloadSeesAndMayReplaceThePayload) {
  HttpTestServer server(testing::sse_script("openai-responses/text.sse"));
  PayloadHook hook = [](const Model&, Json payload) {
    payload["service_tier"] = "flex";
    return payload;
  };
  testing::Run run = this->run(model_at(server), testing::hello_context(), {}, hook);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop);
  EXPECT_EQ(sent_body(server)["service_tier"], "flex");
}

// --- failures -------------------------------------------------------------

TEST_F(OpenAiResponsesTest, AFailedResponseIsClassified) {
  HttpTestServer server(testing::sse_script("openai-responses/failed.sse"));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Partial", "error"}));
  EXPECT_EQ(run.response.message.error_message, "server_error: The model failed to generate a response.");
  EXPECT_TRUE(run.response.retryable);
  EXPECT_EQ(std::get<TextContent>(run.response.message.content.at(0)).text, "Partial");
}

TEST_F(OpenAiResponsesTest, AnErrorEventReportingAContextOverflow) {
  HttpTestServer server(testing::sse_script("openai-responses/error_event.sse"));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "error"}));
  EXPECT_EQ(run.response.message.error_message,
            "context_length_exceeded: Your input exceeds the context window of this model. Please adjust your input "
            "and try again.");
  EXPECT_TRUE(run.response.context_overflow);
  EXPECT_FALSE(run.response.retryable);
}

TEST_F(OpenAiResponsesTest, AMalformedEventIsARetryableError) {
  ScriptedResponse script = testing::truncated_script("openai-responses/text.sse", 5, ScriptedResponse::End::finish);
  script.body.push_back({.bytes = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"del\n\n"});
  HttpTestServer server(script);
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hi", "error"}));
  EXPECT_TRUE(run.response.message.error_message->starts_with("the server sent a malformed event"));
  EXPECT_TRUE(run.response.retryable);
}

TEST_F(OpenAiResponsesTest, ADisconnectMidStreamIsRetryable) {
  HttpTestServer server(testing::truncated_script("openai-responses/text.sse", 6, ScriptedResponse::End::close));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hi", "text_delta 0  there!", "error"}));
  EXPECT_TRUE(run.response.message.error_message->starts_with("the connection broke before the response ended"))
      << *run.response.message.error_message;
  EXPECT_TRUE(run.response.retryable);

  // A reset may take bytes still in flight with it, so only the end is sure.
  HttpTestServer reset(testing::truncated_script("openai-responses/text.sse", 6, ScriptedResponse::End::reset));
  testing::Run broken = this->run(model_at(reset));
  ASSERT_FALSE(broken.events.empty());
  EXPECT_EQ(broken.events.back(), "error");
  EXPECT_TRUE(broken.response.message.error_message->starts_with("the connection broke before the response ended"))
      << *broken.response.message.error_message;
  EXPECT_TRUE(broken.response.retryable);
}

TEST_F(OpenAiResponsesTest, AStreamEndingBeforeTheResponseCompletedIsRetryable) {
  HttpTestServer server(testing::truncated_script("openai-responses/text.sse", 9, ScriptedResponse::End::finish));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hi", "text_delta 0  there!", "text_end 0", "error"}));
  EXPECT_EQ(run.response.message.error_message, "the stream ended before the response was complete");
  EXPECT_TRUE(run.response.retryable);
}

TEST_F(OpenAiResponsesTest, AStallIsAnIdleTimeoutAndRetryable) {
  HttpTestServer server(testing::truncated_script("openai-responses/text.sse", 5, ScriptedResponse::End::stall));
  StreamOptions options;
  options.extra = {{"idleTimeoutMs", 300}};
  testing::Run run = this->run(model_at(server), testing::hello_context(), options);
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hi", "error"}));
  EXPECT_EQ(run.response.message.error_message, "the stream stalled: no bytes from the server for 300 ms");
  EXPECT_TRUE(run.response.retryable);
  EXPECT_GE(run.elapsed, 300ms);
  EXPECT_LT(run.elapsed, 3s);
}

TEST_F(OpenAiResponsesTest, HttpErrorStatusesAreClassified) {
  struct Case {
    ScriptedResponse script;
    std::string message;
    bool retryable;
    std::optional<std::int64_t> retry_after_ms;
    bool overflow;
  };
  std::vector<Case> cases;
  cases.push_back({testing::error_script(429, "Too Many Requests",
                                         R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})",
                                         {{"Retry-After", "2"}}),
                   "HTTP 429 (rate_limit_exceeded): Rate limit reached", true, 2000, false});
  cases.push_back({testing::error_script(500, "Internal Server Error", R"({"error":{"message":"boom","type":"server_error"}})"),
                   "HTTP 500 (server_error): boom", true, std::nullopt, false});
  cases.push_back({testing::error_script(529, "Overloaded", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
                   "HTTP 529 (overloaded_error): Overloaded", true, std::nullopt, false});
  cases.push_back({testing::error_script(
                       400, "Bad Request",
                       R"({"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}})"),
                   "HTTP 400 (context_length_exceeded): Your input exceeds the context window of this model. Please "
                   "adjust your input and try again.",
                   false, std::nullopt, true});
  cases.push_back({testing::error_script(404, "Not Found", R"({"error":{"message":"The model 'gpt-9' does not exist","type":"invalid_request_error","code":"model_not_found"}})"),
                   "HTTP 404 (model_not_found): The model 'gpt-9' does not exist", false, std::nullopt, false});
  for (const Case& c : cases) {
    HttpTestServer server(c.script);
    testing::Run run = this->run(model_at(server));
    EXPECT_EQ(run.events, (Strings{"error"})) << c.message;
    EXPECT_EQ(run.response.message.stop_reason, StopReason::error);
    EXPECT_EQ(run.response.message.error_message, c.message);
    EXPECT_EQ(run.response.retryable, c.retryable) << c.message;
    EXPECT_EQ(run.response.retry_after_ms, c.retry_after_ms) << c.message;
    EXPECT_EQ(run.response.context_overflow, c.overflow) << c.message;
    EXPECT_EQ(run.response.status, c.script.status);
  }
}

// --- cancellation ---------------------------------------------------------

TEST_F(OpenAiResponsesTest, AbortingMidStreamReturnsWithin50Milliseconds) {
  HttpTestServer server(testing::truncated_script("openai-responses/text.sse", 5, ScriptedResponse::End::stall));
  Model model = model_at(server);
  std::stop_source stop;
  std::promise<void> streaming;
  std::promise<std::pair<testing::Run, Clock::time_point>> finished;
  bool signalled = false;
  std::jthread client([&] {
    auto provider = make_openai_responses_provider(kResponsesKey);
    testing::Run run = testing::run_provider(*provider, model, testing::hello_context(), {}, {}, stop.get_token(),
                                             [&](const ProviderEvent& event) {
                                               if (event.type == ProviderEvent::Type::text_delta && !signalled) {
                                                 signalled = true;
                                                 streaming.set_value();
                                               }
                                             });
    finished.set_value({std::move(run), Clock::now()});
  });
  ASSERT_EQ(streaming.get_future().wait_for(5s), std::future_status::ready);
  std::this_thread::sleep_for(20ms);
  auto stop_at = Clock::now();
  stop.request_stop();
  auto [run, returned_at] = finished.get_future().get();
  auto latency = std::chrono::duration<double, std::milli>(returned_at - stop_at).count();

  EXPECT_LT(latency, 50.0);
  EXPECT_EQ(run.response.message.stop_reason, StopReason::aborted);
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hi", "error"}));
  ASSERT_TRUE(server.wait_for_client_close(2000ms)) << "the server never saw the connection closed";
  fmt::print("abort: stream() returned {:.2f} ms after the stop request\n", latency);
}

// --- credentials ----------------------------------------------------------

TEST_F(OpenAiResponsesTest, TheApiKeyAppearsInNoErrorMessageOrEvent) {
  std::vector<ScriptedResponse> scripts;
  scripts.push_back(testing::error_script(
      401, "Unauthorized",
      fmt::format(R"({{"error":{{"message":"Incorrect API key provided: {}.","type":"invalid_request_error","code":"invalid_api_key"}}}})", kResponsesKey)));
  ScriptedResponse in_stream;
  in_stream.headers = {{"Content-Type", "text/event-stream"}};
  in_stream.body = {{.bytes = fmt::format("event: error\ndata: {{\"type\":\"error\",\"code\":\"invalid_api_key\",\"message\":\"key {} revoked\"}}\n\n", kResponsesKey)}};
  scripts.push_back(in_stream);
  ScriptedResponse failed = in_stream;
  failed.body = {{.bytes = fmt::format("data: {{\"type\":\"response.failed\",\"response\":{{\"status\":\"failed\",\"error\":{{\"code\":\"server_error\",\"message\":\"with {}\"}}}}}}\n\n", kResponsesKey)}};
  scripts.push_back(failed);
  ScriptedResponse malformed = in_stream;
  malformed.body = {{.bytes = fmt::format("data: {{{}\n\n", kResponsesKey)}};
  scripts.push_back(malformed);

  for (const ScriptedResponse& script : scripts) {
    HttpTestServer server(script);
    testing::Run run = this->run(model_at(server));
    ASSERT_EQ(run.response.message.stop_reason, StopReason::error);
    const std::string& text = *run.response.message.error_message;
    EXPECT_EQ(text.find(kResponsesKey), std::string::npos) << text;
    EXPECT_NE(text.find("[redacted]"), std::string::npos) << text;
    for (const std::string& event : run.events) EXPECT_EQ(event.find(kResponsesKey), std::string::npos) << event;
  }
}

}  // namespace
}  // namespace cairn
