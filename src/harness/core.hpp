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

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "cairn/harness/harness.hpp"
#include "context_cache.hpp"
#include "event_bus.hpp"
#include "op_state.hpp"

namespace cairn {

struct RefRuntime {
  std::string name;
  std::mutex ref_mu;
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
    std::string thinking_level;
    std::vector<std::string> active_tools;
  };
  Result<BranchConfig> branch_config(const std::string& ref);
  // The same from the settings at the branch's leaf.
  BranchConfig config_from(const SessionContext& settings);

  // Operations (run.cpp).
  RunResult prompt(const std::shared_ptr<RefRuntime>& rt, std::vector<AgentMessage> messages);
  RunResult compact(const std::shared_ptr<RefRuntime>& rt, std::optional<std::string> custom_instructions);
  RunResult navigate(const std::shared_ptr<RefRuntime>& rt, const std::string& target_id, NavigateOptions options);
  RunResult run_structural(const std::shared_ptr<RefRuntime>& rt, OperationIntent intent);
  RunResult resume(const std::shared_ptr<RefRuntime>& rt);
  AbortResult abort(const std::shared_ptr<RefRuntime>& rt);
  QueueResult enqueue(const std::shared_ptr<RefRuntime>& rt, const std::string& queue, AgentMessage message);
  // A tree write on the ref: appended now when idle, deferred while it runs.
  Result<std::string> write(const std::shared_ptr<RefRuntime>& rt, TreeEntry entry);

  // Marks the harness faulted and tells everyone, once.
  void enter_fault(const Error& error);
  void publish(Event event) { bus.publish(std::move(event)); }
  void report_handler_error(const std::string& ref, const std::optional<std::string>& run_id, std::string kind,
                            std::string name, std::string what);
  // Called with mu held when a ref's operation ended or was suspended.
  void became_idle(RefRuntime& rt, std::vector<std::function<void()>>& callbacks);

  std::shared_ptr<Session> session;
  Hooks hooks;
  EventBus bus;

  std::mutex mu;
  std::condition_variable idle_cv;
  HarnessOptions options;  // config: guarded by mu
  std::map<std::string, std::shared_ptr<RefRuntime>, std::less<>> refs;
  std::map<std::string, std::shared_ptr<const ArgumentValidator>, std::less<>> validators;
  bool faulted = false;
  bool closed = false;
};

// Rejections and faults, as results.
Error rejection(std::string code, std::string message);

}  // namespace cairn
