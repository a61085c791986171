// The shared state behind AgentHarness and its AgentRef handles.
//
// Locks, outermost first:
//   RefRuntime::ref_mu  serialises the ref's own appends with its queue and
//                       acceptance decisions (held across an append, so that
//                       "check, then append" is atomic per ref; never across
//                       a provider request, a tool, a hook or a listener);
//   HarnessCore::mu     guards the maps, every RefRuntime field but ref_mu,
//                       and the config; never held across any I/O.
// Events are published with neither held.
#pragma once

#include <atomic>
#include <cassert>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cairn/harness/harness.hpp"
#include "cairn/trace.hpp"
#include "context_cache.hpp"
#include "event_bus.hpp"
#include "op_state.hpp"

namespace cairn {

// A mutex that knows, in debug builds, which thread holds it, so that a
// function documented "called with mu held" can assert it: std::mutex
// cannot be asked, and try_lock() on a mutex the caller holds is undefined.
// Lockable, for lock_guard and unique_lock; waited on with
// condition_variable_any.
class OwnedMutex {
 public:
  void lock() {
    mu_.lock();
    note_owner(std::this_thread::get_id());
  }
  bool try_lock() {
    if (!mu_.try_lock()) return false;
    note_owner(std::this_thread::get_id());
    return true;
  }
  void unlock() {
    note_owner(std::thread::id());
    mu_.unlock();
  }
  void assert_held() const {
#ifndef NDEBUG
    assert(owner_.load(std::memory_order_relaxed) == std::this_thread::get_id() && "called without the lock it needs");
#endif
  }

 private:
  void note_owner([[maybe_unused]] std::thread::id id) {
#ifndef NDEBUG
    owner_.store(id, std::memory_order_relaxed);
#endif
  }
  std::mutex mu_;
#ifndef NDEBUG
  std::atomic<std::thread::id> owner_{};
#endif
};

struct RefRuntime {
  std::string name;
  OwnedMutex ref_mu;
  // Touched only by the thread running the ref's operation (see `active`).
  ContextCache context;

  // Guarded by HarnessCore::mu from here on.
  std::optional<OpState> op;
  OperationStatus status = OperationStatus::running;  // meaningful while op
  bool active = false;     // a thread is running the ref's operation (or accepting one)
  bool finishing = false;  // operation_finished is being written: queues are closed
  bool deleted = false;
  std::optional<SuspendedOperation> suspended;
  std::vector<ProvisionedEntry> next_run;  // accepted next-run items, not yet consumed
  std::stop_source cancel;
  std::vector<std::function<void()>> when_idle;
  // Live progress, for snapshots.
  std::shared_ptr<const AgentMessage> streaming;  // an AssistantMessage
  std::vector<RunningTool> running_tools;
  std::optional<RunSnapshot::Retry> retry;
  // The unanswered input requests of child sessions the parked operation
  // waits for (ToolAwaitingInput), each with the call of this ref that runs
  // the child; answered through respond(), which passes the answer on.
  struct ChildInput {
    PendingInput input;
    std::string tool_name;     // the parent's tool (replay resume)
    std::string tool_call_id;  // the parent's call
  };
  std::vector<ChildInput> child_inputs;
  // Own and children's unanswered requests.
  std::vector<PendingInput> all_pending_inputs() const;
};

class HarnessCore : public std::enable_shared_from_this<HarnessCore> {
 public:
  explicit HarnessCore(HarnessOptions options);

  // Resolves every ref's state from the log (the restore flowchart).
  Result<std::vector<SuspendedOperation>> restore();

  std::shared_ptr<RefRuntime> find_ref(std::string_view name);  // takes mu

  // The model, thinking level and active tools on `ref`'s branch (its own
  // config entries win over the harness's initial values).
  struct BranchConfig {
    Model model;
    bool model_known = true;  // false: the branch names a model `models` lacks
    ModelRef model_ref;
    ThinkingLevel thinking_level = ThinkingLevel::off;
    std::vector<std::string> active_tools;
  };
  Result<BranchConfig> branch_config(const std::string& ref);
  // The same from the settings at the branch's leaf; takes mu, or (the
  // _locked form) is called with it held.
  BranchConfig config_from(const SessionContext& settings);
  BranchConfig config_from_locked(const SessionContext& settings) const;

  // Acceptance (acceptance.cpp); each accepted operation then runs its
  // procedure on the calling thread (run_operation, operation.hpp).
  RunResult prompt(const std::shared_ptr<RefRuntime>& rt, std::vector<AgentMessage> messages);
  RunResult compact(const std::shared_ptr<RefRuntime>& rt, std::optional<std::string> custom_instructions);
  RunResult navigate(const std::shared_ptr<RefRuntime>& rt, const std::string& target_id, NavigateOptions options);
  RunResult run_structural(const std::shared_ptr<RefRuntime>& rt, OperationIntent intent);
  RunResult resume(const std::shared_ptr<RefRuntime>& rt);
  AbortResult abort(const std::shared_ptr<RefRuntime>& rt);
  InputResult respond(const std::shared_ptr<RefRuntime>& rt, const std::string& request_id, InputResponse response);
  std::optional<InputResult> respond_child(const std::shared_ptr<RefRuntime>& rt, const std::string& request_id,
                                           InputResponse& response);
  // The approval policy's verdict on a call, the session's remembered rules
  // applied (takes mu).
  ApprovalVerdict approve(const ApprovalCall& call);
  QueueResult enqueue(const std::shared_ptr<RefRuntime>& rt, QueueKind queue, AgentMessage message);
  // A tree write on the ref: appended now when idle, deferred while it runs.
  Result<std::string> write(const std::shared_ptr<RefRuntime>& rt, TreeEntry entry);

  // Why the harness takes nothing more on `rt` — closed, faulted, or (with
  // `check_ref`) the ref deleted — if it does not. Called with mu held.
  struct Refusal {
    Outcome outcome;
    Error error;
  };
  std::optional<Refusal> refusal(const RefRuntime& rt, bool check_ref = true) const;
  // Folds a record this harness has just appended for `rt`'s open operation
  // into its state (called with mu held). An error (never expected: see the
  // definition) is for the caller to fault with, once mu is released.
  [[nodiscard]] std::optional<Error> fold_own(RefRuntime& rt, const Record& record);

  // Marks the harness faulted and tells everyone, once.
  void enter_fault(const Error& error);
  void publish(Event event) { bus.publish(std::move(event)); }
  void report_handler_error(const std::string& ref, const std::optional<std::string>& run_id, std::string kind,
                            std::string name, std::string what);
  // Called with mu held when a ref's operation ended or was suspended.
  void became_idle(RefRuntime& rt, std::vector<std::function<void()>>& callbacks);

  std::shared_ptr<Session> session;
  Hooks hooks;

 private:
  // Restore's steps.
  Result<SuspendedOperation> restore_operation(RefRuntime& rt, const std::string& open_id);
  Status fold_tail(const std::string& ref, std::int64_t start_seq, OpState& op,
                   std::optional<SuspendedOperation::Damaged>& damaged);
  Status note_missing(const std::string& ref, const OpState& op, SuspendedOperation::Missing& missing);
  void restore_child_inputs(RefRuntime& rt, const OpState& op);
  Status restore_next_run(RefRuntime& rt);
  Status restore_remembered();

  // Acceptance's steps (acceptance.cpp).
  std::optional<Refusal> reserve(RefRuntime& rt);  // takes mu
  void release(RefRuntime& rt);                    // takes mu
  // With rt.ref_mu held: appends operation_started and opens the
  // operation; (run id, seq), or the append's failure (harness faulted,
  // reservation released).
  Result<std::pair<std::string, std::int64_t>> start_operation(RefRuntime& rt, OperationIntent intent, bool takes_next_run);
  RunIntent before_run(const RefRuntime& rt, const std::vector<AgentMessage>& messages,
                       std::vector<AgentMessage>& injected);
  std::optional<Error> unresumable(const RefRuntime& rt) const;  // mu held
  BeforeResumeEvent resume_event(const OpState& op) const;       // mu held

 public:
  EventBus bus;

  OwnedMutex mu;
  std::condition_variable_any idle_cv;
  HarnessOptions options;  // config: guarded by mu
  std::map<std::string, std::shared_ptr<RefRuntime>, std::less<>> refs;
  std::map<std::string, std::shared_ptr<const ArgumentValidator>, std::less<>> validators;
  // Rules that answers asked to remember ("always"), from every ref's
  // input_resolved records: session-wide, in the order they were given.
  std::vector<ApprovalRule> remembered;
  bool faulted = false;
  bool closed = false;
};

// Calls `call(handler)` for each of a hook's `handlers`, in order. A handler
// that throws becomes a handler_error event naming the hook (`name`) and the
// next one runs: a hook never kills the run. A `call` that returns bool stops
// the hook early by returning false.
template <class Fn, class Call>
void call_hooks(HarnessCore& core, const std::string& ref, const std::optional<std::string>& run_id,
                std::string_view name, const std::vector<Fn>& handlers, Call&& call) {
  if (handlers.empty()) return;
  trace::Span span("cairn.harness.hook", [&] {
    Json payload = {{"hook", name}, {"ref", ref}, {"handlers", handlers.size()}};
    if (run_id) payload["runId"] = *run_id;
    return payload;
  });
  for (const auto& handler : handlers) {
    try {
      if constexpr (std::is_same_v<decltype(call(handler)), bool>) {
        if (!call(handler)) return;
      } else {
        call(handler);
      }
    } catch (const std::exception& e) {
      core.report_handler_error(ref, run_id, "hook", std::string(name), e.what());
    }
  }
}

// How deep a session is among child sessions: 0 for a top-level one.
int child_depth(const SessionHeader& header);

// The status of an open operation no thread runs: cancelling, awaiting
// input or suspended. Called with mu held.
inline OperationStatus idle_status(const RefRuntime& rt) {
  if (rt.op->cancelled) return OperationStatus::cancelling;
  if (!rt.child_inputs.empty()) return OperationStatus::awaiting_input;
  for (const auto& input : rt.op->inputs) {
    if (!input.resolution) return OperationStatus::awaiting_input;
  }
  return OperationStatus::suspended;
}

// The queues' contents as queue_update lists them. Called with mu held.
Json queue_lists(const RefRuntime& rt);
// The messages of queued items.
std::vector<AgentMessage> messages_of(const std::vector<ProvisionedEntry>& items);

// A rejection (`code`) of input the log could not hold, because a string
// in `encoded` is not valid UTF-8: it names `what`, the field and the byte.
std::optional<Error> invalid_text(const Json& encoded, std::string_view what, Errc code);

}  // namespace cairn
