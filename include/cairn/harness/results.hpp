// Results of the harness's calls, and the state of refs and operations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

// How an operation or a call ended. Error codes (ErrorInfo::code) are stable:
//
//   rejected — the call changed nothing, the log is untouched:
//     busy               the ref already has an active or suspended operation
//     no_active_run      steer / follow_up with no run on the ref
//     not_suspended      resume with no suspended operation on the ref
//     missing_identities resume while the log names tools or models this harness lacks
//     damaged_log        resume of an operation that was open where `cairn repair` replaced a
//                        damaged record: a tool of it may have started there, so it is only aborted
//     unknown_tool       an active tool name that is not registered
//     unknown_model      a model that `models` does not have
//     unknown_ref        a ref that does not exist (or was deleted)
//     ref_exists         create_ref of an existing ref
//     ref_active         delete_ref of a ref whose operation is active or suspended
//     main_ref           delete_ref("main")
//     invalid_message    a queued or prompted message that is not a user-side message, or
//                        one (or a compaction's or navigation's option) holding text that
//                        is not valid UTF-8: the message names the field and the byte offset
//     invalid_entry      a SessionTree write other than a message holding such text
//     unknown_entry      an anchor that names no entry
//     unknown_skill      skill() of a skill the resources do not have
//     unknown_template   prompt_from_template() of a template they do not have
//     closed             the harness was closed
//   failed — the operation ended in order, durably:
//     retries_exhausted  every allowed attempt of a request failed
//     provider_error     the provider failed in a way retrying cannot fix
//     context_overflow   the request was larger than the model's context window,
//                        and compacting it did not help or was not possible
//     nothing_to_compact a compaction that would shed nothing
//     would_split_tool_call a compaction whose cut would orphan a tool result
//     compaction_failed  the summary request failed in a way retrying cannot fix
//     branch_summary_failed  the same for a navigation's branch summary
//   faulted — appends stopped working; the operation restores as suspended:
//     the store's own code (io_error, stale_writer, faulted, …); `faulted` for
//     calls made after the fault; internal_error for a bug that stopped a run
enum class Outcome { ok, rejected, failed, aborted, cancelled, faulted };
std::string_view to_string(Outcome outcome);

struct RunResult {
  Outcome outcome = Outcome::ok;
  std::string kind = "run";  // run | compaction | navigation
  std::string run_id;        // empty when rejected, or faulted before acceptance
  std::optional<AssistantMessage> final_message;  // run
  // compaction: the compaction entry; navigation: the branch summary entry.
  std::optional<TreeEntry> entry;
  std::optional<std::string> new_leaf_id;  // navigation: where the ref's leaf is
  std::optional<std::string> editor_text;  // navigation to a user message: its text, to edit and send again
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
  // The log was damaged while the operation was open: `cairn repair` left
  // placeholders (these seqs) where records of it may have been, among them
  // perhaps a tool's start. resume() refuses it (damaged_log); abort() ends it.
  struct Damaged {
    std::vector<std::int64_t> placeholders;
  };
  std::optional<Damaged> damaged;
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

}  // namespace cairn
