// What the wire providers' tests share: recorded SSE streams from
// tests/fixtures/sse, a provider run against the local HTTP server with
// every event written down as a line ("text_delta 0 Hel"), and the checks
// every partial message must pass.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <sstream>
#include <stop_token>
#include <string>
#include <vector>

#include "cairn/llm/provider.hpp"
#include "support/http_test_server.hpp"

namespace cairn::testing {

inline std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(CAIRN_FIXTURES_DIR) + "/sse/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "no fixture " << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The events of an SSE text, each with its blank line.
inline std::vector<std::string> sse_events(const std::string& text) {
  std::vector<std::string> events;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find("\n\n", start)) != std::string::npos; start = end + 2) {
    events.push_back(text.substr(start, end + 2 - start));
  }
  return events;
}

// The fixture as body pieces: each event cut in two, the halves sent a
// moment apart, so that events and even JSON arrive split.
inline std::vector<ScriptedResponse::Piece> split_pieces(const std::vector<std::string>& events) {
  std::vector<ScriptedResponse::Piece> pieces;
  for (const std::string& event : events) {
    std::size_t half = event.size() / 2;
    pieces.push_back({.delay = std::chrono::milliseconds(1), .bytes = event.substr(0, half)});
    pieces.push_back({.delay = std::chrono::milliseconds(1), .bytes = event.substr(half)});
  }
  return pieces;
}

inline ScriptedResponse sse_script(const std::string& fixture) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}, {"x-request-id", "req_test"}};
  script.body = split_pieces(sse_events(read_fixture(fixture)));
  return script;
}

// The first `count` events of a fixture, then `end`.
inline ScriptedResponse truncated_script(const std::string& fixture, std::size_t count, ScriptedResponse::End end) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  auto events = sse_events(read_fixture(fixture));
  events.resize(count);
  script.body = split_pieces(events);
  script.end = end;
  return script;
}

inline ScriptedResponse error_script(int status, std::string reason, std::string body,
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

struct Run {
  std::vector<std::string> events;
  std::vector<Json> partial_arguments;  // a tool call's arguments at each toolcall_delta
  ProviderResponse response;
  std::chrono::steady_clock::duration elapsed{};
};

inline std::string describe(const ProviderEvent& event) {
  std::string line(to_string(event.type));
  if (event.content_index >= 0) line += " " + std::to_string(event.content_index);
  if (!event.delta.empty()) line += " " + event.delta;
  return line;
}

// Every event's partial message must already hold what the event reports.
inline void check_partial(const ProviderEvent& event) {
  ASSERT_NE(event.partial, nullptr) << describe(event);
  if (event.content_index < 0) return;
  ASSERT_LT(static_cast<std::size_t>(event.content_index), event.partial->content.size()) << describe(event);
  const AssistantBlock& block = event.partial->content[static_cast<std::size_t>(event.content_index)];
  using T = ProviderEvent::Type;
  if (event.type == T::text_delta) {
    ASSERT_TRUE(std::holds_alternative<TextContent>(block));
    EXPECT_TRUE(std::get<TextContent>(block).text.ends_with(event.delta)) << describe(event);
  } else if (event.type == T::thinking_delta) {
    ASSERT_TRUE(std::holds_alternative<ThinkingContent>(block));
    EXPECT_TRUE(std::get<ThinkingContent>(block).thinking.ends_with(event.delta)) << describe(event);
  } else if (event.type == T::toolcall_start || event.type == T::toolcall_delta || event.type == T::toolcall_end) {
    ASSERT_TRUE(std::holds_alternative<ToolCall>(block)) << describe(event);
    EXPECT_TRUE(std::get<ToolCall>(block).arguments.is_object()) << describe(event);
  }
}

inline Run run_provider(Provider& provider, const Model& model, const LlmContext& context,
                        const StreamOptions& options = {}, const PayloadHook& hook = {}, std::stop_token cancel = {},
                        const std::function<void(const ProviderEvent&)>& also = {}) {
  Run run;
  auto start = std::chrono::steady_clock::now();
  run.response = provider.stream(model, context, options, hook, [&](const ProviderEvent& event) {
    run.events.push_back(describe(event));
    check_partial(event);
    if (event.type == ProviderEvent::Type::toolcall_delta) {
      run.partial_arguments.push_back(
          std::get<ToolCall>(event.partial->content[static_cast<std::size_t>(event.content_index)]).arguments);
    }
    if (also) also(event);
  }, cancel);
  run.elapsed = std::chrono::steady_clock::now() - start;
  return run;
}

inline LlmContext hello_context() {
  LlmContext context;
  context.system_prompt = "You are terse.";
  context.messages.emplace_back(UserMessage{.content = "Say hello."});
  return context;
}

inline void no_proxy_for_the_test_server() {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
}

}  // namespace cairn::testing
