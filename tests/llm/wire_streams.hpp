// Streams of one block in each wire format, written the way the APIs send
// them, for tests and benchmarks that need a block of a given text cut into
// pieces of a given size: a tool call whose arguments are `arguments`, or a
// text answer. Each piece is one SSE event.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cairn/json.hpp"

namespace cairn::testing {

struct StreamedBlock {
  std::string arguments;            // a tool call "write" with these arguments (JSON text, or not)
  std::optional<std::string> text;  // instead: a text answer
  std::size_t piece = 40;           // bytes per event
};

inline std::vector<std::string> pieces_of(const std::string& text, std::size_t size) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < text.size(); at += size) out.push_back(text.substr(at, size));
  return out;
}

inline std::string sse_event(const Json& data, const std::string& event = {}) {
  std::string out = event.empty() ? "" : "event: " + event + "\n";
  return out + "data: " + data.dump() + "\n\n";
}

inline std::vector<std::string> completions_stream(const StreamedBlock& block) {
  std::vector<std::string> events;
  auto chunk = [](Json delta, Json finish = nullptr) {
    return sse_event({{"id", "chatcmpl-1"},
                      {"object", "chat.completion.chunk"},
                      {"choices", Json::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish}}})}});
  };
  if (block.text) {
    for (const std::string& piece : pieces_of(*block.text, block.piece)) events.push_back(chunk({{"content", piece}}));
    events.push_back(chunk(Json::object(), "stop"));
  } else {
    events.push_back(chunk({{"tool_calls", Json::array({{{"index", 0}, {"id", "call_1"}, {"type", "function"},
                                                          {"function", {{"name", "write"}, {"arguments", ""}}}}})}}));
    for (const std::string& piece : pieces_of(block.arguments, block.piece)) {
      events.push_back(chunk({{"tool_calls", Json::array({{{"index", 0}, {"function", {{"arguments", piece}}}}})}}));
    }
    events.push_back(chunk(Json::object(), "tool_calls"));
  }
  events.push_back("data: [DONE]\n\n");
  return events;
}

inline std::vector<std::string> responses_stream(const StreamedBlock& block) {
  std::vector<std::string> events;
  auto event = [&](Json data) {
    std::string type = data["type"];
    events.push_back(sse_event(data, type));
  };
  Json item;
  event({{"type", "response.created"}, {"response", {{"id", "resp_1"}, {"status", "in_progress"}}}});
  if (block.text) {
    event({{"type", "response.output_item.added"}, {"output_index", 0},
           {"item", {{"type", "message"}, {"id", "msg_1"}, {"role", "assistant"}, {"content", Json::array()}}}});
    for (const std::string& piece : pieces_of(*block.text, block.piece)) {
      event({{"type", "response.output_text.delta"}, {"output_index", 0}, {"content_index", 0}, {"delta", piece}});
    }
    item = {{"type", "message"}, {"id", "msg_1"}, {"role", "assistant"},
            {"content", Json::array({{{"type", "output_text"}, {"text", *block.text}}})}};
  } else {
    event({{"type", "response.output_item.added"}, {"output_index", 0},
           {"item", {{"type", "function_call"}, {"id", "fc_1"}, {"call_id", "call_1"}, {"name", "write"},
                     {"arguments", ""}}}});
    for (const std::string& piece : pieces_of(block.arguments, block.piece)) {
      event({{"type", "response.function_call_arguments.delta"}, {"output_index", 0}, {"item_id", "fc_1"},
             {"delta", piece}});
    }
    event({{"type", "response.function_call_arguments.done"}, {"output_index", 0}, {"item_id", "fc_1"},
           {"arguments", block.arguments}});
    item = {{"type", "function_call"}, {"id", "fc_1"}, {"call_id", "call_1"}, {"name", "write"},
            {"arguments", block.arguments}, {"status", "completed"}};
  }
  event({{"type", "response.output_item.done"}, {"output_index", 0}, {"item", item}});
  event({{"type", "response.completed"},
         {"response", {{"id", "resp_1"}, {"status", "completed"}, {"output", Json::array({item})},
                       {"usage", {{"input_tokens", 10}, {"output_tokens", 10}, {"total_tokens", 20}}}}}});
  return events;
}

inline std::vector<std::string> anthropic_stream(const StreamedBlock& block) {
  std::vector<std::string> events;
  auto event = [&](Json data) {
    std::string type = data["type"];
    events.push_back(sse_event(data, type));
  };
  event({{"type", "message_start"},
         {"message", {{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"}, {"content", Json::array()},
                      {"usage", {{"input_tokens", 10}, {"output_tokens", 1}}}}}});
  if (block.text) {
    event({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    for (const std::string& piece : pieces_of(*block.text, block.piece)) {
      event({{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", piece}}}});
    }
  } else {
    event({{"type", "content_block_start"}, {"index", 0},
           {"content_block", {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "write"}, {"input", Json::object()}}}});
    for (const std::string& piece : pieces_of(block.arguments, block.piece)) {
      event({{"type", "content_block_delta"}, {"index", 0},
             {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
    }
  }
  event({{"type", "content_block_stop"}, {"index", 0}});
  event({{"type", "message_delta"}, {"delta", {{"stop_reason", block.text ? "end_turn" : "tool_use"}}},
         {"usage", {{"output_tokens", 10}}}});
  event({{"type", "message_stop"}});
  return events;
}

// The stream of `block` in the wire format of `api`.
inline std::vector<std::string> stream_in(const std::string& api, const StreamedBlock& block) {
  if (api == "openai-completions") return completions_stream(block);
  if (api == "openai-responses") return responses_stream(block);
  return anthropic_stream(block);
}

}  // namespace cairn::testing
