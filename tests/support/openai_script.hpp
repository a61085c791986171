// Scripted openai-completions answers for the local HTTP server: the SSE
// chunks of a text reply or of one tool call, as a real server streams them.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cairn/json.hpp"
#include "support/http_test_server.hpp"

namespace cairn::testing {

inline std::string openai_chunk(const Json& delta, const Json& finish_reason = nullptr) {
  Json body = {{"id", "chatcmpl-test"},
               {"object", "chat.completion.chunk"},
               {"model", "test"},
               {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish_reason}}})}};
  return "data: " + body.dump() + "\n\n";
}

// The events as one streamed response, each `delay` after the one before, then [DONE].
inline ScriptedResponse openai_stream(std::vector<std::string> events,
                                      std::chrono::milliseconds delay = std::chrono::milliseconds(1)) {
  ScriptedResponse response;
  response.headers = {{"Content-Type", "text/event-stream"}};
  events.push_back("data: [DONE]\n\n");
  for (auto& event : events) response.body.push_back({.delay = delay, .bytes = std::move(event)});
  return response;
}

// `text` in two pieces, then stop.
inline ScriptedResponse openai_text_reply(const std::string& text,
                                          std::chrono::milliseconds delay = std::chrono::milliseconds(1)) {
  return openai_stream({openai_chunk({{"role", "assistant"}, {"content", ""}}),
                        openai_chunk({{"content", text.substr(0, text.size() / 2)}}),
                        openai_chunk({{"content", text.substr(text.size() / 2)}}), openai_chunk(Json::object(), "stop")},
                       delay);
}

// One call of `name` with `args`, then tool_calls.
inline ScriptedResponse openai_tool_reply(const std::string& id, const std::string& name, const Json& args,
                                          std::chrono::milliseconds delay = std::chrono::milliseconds(1)) {
  Json call = {{"index", 0}, {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}};
  return openai_stream({openai_chunk({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call})}}),
                        openai_chunk(Json::object(), "tool_calls")},
                       delay);
}

// The text of the first user message of an openai-completions request body:
// which conversation (or which agent) a scripted server is answering.
inline std::string openai_first_user_text(const Json& body) {
  for (const auto& message : body.value("messages", Json::array())) {
    if (message.value("role", "") != "user") continue;
    const Json& content = message["content"];
    if (content.is_string()) return content.get<std::string>();
    std::string text;
    for (const auto& part : content) text += part.value("text", "");
    return text;
  }
  return {};
}

// How many tool results an openai-completions request body carries: how far
// along its conversation a scripted server is.
inline int openai_tool_results(const Json& body) {
  int count = 0;
  for (const auto& message : body.value("messages", Json::array())) count += message.value("role", "") == "tool";
  return count;
}

}  // namespace cairn::testing
