#include "json_views.hpp"

namespace cairn::serve {

Json to_json(const Error& error) { return {{"code", error.code}, {"message", error.message}}; }

Json messages_json(const std::vector<AgentMessage>& messages) {
  Json out = Json::array();
  for (const auto& message : messages) out.push_back(encode(message));
  return out;
}

Json to_json(const PendingInput& input) {
  Json out = {{"id", input.id},           {"ref", input.ref},           {"runId", input.run_id},
              {"kind", to_string(input.kind)}, {"toolCallId", input.tool_call_id}, {"toolName", input.tool_name},
              {"arguments", input.arguments}, {"seq", input.seq},       {"requestedAt", input.requested_at}};
  if (input.rule) out["rule"] = *input.rule;
  if (input.question) out["question"] = *input.question;
  if (!input.choices.empty()) out["choices"] = input.choices;
  if (input.sandbox) out["sandbox"] = encode(*input.sandbox);
  return out;
}

Json to_json(const SuspendedOperation& operation) {
  Json prompt = Json::array();
  for (const auto& block : operation.prompt) prompt.push_back(encode(block));
  Json out = {{"ref", operation.ref}, {"kind", to_string(operation.kind)}, {"id", operation.id},
              {"startedAt", operation.started_at}, {"prompt", std::move(prompt)}};
  if (operation.cancelled) {
    out["cancelled"] = {{"clearedSteer", messages_json(operation.cancelled->cleared_steer)},
                        {"clearedFollowUp", messages_json(operation.cancelled->cleared_follow_up)}};
  }
  if (!operation.missing.tools.empty() || !operation.missing.models.empty()) {
    out["missing"] = {{"tools", operation.missing.tools}, {"models", operation.missing.models}};
  }
  if (operation.damaged) out["damaged"] = {{"placeholders", operation.damaged->placeholders}};
  Json awaiting = Json::array();
  for (const auto& input : operation.awaiting_input) awaiting.push_back(to_json(input));
  out["awaitingInput"] = std::move(awaiting);
  return out;
}

Json to_json(const RefStatus& status, const std::vector<SuspendedOperation>& suspended) {
  Json out = {{"name", status.name}, {"leafId", status.leaf_id ? Json(*status.leaf_id) : Json(nullptr)}};
  std::string state = "idle";
  if (status.run) {
    state = std::string(to_string(status.run->status));
    Json run = {{"id", status.run->id}, {"kind", status.run->kind}, {"status", state}};
    for (const auto& operation : suspended) {
      if (operation.ref == status.name && operation.id == status.run->id) run["suspended"] = to_json(operation);
    }
    out["run"] = std::move(run);
  }
  out["status"] = state;
  return out;
}

Json to_json(const RunResult& result) {
  Json out = {{"outcome", to_string(result.outcome)}, {"kind", to_string(result.kind)}, {"runId", result.run_id}};
  if (result.final_message) out["finalMessage"] = encode(AgentMessage(*result.final_message));
  if (result.entry) out["entry"] = encode(*result.entry);
  if (result.new_leaf_id) out["newLeafId"] = *result.new_leaf_id;
  if (result.editor_text) out["editorText"] = *result.editor_text;
  if (!result.awaiting_input.empty()) {
    Json awaiting = Json::array();
    for (const auto& input : result.awaiting_input) awaiting.push_back(to_json(input));
    out["awaitingInput"] = std::move(awaiting);
  }
  if (result.error) out["error"] = to_json(*result.error);
  return out;
}

Json to_json(const AbortResult& result) {
  Json out = {{"outcome", to_string(result.outcome)},
              {"runId", result.run_id.empty() ? Json(nullptr) : Json(result.run_id)},
              {"clearedSteer", messages_json(result.cleared_steer)},
              {"clearedFollowUp", messages_json(result.cleared_follow_up)}};
  if (result.error) out["error"] = to_json(*result.error);
  return out;
}

namespace {
Json run_snapshot_json(const RunSnapshot& run) {
  Json out = {{"id", run.id}, {"kind", to_string(run.kind)}, {"status", to_string(run.status)}, {"startedAt", run.started_at}};
  if (run.suspended) out["suspended"] = to_json(*run.suspended);
  if (run.streaming_message) out["streamingMessage"] = encode(AgentMessage(*run.streaming_message));
  Json tools = Json::array();
  for (const auto& tool : run.running_tools) {
    Json item = {{"toolCallId", tool.tool_call_id}, {"toolName", tool.tool_name}, {"args", tool.args}};
    if (tool.partial_result) {
      Json content = Json::array();
      for (const auto& block : tool.partial_result->content) content.push_back(encode(block));
      item["partialResult"] = {{"content", std::move(content)}, {"isError", tool.partial_result->is_error}};
    }
    tools.push_back(std::move(item));
  }
  out["runningTools"] = std::move(tools);
  if (run.retry) {
    out["retry"] = {{"attempt", run.retry->attempt}, {"maxAttempts", run.retry->max_attempts},
                    {"nextAttemptAt", run.retry->next_attempt_at}};
  }
  return out;
}
}  // namespace

Json to_json(const RefSnapshot& snapshot, std::optional<std::size_t> transcript_limit) {
  Json transcript = Json::array();
  const std::size_t total = snapshot.transcript.size();
  const std::size_t omitted = transcript_limit && *transcript_limit < total ? total - *transcript_limit : 0;
  for (std::size_t i = omitted; i < total; ++i) transcript.push_back(encode(snapshot.transcript[i]));
  Json pending = Json::array();
  for (const auto& entry : snapshot.pending_writes) pending.push_back(encode(entry));
  Json out = {{"type", "snapshot"},
              {"ref", snapshot.ref},
              {"cursor", snapshot.cursor},
              {"leafId", snapshot.leaf_id ? Json(*snapshot.leaf_id) : Json(nullptr)},
              {"transcript", std::move(transcript)},
              {"transcriptOmitted", omitted},
              {"steer", messages_json(snapshot.steer)},
              {"followUp", messages_json(snapshot.follow_up)},
              {"nextRun", messages_json(snapshot.next_run)},
              {"pendingWrites", std::move(pending)},
              {"faulted", snapshot.faulted}};
  out["run"] = snapshot.run ? run_snapshot_json(*snapshot.run) : Json(nullptr);
  return out;
}

Json to_json(const SessionSnapshot& snapshot) {
  Json refs = Json::array();
  for (const auto& ref : snapshot.refs) {
    std::vector<SuspendedOperation> suspended;
    if (ref.suspended) suspended.push_back(*ref.suspended);
    refs.push_back(to_json(ref.status, suspended));
  }
  return {{"type", "snapshot"}, {"cursor", snapshot.cursor}, {"refs", std::move(refs)}, {"faulted", snapshot.faulted}};
}

}  // namespace cairn::serve
