// Events: what the harness tells observers (durable-harness-design.txt,
// section "Events"). The vocabulary is the design document's; each event
// carries its ref, its operation's runId where it belongs to one, and the seq
// of the record it announces (delivered only once that record is durable).
// Ephemeral events (message_update, tool_update) carry no seq.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cairn/json.hpp"
#include "cairn/log/message.hpp"

namespace cairn {

struct Event {
  std::string type;  // run_start, run_resume, run_cancel, run_end, fault, handler_error,
                     // step_start, step_end, retry_scheduled, retry_start, retry_end,
                     // message_start, message_update, message_end, tool_start, tool_update,
                     // tool_end, entry_added, write_pending, queue_update, config_update,
                     // compaction_start, compaction_end, navigation_start, navigation_end;
                     // cairn's own: context_usage {context {tokens, contextWindow, percent,
                     // measured: provider | estimated | provider+estimate,
                     // providerCountedTokens, estimatedTokens}, operationSpend {input, output,
                     // cacheRead, cacheWrite, totalTokens, cost}} after each response and each
                     // compaction or navigation, when someone listens
  std::string ref;
  std::optional<std::string> run_id;
  std::optional<std::int64_t> seq;
  Json data = Json::object();  // the type's own fields, named as in the design document
  // message_start, message_update, message_end and step_end: the message,
  // typed and shared (a stream publishes one per chunk; encoding each to
  // JSON would cost more than the step). encode() writes it as "message".
  std::shared_ptr<const AgentMessage> message;
};

// {"type":…, "ref":…, "runId"?:…, "seq"?:…, "message"?:…, …data}
Json encode(const Event& event);

using EventListener = std::function<void(const Event& event)>;

// Ends a listener's or a hook's registration when reset or destroyed.
class Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  Subscription(Subscription&& other) noexcept : cancel_(std::exchange(other.cancel_, nullptr)) {}
  Subscription& operator=(Subscription&& other) noexcept {
    if (this != &other) {
      reset();
      cancel_ = std::exchange(other.cancel_, nullptr);
    }
    return *this;
  }
  ~Subscription() { reset(); }
  void reset() {
    if (cancel_) std::exchange(cancel_, nullptr)();
  }

 private:
  std::function<void()> cancel_;
};

}  // namespace cairn
