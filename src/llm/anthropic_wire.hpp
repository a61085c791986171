// The two halves of the anthropic-messages wire format, which the stream
// frame every wire provider shares joins (anthropic_messages.cpp): the
// request built from cairn's context, and the parser that reads the
// response's server-sent events into the assistant message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/json.hpp"
#include "cairn/llm/provider.hpp"
#include "llm/sse.hpp"
#include "message_builder.hpp"
#include "provider_support.hpp"
#include "wire_support.hpp"

namespace cairn::anthropic {

// ---- request ----------------------------------------------------------------

// What a thinking level asks of the API: the token budget for thinking and
// the max_tokens that leaves room for it (pi's adjustMaxTokensForThinking).
struct ThinkingPlan {
  std::int64_t max_tokens = 0;
  std::int64_t budget_tokens = 0;
};

// nullopt when the level is off and no thinking is requested. `budgets` may
// override the default budget of a level: {"medium": 4000}.
std::optional<ThinkingPlan> plan_thinking(ThinkingLevel level, std::int64_t max_tokens,
                                          std::int64_t model_max_tokens, const Json& budgets = Json::object());

// Anthropic wants tool ids of [a-zA-Z0-9_-]{1,64}; ids minted by other
// providers (OpenAI's responses API joins two with '|') are made to fit.
std::string normalize_tool_call_id(std::string_view id);

// The Messages API request body for `context`, "stream": true included.
Json build_payload(const Model& model, const LlmContext& context, const StreamOptions& options);

// ---- response ---------------------------------------------------------------

// The request's headers: the key (x-api-key) and the API version.
HttpHeaders request_headers(const std::string& api_key);

// Reads the SSE events of one response into a MessageBuilder (deltas paced,
// usage costed). The stream's own failures (a malformed event, an error
// event) stop it and are kept in failure(); the transport's are the frame's
// (wire::SseProvider). Tool arguments that are not a JSON object are not a
// failure: the call keeps them raw (read_tool_arguments).
class EventParser final : public wire::StreamParser {
 public:
  explicit EventParser(wire::MessageBuilder& out) : out_(out) {}

  bool on_event(const SseEvent& event) override;
  bool complete() const override { return message_stopped_; }
  const std::optional<wire::Failure>& failure() const override { return failure_; }
  std::variant<StopReason, wire::Failure> stop_reason() const override;

 private:
  // A content block the wire opened: which of the message's blocks it is
  // (-1: a kind cairn does not keep, such as a server tool's).
  struct OpenBlock {
    std::int64_t wire_index = 0;
    int content_index = -1;
    enum class Kind { text, thinking, tool_use, ignored } kind = Kind::ignored;
    // tool_use: the arguments are still the ones content_block_start gave,
    // which the first input_json_delta replaces.
    bool seeded = false;
    bool open = true;
  };

  // One handler per event type, each false once the stream must stop.
  bool on_message_start(const Json& data);
  void read_usage(const Json& usage);  // message_start's and message_delta's
  // The open block an event's "index" names, if any.
  OpenBlock* find_block(const Json& data);
  bool on_block_start(const Json& data);
  bool on_block_delta(const Json& data);
  bool on_block_stop(const Json& data);
  bool on_message_delta(const Json& data);
  bool on_error(const Json& data);
  // Keeps `what` as the stream's failure; false.
  bool malformed(std::string what);

  wire::MessageBuilder& out_;
  std::vector<OpenBlock> blocks_;
  bool message_stopped_ = false;
  std::optional<wire::Failure> failure_;
  // The wire's stop_reason when it has no cairn equivalent that means
  // success ("refusal", an unknown one): the message then ends as an error.
  std::optional<std::string> unsuccessful_stop_;
};

}  // namespace cairn::anthropic
