// The durable harness: an agent loop over a session log that records every
// decision before its effect (durable-harness-design.txt; DESIGN.md, Harness
// semantics). Operations on different refs run concurrently; a blocking call
// (prompt, resume) runs the operation on the caller's thread, and steer,
// abort and the rest may be called from any thread, hooks and listeners
// included. No harness lock is held across a provider request, a tool, a
// hook or a listener.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/events.hpp"
#include "cairn/harness/hooks.hpp"
#include "cairn/harness/tool.hpp"
#include "cairn/llm/provider.hpp"
#include "cairn/store/session.hpp"

namespace cairn {

// How an operation or a call ended. Error codes (ErrorInfo::code) are stable:
//
//   rejected — the call changed nothing, the log is untouched:
//     busy               the ref already has an active or suspended operation
//     no_active_run      steer / follow_up with no run on the ref
//     not_suspended      resume with no suspended operation on the ref
//     missing_identities resume while the log names tools or models this harness lacks
//     unknown_tool       an active tool name that is not registered
//     unknown_model      a model that `models` does not have
//     unknown_ref        a ref that does not exist (or was deleted)
//     ref_exists         create_ref of an existing ref
//     ref_active         delete_ref of a ref whose operation is active or suspended
//     main_ref           delete_ref("main")
//     invalid_message    a queued or prompted message that is not a user-side message
//     unknown_entry      an anchor that names no entry
//     closed             the harness was closed
//   failed — the operation ended in order, durably:
//     retries_exhausted  every allowed attempt of a request failed
//     provider_error     the provider failed in a way retrying cannot fix
//     context_overflow   the request was larger than the model's context window
//   faulted — appends stopped working; the operation restores as suspended:
//     the store's own code (io_error, stale_writer, faulted, …)
enum class Outcome { ok, rejected, failed, aborted, cancelled, faulted };
std::string_view to_string(Outcome outcome);

struct RunResult {
  Outcome outcome = Outcome::ok;
  std::string kind = "run";  // run | compaction | navigation
  std::string run_id;        // empty when rejected, or faulted before acceptance
  std::optional<AssistantMessage> final_message;
  std::optional<Error> error;
  bool ok() const { return outcome == Outcome::ok; }
};
using ResumeResult = RunResult;

struct QueueResult {
  Outcome outcome = Outcome::ok;
  std::optional<Error> error;
  bool ok() const { return outcome == Outcome::ok; }
};

struct AbortResult {
  Outcome outcome = Outcome::ok;  // ok also when the ref was idle (a no-op)
  std::string run_id;             // empty when the ref was idle
  std::vector<AgentMessage> cleared_steer;
  std::vector<AgentMessage> cleared_follow_up;
  std::optional<Error> error;
  bool ok() const { return outcome == Outcome::ok; }
};

enum class OperationStatus { running, suspended, cancelling };
std::string_view to_string(OperationStatus status);

struct SuspendedOperation {
  std::string ref;
  std::string kind;
  std::string id;
  std::string started_at;
  std::vector<UserBlock> prompt;  // runs: the prompt, for display
  // Cancelled before the crash: resume() completes the abort. The undelivered
  // queue items, so a client can offer to requeue them.
  struct Cancelled {
    std::vector<AgentMessage> cleared_steer;
    std::vector<AgentMessage> cleared_follow_up;
  };
  std::optional<Cancelled> cancelled;
  struct Missing {
    std::vector<std::string> tools;
    std::vector<std::string> models;  // "provider/id"
  } missing;
};

struct RefStatus {
  std::string name;
  std::optional<std::string> leaf_id;
  struct Run {
    std::string id;
    std::string kind;
    OperationStatus status = OperationStatus::running;
  };
  std::optional<Run> run;
};

struct RetryPolicy {
  int max_attempts = 4;  // attempts per request cycle, the first included
  std::chrono::milliseconds base_delay{1000};
  std::chrono::milliseconds max_delay{30000};
  double jitter = 0.2;  // ± this fraction of the delay
};

enum class QueueMode { one_at_a_time, all };

struct HarnessOptions {
  std::shared_ptr<Session> session;
  Models models;
  Model model;  // initial: a branch's own model_change entries win
  std::string thinking_level = "off";
  std::vector<Tool> tools;
  std::optional<std::vector<std::string>> active_tool_names;  // default: every tool
  // A string, or a function evaluated per request (it sees the active tools).
  std::function<std::string(const std::vector<std::string>& active_tools)> system_prompt;
  StreamOptions stream_options;
  RetryPolicy retry;
  QueueMode steering_mode = QueueMode::one_at_a_time;
  QueueMode follow_up_mode = QueueMode::one_at_a_time;
  // AgentMessages to provider messages, before each request.
  std::function<std::vector<LlmMessage>(const std::vector<AgentMessage>&)> convert_to_llm;
};

class HarnessCore;

// The operation surface of one ref: a small handle, cheap to copy. A handle
// of a deleted ref rejects every call with unknown_ref.
class AgentRef {
 public:
  const std::string& name() const { return name_; }
  std::optional<std::string> leaf_id() const;

  RunResult prompt(std::string text, std::vector<ImageContent> images = {});
  RunResult prompt(std::vector<AgentMessage> messages);
  // Continues this ref's suspended operation to its durable end.
  ResumeResult resume();
  // Durable the moment it returns: operation_cancelled is in the log, the run
  // is signalled, and reconciliation goes on in the background.
  AbortResult abort();

  QueueResult steer(std::string text, std::vector<ImageContent> images = {});
  QueueResult steer(AgentMessage message);
  QueueResult follow_up(std::string text, std::vector<ImageContent> images = {});
  QueueResult follow_up(AgentMessage message);
  QueueResult next_run(std::string text, std::vector<ImageContent> images = {});
  QueueResult next_run(AgentMessage message);

  // Blocks until this ref has no active operation (a suspended one does not count).
  void wait_for_idle() const;
  // Runs `callback` once the ref is idle: now, on this thread, if it is.
  void run_when_idle(std::function<void()> callback);

  // Branch-anchored config: read from the ref's branch, written as entries
  // (deferred while the ref runs).
  Model model() const;
  Result<std::string> set_model(const std::string& provider, const std::string& id);
  std::string thinking_level() const;
  Result<std::string> set_thinking_level(std::string level);
  std::vector<std::string> active_tools() const;
  Result<std::string> set_active_tools(std::vector<std::string> names);

  // This ref's writes: immediate while idle, deferred (write_deferred) while it
  // runs. Return the entry id the entry has or will have.
  Result<std::string> append_message(AgentMessage message);
  Result<std::string> append_custom_entry(std::string custom_type, std::optional<Json> data = {});
  // Writes accepted but not applied yet, in acceptance order.
  std::vector<TreeEntry> pending_writes() const;

  Subscription on_event(EventListener listener) const;  // this ref's events only

  AgentRef(std::shared_ptr<HarnessCore> core, std::string name) : core_(std::move(core)), name_(std::move(name)) {}

 private:
  std::shared_ptr<HarnessCore> core_;
  std::string name_;
};

class AgentHarness {
 public:
  struct Created;
  // Opens the session's state, finds every ref's unfinished operation, starts
  // no effects. Fails when the log's tail of an open operation is not one the
  // harness could have written (corrupt_log, naming the seq).
  static Result<Created> create(HarnessOptions options);

  ~AgentHarness();
  AgentHarness(AgentHarness&&) noexcept;
  AgentHarness& operator=(AgentHarness&&) noexcept;

  AgentRef main() const;
  std::optional<AgentRef> ref(std::string_view name) const;
  Result<AgentRef> create_ref(std::string name, std::optional<std::string> at);
  Status delete_ref(const std::string& name);
  std::vector<RefStatus> refs() const;

  // Registries shared by every ref.
  std::vector<std::string> tool_names() const;
  Status set_tools(std::vector<Tool> tools);
  RetryPolicy retry_policy() const;
  void set_retry_policy(RetryPolicy policy);
  void set_steering_mode(QueueMode mode);
  void set_follow_up_mode(QueueMode mode);
  StreamOptions stream_options() const;
  void set_stream_options(StreamOptions options);

  Hooks& hooks();
  Subscription on_event(EventListener listener);  // every ref's events
  bool faulted() const;
  std::shared_ptr<Session> session() const;

  // Detaches: new calls are rejected with `closed`; running operations are
  // not aborted (they finish, or stay resumable in the log).
  void close();

 private:
  explicit AgentHarness(std::shared_ptr<HarnessCore> core);
  std::shared_ptr<HarnessCore> core_;
};

struct AgentHarness::Created {
  AgentHarness harness;
  std::vector<SuspendedOperation> suspended;
};

}  // namespace cairn
