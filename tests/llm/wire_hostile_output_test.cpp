// Each wire provider against what a hostile or broken model or server sends:
// tool arguments that are not a JSON object (a call all the same, its text
// kept and sent back), arguments and text long enough that reporting every
// fragment would cost the square of their size, nesting past the limit, a
// 200 that is not an event stream, and a key too short to redact.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "llm/tool_arguments.hpp"
#include "cairn/llm/wire_providers.hpp"
#include "llm/provider_test_support.hpp"
#include "llm/wire_streams.hpp"

namespace cairn::testing {
namespace {

using namespace std::chrono_literals;
using Strings = std::vector<std::string>;

constexpr const char* kHostileKey = "sk-hostile-output-5d1e9a";

std::string api_case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// The events in pieces of about 4 KiB, as a server's writes would be.
ScriptedResponse stream_script(const std::vector<std::string>& events) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  std::string piece;
  for (const std::string& event : events) {
    piece += event;
    if (piece.size() >= 4096) script.body.push_back({.bytes = std::exchange(piece, {})});
  }
  if (!piece.empty()) script.body.push_back({.bytes = std::move(piece)});
  return script;
}

ScriptedResponse body_script(std::string content_type, std::string body) {
  ScriptedResponse script;
  if (!content_type.empty()) script.headers = {{"Content-Type", std::move(content_type)}};
  script.body = {{.bytes = std::move(body)}};
  script.framing = ScriptedResponse::Framing::content_length;
  return script;
}

// The deltas of the events of `type` for content index 0, in order.
Strings deltas_of(const testing::Run& run, const std::string& type) {
  Strings deltas;
  const std::string prefix = type + " 0 ";
  for (const std::string& event : run.events) {
    if (event.starts_with(prefix)) deltas.push_back(event.substr(prefix.size()));
  }
  return deltas;
}

std::string joined_pieces(const Strings& pieces) {
  std::string out;
  for (const std::string& piece : pieces) out += piece;
  return out;
}

// Arguments of a write call whose text is about `size` bytes.
std::string write_arguments(std::size_t size) {
  std::string content;
  while (content.size() < size) content += "line \"quoted\" and a tab\there\n";
  return Json{{"path", "big.txt"}, {"content", content}}.dump();
}

class WireHostileOutputTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { no_proxy_for_the_test_server(); }

  const std::string& api() const { return GetParam(); }

  Model model_at(const HttpTestServer& server) const {
    Model model{.provider = "wire", .id = "test-model", .api = api(), .context_window = 200000, .max_tokens = 4096};
    model.base_url = server.url("/v1");
    return model;
  }

  testing::Run run(const HttpTestServer& server, const LlmContext& context = hello_context(), std::string key = kHostileKey) const {
    auto provider = make_wire_provider(api(), std::move(key));
    EXPECT_TRUE(provider);
    return run_provider(*provider, model_at(server), context);
  }

  // What the next request sends back for the call the model made: the
  // chat completions' function.arguments, the responses' arguments (both
  // strings), or anthropic's input (an object).
  Json sent_back(const HttpTestServer& server) const {
    auto requests = server.requests();
    EXPECT_EQ(requests.size(), 1u);
    if (requests.empty()) return nullptr;
    Json body = Json::parse(requests[0].body);
    if (api() == "openai-completions") {
      for (const Json& message : body["messages"]) {
        if (message.contains("tool_calls")) return message["tool_calls"][0]["function"]["arguments"];
      }
    } else if (api() == "openai-responses") {
      for (const Json& item : body["input"]) {
        if (item.value("type", "") == "function_call") return item["arguments"];
      }
    } else {
      for (const Json& message : body["messages"]) {
        if (message["role"] != "assistant" || !message["content"].is_array()) continue;
        for (const Json& block : message["content"]) {
          if (block["type"] == "tool_use") return block["input"];
        }
      }
    }
    ADD_FAILURE() << "no tool call in " << requests[0].body;
    return nullptr;
  }
};

// --- arguments that are not a JSON object ---------------------------------

TEST_P(WireHostileOutputTest, ArgumentsThatAreNotAnObjectAreACallWithTheTextAsSent) {
  for (std::string text : {R"({"path": "a)", "[1]", R"("x")", "3", R"({"a": 1} and more)", "not json at all"}) {
    SCOPED_TRACE(text);
    HttpTestServer server(stream_script(stream_in(api(), {.arguments = text, .piece = 4})));
    testing::Run first = run(server);
    const AssistantMessage& message = first.response.message;
    EXPECT_EQ(message.stop_reason, StopReason::tool_use) << message.error_message.value_or("");
    EXPECT_FALSE(message.error_message);
    ASSERT_EQ(message.content.size(), 1u);
    const auto& call = std::get<ToolCall>(message.content[0]);
    EXPECT_EQ(call.name, "write");
    EXPECT_EQ(call.arguments, Json::object());
    EXPECT_EQ(call.raw_arguments, text);
    ASSERT_GE(first.events.size(), 2u);
    EXPECT_EQ(first.events[first.events.size() - 2], "toolcall_end 0");
    EXPECT_EQ(first.events.back(), "done");
    EXPECT_EQ(joined_pieces(deltas_of(first, "toolcall_delta")), text);

    // The conversation goes on: the call with its error result.
    LlmContext context = hello_context();
    context.messages.emplace_back(message);
    context.messages.emplace_back(ToolResultMessage{
        .tool_call_id = call.id,
        .tool_name = call.name,
        .content = {TextContent{.text = "arguments are not valid JSON: " + tool_arguments_problem(text)}},
        .is_error = true});
    HttpTestServer next(stream_script(stream_in(api(), {.text = "Sorry."})));
    testing::Run second = run(next, context);
    EXPECT_EQ(second.response.message.stop_reason, StopReason::stop) << second.response.message.error_message.value_or("");
    EXPECT_EQ(sent_back(next), api() == "anthropic-messages" ? Json::object() : Json(text));
  }
}

TEST_P(WireHostileOutputTest, ArgumentsNestedDeeperThan64LevelsAreKeptRaw) {
  auto nested = [](int levels) {  // an object holding arrays: `levels` in all
    return "{\"a\":" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  for (int levels : {64, 65, 1000}) {
    SCOPED_TRACE(levels);
    const std::string text = nested(levels);
    HttpTestServer server(stream_script(stream_in(api(), {.arguments = text})));
    testing::Run result = run(server);
    EXPECT_EQ(result.response.message.stop_reason, StopReason::tool_use);
    ASSERT_EQ(result.response.message.content.size(), 1u);
    const auto& call = std::get<ToolCall>(result.response.message.content[0]);
    if (levels <= kMaxToolArgumentDepth) {
      EXPECT_EQ(call.arguments.dump(), text);
      EXPECT_FALSE(call.raw_arguments);
    } else {
      EXPECT_EQ(call.arguments, Json::object());
      EXPECT_EQ(call.raw_arguments, text);
      EXPECT_EQ(tool_arguments_problem(*call.raw_arguments), "nested deeper than 64 levels");
    }
  }
}

// --- long blocks ----------------------------------------------------------

// Every event hands over the whole partial message, which the harness
// copies: one event per 40-byte fragment of 200 KB would copy 500 MB. The
// fragments are reported together, in a number of events that grows with
// the logarithm of the size (and the time the stream took), and add up to
// exactly what was sent.
std::size_t most_reports(std::size_t size, std::chrono::steady_clock::duration elapsed) {
  std::size_t small = 4096 / 40 + 1;  // below 4 KiB each fragment is reported
  std::size_t doublings = 1;
  for (double grown = 4096; grown < static_cast<double>(size); grown *= 1.5) ++doublings;
  const auto quiet = static_cast<std::size_t>(elapsed / 50ms);  // a slow machine's reports by time
  return small + doublings + quiet + 2;
}

TEST_P(WireHostileOutputTest, ALongToolCallIsReportedInFewDeltasThatAddUpToIt) {
  const std::string text = write_arguments(200'000);
  HttpTestServer server(stream_script(stream_in(api(), {.arguments = text})));
  testing::Run result = run(server);
  ASSERT_EQ(result.response.message.stop_reason, StopReason::tool_use) << result.response.message.error_message.value_or("");
  const auto& call = std::get<ToolCall>(result.response.message.content.at(0));
  EXPECT_EQ(call.arguments.dump(), text);
  EXPECT_FALSE(call.raw_arguments);

  Strings deltas = deltas_of(result, "toolcall_delta");
  EXPECT_EQ(joined_pieces(deltas), text);
  EXPECT_LE(deltas.size(), most_reports(text.size(), result.elapsed)) << "of " << text.size() / 40 << " fragments";
  // Watchers saw the arguments grow as they came.
  ASSERT_EQ(result.partial_arguments.size(), deltas.size());
  std::size_t shown = 0;
  for (const Json& partial : result.partial_arguments) {
    std::size_t now = partial.contains("content") ? partial["content"].get_ref<const std::string&>().size() : 0;
    EXPECT_GE(now, shown);
    shown = now;
  }
  EXPECT_GT(shown, 0u);
}

TEST_P(WireHostileOutputTest, ALongTextIsReportedInFewDeltasEvenWhenTheStreamBreaks) {
  std::string text;
  while (text.size() < 200'000) text += "All work and no play makes a long answer. ";
  std::vector<std::string> events = stream_in(api(), {.text = text});
  for (bool broken : {false, true}) {
    SCOPED_TRACE(broken ? "broken" : "whole");
    ScriptedResponse script = stream_script(events);
    if (broken) {
      script.body.resize(script.body.size() / 2);
      script.end = ScriptedResponse::End::close;
    }
    HttpTestServer server(script);
    testing::Run result = run(server);
    ASSERT_EQ(result.response.message.stop_reason, broken ? StopReason::error : StopReason::stop);
    const auto& got = std::get<TextContent>(result.response.message.content.at(0)).text;
    EXPECT_EQ(got.size(), broken ? got.size() : text.size());
    EXPECT_TRUE(text.starts_with(got));
    // Whoever adds up the deltas has what the message has, before the end event.
    Strings deltas = deltas_of(result, "text_delta");
    EXPECT_EQ(joined_pieces(deltas), got);
    EXPECT_LE(deltas.size(), most_reports(got.size(), result.elapsed)) << "of " << got.size() / 40 << " fragments";
    EXPECT_EQ(result.events.back(), broken ? "error" : "done");
  }
}

// --- a 200 that is not an event stream ------------------------------------

TEST_P(WireHostileOutputTest, A200ThatIsNotAnEventStreamNamesItsContentTypeAndQuotesTheBody) {
  // A proxy's sign-in page, which echoes the key the request carried
  // across the 200th byte.
  std::string page = "<!DOCTYPE html>\n<html>\n  <head><title>Sign in to the proxy</title></head>\n  <body>";
  page += std::string(186 - page.size(), '.') + kHostileKey + " was refused</body>\n</html>\n";
  HttpTestServer server(body_script("text/html; charset=utf-8", page));
  testing::Run result = run(server);
  const auto& message = result.response.message;
  EXPECT_EQ(result.events, (Strings{"error"}));
  EXPECT_EQ(message.stop_reason, StopReason::error);
  const std::string expected_start =
      "the server answered 200 with Content-Type text/html; charset=utf-8, not an event stream; the body began: "
      "<!DOCTYPE html> <html> <head><title>Sign in to the proxy</title></head> <body>...";
  ASSERT_TRUE(message.error_message);
  EXPECT_TRUE(message.error_message->starts_with(expected_start)) << *message.error_message;
  // About 200 bytes of it, on one line, the cut marked.
  const std::string excerpt = message.error_message->substr(message.error_message->find("the body began: ") + 16);
  EXPECT_EQ(excerpt.size(), 200 + std::string_view("…").size()) << excerpt;
  EXPECT_TRUE(excerpt.ends_with("[redacted] was ref…")) << excerpt;
  // Redacted before it was cut: no piece of the key is left.
  EXPECT_EQ(message.error_message->find(std::string(kHostileKey).substr(0, 8)), std::string::npos) << *message.error_message;
  EXPECT_FALSE(result.response.retryable);
  EXPECT_EQ(result.response.status, 200);
}

TEST_P(WireHostileOutputTest, A200OfGarbageIsNotAnEventStreamWhateverItsType) {
  for (const std::string type : {"text/event-stream", "text/plain", ""}) {
    SCOPED_TRACE(type);
    HttpTestServer server(body_script(type, "\x01\x02 garbage \xff bytes\r\n{not an event}\n\n"));
    testing::Run result = run(server);
    const auto& message = result.response.message;
    EXPECT_EQ(result.events, (Strings{"error"}));
    std::string named = type.empty() ? "no Content-Type" : "Content-Type " + type;
    std::string how = type == "text/event-stream" ? " but a body that is not an event stream" : ", not an event stream";
    EXPECT_EQ(message.error_message, fmt::format("the server answered 200 with {}{}; the body began: "
                                                 "garbage \xEF\xBF\xBD bytes {{not an event}}",
                                                 named, how));
    EXPECT_FALSE(result.response.retryable);
  }
}

// --- keys -----------------------------------------------------------------

TEST_P(WireHostileOutputTest, AOneCharacterKeyLeavesMessagesAloneALongOneIsRedacted) {
  const std::string body =
      R"({"type":"error","error":{"type":"authentication_error","code":"invalid_api_key","message":"Incorrect API key provided: %s. Check the key and retry."}})";
  auto refusal = [&](const std::string& key) {
    std::string text = body;
    text.replace(text.find("%s"), 2, key);
    ScriptedResponse script = body_script("application/json", std::move(text));
    script.status = 401;
    script.reason = "Unauthorized";
    return script;
  };
  {
    HttpTestServer server(refusal("e"));
    testing::Run result = run(server, hello_context(), "e");
    ASSERT_TRUE(result.response.message.error_message);
    EXPECT_NE(result.response.message.error_message->find("Incorrect API key provided: e. Check the key and retry."),
              std::string::npos)
        << *result.response.message.error_message;
  }
  {
    HttpTestServer server(refusal(kHostileKey));
    testing::Run result = run(server);
    ASSERT_TRUE(result.response.message.error_message);
    EXPECT_NE(result.response.message.error_message->find("Incorrect API key provided: [redacted]. Check the key"),
              std::string::npos)
        << *result.response.message.error_message;
    EXPECT_EQ(result.response.message.error_message->find(kHostileKey), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Apis, WireHostileOutputTest,
                         ::testing::Values("openai-completions", "openai-responses", "anthropic-messages"), api_case_name);

}  // namespace
}  // namespace cairn::testing
