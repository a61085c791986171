// What the three operation procedures (run, compaction, navigation; one
// file each) share: appending for the ref, folding every append into the
// operation's state, announcing it, the hooks, one generation cycle, and
// the operation's end (operation_finished, the end event, idle).
//
// Four internal exceptions unwind a procedure, all caught in
// Operation::run(): RunFailed (an orderly, durable failure), AppendFailed
// (the log stopped accepting: the harness faults), RunCancelled (to the
// cancellation path) and RunWaiting (the run parks awaiting input). They
// never leave src/harness; the API returns results.
#pragma once

#include <chrono>
#include <any>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core.hpp"

namespace cairn {

struct AppendFailed {
  Error error;
};
struct RunFailed {
  Error error;
};
struct RunCancelled {};
// The run appended an input request (or found one unanswered) and waits
// for its answer: it parks (Operation::park) and resume() continues it.
struct RunWaiting {};

// Runs `rt`'s open operation to its end on this thread: the procedure its
// intent names. `recovery`: resumed from the log (events say so).
RunResult run_operation(HarnessCore& core, const std::shared_ptr<RefRuntime>& rt, bool recovery);

// Gives `source` a fresh stop state. (Assigning a temporary stop_source
// trips GCC 12's -Wmaybe-uninitialized inside <stop_token>, a false alarm.)
void renew(std::stop_source& source);

// The harness's configuration as a step (or a structural operation) works
// with it: taken whole, under one lock, at each checkpoint (take_config), so
// that a step never mixes two versions of a setting changed while it ran;
// a change made meanwhile applies from the next checkpoint.
struct StepConfig {
  HarnessCore::BranchConfig branch;     // model, thinking level and active tools at the ref's leaf
  std::optional<Models::Entry> served;  // the provider serving branch.model_ref; empty: not configured
  RetryPolicy retry;
  StreamOptions stream_options;  // the harness's, with the branch's thinking level
  CompactionSettings compaction;
  QueueMode steering_mode = QueueMode::one_at_a_time;
  QueueMode follow_up_mode = QueueMode::one_at_a_time;
  std::vector<Tool> tools;  // every configured tool, active or not
  std::map<std::string, std::shared_ptr<const ArgumentValidator>, std::less<>> validators;
  SystemPrompt system_prompt;
  std::function<std::vector<LlmMessage>(const std::vector<AgentMessage>&)> convert_to_llm;
  std::function<std::any()> tool_context;
  std::function<std::optional<std::string>(std::string_view)> describe_missing_tool;

  // "Tool NAME <what>", with what describe_missing_tool says of it.
  std::string missing_tool_message(std::string_view name, std::string_view what) const;
  const Tool* find_tool(std::string_view name) const;
  // A tool the branch has active, else nothing.
  const Tool* find_active_tool(std::string_view name) const;
};

class Operation;
// The procedures, one file each.
std::unique_ptr<Operation> make_run_procedure(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery);
std::unique_ptr<Operation> make_compaction_procedure(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery);
std::unique_ptr<Operation> make_navigation_procedure(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery);

class Operation {
 public:
  Operation(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery);
  virtual ~Operation() = default;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  // The procedure, to its end, inside the operation's span.
  RunResult run();

 protected:
  virtual OperationKind kind() const = 0;
  virtual RunResult procedure() = 0;
  // RunCancelled reached run(). A structural operation applies its pending
  // writes and finishes aborted; the run has its own cancellation path.
  virtual RunResult cancellation_path();
  // RunFailed reached run().
  virtual RunResult failed(Error error);
  // What this kind of operation's end event and result add.
  virtual void describe_end(Outcome outcome, RunResult& result, Json& data) = 0;

  // The procedure, to its end: the one place its exceptions stop.
  RunResult run_procedure();
  static std::string_view span_name(OperationKind kind);

  // ---- state ---------------------------------------------------------------

  // Throws RunCancelled once the operation is cancelled.
  void check_cancelled();
  // Reads the operation's state under the lock: `read(const OpState&)`.
  template <class Read>
  auto with_op(Read&& read) {
    std::lock_guard lock(core_.mu);
    return read(static_cast<const OpState&>(*rt_->op));
  }
  HookContext hook_context() const { return HookContext{rt_->name, run_id_}; }
  // Set when the harness is made and never changed: read without the lock.
  const Secrets& secrets() const { return core_.options.secrets; }
  // Takes the step's configuration (StepConfig) into config_: the branch's
  // from the context cache, brought to the ref's leaf first, and the
  // harness's, under one lock. Throws AppendFailed when the store cannot be
  // read. Each procedure takes it when it starts and at its checkpoints.
  const StepConfig& take_config();
  // Whether anyone listens. The hot events (a message encoded for every
  // streamed chunk, tool progress, steps) are not even built otherwise: when
  // nobody watches they are most of a step's cost.
  bool watched() const { return core_.bus.has_listeners(); }
  Event event(EventType type, Json data = Json::object(), std::optional<std::int64_t> seq = {},
              std::shared_ptr<const AgentMessage> message = nullptr) const;

  // Calls `call(handler)` for each handler of a hook: see call_hooks.
  template <class Fn, class Call>
  void each_hook(std::string_view name, const std::vector<Fn>& handlers, Call&& call) {
    call_hooks(core_, rt_->name, run_id_, name, handlers, std::forward<Call>(call));
  }

  // ---- appends -------------------------------------------------------------

  // Appends `record` for this ref and folds it into the operation's state,
  // returning it as appended (ids, parent, timestamp and seq filled in).
  // Tree entries become children of the ref's leaf. Unless `after_cancel`,
  // nothing is appended once the operation is cancelled: the cancellation
  // path takes over from there.
  Record append_record(Record record, bool after_cancel);
  // The same, with ref_mu already held.
  Record append_locked(Record record);
  std::int64_t append_harness(HarnessBody body, bool after_cancel = false);
  // Appends a tree entry and announces it; `started`: its message_start was
  // published already (a streamed response).
  TreeEntry append_entry(TreeEntry entry, bool after_cancel = false, bool started = false);
  void announce(const TreeEntry& entry, std::int64_t seq, bool started);
  // Recovery appends by provisioned id: an entry that exists is not
  // appended again, which makes resuming twice harmless.
  void append_if_missing(const ProvisionedEntry& target, bool after_cancel = false);
  static TreeEntry message_entry(AgentMessage message, std::string id = {});
  // Deferred writes are facts: an operation that ends in any way applies them.
  void apply_pending_writes();

  // ---- spend ---------------------------------------------------------------

  void add_spend(const Usage& usage);
  void publish_context_usage();

  // ---- generation (generation.cpp) ------------------------------------------

  // One attempt of a request cycle, as the cycle hands it over: its number
  // (from the log's count) and the step's configuration (config_), whose
  // retry policy bounds it and whose served model makes it.
  struct Attempt {
    std::int64_t number = 1;
    const StepConfig* config = nullptr;
    const Models::Entry& served() const { return *config->served; }
  };
  // An attempt that failed: retried while the policy allows, else given up.
  struct AttemptFailed {
    bool retryable = false;
    std::optional<std::int64_t> retry_after_ms;
    std::string what;                  // for retry events
    Error error;                       // thrown (RunFailed) on giving up
    std::function<void()> on_give_up;  // runs first: the transcript records the give-up
  };
  struct AttemptAgain {};  // try the same attempt number once more (the context changed)
  template <class T>
  using AttemptOutcome = std::variant<T, AttemptFailed, AttemptAgain>;

  using Purpose = GenerationPurpose;

  // One request cycle (requestAssistant's and generateBounded's loop):
  // counts attempts from the log, refuses past the policy's maximum,
  // finds the model, and between failed attempts backs off with
  // retry_scheduled / retry_start; retry_end closes a cycle that retried.
  // `attempt` makes one attempt (appending its generation_started);
  // `exhausted` says what the give-up past the maximum is.
  template <class T>
  T generation_cycle(Purpose purpose, const std::function<AttemptOutcome<T>(const Attempt&)>& attempt,
                     const std::function<Error(const Attempt&)>& exhausted);
  template <class T>
  AttemptOutcome<T> traced_attempt(Purpose purpose, const Attempt& current,
                                   const std::function<AttemptOutcome<T>(const Attempt&)>& attempt);
  Attempt begin_attempt(const std::function<Error(const Attempt&)>& exhausted);
  void append_generation_started(Purpose purpose, const Attempt& attempt);
  // Backs off before the next attempt; RunCancelled if cancelled meanwhile.
  void back_off(Purpose purpose, const Attempt& attempt, const AttemptFailed& failure);
  // Summary texts (generateBounded): one generation cycle, one
  // generation_started per attempt however many requests it makes.
  // Throws RunFailed (`<purpose>_failed`) when retrying cannot help.
  std::vector<std::string> generate(Purpose purpose, const std::vector<SummaryRequest>& requests);

  // ---- compaction, run-triggered or manual (compaction_procedure.cpp) -------

  struct Compacted {
    bool cancelled = false;  // before_compaction declined
    std::optional<TreeEntry> entry;
    bool from_hook = false;
  };
  // Prepares, asks before_compaction, summarises (or takes the hook's
  // summary) and appends the compaction entry as `entry_id`. A refusal or a
  // failed summary throws RunFailed with its cause; the log then holds no
  // compaction entry and the context is unchanged.
  Compacted compact_branch(CompactionReason reason, const std::optional<std::string>& instructions,
                           const std::string& entry_id);

  // ---- the end ---------------------------------------------------------------

  // Appends operation_finished and publishes the end event. With
  // `unless_pending`, returns nothing instead when work arrived meanwhile:
  // the decision and operation_finished are one step under the ref's lock, so
  // a steer, follow-up or write either lands before it (and is seen pending
  // here) or is refused / applied after the operation closed.
  std::optional<RunResult> finish(Outcome outcome, std::optional<Error> error, bool unless_pending = false);
  RunResult fault(Error error);
  // Leaves the operation open and unrun, awaiting the answers to its input
  // requests; a cancellation that came meanwhile takes the cancellation
  // path instead.
  std::optional<RunResult> park();
  // No thread runs the operation any more, which stays open in `status`;
  // the ref is idle. Called with mu held; `callbacks` are run_when_idle's.
  void stop_running(OperationStatus status, std::vector<std::function<void()>>& callbacks);

  HarnessCore& core_;
  std::shared_ptr<RefRuntime> rt_;
  bool recovery_;
  std::string run_id_;
  std::stop_token cancel_;
  Usage spend_;  // this operation's, see add_spend
  StepConfig config_;  // see take_config
};

}  // namespace cairn
