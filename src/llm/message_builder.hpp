// The assistant message a wire provider assembles from a stream, and the
// provider events that report each change to it. A provider's stream parser
// says what happened on the wire (a block began, text arrived, a tool call's
// arguments grew); this keeps the message, the content indexes and the event
// order consistent, so that every provider streams alike. Deltas are paced
// (delta_pacer.hpp): a long block's fragments are reported a few at a time.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "cairn/llm/provider.hpp"
#include "cairn/secrets.hpp"
#include "delta_pacer.hpp"
#include "wire_support.hpp"

namespace cairn::wire {

class MessageBuilder {
 public:
  // `model` and `on_event` must outlive the builder; on_event may be empty.
  MessageBuilder(const Model& model, const ProviderEventSink& on_event);

  AssistantMessage& message() { return response_.message; }
  ProviderResponse& response() { return response_; }
  bool started() const { return started_; }

  // Emits start, once; every begin_* does it first if need be.
  void start();

  // Each begin_* appends a block, emits its *_start and returns its content
  // index. A block is open until its end_*.
  int begin_text(std::optional<std::string> signature = std::nullopt);
  void text_delta(int index, std::string_view delta);
  void end_text(int index);

  int begin_thinking(std::optional<std::string> signature = std::nullopt);
  void thinking_delta(int index, std::string_view delta);
  void end_thinking(int index);
  // Reasoning the provider encrypted, to be handed back untouched: `data` is
  // kept as the block's signature and the block is marked redacted (as pi
  // keeps it). Ended by end_thinking.
  int begin_redacted_thinking(std::string data);

  // A tool call's arguments arrive as JSON text in fragments, reported as
  // toolcall_delta; for each report the arguments so far are parsed
  // leniently (parse_partial_json) for the partial message.
  int begin_tool_call(std::string id, std::string name, std::string arguments_so_far = {});
  void tool_call_delta(int index, std::string_view fragment);
  // The server's final word on the arguments, replacing the fragments.
  void set_tool_call_arguments(int index, std::string text);
  // Reads the arguments as they ended (read_tool_arguments: text that is
  // not a JSON object is kept raw, for the call's error result) and emits
  // toolcall_end.
  void end_tool_call(int index);

  // Ends `index` whatever kind it is.
  void end_block(int index);
  // Ends every open block in content order.
  void end_open_blocks();
  bool is_open(int index) const { return open_.contains(index); }

  // The response, done: usage costed at the model's prices, `reason` set,
  // done emitted.
  ProviderResponse finish(StopReason reason);
  // The response, failed: stop_reason error, the failure's message with
  // every secret removed, its classification, error emitted.
  ProviderResponse fail(const Failure& failure, const Secrets& secrets);
  // The response, aborted by the caller.
  ProviderResponse abort();

 private:
  // Appends `block`, open, and tells `started` of it.
  int open_block(AssistantBlock block, ProviderEvent::Type started);
  void emit(ProviderEvent::Type type, int index, std::string delta = {});
  // Emits the delta of what `index` gathered and has not reported.
  void report(int index);
  // The same for every open block, before the response ends.
  void report_open_blocks();
  template <class Block>
  Block& block(int index) {
    return std::get<Block>(response_.message.content.at(static_cast<std::size_t>(index)));
  }

  const Model& model_;
  const ProviderEventSink& on_event_;
  ProviderResponse response_;
  bool started_ = false;
  std::set<int> open_;
  std::map<int, std::string> arguments_;  // tool calls' JSON text so far, by content index
  DeltaPacer pacer_;
};

}  // namespace cairn::wire
