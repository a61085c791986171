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

// How an operation or a call ended. Its error's code is one of the Errc
// list (cairn/error.hpp): a rejected call changed nothing and the log is
// untouched (the "rejected" group there); a failed operation ended in order,
// durably (the "failed" group); a faulted one stopped because appends stopped
// working, with the store's own code (io_error, stale_writer, faulted, ...) or
// internal_error, and restores as suspended. An operation awaiting input
// (a tool call the approval policy says to ask about, or a question) is
// open: durably parked until an answer is given (AgentRef::respond) and
// resume() continues it; no thread and no lock wait for the human.
enum class Outcome { ok, rejected, failed, aborted, cancelled, faulted, awaiting_input };
std::string_view to_string(Outcome outcome);

// An input request no answer has resolved yet (the log's input_requested).
struct PendingInput {
  std::string id;  // the request's id: what respond() names
  std::string ref;
  std::string run_id;
  InputKind kind = InputKind::approval;
  std::string tool_call_id;
  std::string tool_name;
  Json arguments = Json::object();
  std::optional<std::string> rule;      // approval: the rule that asked
  std::optional<std::string> question;  // question: its text
  std::vector<std::string> choices;
  // approval: the sandbox the call runs under if allowed (its request's).
  std::optional<SandboxRecord> sandbox;
  std::int64_t seq = 0;  // of its input_requested
  std::string requested_at;
  // Set: the request is a child session's (a subagent's, through a tool
  // call of replay "resume"): its input_requested and, once answered, its
  // input_resolved are in that session's log; `seq` is that log's. The
  // parent's ref lists it and takes its answer while its run waits for the
  // child; tool_call_id and tool_name are the child's call.
  std::optional<std::string> child_session;
};

// An answer to an input request. An approval takes allow (optionally with
// edited arguments, and `remember`: a rule such as "bash(npm run test:*)"
// after which matching calls of the session no longer ask) or deny (the
// reason is what the model reads); a question takes answer, or deny to
// decline it.
struct InputResponse {
  using Decision = InputDecision;
  Decision decision = Decision::allow;
  std::optional<Json> arguments;
  std::optional<std::string> remember;
  std::optional<std::string> reason;
  std::string answer;
  std::string by = "user";  // who answered, as the log records it
};

struct [[nodiscard]] InputResult {
  Outcome outcome = Outcome::ok;
  std::int64_t seq = -1;  // of the input_resolved appended
  std::optional<Error> error;
  bool ok() const { return outcome == Outcome::ok; }
};

struct [[nodiscard]] RunResult {
  Outcome outcome = Outcome::ok;
  OperationKind kind = OperationKind::run;
  std::string run_id;  // empty when rejected, or faulted before acceptance
  std::optional<AssistantMessage> final_message;  // run
  // compaction: the compaction entry; navigation: the branch summary entry.
  std::optional<TreeEntry> entry;
  std::optional<std::string> new_leaf_id;  // navigation: where the ref's leaf is
  std::optional<std::string> editor_text;  // navigation to a user message: its text, to edit and send again
  std::vector<PendingInput> awaiting_input;  // outcome awaiting_input: what it waits for
  std::optional<Error> error;
  bool ok() const { return outcome == Outcome::ok; }
};
using ResumeResult = RunResult;

struct [[nodiscard]] QueueResult {
  Outcome outcome = Outcome::ok;
  std::optional<Error> error;
  bool ok() const { return outcome == Outcome::ok; }
};

struct [[nodiscard]] AbortResult {
  Outcome outcome = Outcome::ok;  // ok also when the ref was idle (a no-op)
  std::string run_id;             // empty when the ref was idle
  std::vector<AgentMessage> cleared_steer;
  std::vector<AgentMessage> cleared_follow_up;
  std::optional<Error> error;
  bool ok() const { return outcome == Outcome::ok; }
};

// awaiting_input: open, parked on unanswered input requests (SuspendedOperation::awaiting_input).
enum class OperationStatus { running, suspended, cancelling, awaiting_input };
std::string_view to_string(OperationStatus status);

struct SuspendedOperation {
  std::string ref;
  OperationKind kind = OperationKind::run;
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
  // Its input requests no answer has resolved: resume() waits for them
  // (returns awaiting_input) instead of asking the model again.
  std::vector<PendingInput> awaiting_input;
};

struct RefStatus {
  std::string name;
  std::optional<std::string> leaf_id;
  struct Run {
    std::string id;
    OperationKind kind = OperationKind::run;
    OperationStatus status = OperationStatus::running;
  };
  std::optional<Run> run;
};

}  // namespace cairn
