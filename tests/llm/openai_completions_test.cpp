#include "cairn/llm/openai_completions.hpp"

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

constexpr const char* kCompletionsKey = "sk-test-SECRET-0123456789";

class OpenAiCompletionsTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::no_proxy_for_the_test_server(); }

  static Model model_at(const HttpTestServer& server, std::string provider = "openai", std::string id = "gpt-4o") {
    Model model;
    model.provider = std::move(provider);
    model.id = std::move(id);
    model.api = "openai-completions";
    model.base_url = server.url("/v1");
    model.input = {"text", "image"};
    model.prices = {.input = 2.5, .output = 10, .cache_read = 1.25};
    return model;
  }

  static testing::Run run(const Model& model, const LlmContext& context = testing::hello_context(),
                          const StreamOptions& options = {}, const PayloadHook& hook = {}) {
    auto provider = make_openai_completions_provider(kCompletionsKey);
    return testing::run_provider(*provider, model, context, options, hook);
  }

  static nlohmann::json sent_body(const HttpTestServer& server) {
    auto requests = server.requests();
    EXPECT_EQ(requests.size(), 1u);
    return requests.empty() ? nlohmann::json() : nlohmann::json::parse(requests[0].body);
  }
};

// --- streams --------------------------------------------------------------

TEST_F(OpenAiCompletionsTest, PlainTextStreamsAsDeltasAndTheLastChunkCarriesUsage) {
  HttpTestServer server(testing::sse_script("openai-completions/text.sse"));
  testing::Run run = this->run(model_at(server));

  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hello", "text_delta 0 , wörld",
                                 "text_delta 0 !", "text_end 0", "done"}));
  const AssistantMessage& message = run.response.message;
  EXPECT_EQ(message.stop_reason, StopReason::stop);
  EXPECT_FALSE(message.error_message);
  ASSERT_EQ(message.content.size(), 1u);
  EXPECT_EQ(std::get<TextContent>(message.content[0]).text, "Hello, wörld!");
  EXPECT_EQ(message.api, "openai-completions");
  EXPECT_EQ(message.provider, "openai");
  EXPECT_EQ(message.model, "gpt-4o");
  EXPECT_GT(message.timestamp, 0);
  // prompt_tokens 1200 holds the 1024 cached ones.
  EXPECT_EQ(message.usage.input, 176);
  EXPECT_EQ(message.usage.cache_read, 1024);
  EXPECT_EQ(message.usage.output, 46);
  EXPECT_EQ(message.usage.cache_write, 0);
  EXPECT_EQ(message.usage.total_tokens, 1246);
  EXPECT_DOUBLE_EQ(message.usage.cost.input, 176 * 2.5 / 1e6);
  EXPECT_DOUBLE_EQ(message.usage.cost.output, 46 * 10 / 1e6);
  EXPECT_DOUBLE_EQ(message.usage.cost.cache_read, 1024 * 1.25 / 1e6);
  EXPECT_DOUBLE_EQ(message.usage.cost.total, message.usage.cost.input + message.usage.cost.output + message.usage.cost.cache_read);
  EXPECT_EQ(run.response.status, 200);
  EXPECT_EQ(run.response.headers.at("x-request-id"), "req_test");
  EXPECT_FALSE(run.response.retryable);

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  EXPECT_EQ(requests[0].header("authorization"), fmt::format("Bearer {}", kCompletionsKey));
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  EXPECT_EQ(requests[0].header("accept"), "text/event-stream");
  auto body = nlohmann::json::parse(requests[0].body);
  EXPECT_EQ(body["model"], "gpt-4o");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"], nlohmann::json({{"include_usage", true}}));
  EXPECT_EQ(body["messages"], nlohmann::json::parse(R"([{"role":"system","content":"You are terse."},
                                                        {"role":"user","content":"Say hello."}])"));
}

TEST_F(OpenAiCompletionsTest, ThinkingStreamsFromReasoningContentAndIsKeptForReplay) {
  HttpTestServer server(testing::sse_script("openai-completions/reasoning_content.sse"));
  Model model = model_at(server, "deepseek", "deepseek-reasoner");
  model.reasoning = true;
  testing::Run run = this->run(model);

  EXPECT_EQ(run.events, (Strings{"start", "thinking_start 0", "thinking_delta 0 9.11 has",
                                 "thinking_delta 0  fewer tenths.", "thinking_end 0", "text_start 1",
                                 "text_delta 1 9.9 is", "text_delta 1  larger.", "text_end 1", "done"}));
  const AssistantMessage& message = run.response.message;
  ASSERT_EQ(message.content.size(), 2u);
  const auto& thinking = std::get<ThinkingContent>(message.content[0]);
  EXPECT_EQ(thinking.thinking, "9.11 has fewer tenths.");
  EXPECT_EQ(thinking.thinking_signature, "reasoning_content");  // the field to replay it in
  EXPECT_EQ(std::get<TextContent>(message.content[1]).text, "9.9 is larger.");
  EXPECT_EQ(message.stop_reason, StopReason::stop);
  EXPECT_EQ(message.usage.input, 18);
  EXPECT_EQ(message.usage.output, 60);
  EXPECT_EQ(message.usage.total_tokens, 78);
}

TEST_F(OpenAiCompletionsTest, ParallelToolCallsWithArgumentsSplitAcrossChunks) {
  HttpTestServer server(testing::sse_script("openai-completions/parallel_tool_calls.sse"));
  testing::Run run = this->run(model_at(server));

  // The calls stay open until the choice finishes: a server may interleave
  // their fragments (see the next test).
  EXPECT_EQ(run.events, (Strings{"start", "toolcall_start 0", "toolcall_delta 0 {\"lo",
                                 "toolcall_delta 0 cation\": \"Par", "toolcall_delta 0 is, France\"}",
                                 "toolcall_start 1", "toolcall_delta 1 {\"zone\": [\"CET\", ",
                                 "toolcall_delta 1 \"UTC\"]}", "toolcall_end 0", "toolcall_end 1", "done"}));
  // The arguments as they were while they streamed.
  std::vector<Json> expected_partials = {Json::object(), {{"location", "Par"}}, {{"location", "Paris, France"}},
                                         {{"zone", {"CET"}}}, {{"zone", {"CET", "UTC"}}}};
  EXPECT_EQ(run.partial_arguments, expected_partials);

  const AssistantMessage& message = run.response.message;
  EXPECT_EQ(message.stop_reason, StopReason::tool_use);
  ASSERT_EQ(message.content.size(), 2u);
  const auto& weather = std::get<ToolCall>(message.content[0]);
  EXPECT_EQ(weather.id, "call_DdmO9pD3xa9XTPNJ32zg2hcA");
  EXPECT_EQ(weather.name, "get_weather");
  EXPECT_EQ(weather.arguments, Json({{"location", "Paris, France"}}));
  const auto& time = std::get<ToolCall>(message.content[1]);
  EXPECT_EQ(time.id, "call_ABQRmdfsVF8pxYx3GdwMHWgE");
  EXPECT_EQ(time.name, "get_time");
  EXPECT_EQ(time.arguments, Json({{"zone", {"CET", "UTC"}}}));
  EXPECT_EQ(message.usage.input, 80);
  EXPECT_EQ(message.usage.output, 40);
}

TEST_F(OpenAiCompletionsTest, InterleavedToolCallFragmentsAreToldApartByIndex) {
  HttpTestServer server(testing::sse_script("openai-completions/interleaved_tool_calls.sse"));
  testing::Run run = this->run(model_at(server, "local", "qwen3"));

  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Checking both.", "text_end 0",
                                 "toolcall_start 1", "toolcall_delta 1 {\"path\":", "toolcall_start 2",
                                 "toolcall_delta 2 {\"dir\":", "toolcall_delta 1  \"a.txt\"}",
                                 "toolcall_delta 2  \"src\"}", "toolcall_end 1", "toolcall_end 2", "done"}));
  const AssistantMessage& message = run.response.message;
  EXPECT_EQ(message.stop_reason, StopReason::tool_use);
  EXPECT_EQ(std::get<ToolCall>(message.content[1]).arguments, Json({{"path", "a.txt"}}));
  EXPECT_EQ(std::get<ToolCall>(message.content[2]).arguments, Json({{"dir", "src"}}));
  EXPECT_EQ(message.usage.total_tokens, 0);  // this server sent no usage
}

// --- the request ----------------------------------------------------------

TEST_F(OpenAiCompletionsTest, TheRequestCarriesTheWholeContext) {
  HttpTestServer server(testing::sse_script("openai-completions/text.sse"));
  Model model = model_at(server);
  model.reasoning = true;

  LlmContext context;
  context.system_prompt = "You are terse.";
  context.messages.emplace_back(UserMessage{
      .content = std::vector<UserBlock>{TextContent{.text = "What is in this image?"},
                                        ImageContent{.data = "aGVsbG8=", .mime_type = "image/png"}}});
  AssistantMessage earlier;
  earlier.api = "openai-completions";
  earlier.provider = "openai";
  earlier.model = "gpt-4o";
  earlier.stop_reason = StopReason::tool_use;
  earlier.content = {ThinkingContent{.thinking = "look closely", .thinking_signature = "reasoning_content"},
                     TextContent{.text = "A cat."},
                     ToolCall{.id = "call_1", .name = "read", .arguments = {{"path", "cat.txt"}}}};
  context.messages.emplace_back(earlier);
  context.messages.emplace_back(ToolResultMessage{
      .tool_call_id = "call_1",
      .tool_name = "read",
      .content = {TextContent{.text = "meow"}, ImageContent{.data = "Y2F0", .mime_type = "image/jpeg"}}});
  context.messages.emplace_back(UserMessage{.content = "Thanks"});
  context.tools.push_back(ToolDefinition{
      .name = "read",
      .description = "Read a file",
      .parameters = Json::parse(R"({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]})")});
  StreamOptions options;
  options.max_tokens = 1024;
  options.temperature = 0.25;
  options.thinking_level = ThinkingLevel::high;
  options.extra = {{"toolChoice", "auto"}};

  testing::Run run = this->run(model, context, options);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop) << run.response.message.error_message.value_or("");
  EXPECT_EQ(sent_body(server), nlohmann::json::parse(R"({
    "model": "gpt-4o",
    "messages": [
      {"role": "developer", "content": "You are terse."},
      {"role": "user", "content": [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]},
      {"role": "assistant", "content": "A cat.", "reasoning_content": "look closely",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "read", "arguments": "{\"path\":\"cat.txt\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "meow"},
      {"role": "user", "content": [
        {"type": "text", "text": "Attached image(s) from tool result:"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,Y2F0"}}]},
      {"role": "user", "content": "Thanks"}
    ],
    "stream": true,
    "stream_options": {"include_usage": true},
    "store": false,
    "max_completion_tokens": 1024,
    "temperature": 0.25,
    "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
               "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}],
    "tool_choice": "auto",
    "reasoning_effort": "high"
  })"));
}

TEST_F(OpenAiCompletionsTest, ACompatibleServersQuirksComeFromCompat) {
  HttpTestServer server(testing::sse_script("openai-completions/text.sse"));
  Model model = model_at(server, "ollama", "qwen3:8b");
  model.reasoning = true;
  model.input = {"text"};
  model.compat = {{"supportsUsageInStreaming", false},
                  {"thinkingFormat", "qwen"},
                  {"requiresToolResultName", true},
                  {"requiresAssistantAfterToolResult", true}};

  LlmContext context;
  context.system_prompt = "sys";
  context.messages.emplace_back(UserMessage{
      .content = std::vector<UserBlock>{TextContent{.text = "look"}, ImageContent{.data = "aGk=", .mime_type = "image/png"}}});
  AssistantMessage call;
  call.api = "openai-completions";
  call.provider = "ollama";
  call.model = "qwen3:8b";
  call.stop_reason = StopReason::tool_use;
  call.content = {ToolCall{.id = "c1", .name = "ls", .arguments = Json::object()}};
  context.messages.emplace_back(call);
  context.messages.emplace_back(ToolResultMessage{.tool_call_id = "c1", .tool_name = "ls", .content = {TextContent{.text = "a b"}}});
  context.messages.emplace_back(UserMessage{.content = "next"});
  StreamOptions options;
  options.max_tokens = 100;

  testing::Run run = this->run(model, context, options);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop) << run.response.message.error_message.value_or("");
  EXPECT_EQ(sent_body(server), nlohmann::json::parse(R"({
    "model": "qwen3:8b",
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": [{"type": "text", "text": "look"}]},
      {"role": "assistant", "content": "",
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "a b", "name": "ls"},
      {"role": "assistant", "content": "I have processed the tool results."},
      {"role": "user", "content": "next"}
    ],
    "stream": true,
    "max_tokens": 100,
    "enable_thinking": false
  })"));
}

TEST_F(OpenAiCompletionsTest, AnotherModelsTurnsAreReplayedAsThisOneTakesThem) {
  HttpTestServer server(testing::sse_script("openai-completions/text.sse"));
  LlmContext context;
  AssistantMessage responses;  // from the Responses API: signatures and "call|item" ids
  responses.api = "openai-responses";
  responses.provider = "openai";
  responses.model = "o4-mini";
  responses.stop_reason = StopReason::tool_use;
  responses.content = {ThinkingContent{.thinking = "plan", .thinking_signature = R"({"type":"reasoning"})"},
                       TextContent{.text = "ok", .text_signature = R"({"v":1,"id":"msg_1"})"},
                       ToolCall{.id = "call_9|fc_9", .name = "ls", .arguments = Json::object()}};
  context.messages.emplace_back(UserMessage{.content = "hi"});
  context.messages.emplace_back(responses);
  AssistantMessage failed;  // an unfinished turn is not replayed
  failed.stop_reason = StopReason::error;
  failed.content = {TextContent{.text = "half"}};
  context.messages.emplace_back(failed);
  context.messages.emplace_back(UserMessage{.content = "go on"});

  testing::Run run = this->run(model_at(server), context);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop);
  // Its thinking is only words here, its ids lose the Responses API's item
  // part, its unanswered call gets a result, the failed turn is left out.
  EXPECT_EQ(sent_body(server)["messages"], nlohmann::json::parse(R"([
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "plan\n\nok",
     "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_9", "content": "No result provided"},
    {"role": "user", "content": "go on"}
  ])"));
}

TEST_F(OpenAiCompletionsTest, HeadersComeFromTheKeyTheModelAndTheOptions) {
  HttpTestServer server(testing::sse_script("openai-completions/text.sse"));
  Model model = model_at(server);
  model.headers = {{"X-Title", "cairn"}, {"HTTP-Referer", "https://example.org"}};
  StreamOptions options;
  options.headers = {{"x-title", "cairn-test"}, {"X-Trace", "t-1"}};
  testing::Run run = this->run(model, testing::hello_context(), options);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop);
  auto request = server.requests().at(0);
  EXPECT_EQ(request.header("authorization"), fmt::format("Bearer {}", kCompletionsKey));
  EXPECT_EQ(request.header("x-title"), "cairn-test");  // the caller's header wins
  EXPECT_EQ(request.header("http-referer"), "https://example.org");
  EXPECT_EQ(request.header("x-trace"), "t-1");

  // A local server needs no key, and gets none.
  HttpTestServer local(testing::sse_script("openai-completions/text.sse"));
  auto provider = make_openai_completions_provider("");
  testing::Run keyless = testing::run_provider(*provider, model_at(local, "llama.cpp", "any"), testing::hello_context());
  ASSERT_EQ(keyless.response.message.stop_reason, StopReason::stop);
  EXPECT_FALSE(local.requests().at(0).header("authorization"));
}

TEST_F(OpenAiCompletionsTest, BeforePayloadSeesAndMayReplaceThePayload) {
  HttpTestServer server(testing::sse_script("openai-completions/text.sse"));
  StreamOptions options;
  options.temperature = 0.5;
  std::string seen_model;
  Json seen;
  PayloadHook hook = [&](const Model& model, Json payload) {
    seen_model = model.id;
    seen = payload;
    payload.erase("temperature");
    payload["user"] = "u-1";
    return payload;
  };
  testing::Run run = this->run(model_at(server), testing::hello_context(), options, hook);
  ASSERT_EQ(run.response.message.stop_reason, StopReason::stop);
  EXPECT_EQ(seen_model, "gpt-4o");
  EXPECT_EQ(seen["temperature"], 0.5);
  auto body = sent_body(server);
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body["user"], "u-1");
}

// --- failures -------------------------------------------------------------

TEST_F(OpenAiCompletionsTest, AMalformedChunkIsARetryableError) {
  HttpTestServer server(testing::sse_script("openai-completions/malformed_chunk.sse"));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hello", "error"}));
  const AssistantMessage& message = run.response.message;
  EXPECT_EQ(message.stop_reason, StopReason::error);
  ASSERT_TRUE(message.error_message);
  EXPECT_TRUE(message.error_message->starts_with("the server sent a malformed chunk: {\"id\":\"chatcmpl-m\""))
      << *message.error_message;
  EXPECT_TRUE(run.response.retryable);
  EXPECT_EQ(run.response.status, 200);  // the response had begun
  EXPECT_EQ(std::get<TextContent>(message.content.at(0)).text, "Hello");  // what streamed is kept
}

TEST_F(OpenAiCompletionsTest, AnErrorInsideTheStreamIsClassified) {
  HttpTestServer server(testing::sse_script("openai-completions/stream_error.sse"));
  testing::Run run = this->run(model_at(server, "openrouter", "anthropic/claude-sonnet-4"));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Let me", "error"}));
  EXPECT_EQ(run.response.message.error_message, "502: Provider returned error: upstream overloaded");
  EXPECT_TRUE(run.response.retryable);
}

TEST_F(OpenAiCompletionsTest, ADisconnectMidStreamIsRetryable) {
  HttpTestServer server(testing::truncated_script("openai-completions/text.sse", 3, ScriptedResponse::End::close));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hello", "text_delta 0 , wörld", "error"}));
  EXPECT_EQ(run.response.message.stop_reason, StopReason::error);
  EXPECT_TRUE(run.response.message.error_message->starts_with("the connection broke before the response ended"))
      << *run.response.message.error_message;
  EXPECT_TRUE(run.response.retryable);
  EXPECT_EQ(std::get<TextContent>(run.response.message.content.at(0)).text, "Hello, wörld");
}

TEST_F(OpenAiCompletionsTest, AStreamThatEndsWithoutFinishingIsRetryable) {
  HttpTestServer server(testing::truncated_script("openai-completions/text.sse", 3, ScriptedResponse::End::finish));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hello", "text_delta 0 , wörld", "error"}));
  EXPECT_EQ(run.response.message.error_message, "the stream ended before the response was complete");
  EXPECT_TRUE(run.response.retryable);
}

TEST_F(OpenAiCompletionsTest, ABreakAfterTheChoiceFinishedKeepsTheResponse) {
  HttpTestServer server(testing::truncated_script("openai-completions/text.sse", 5, ScriptedResponse::End::close));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hello", "text_delta 0 , wörld",
                                 "text_delta 0 !", "text_end 0", "done"}));
  EXPECT_EQ(run.response.message.stop_reason, StopReason::stop);
  EXPECT_EQ(run.response.message.usage.total_tokens, 0);  // the usage chunk never came
}

TEST_F(OpenAiCompletionsTest, AStallIsAnIdleTimeoutAndRetryable) {
  HttpTestServer server(testing::truncated_script("openai-completions/text.sse", 2, ScriptedResponse::End::stall));
  StreamOptions options;
  options.extra = {{"idleTimeoutMs", 300}};
  testing::Run run = this->run(model_at(server), testing::hello_context(), options);
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hello", "error"}));
  EXPECT_EQ(run.response.message.error_message, "the stream stalled: no bytes from the server for 300 ms");
  EXPECT_TRUE(run.response.retryable);
  EXPECT_GE(run.elapsed, 300ms);
  EXPECT_LT(run.elapsed, 3s);
  EXPECT_TRUE(server.wait_for_client_close(2000ms));
}

TEST_F(OpenAiCompletionsTest, A429WithRetryAfterIsRetryableAfterTheDelay) {
  HttpTestServer server(testing::error_script(
      429, "Too Many Requests",
      R"({"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}})",
      {{"Retry-After", "7"}, {"x-ratelimit-remaining-requests", "0"}, {"x-ratelimit-reset-requests", "120ms"}}));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"error"}));
  EXPECT_EQ(run.response.message.stop_reason, StopReason::error);
  EXPECT_EQ(run.response.message.error_message,
            "HTTP 429 (rate_limit_exceeded): Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, "
            "Used 500, Requested 1.");
  EXPECT_TRUE(run.response.retryable);
  EXPECT_EQ(run.response.retry_after_ms, 7000);
  EXPECT_EQ(run.response.status, 429);
  EXPECT_FALSE(run.response.context_overflow);
  EXPECT_EQ(run.response.headers.at("retry-after"), "7");
}

TEST_F(OpenAiCompletionsTest, A500IsRetryable) {
  HttpTestServer server(testing::error_script(
      500, "Internal Server Error",
      R"({"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}})"));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"error"}));
  EXPECT_EQ(run.response.message.error_message,
            "HTTP 500 (server_error): The server had an error while processing your request. Sorry about that!");
  EXPECT_TRUE(run.response.retryable);
  EXPECT_FALSE(run.response.retry_after_ms);
  EXPECT_EQ(run.response.status, 500);
}

TEST_F(OpenAiCompletionsTest, A529OverloadedIsRetryable) {
  HttpTestServer server(testing::error_script(529, "Overloaded",
                                              R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"error"}));
  EXPECT_EQ(run.response.message.error_message, "HTTP 529 (overloaded_error): Overloaded");
  EXPECT_TRUE(run.response.retryable);
  EXPECT_EQ(run.response.status, 529);
}

TEST_F(OpenAiCompletionsTest, A400ContextOverflowIsReportedAsSuchAndNotRetryable) {
  HttpTestServer server(testing::error_script(
      400, "Bad Request",
      R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})"));
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"error"}));
  EXPECT_TRUE(run.response.context_overflow);
  EXPECT_FALSE(run.response.retryable);
  EXPECT_EQ(run.response.status, 400);
  EXPECT_TRUE(run.response.message.error_message->starts_with("HTTP 400 (context_length_exceeded): This model's maximum"));
}

TEST_F(OpenAiCompletionsTest, AnUnreachableServerIsRetryable) {
  Model model;
  model.provider = "local";
  model.id = "m";
  model.api = "openai-completions";
  model.base_url = fmt::format("http://127.0.0.1:{}/v1", HttpTestServer::closed_port());
  testing::Run run = this->run(model);
  EXPECT_EQ(run.events, (Strings{"error"}));
  EXPECT_TRUE(run.response.retryable);
  EXPECT_TRUE(run.response.message.error_message->starts_with("could not reach the server"));
}

TEST_F(OpenAiCompletionsTest, AContentFilterStopIsAnError) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  script.body = {{.bytes = R"(data: {"choices":[{"index":0,"delta":{"content":"I can"},"finish_reason":null}]})"
                           "\n\n"
                           R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]})"
                           "\n\ndata: [DONE]\n\n"}};
  HttpTestServer server(script);
  testing::Run run = this->run(model_at(server));
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 I can", "text_end 0", "error"}));
  EXPECT_EQ(run.response.message.error_message, "the response was stopped by the provider's content filter");
  EXPECT_FALSE(run.response.retryable);
}

TEST_F(OpenAiCompletionsTest, AJsonAnswerInsteadOfAStreamIsAnError) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "application/json"}};
  script.body = {{.bytes = R"({"error":{"message":"model is loading","type":"unavailable_error"}})"}};
  HttpTestServer server(script);
  testing::Run run = this->run(model_at(server, "local", "m"));
  EXPECT_EQ(run.events, (Strings{"error"}));
  EXPECT_EQ(run.response.message.error_message, "unavailable_error: model is loading");
  EXPECT_TRUE(run.response.retryable);
  EXPECT_EQ(run.response.status, 200);
}

// --- cancellation ---------------------------------------------------------

TEST_F(OpenAiCompletionsTest, AbortingMidStreamReturnsWithin50Milliseconds) {
  HttpTestServer server(testing::truncated_script("openai-completions/text.sse", 2, ScriptedResponse::End::stall));
  Model model = model_at(server);
  std::stop_source stop;
  std::promise<void> streaming;
  std::promise<std::pair<testing::Run, Clock::time_point>> finished;
  bool signalled = false;
  std::jthread client([&] {
    auto provider = make_openai_completions_provider(kCompletionsKey);
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
  std::this_thread::sleep_for(20ms);  // let the client settle into waiting for the next byte
  auto stop_at = Clock::now();
  stop.request_stop();
  auto [run, returned_at] = finished.get_future().get();
  auto latency = std::chrono::duration<double, std::milli>(returned_at - stop_at).count();

  EXPECT_LT(latency, 50.0);
  EXPECT_EQ(run.response.message.stop_reason, StopReason::aborted);
  EXPECT_EQ(run.response.message.error_message, "aborted");
  EXPECT_FALSE(run.response.retryable);
  EXPECT_EQ(run.events, (Strings{"start", "text_start 0", "text_delta 0 Hello", "error"}));
  ASSERT_TRUE(server.wait_for_client_close(2000ms)) << "the server never saw the connection closed";
  fmt::print("abort: stream() returned {:.2f} ms after the stop request\n", latency);
}

TEST_F(OpenAiCompletionsTest, AStopRequestedBeforehandSendsNothing) {
  HttpTestServer server(testing::sse_script("openai-completions/text.sse"));
  std::stop_source stop;
  stop.request_stop();
  auto provider = make_openai_completions_provider(kCompletionsKey);
  testing::Run run = testing::run_provider(*provider, model_at(server), testing::hello_context(), {}, {}, stop.get_token());
  EXPECT_EQ(run.response.message.stop_reason, StopReason::aborted);
  EXPECT_EQ(run.events, (Strings{"error"}));
  EXPECT_TRUE(server.requests().empty());
}

// --- credentials ----------------------------------------------------------

TEST_F(OpenAiCompletionsTest, TheApiKeyAppearsInNoErrorMessageOrEvent) {
  const std::string header_secret = "hdr-SECRET-4242";
  std::vector<ScriptedResponse> scripts;
  scripts.push_back(testing::error_script(
      401, "Unauthorized",
      fmt::format(R"({{"error":{{"message":"Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}})",
                  kCompletionsKey)));
  scripts.push_back(testing::error_script(500, "Internal Server Error",
                                          fmt::format("upstream said Authorization: Bearer {} and x-api-key {}", kCompletionsKey,
                                                      header_secret)));
  ScriptedResponse in_stream;
  in_stream.headers = {{"Content-Type", "text/event-stream"}};
  in_stream.body = {{.bytes = fmt::format("data: {{\"error\":{{\"message\":\"bad key {}\",\"type\":\"invalid_request_error\"}}}}\n\n", kCompletionsKey)}};
  scripts.push_back(in_stream);
  ScriptedResponse malformed = in_stream;
  malformed.body = {{.bytes = fmt::format("data: {{\"oops {} {}\n\n", kCompletionsKey, header_secret)}};
  scripts.push_back(malformed);

  for (std::size_t i = 0; i < scripts.size(); ++i) {
    const ScriptedResponse& script = scripts[i];
    HttpTestServer server(script);
    Model model = model_at(server);
    model.headers = {{"x-api-key", header_secret}};
    testing::Run run = this->run(model);
    ASSERT_EQ(run.response.message.stop_reason, StopReason::error);
    ASSERT_TRUE(run.response.message.error_message);
    const std::string& text = *run.response.message.error_message;
    EXPECT_EQ(text.find(kCompletionsKey), std::string::npos) << text;
    EXPECT_EQ(text.find(header_secret), std::string::npos) << text;
    EXPECT_NE(text.find("[redacted]"), std::string::npos) << text;  // the server did echo it
    for (const std::string& event : run.events) {
      EXPECT_EQ(event.find(kCompletionsKey), std::string::npos) << event;
      EXPECT_EQ(event.find(header_secret), std::string::npos) << event;
    }
    // The key went where it belongs.
    EXPECT_EQ(server.requests().at(0).header("authorization"), fmt::format("Bearer {}", kCompletionsKey));
  }
}

}  // namespace
}  // namespace cairn
