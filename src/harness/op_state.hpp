// The state of one ref's open operation, as its records dictate
// (durable-harness-design.txt, HarnessState / RefState). The same fold builds
// it at restore, over the ref's tail after operation_started, and keeps it
// current while the operation runs, one appended record at a time: a resumed
// run and a live one decide from the same state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/results.hpp"
#include "cairn/harness/tool.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

// The replay policy a tool_started recorded.
Replay replay_of(const ToolStarted& started);

struct ToolCallState {
  std::int64_t index = 0;
  std::string call_id;
  std::string name;
  Json args;
  std::optional<std::string> raw_arguments;  // the model's arguments were not a JSON object
  std::optional<ToolStarted> started;
  bool result_exists = false;
};

// The run's newest assistant message with tool calls, and where each call
// is. Each call's tool_started is appended when it starts and its result
// when it ends, so after a crash a call may have a result (it ended), a
// tool_started alone (it was running) or neither (it never started).
struct ToolBatch {
  std::string assistant_entry_id;
  std::vector<ToolCallState> calls;
  bool unresolved() const;
};

// One input request of the operation, and its answer once there is one.
struct InputState {
  std::string id;
  std::int64_t seq = 0;
  std::string requested_at;
  InputRequested request;
  std::optional<InputResolved> resolution;
};

struct OpState {
  std::string id;
  OperationKind kind = OperationKind::run;
  std::string ref;
  std::int64_t start_seq = 0;
  std::string started_at;
  std::optional<std::string> source_leaf_id;
  OperationIntent intent;

  bool cancelled = false;
  // Open where `cairn repair` replaced damaged records: only abort ends it
  // (results.hpp, SuspendedOperation::damaged).
  bool damaged = false;
  // Attempts made for the current request cycle: +1 per generation_started,
  // back to 0 whenever a tree entry of this operation commits.
  std::int64_t request_attempts = 0;
  // The sandbox policy the run recorded first (a tool_started's, or the
  // one an approval request showed), without a call's network grant: the
  // one its later calls run under, whoever resumes it.
  std::optional<SandboxRecord> sandbox;
  std::optional<ToolBatch> tool_batch;
  // Accepted and not yet applied, in acceptance order.
  std::vector<ProvisionedEntry> pending_steer;
  std::vector<ProvisionedEntry> pending_follow_up;
  std::vector<ProvisionedEntry> pending_writes;

  // The role of the newest message the run itself appended (initial
  // messages, queue items, responses, tool results; not deferred writes):
  // anything but "assistant" means the model owes a response.
  std::optional<std::string> last_role;
  std::optional<std::string> last_assistant_id;
  std::optional<AssistantMessage> last_assistant;
  // This run's message entries, oldest first.
  std::vector<std::string> message_ids;
  // Its input requests, oldest first.
  std::vector<InputState> inputs;

  // The request about call `index` of the batch of `assistant_entry_id`, if any.
  const InputState* input_for(std::string_view assistant_entry_id, std::int64_t index) const;
  // The requests with no answer yet, as the API lists them.
  std::vector<PendingInput> pending_inputs() const;
};

// Starts the state of the operation opened by `started` (at `seq`).
OpState open_operation(const HarnessRecord& started, std::int64_t seq);

// Folds one record that `op.ref` appended after its operation_started.
// Fails (corrupt_log, naming the seq) on a record the harness could not have
// written there.
Status reduce(OpState& op, const Record& record);

}  // namespace cairn
