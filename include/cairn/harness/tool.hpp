// A tool the model may call. Implementations are code and do not persist;
// what persists is which tools are active on a branch, and for every call
// that began, a tool_started record with its effective arguments.
#pragma once

#include <any>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/events.hpp"
#include "cairn/harness/results.hpp"
#include "cairn/json.hpp"
#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

struct [[nodiscard]] ToolResult {
  std::vector<UserBlock> content;
  std::optional<Json> details;
  bool is_error = false;

  // Model usage the call caused (a child session's requests): summed into
  // the operation's spend. Never persisted by the harness.
  std::optional<Usage> spend;

  static ToolResult text(std::string text, bool is_error = false);
};

using ToolUpdateSink = std::function<void(const ToolResult& partial)>;

// What a running call has besides its arguments.
struct ToolContext {
  std::string ref;  // the ref whose run made the call
  std::string run_id;
  std::string tool_call_id;
  // A stop request asks the tool to end promptly (abort, or the harness
  // closing the run).
  std::stop_token cancel;
  // Streams partial results to observers (tool_update events, snapshots).
  ToolUpdateSink update;
  // The application's context (HarnessOptions::tool_context), evaluated for
  // this call; empty when none is configured. Read it with std::any_cast.
  std::any app;
  // The session of the run that made the call, and how deep it is among
  // child sessions: 0 for a top-level session, else its header's
  // child.depth (make_child_session_tool).
  std::string session_id;
  int depth = 0;
  // Replay "resume": the child session's id, provisioned in the call's
  // tool_started; the same id every time the call runs.
  std::optional<std::string> child_session;
  // Runs again after its process stopped (its tool_started was in the log).
  bool recovery = false;
  // The sandbox the call's processes must run under, as its tool_started
  // records it (HarnessOptions::sandbox, or what the run recorded first);
  // empty when the harness was given no policy.
  std::optional<SandboxRecord> sandbox;
  // Replay "resume": passes an event of the child session on to the
  // parent's observers (a child_session_event, see events.hpp).
  std::function<void(const Json& linkage, const Event& child_event)> relay;
};

struct Tool {
  std::string name;
  std::string description;
  Json parameters = Json::object();  // JSON schema of the arguments
  Replay replay = Replay::never;  // cairn/log/record.hpp says what each means
  // May run at the same time as the other calls of its batch.
  bool parallel = true;
  // A boolean argument by which a call asks for the network its sandbox
  // keeps off (bash's "network"); empty: the tool has none. A call that sets
  // it runs with the network only when a human allowed that call
  // (SandboxRecord::network_granted); the approval policy sees the wish.
  std::string network_argument;
  // Runs the call, on the run's thread or, for a parallel batch, on one of
  // its own. An exception becomes an error result.
  std::function<ToolResult(const Json& args, const ToolContext& context)> execute;
  // For a call that began before its process died and has no result (a
  // crash, a kill): ends whatever of that call may still run, found by the
  // context's run_id and tool_call_id, and returns once nothing of it runs.
  // The harness calls it on resume and on abort, before it records the call
  // as interrupted, so that an "interrupted" result never stands beside a
  // command that is still going. Empty: the tool leaves nothing running.
  std::function<void(const ToolContext& context)> settle;
  // Replay "resume": for a call whose run is aborted while the call has a
  // tool_started and no result (its process died, or died while aborting):
  // ends the child's run — finishing an abort the crash interrupted, or
  // aborting it — and returns the call's result, which names the child
  // session and how its run ended. The harness calls it instead of settle
  // on the cancellation path. Empty: the call is settled and "interrupted".
  std::function<ToolResult(const ToolContext& context)> end_child;
  // The argument an approval rule's pattern is matched against ("command"
  // for bash, "path" for edit and write): `bash(git status)` matches a bash
  // call whose `command` is "git status". Empty: rules match the name only.
  std::string approval_subject;
  // A question to the human rather than an action: a call of it is never
  // executed. The harness asks its arguments' `question` (with `choices`,
  // if any) as a durable input request, waits, and the answer is the call's
  // result (see ask_user_tool in cairn/tools/coding_tools.hpp).
  bool asks_user = false;
  // Replay "resume": the input requests of the call's child session that
  // await an answer (asked when the parent is restored with the call open),
  // and the answer to one of them, made durable in the child's log.
  std::function<std::vector<PendingInput>(const ToolContext& context)> child_inputs;
  std::function<InputResult(const ToolContext& context, const std::string& request_id, InputResponse response)>
      respond_child;
};

// Thrown by a replay "resume" tool whose child session parked awaiting a
// human's answer: the call gets no result, the parent's run parks awaiting
// input too, with the child's requests (PendingInput::child_session set)
// as its own, and resume() runs the call again once they are answered.
struct ToolAwaitingInput {
  std::vector<PendingInput> inputs;
};

// Checks `args` against a tool's JSON schema (draft 7); the error names the
// offending argument.
class ArgumentValidator {
 public:
  // Fails with invalid_argument when the schema itself is not valid.
  static Result<ArgumentValidator> compile(const Json& schema);
  Status validate(const Json& args) const;

  ArgumentValidator(ArgumentValidator&&) noexcept;
  ArgumentValidator& operator=(ArgumentValidator&&) noexcept;
  ~ArgumentValidator();

 private:
  struct Compiled;
  explicit ArgumentValidator(std::unique_ptr<Compiled> compiled);
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace cairn
