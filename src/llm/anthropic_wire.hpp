// The two halves of the anthropic-messages wire format, apart from the HTTP
// exchange that joins them (anthropic_messages.cpp): the request payload
// built from cairn's context, and the decoder that turns the response's
// server-sent events into the assistant message and its ProviderEvents.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/json.hpp"
#include "cairn/llm/provider.hpp"
#include "cairn/llm/sse.hpp"
#include "delta_pacer.hpp"
#include "wire_support.hpp"

namespace cairn::anthropic {

// ---- request ----------------------------------------------------------------

// What a thinking level asks of the API: the token budget for thinking and
// the max_tokens that leaves room for it (pi's adjustMaxTokensForThinking).
struct ThinkingPlan {
  std::int64_t max_tokens = 0;
  std::int64_t budget_tokens = 0;
};

// nullopt when the level is "off" (or unknown) and no thinking is requested.
// `budgets` may override the default budget of a level: {"medium": 4000}.
std::optional<ThinkingPlan> plan_thinking(std::string_view level, std::int64_t max_tokens,
                                          std::int64_t model_max_tokens, const Json& budgets = Json::object());

// Anthropic wants tool ids of [a-zA-Z0-9_-]{1,64}; ids minted by other
// providers (OpenAI's responses API joins two with '|') are made to fit.
std::string normalize_tool_call_id(std::string_view id);

// The Messages API request body for `context`, "stream": true included.
Json build_payload(const Model& model, const LlmContext& context, const StreamOptions& options);

// ---- response ---------------------------------------------------------------

// Feeds on the SSE events of one response and keeps `message` (content, usage,
// cost, stop reason) current, telling `sink` about every change (deltas
// paced, see delta_pacer.hpp). The stream's own failures (a malformed event,
// an error event) stop it and are kept in failure(); the transport's are the
// caller's business. Tool arguments that are not a JSON object are not a
// failure: the call keeps them raw (read_tool_arguments).
class StreamDecoder {
 public:
  StreamDecoder(const Model& model, AssistantMessage& message, const ProviderEventSink& sink);

  // false: stop reading, failure() says why.
  bool on_event(const SseEvent& event);

  // Emits `start` if nothing was emitted yet. The caller uses it before
  // `done`; a failure before the first event is reported without it.
  void ensure_started();
  void emit(ProviderEvent::Type type, int content_index = -1, std::string delta = {});
  // Emits the deltas that open blocks gathered and have not reported: the
  // caller does before done or error.
  void report_open_blocks();

  bool started() const { return started_; }
  bool message_stopped() const { return message_stopped_; }
  const std::optional<wire::Failure>& failure() const { return failure_; }
  // The wire's stop_reason when it has no cairn equivalent that means
  // success ("refusal", an unknown one); the message then ends as an error.
  const std::optional<std::string>& unsuccessful_stop() const { return unsuccessful_stop_; }

 private:
  enum class Kind { text, thinking, redacted_thinking, tool_use, ignored };
  struct OpenBlock {
    std::int64_t wire_index = 0;
    Kind kind = Kind::ignored;
    int content_index = -1;  // in message_.content; -1 for ignored blocks
    std::string partial_json;  // tool_use: the arguments so far
    bool open = true;
  };

  bool on_message_start(const Json& data);
  bool on_block_start(const Json& data);
  bool on_block_delta(const Json& data);
  bool on_block_stop(const Json& data);
  bool on_message_delta(const Json& data);
  bool on_error(const Json& data);
  void read_usage(const Json& usage);
  OpenBlock* find_block(const Json& data);
  bool malformed(std::string what);
  void report(OpenBlock& block);

  const Model& model_;
  AssistantMessage& message_;
  const ProviderEventSink& sink_;
  std::vector<OpenBlock> blocks_;
  wire::DeltaPacer pacer_;
  bool started_ = false;
  bool message_stopped_ = false;
  std::optional<wire::Failure> failure_;
  std::optional<std::string> unsuccessful_stop_;
};

}  // namespace cairn::anthropic
