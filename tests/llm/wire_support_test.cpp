#include "llm/wire_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/http_test_server.hpp"

namespace cairn::wire {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using testing::HttpTestServer;
using testing::ScriptedResponse;

// --- parse_partial_json ---------------------------------------------------

TEST(ParsePartialJson, CompleteJsonIsParsedAsIs) {
  EXPECT_EQ(parse_partial_json(R"({"path":"a.txt","n":3,"ok":true,"x":null,"l":[1,2]})"),
            Json::parse(R"({"path":"a.txt","n":3,"ok":true,"x":null,"l":[1,2]})"));
  EXPECT_EQ(parse_partial_json("  [1, {\"a\": \"b\"}]  "), Json::parse(R"([1,{"a":"b"}])"));
}

TEST(ParsePartialJson, NothingUsableIsAnEmptyObject) {
  for (std::string text : {"", "   ", "{", "{\"pa", "{\"path\"", "{\"path\":", "{\"path\": ", "tr", "nul", "-", "x"}) {
    EXPECT_EQ(parse_partial_json(text), Json::object()) << text;
  }
}

TEST(ParsePartialJson, OpenStringsArraysAndObjectsAreClosed) {
  struct Case {
    std::string text;
    std::string expected;  // JSON
  };
  std::vector<Case> cases = {
      {R"({"path": "src/ma)", R"({"path":"src/ma"})"},
      {R"({"path": "a", )", R"({"path":"a"})"},
      {R"({"path": "a", "li)", R"({"path":"a"})"},
      {R"({"path": "a", "lines": [1, 2)", R"({"path":"a","lines":[1,2]})"},
      {R"({"path": "a", "lines": [1, 2,)", R"({"path":"a","lines":[1,2]})"},
      {R"({"edits": [{"old": "x", "new": "y)", R"({"edits":[{"old":"x","new":"y"}]})"},
      {R"({"a": {"b": {"c": [true, fal)", R"({"a":{"b":{"c":[true]}}})"},
      {R"({"n": 12)", R"({"n":12})"},
      {R"({"n": 12.)", R"({"n":12})"},
      {R"({"n": 12.5e)", R"({"n":12.5})"},
      {R"({"n": -)", R"({})"},
      {R"({"n": 1e5, "m": 2)", R"({"n":1e5,"m":2})"},
      {R"({"ok": tr)", R"({})"},
      {R"({"ok": true)", R"({"ok":true})"},
      {R"({"x": null, "y": [)", R"({"x":null,"y":[]})"},
      {R"([1, "two", {"three": 3)", R"([1,"two",{"three":3}])"},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_partial_json(c.text), Json::parse(c.expected)) << c.text;
}

TEST(ParsePartialJson, EscapesAreDecodedAndNeverCutInHalf) {
  EXPECT_EQ(parse_partial_json(R"({"s": "a\nb\"c)"), Json({{"s", "a\nb\"c"}}));
  EXPECT_EQ(parse_partial_json(R"({"s": "a\)"), Json({{"s", "a"}}));
  EXPECT_EQ(parse_partial_json(R"({"s": "a\u00)"), Json({{"s", "a"}}));
  EXPECT_EQ(parse_partial_json(R"({"s": "a\u00e9b)"), Json({{"s", "a\xC3\xA9" "b"}}));
  // A surrogate pair is one character; its first half alone is not usable yet.
  EXPECT_EQ(parse_partial_json(R"({"s": "x\ud83d)"), Json({{"s", "x"}}));
  EXPECT_EQ(parse_partial_json(R"({"s": "x\ud83d\ude00)"), Json({{"s", "x\xF0\x9F\x98\x80"}}));
}

TEST(ParsePartialJson, AUtf8SequenceCutShortIsLeftOutAndTheResultSerialises) {
  std::string text = "{\"s\": \"caf\xC3";  // the é's second byte has not arrived
  Json parsed = parse_partial_json(text);
  EXPECT_EQ(parsed, Json({{"s", "caf"}}));
  EXPECT_NO_THROW((void)parsed.dump());
  // Bytes no UTF-8 allows end the usable prefix as well.
  Json invalid = parse_partial_json("{\"s\": \"ab\xFF\xFE\", \"t\": 1}");
  EXPECT_EQ(invalid, Json({{"s", "ab"}}));
  EXPECT_NO_THROW((void)invalid.dump());
}

TEST(ParsePartialJson, GarbageAfterAValueEndsThePrefix) {
  EXPECT_EQ(parse_partial_json(R"({"a": 1 "b": 2})"), Json({{"a", 1}}));
  EXPECT_EQ(parse_partial_json(R"({"a": [1 2]})"), Json({{"a", {1}}}));
  EXPECT_EQ(parse_partial_json(R"({"a": 1.2.3})"), Json::object());
}

TEST(ParsePartialJson, EveryPrefixOfARealArgumentStringParsesAndGrows) {
  std::string full = R"({"path": "src/main.cpp", "edits": [{"oldText": "a\tb", "newText": "\u00e9\ud83d\ude00"}], "n": -12.5e3, "dry": false})";
  std::size_t last_size = 0;
  for (std::size_t n = 0; n <= full.size(); ++n) {
    Json parsed;
    ASSERT_NO_THROW(parsed = parse_partial_json(full.substr(0, n))) << n;
    ASSERT_TRUE(parsed.is_object()) << full.substr(0, n);
    ASSERT_NO_THROW((void)parsed.dump()) << n;
    EXPECT_GE(parsed.size(), last_size) << full.substr(0, n);  // keys never disappear as text arrives
    last_size = parsed.size();
  }
  EXPECT_EQ(parse_partial_json(full), Json::parse(full));
}

TEST(ParsePartialJson, DeepNestingDoesNotOverflowTheStack) {
  std::string deep(100000, '[');
  EXPECT_NO_THROW((void)parse_partial_json(deep));
  std::string objects;
  for (int i = 0; i < 50000; ++i) objects += "{\"a\":";
  EXPECT_NO_THROW((void)parse_partial_json(objects));
}

// --- classify_status ------------------------------------------------------

TEST(ClassifyStatus, RetryableStatuses) {
  for (int status : {408, 409, 425, 429, 500, 502, 503, 504, 529}) {
    Failure failure = classify_status(status, {}, "");
    EXPECT_TRUE(failure.retryable) << status;
    EXPECT_FALSE(failure.context_overflow) << status;
    EXPECT_EQ(failure.status, status);
  }
  for (int status : {400, 401, 403, 404, 413, 422}) EXPECT_FALSE(classify_status(status, {}, "").retryable) << status;
}

TEST(ClassifyStatus, TheMessageNamesTheStatusAndTheServersWords) {
  Failure openai = classify_status(
      429, {}, R"({"error":{"message":"Rate limit reached for gpt-4o","type":"requests","param":null,"code":"rate_limit_exceeded"}})");
  EXPECT_EQ(openai.message, "HTTP 429 (rate_limit_exceeded): Rate limit reached for gpt-4o");
  Failure anthropic = classify_status(529, {}, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  EXPECT_EQ(anthropic.message, "HTTP 529 (overloaded_error): Overloaded");
  EXPECT_TRUE(anthropic.retryable);
  EXPECT_EQ(classify_status(404, {}, R"({"error":"model 'llama9' not found"})").message,
            "HTTP 404: model 'llama9' not found");
  EXPECT_EQ(classify_status(502, {}, "<html>Bad gateway</html>\n").message, "HTTP 502: <html>Bad gateway</html>");
  EXPECT_EQ(classify_status(500, {}, "").message, "HTTP 500: Internal Server Error");
  EXPECT_EQ(classify_status(422, {}, R"({"detail":"bad field"})").message, "HTTP 422: bad field");
}

TEST(ClassifyStatus, AnOverlongOrInvalidBodyBecomesABoundedValidMessage) {
  std::string body(100000, 'x');
  body[10] = '\xFF';
  Failure failure = classify_status(500, {}, body);
  EXPECT_LT(failure.message.size(), 2100u);
  EXPECT_NO_THROW((void)Json(failure.message).dump());
}

TEST(ClassifyStatus, ContextOverflowInTheProvidersWordsIsNotRetryable) {
  std::vector<std::string> bodies = {
      R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})",
      R"({"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","code":"context_length_exceeded"}})",
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}})",
      R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}})",
      R"({"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400})",
      R"({"error":"Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input. tokens to keep from the initial prompt is greater than the context length"})",
  };
  for (const auto& body : bodies) {
    Failure failure = classify_status(400, {{"retry-after", "3"}}, body);
    EXPECT_TRUE(failure.context_overflow) << body;
    EXPECT_FALSE(failure.retryable) << body;
    EXPECT_FALSE(failure.retry_after_ms) << body;
  }
  // Even a status that is usually retried.
  EXPECT_FALSE(classify_status(500, {}, R"({"error":{"message":"prompt is too long"}})").retryable);
  // A rate limit about tokens is not an overflow.
  Failure rate = classify_status(429, {}, R"({"error":{"message":"Too many tokens per minute, please slow down"}})");
  EXPECT_FALSE(rate.context_overflow);
  EXPECT_TRUE(rate.retryable);
  EXPECT_FALSE(classify_status(400, {}, R"({"error":{"message":"Invalid value for tools[0]"}})").context_overflow);
}

TEST(ClassifyStatus, ExhaustedQuotaIsNotRetryable) {
  Failure failure = classify_status(
      429, {{"retry-after", "1"}},
      R"({"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}})");
  EXPECT_FALSE(failure.retryable);
  EXPECT_FALSE(failure.retry_after_ms);
}

TEST(ClassifyStatus, RetryAfterInSecondsOrAsADate) {
  EXPECT_EQ(classify_status(429, {{"retry-after", "7"}}, "").retry_after_ms, 7000);
  EXPECT_EQ(classify_status(503, {{"retry-after", "1.5"}}, "").retry_after_ms, 1500);
  EXPECT_EQ(classify_status(429, {{"retry-after-ms", "250"}, {"retry-after", "7"}}, "").retry_after_ms, 250);

  auto now = std::chrono::sys_days{std::chrono::year{2015} / 10 / 21} + 7h + 27min + 30s;
  EXPECT_EQ(classify_status(503, {{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}, "", now).retry_after_ms, 30000);
  EXPECT_EQ(classify_status(503, {{"retry-after", "Wed, 21 Oct 2015 07:00:00 GMT"}}, "", now).retry_after_ms, 0);
  EXPECT_FALSE(classify_status(503, {{"retry-after", "soon"}}, "", now).retry_after_ms);
  EXPECT_FALSE(classify_status(500, {}, "").retry_after_ms);
  // A status that is not retried asks for no wait.
  EXPECT_FALSE(classify_status(400, {{"retry-after", "7"}}, "").retry_after_ms);
}

TEST(ClassifyStatus, TheProvidersResetHeadersOnA429) {
  auto now = std::chrono::sys_days{std::chrono::year{2025} / 1 / 31} + 12h;
  // OpenAI: durations; the exhausted limit decides.
  HttpHeaders openai = {{"x-ratelimit-remaining-requests", "0"},
                        {"x-ratelimit-reset-requests", "1s"},
                        {"x-ratelimit-remaining-tokens", "5000"},
                        {"x-ratelimit-reset-tokens", "6m0s"}};
  EXPECT_EQ(classify_status(429, openai, "", now).retry_after_ms, 1000);
  EXPECT_EQ(classify_status(429, {{"x-ratelimit-reset-tokens", "20ms"}}, "", now).retry_after_ms, 20);
  EXPECT_EQ(classify_status(429, {{"x-ratelimit-reset-tokens", "1m30.5s"}}, "", now).retry_after_ms, 90500);
  // Anthropic: RFC 3339 times.
  HttpHeaders anthropic = {{"anthropic-ratelimit-tokens-remaining", "0"},
                           {"anthropic-ratelimit-tokens-reset", "2025-01-31T12:00:42Z"},
                           {"anthropic-ratelimit-requests-remaining", "10"},
                           {"anthropic-ratelimit-requests-reset", "2025-01-31T12:01:00Z"}};
  EXPECT_EQ(classify_status(429, anthropic, "", now).retry_after_ms, 42000);
  EXPECT_EQ(classify_status(429, {{"anthropic-ratelimit-requests-reset", "2025-01-31T13:00:05.5+01:00"}}, "", now)
                .retry_after_ms,
            5500);
  // Retry-After wins over them; they mean nothing on other statuses.
  EXPECT_EQ(classify_status(429, {{"retry-after", "2"}, {"x-ratelimit-reset-requests", "1s"}}, "", now).retry_after_ms,
            2000);
  EXPECT_FALSE(classify_status(503, {{"x-ratelimit-reset-requests", "1s"}}, "", now).retry_after_ms);
}

// --- classify_transport, classify_stream_error ----------------------------

TEST(ClassifyTransport, ConnectResetAndStallAreRetryable) {
  auto result = [](HttpFailure failure, int status = 0) {
    HttpResult r;
    r.failure = failure;
    r.status = status;
    r.message = "detail";
    return r;
  };
  EXPECT_TRUE(classify_transport(result(HttpFailure::connect_failed)).retryable);
  EXPECT_TRUE(classify_transport(result(HttpFailure::connection_reset, 200)).retryable);
  EXPECT_EQ(classify_transport(result(HttpFailure::connection_reset, 200)).status, 200);
  Failure stall = classify_transport(result(HttpFailure::idle_timeout));
  EXPECT_TRUE(stall.retryable);
  EXPECT_EQ(stall.message, "the stream stalled: detail");
  EXPECT_FALSE(classify_transport(result(HttpFailure::cancelled)).retryable);
  EXPECT_FALSE(classify_transport(result(HttpFailure::other)).retryable);
}

TEST(ClassifyStreamError, OverloadedAndRateLimitsAreRetryableOverflowIsNot) {
  Failure overloaded = classify_stream_error("overloaded_error", "Overloaded");
  EXPECT_TRUE(overloaded.retryable);
  EXPECT_EQ(overloaded.message, "overloaded_error: Overloaded");
  EXPECT_TRUE(classify_stream_error("rate_limit_exceeded", "Rate limit reached").retryable);
  EXPECT_TRUE(classify_stream_error("server_error", "The model failed to generate a response.").retryable);
  EXPECT_TRUE(classify_stream_error("api_error", "Internal server error").retryable);
  EXPECT_TRUE(classify_stream_error("", "The server is overloaded, try again later").retryable);
  Failure overflow = classify_stream_error("context_length_exceeded", "Your input exceeds the context window of this model.");
  EXPECT_TRUE(overflow.context_overflow);
  EXPECT_FALSE(overflow.retryable);
  EXPECT_TRUE(classify_stream_error("invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum").context_overflow);
  EXPECT_FALSE(classify_stream_error("invalid_prompt", "The prompt was flagged").retryable);
  EXPECT_FALSE(classify_stream_error("insufficient_quota", "You exceeded your current quota").retryable);
  EXPECT_EQ(classify_stream_error("", "").message, "the provider reported an error");
  // A server that gives an HTTP status as the code.
  EXPECT_TRUE(classify_stream_error("502", "upstream failed").retryable);
  EXPECT_TRUE(classify_stream_error("429", "slow down").retryable);
  EXPECT_FALSE(classify_stream_error("400", "bad request").retryable);
}

// --- credentials and the request helpers ----------------------------------

TEST(HeaderSecrets, CredentialHeadersAndTheirTokens) {
  auto secrets = header_secrets({{"Authorization", "Bearer sk-1"}, {"x-api-key", "k2"}, {"X-Title", "cairn"},
                                 {"X-Session-Token", "t3"}});
  // In the map's order: "Authorization", "X-Session-Token", "X-Title", "x-api-key".
  EXPECT_EQ(secrets, (std::vector<std::string>{"Bearer sk-1", "sk-1", "t3", "k2"}));
}

TEST(RequestHelpers, UrlsHeadersTimeoutsAndPayloads) {
  EXPECT_EQ(join_url("https://api.openai.com/v1/", "/chat/completions"), "https://api.openai.com/v1/chat/completions");
  EXPECT_EQ(join_url("http://localhost:11434/v1", "responses"), "http://localhost:11434/v1/responses");
  HttpHeaders headers = {{"Authorization", "Bearer a"}, {"x-other", "1"}};
  set_header(headers, "authorization", "Bearer b");
  EXPECT_EQ(headers, (HttpHeaders{{"x-other", "1"}, {"authorization", "Bearer b"}}));

  HttpRequest request;
  apply_transport_options(request, Json::object());
  EXPECT_EQ(request.idle_timeout, kDefaultModelIdleTimeout);
  apply_transport_options(request, {{"idleTimeoutMs", 250}, {"connectTimeoutMs", 1000}});
  EXPECT_EQ(request.idle_timeout, 250ms);
  EXPECT_EQ(request.connect_timeout, 1000ms);

  Json payload = {{"text", "ok \xFF"}};
  EXPECT_EQ(serialize_payload(payload), "{\"text\":\"ok \xEF\xBF\xBD\"}");
  EXPECT_EQ(to_valid_utf8("a\xC3\xA9\xC3"), "a\xC3\xA9\xEF\xBF\xBD");
  // The shared helpers the providers cut and decode text with (cairn/utf8.hpp).
  EXPECT_EQ(utf8_floor("a\xC3\xA9z", 2), 1u);
  EXPECT_EQ(utf8_floor("a\xC3\xA9z", 3), 3u);
  std::size_t length = 0;
  EXPECT_EQ(utf8_decode("\xE2\x82\xAC", 0, length), U'\u20AC');
  EXPECT_EQ(length, 3u);
  EXPECT_EQ(utf8_decode("\xF0\x9F\x98\x80", 0, length), U'\U0001F600');
  EXPECT_EQ(length, 4u);
  EXPECT_EQ(utf8_decode("\xC0\xAF", 0, length), U'\uFFFD');  // overlong: one byte
  EXPECT_EQ(length, 1u);
}

// --- prepare_messages -----------------------------------------------------

Model model_a() {
  Model model;
  model.provider = "openai";
  model.id = "gpt-a";
  model.api = "openai-completions";
  return model;
}

AssistantMessage assistant_with(std::vector<AssistantBlock> content, StopReason reason = StopReason::tool_use,
                           std::string model = "gpt-a") {
  AssistantMessage message;
  message.content = std::move(content);
  message.api = "openai-completions";
  message.provider = "openai";
  message.model = std::move(model);
  message.stop_reason = reason;
  return message;
}

TEST(PrepareMessages, UnfinishedTurnsAreDroppedAndMissingResultsSupplied) {
  std::vector<LlmMessage> messages;
  messages.emplace_back(UserMessage{.content = "hi"});
  messages.emplace_back(assistant_with({ToolCall{.id = "c1", .name = "read"}, ToolCall{.id = "c2", .name = "ls"}}));
  messages.emplace_back(ToolResultMessage{.tool_call_id = "c1", .tool_name = "read"});
  messages.emplace_back(assistant_with({TextContent{.text = "partial"}}, StopReason::error));
  messages.emplace_back(UserMessage{.content = "again"});
  messages.emplace_back(assistant_with({ToolCall{.id = "c3", .name = "ls"}}));

  auto prepared = prepare_messages(messages, model_a());
  ASSERT_EQ(prepared.size(), 6u);
  EXPECT_TRUE(std::holds_alternative<UserMessage>(prepared[0]));
  EXPECT_TRUE(std::holds_alternative<AssistantMessage>(prepared[1]));
  EXPECT_EQ(std::get<ToolResultMessage>(prepared[2]).tool_call_id, "c1");
  const auto& missing = std::get<ToolResultMessage>(prepared[3]);
  EXPECT_EQ(missing.tool_call_id, "c2");
  EXPECT_TRUE(missing.is_error);
  EXPECT_EQ(std::get<TextContent>(missing.content.at(0)).text, "No result provided");
  EXPECT_EQ(std::get<std::string>(std::get<UserMessage>(prepared[4]).content), "again");
  EXPECT_TRUE(std::holds_alternative<AssistantMessage>(prepared[5]));  // its calls are the caller's to answer
}

// After a repair, an assistant message can be a placeholder (not in the
// context) while its calls' results remain: a request holding them would be
// refused by every API.
TEST(PrepareMessages, ResultsWithoutTheirCallAndRepeatedResultsAreLeftOut) {
  std::vector<LlmMessage> messages;
  messages.emplace_back(UserMessage{.content = "hi"});
  messages.emplace_back(ToolResultMessage{.tool_call_id = "lost", .tool_name = "bash"});
  messages.emplace_back(assistant_with({ToolCall{.id = "c1", .name = "read"}}));
  messages.emplace_back(ToolResultMessage{.tool_call_id = "c1", .tool_name = "read"});
  messages.emplace_back(ToolResultMessage{.tool_call_id = "c1", .tool_name = "read"});
  messages.emplace_back(ToolResultMessage{.tool_call_id = "other", .tool_name = "read"});
  messages.emplace_back(UserMessage{.content = "again"});
  messages.emplace_back(ToolResultMessage{.tool_call_id = "c1", .tool_name = "read"});

  auto prepared = prepare_messages(messages, model_a());
  ASSERT_EQ(prepared.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<UserMessage>(prepared[0]));
  EXPECT_TRUE(std::holds_alternative<AssistantMessage>(prepared[1]));
  EXPECT_EQ(std::get<ToolResultMessage>(prepared[2]).tool_call_id, "c1");
  EXPECT_TRUE(std::holds_alternative<UserMessage>(prepared[3]));
}

TEST(PrepareMessages, AnotherModelsThinkingBecomesTextAndItsIdsAreNormalised) {
  std::vector<LlmMessage> messages;
  messages.emplace_back(assistant_with({ThinkingContent{.thinking = "hmm", .thinking_signature = "sig"},
                                   ThinkingContent{.thinking = " "},
                                   ThinkingContent{.thinking = "secret", .redacted = true},
                                   TextContent{.text = "answer", .text_signature = "msg_1"},
                                   ToolCall{.id = "call|fc_long", .name = "read"}},
                                  StopReason::tool_use, "other-model"));
  messages.emplace_back(ToolResultMessage{.tool_call_id = "call|fc_long", .tool_name = "read"});
  auto normalize = [](const std::string& id) { return id.substr(0, id.find('|')); };
  auto prepared = prepare_messages(messages, model_a(), normalize);
  ASSERT_EQ(prepared.size(), 2u);
  const auto& message = std::get<AssistantMessage>(prepared[0]);
  ASSERT_EQ(message.content.size(), 3u);
  EXPECT_EQ(std::get<TextContent>(message.content[0]).text, "hmm");
  EXPECT_FALSE(std::get<TextContent>(message.content[0]).text_signature);
  EXPECT_EQ(std::get<TextContent>(message.content[1]).text, "answer");
  EXPECT_FALSE(std::get<TextContent>(message.content[1]).text_signature);
  EXPECT_EQ(std::get<ToolCall>(message.content[2]).id, "call");
  EXPECT_EQ(std::get<ToolResultMessage>(prepared[1]).tool_call_id, "call");

  // The same model's blocks pass untouched.
  messages[0] = assistant_with({ThinkingContent{.thinking = "hmm", .thinking_signature = "sig"}, ToolCall{.id = "call|fc_long"}});
  prepared = prepare_messages(messages, model_a(), normalize);
  const auto& same = std::get<AssistantMessage>(prepared[0]);
  EXPECT_EQ(std::get<ThinkingContent>(same.content[0]).thinking_signature, "sig");
  EXPECT_EQ(std::get<ToolCall>(same.content[1]).id, "call|fc_long");
}

// --- stream_sse -----------------------------------------------------------

class StreamSseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  }
  static HttpRequest request_to(const HttpTestServer& server) {
    HttpRequest request;
    request.url = server.url("/v1/chat/completions");
    request.body = "{}";
    return request;
  }
};

TEST_F(StreamSseTest, EventsOfA2xxStreamReachTheHandler) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  script.body = {{.bytes = "data: {\"a\":1}\n\ndata: {\"b\""}, {.delay = 5ms, .bytes = ":2}\n\ndata: [DONE]\n\n"}};
  HttpTestServer server(script);
  std::vector<std::string> data;
  SseOutcome outcome = stream_sse(HttpClient{}, request_to(server), [&](const SseEvent& e) {
    data.push_back(e.data);
    return true;
  }, {});
  EXPECT_TRUE(outcome.http.ok()) << outcome.http.message;
  EXPECT_EQ(outcome.http.status, 200);
  EXPECT_FALSE(outcome.stopped_by_handler);
  EXPECT_EQ(data, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"}));
  EXPECT_TRUE(outcome.error_body.empty());
}

TEST_F(StreamSseTest, TheHandlerStopsTheTransferAndItIsNotACancellation) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  script.body = {{.bytes = "data: one\n\ndata: two\n\n"}};
  script.end = ScriptedResponse::End::stall;  // only the stop ends this transfer
  HttpTestServer server(script);
  std::vector<std::string> data;
  auto start = std::chrono::steady_clock::now();
  SseOutcome outcome = stream_sse(HttpClient{}, request_to(server), [&](const SseEvent& e) {
    data.push_back(e.data);
    return false;
  }, {});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_TRUE(outcome.stopped_by_handler);
  EXPECT_EQ(outcome.http.failure, HttpFailure::none) << outcome.http.message;
  EXPECT_EQ(data, (std::vector<std::string>{"one"}));  // nothing after the stop, even from the same piece
  EXPECT_TRUE(server.wait_for_client_close(2000ms));
}

TEST_F(StreamSseTest, AnErrorStatusBodyIsCollectedUpTo64KiB) {
  ScriptedResponse script;
  script.status = 500;
  script.reason = "Internal Server Error";
  script.headers = {{"Content-Type", "text/plain"}};
  script.body = {{.bytes = std::string(40000, 'a')}, {.bytes = std::string(40000, 'b')}};
  script.end = ScriptedResponse::End::stall;  // the cap, not the server, ends it
  HttpTestServer server(script);
  int events = 0;
  SseOutcome outcome = stream_sse(HttpClient{}, request_to(server), [&](const SseEvent&) {
    ++events;
    return true;
  }, {});
  EXPECT_EQ(outcome.http.status, 500);
  EXPECT_EQ(outcome.http.failure, HttpFailure::none) << outcome.http.message;
  EXPECT_EQ(outcome.error_body.size(), 65536u);
  EXPECT_EQ(events, 0);
}

TEST_F(StreamSseTest, A2xxJsonBodyIsNotAStreamUnlessItIsOne) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "application/json"}};
  script.body = {{.bytes = R"({"error":{"message":"nope"}})"}};
  HttpTestServer server(script);
  int events = 0;
  auto count = [&](const SseEvent&) {
    ++events;
    return true;
  };
  SseOutcome outcome = stream_sse(HttpClient{}, request_to(server), count, {});
  EXPECT_EQ(outcome.error_body, R"({"error":{"message":"nope"}})");
  EXPECT_EQ(events, 0);

  script.body = {{.bytes = "data: {\"x\":1}\n\ndata: [DONE]\n\n"}};  // a stream mislabelled by a proxy
  HttpTestServer relabelled(script);
  outcome = stream_sse(HttpClient{}, request_to(relabelled), count, {});
  EXPECT_TRUE(outcome.error_body.empty());
  EXPECT_EQ(events, 2);
}

// Proxies relabel streams and pages alike: what the body begins with decides.
TEST_F(StreamSseTest, A2xxBodyIsAStreamWhenItBeginsAsOneWhateverItsType) {
  int events = 0;
  auto count = [&](const SseEvent&) {
    ++events;
    return true;
  };
  struct Case {
    std::string type, body;
    bool stream;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"text/event-stream", "<!DOCTYPE html>\n<html></html>\n", false},
           {"text/html", "<!DOCTYPE html>\n<html></html>\n", false},
           {"text/event-stream", "{\"error\": \"no\"}", false},
           {"text/event-stream", "ok", false},
           {"text/html", "\xEF\xBB\xBF\n\n: a comment\ndata: 1\n\n", true},
           {"", "event: x\ndata: 1\n\n", true},
           {"text/plain", "retry: 10\nid: 4\ndata: 1\n\n", true},
       }) {
    SCOPED_TRACE(c.type + " " + c.body);
    ScriptedResponse script;
    if (!c.type.empty()) script.headers = {{"Content-Type", c.type}};
    // The first bytes one at a time: the decision waits for enough of them.
    for (char byte : c.body.substr(0, 8)) script.body.push_back({.bytes = std::string(1, byte)});
    if (c.body.size() > 8) script.body.push_back({.bytes = c.body.substr(8)});
    HttpTestServer server(script);
    events = 0;
    SseOutcome outcome = stream_sse(HttpClient{}, request_to(server), count, {});
    EXPECT_TRUE(outcome.http.ok()) << outcome.http.message;
    EXPECT_EQ(outcome.not_event_stream, !c.stream);
    EXPECT_EQ(outcome.error_body, c.stream ? "" : c.body);
    EXPECT_EQ(events, c.stream ? 1 : 0);
  }
}

TEST_F(StreamSseTest, ALineTooLongIsAnSseError) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  script.body = {{.bytes = "data: " + std::string(17 << 20, 'x')}};
  HttpTestServer server(script);
  SseOutcome outcome = stream_sse(HttpClient{}, request_to(server), [](const SseEvent&) { return true; }, {});
  ASSERT_TRUE(outcome.sse_error);
  EXPECT_EQ(outcome.sse_error->code, "sse_line_too_long");
  EXPECT_EQ(outcome.http.failure, HttpFailure::none);
}

TEST_F(StreamSseTest, CancellationIsReportedAsSuch) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  script.body = {{.bytes = "data: one\n\n"}};
  script.end = ScriptedResponse::End::stall;
  HttpTestServer server(script);
  std::stop_source stop;
  SseOutcome outcome = stream_sse(HttpClient{}, request_to(server), [&](const SseEvent&) {
    stop.request_stop();
    return true;
  }, stop.get_token());
  EXPECT_EQ(outcome.http.failure, HttpFailure::cancelled);
  EXPECT_FALSE(outcome.stopped_by_handler);
}

}  // namespace
}  // namespace cairn::wire
