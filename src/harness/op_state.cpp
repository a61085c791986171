#include "op_state.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cairn/overloaded.hpp"

namespace cairn {
namespace {

bool erase_by_id(std::vector<ProvisionedEntry>& items, const std::string& id) {
  auto it = std::find_if(items.begin(), items.end(), [&](const ProvisionedEntry& e) { return e.id == id; });
  if (it == items.end()) return false;
  items.erase(it);
  return true;
}

}  // namespace

Replay replay_of(const ToolStarted& started) {
  // check_fields holds a resume call to its child's id; without one it could
  // only be run as a new call, which replay never forbids.
  if (started.replay == Replay::resume && !started.child_session) return Replay::never;
  return started.replay;
}

bool ToolBatch::unresolved() const {
  return std::any_of(calls.begin(), calls.end(), [](const ToolCallState& c) { return !c.result_exists; });
}

const InputState* OpState::input_for(std::string_view assistant_entry_id, std::int64_t index) const {
  for (const auto& input : inputs) {
    if (input.request.assistant_entry_id == assistant_entry_id && input.request.tool_index == index) return &input;
  }
  return nullptr;
}

std::vector<PendingInput> OpState::pending_inputs() const {
  std::vector<PendingInput> pending;
  for (const auto& input : inputs) {
    if (input.resolution) continue;
    const InputRequested& r = input.request;
    pending.push_back(PendingInput{.id = input.id, .ref = ref, .run_id = id, .kind = r.kind,
                                   .tool_call_id = r.tool_call_id, .tool_name = r.tool_name, .arguments = r.arguments,
                                   .rule = r.rule, .question = r.question, .choices = r.choices, .sandbox = r.sandbox,
                                   .seq = input.seq,
                                   .requested_at = input.requested_at});
  }
  return pending;
}

OpState open_operation(const HarnessRecord& started, std::int64_t seq) {
  const auto& body = std::get<OperationStarted>(started.body);
  OpState op;
  op.id = started.id;
  op.kind = kind_of(body.intent);
  op.ref = started.ref;
  op.start_seq = seq;
  op.started_at = started.timestamp;
  op.source_leaf_id = body.source_leaf_id;
  op.intent = body.intent;
  return op;
}

Status reduce(OpState& op, const Record& record) {
  if (const auto* entry = std::get_if<TreeEntry>(&record.body)) {
    op.request_attempts = 0;
    const bool deferred = erase_by_id(op.pending_writes, entry->id);
    const bool queued = erase_by_id(op.pending_steer, entry->id) || erase_by_id(op.pending_follow_up, entry->id);
    const auto* body = std::get_if<MessageBody>(&entry->body);
    if (!body) return {};
    op.message_ids.push_back(entry->id);
    if (deferred && !queued) return {};
    const std::string_view role = role_of(body->message);
    op.last_role = std::string(role);
    if (const auto* assistant = std::get_if<AssistantMessage>(&body->message)) {
      op.last_assistant_id = entry->id;
      op.last_assistant = *assistant;
      ToolBatch batch{.assistant_entry_id = entry->id};
      std::int64_t index = 0;
      for (const auto& block : assistant->content) {
        if (const auto* call = std::get_if<ToolCall>(&block)) {
          batch.calls.push_back(ToolCallState{.index = index, .call_id = call->id, .name = call->name,
                                              .args = call->arguments, .raw_arguments = call->raw_arguments});
        }
        ++index;
      }
      op.tool_batch = batch.calls.empty() ? std::nullopt : std::optional<ToolBatch>(std::move(batch));
    } else if (const auto* result = std::get_if<ToolResultMessage>(&body->message)) {
      if (!op.tool_batch) {
        return fail(Errc::corrupt_log, fmt::format("seq {}: a tool result for call '{}' follows no tool call of run '{}'",
                                               record.seq, result->tool_call_id, op.id));
      }
      auto& calls = op.tool_batch->calls;
      auto it = std::find_if(calls.begin(), calls.end(), [&](const ToolCallState& c) {
        return c.call_id == result->tool_call_id && !c.result_exists;
      });
      if (it == calls.end()) {
        return fail(Errc::corrupt_log, fmt::format("seq {}: tool result for call '{}', which the run's newest tool batch "
                                               "does not hold or has already answered",
                                               record.seq, result->tool_call_id));
      }
      it->result_exists = true;
    }
    return {};
  }
  const auto* harness = std::get_if<HarnessRecord>(&record.body);
  if (!harness) return {};  // ignorable records change nothing
  return std::visit(
      [&](const auto& body) -> Status {
        using B = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<B, OperationCancelled>) {
          op.cancelled = true;
        } else if constexpr (std::is_same_v<B, GenerationStarted>) {
          if (body.attempt != op.request_attempts + 1) {
            return fail(Errc::corrupt_log, fmt::format("seq {}: generation_started attempt {} where attempt {} was due",
                                                   record.seq, body.attempt, op.request_attempts + 1));
          }
          op.request_attempts = body.attempt;
        } else if constexpr (std::is_same_v<B, ToolStarted>) {
          if (!op.tool_batch || op.tool_batch->assistant_entry_id != body.assistant_entry_id) {
            return fail(Errc::corrupt_log, fmt::format("seq {}: tool_started for assistant entry '{}', which is not the "
                                                   "run's newest tool batch",
                                                   record.seq, body.assistant_entry_id));
          }
          auto& calls = op.tool_batch->calls;
          auto it = std::find_if(calls.begin(), calls.end(),
                                 [&](const ToolCallState& c) { return c.index == body.tool_index; });
          if (it == calls.end() || it->call_id != body.tool_call_id || it->started) {
            return fail(Errc::corrupt_log, fmt::format("seq {}: tool_started for call '{}' at index {}, which the batch "
                                                   "does not hold or has already started",
                                                   record.seq, body.tool_call_id, body.tool_index));
          }
          it->started = body;
          // A network granted to one call is not the run's policy.
          if (!op.sandbox && body.sandbox) op.sandbox = body.sandbox->run_policy();
        } else if constexpr (std::is_same_v<B, InputRequested>) {
          const bool in_batch = op.tool_batch && op.tool_batch->assistant_entry_id == body.assistant_entry_id;
          const auto& calls = in_batch ? op.tool_batch->calls : std::vector<ToolCallState>{};
          auto it = std::find_if(calls.begin(), calls.end(),
                                 [&](const ToolCallState& c) { return c.index == body.tool_index; });
          if (it == calls.end() || it->call_id != body.tool_call_id || it->started || it->result_exists ||
              op.input_for(body.assistant_entry_id, body.tool_index)) {
            return fail(Errc::corrupt_log, fmt::format("seq {}: input_requested for call '{}' at index {}, which the "
                                                   "run's newest tool batch does not hold unstarted and unasked",
                                                   record.seq, body.tool_call_id, body.tool_index));
          }
          op.inputs.push_back(InputState{.id = harness->id, .seq = record.seq, .requested_at = harness->timestamp,
                                         .request = body});
          // What a person was shown binds the run as a first call's record
          // does: a resume elsewhere runs the allowed call under it.
          if (!op.sandbox && body.sandbox) op.sandbox = body.sandbox->run_policy();
        } else if constexpr (std::is_same_v<B, InputResolved>) {
          auto it = std::find_if(op.inputs.begin(), op.inputs.end(),
                                 [&](const InputState& input) { return input.id == body.request_id; });
          if (it == op.inputs.end() || it->resolution) {
            return fail(Errc::corrupt_log, fmt::format("seq {}: input_resolved for request '{}', which the run {}",
                                                   record.seq, body.request_id,
                                                   it == op.inputs.end() ? "did not make" : "has had answered"));
          }
          it->resolution = body;
        } else if constexpr (std::is_same_v<B, QueueEnqueued>) {
          if (body.queue == QueueKind::steer) op.pending_steer.push_back(body.target);
          if (body.queue == QueueKind::follow_up) op.pending_follow_up.push_back(body.target);
        } else if constexpr (std::is_same_v<B, WriteDeferred>) {
          op.pending_writes.push_back(body.target);
        }
        return {};
      },
      harness->body);
}

}  // namespace cairn
