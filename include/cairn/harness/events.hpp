// Events: what the harness tells observers (durable-harness-design.txt,
// section "Events"). The vocabulary is the design document's; each event
// carries its ref, its operation's runId where it belongs to one, and the seq
// of the record it announces (delivered only once that record is durable).
// Ephemeral events (message_update, tool_update) carry no seq.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/json.hpp"
#include "cairn/log/message.hpp"

namespace cairn {

// What an event tells, spelled in JSON (encode, `type`) as the design
// document names it.
enum class EventType {
  run_start,        // a run was accepted (seq: its operation_started)
  run_resume,       // a suspended operation resumes
  run_cancel,       // abort was accepted (seq: operation_cancelled)
  run_end,          // an operation ended, once per operation (seq: operation_finished)
  fault,            // appends stopped working; the harness starts no further effect
  handler_error,    // a hook, listener or tool's settling threw or failed
  step_start,
  step_end,
  retry_scheduled,  // a request attempt failed and another is due after a delay
  retry_start,
  retry_end,
  message_start,
  message_update,   // ephemeral: a streamed change to the assistant message
  message_end,
  tool_start,
  tool_update,      // ephemeral: a tool's progress
  tool_end,
  entry_added,      // a tree entry other than a message
  write_pending,    // a write deferred to the next checkpoint (seq: write_deferred)
  queue_update,     // the steer / follow-up / next-run queues changed
  config_update,    // model, thinking level, active tools or resources changed
  compaction_start,
  compaction_end,
  navigation_start,
  navigation_end,
  ref_created,
  ref_deleted,
  // A run asks a human (seq: input_requested; data: the PendingInput's
  // fields) and is then parked awaiting input; input_resolved (seq: its
  // record; data: requestId, decision, by) answers it.
  input_requested,
  input_resolved,
  // cairn's own: after each committed response and each compaction or
  // navigation, when someone listens: context {tokens, contextWindow,
  // percent, measured: provider | estimated | provider+estimate,
  // providerCountedTokens, estimatedTokens}, operationSpend {input, output,
  // cacheRead, cacheWrite, totalTokens, cost}
  context_usage,
  // An event of a child session a tool call of this run works in (replay
  // "resume"), relayed to this ref's observers. It carries no seq of this
  // session: data {child: {session, toolCallId, depth}, event: the child's
  // event encoded, with the child's own seq}. A grandchild's events arrive
  // relayed twice and keep the innermost linkage.
  child_session_event,
};
std::string_view to_string(EventType type);
// For test failures and logs: the JSON spelling.
std::ostream& operator<<(std::ostream& out, EventType type);

struct Event {
  EventType type = EventType::run_start;
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
