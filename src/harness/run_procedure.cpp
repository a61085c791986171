// The run procedure and its driver loop (durable-harness-design.txt:
// runProcedure, driverLoop, autoCompact, cancellationPath). Requesting the
// assistant is in request_assistant.cpp, the tool batch in tool_batch.cpp.
#include "run_procedure.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "log/index.hpp"
#include "model_output.hpp"

namespace cairn {

std::unique_ptr<Operation> make_run_procedure(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery) {
  return std::make_unique<RunProcedure>(core, std::move(rt), recovery);
}

RunResult RunProcedure::procedure() {
  take_config();
  // Initial messages — unconditional, even when cancelled below: accepted
  // content is never dropped.
  const auto initial = with_op([](const OpState& op) { return std::get<RunIntent>(op.intent).initial_messages; });
  for (const auto& message : initial) append_if_missing(message, /*after_cancel=*/true);
  check_cancelled();
  // A batch a crash left unanswered is answered before anything else.
  const auto batch = with_op([](const OpState& op) { return op.tool_batch; });
  if (batch && batch->unresolved()) {
    Json results = reconcile_tool_batch(*batch);
    const auto last = with_op([](const OpState& op) { return op.last_assistant; });
    Event ended = event(EventType::step_end, {{"toolResults", results}});
    if (last) ended.message = std::make_shared<const AgentMessage>(*last);
    core_.publish(std::move(ended));
    check_cancelled();
  }
  recovery_ = false;
  return driver_loop();
}

RunResult RunProcedure::failed(Error error) { return *finish(Outcome::failed, std::move(error)); }

void RunProcedure::describe_end(Outcome, RunResult& result, Json& data) {
  result.final_message = with_op([](const OpState& op) { return op.last_assistant; });
  if (result.final_message) data["finalMessage"] = encode(AgentMessage(*result.final_message));
}

// ---- the loop ------------------------------------------------------------------

RunResult RunProcedure::driver_loop() {
  while (true) {
    checkpoint();
    if (needs_response()) {
      step();
      continue;  // every step ends in a fresh checkpoint
    }
    auto follow_ups = take_queued(&OpState::pending_follow_up, config_.follow_up_mode);
    if (!follow_ups.empty()) {
      for (const auto& message : follow_ups) append_if_missing(message);
      publish_queue_update();
      continue;
    }
    if (auto follow_up = before_run_end()) {
      // The hook's follow-up is queued like a caller's: a failed append
      // stops the run as every failed append does; a refusal (text that is
      // not UTF-8) is the hook's error, and the run ends without it.
      const QueueResult queued =
          core_.enqueue(rt_, QueueKind::follow_up, UserMessage{.content = *follow_up, .timestamp = now_unix_ms()});
      if (queued.outcome == Outcome::faulted) throw AppendFailed{*queued.error};
      if (!queued.ok()) core_.report_handler_error(rt_->name, run_id_, "hook", "before_run_end", queued.error->message);
    }
    if (auto finished = finish(Outcome::ok, std::nullopt, /*unless_pending=*/true)) return *finished;
  }
}

// Between steps: deferred writes are applied (they may change the branch's
// model or tools), the next step's configuration is taken, queued steering
// is consumed and auto-compaction is decided.
void RunProcedure::checkpoint() {
  trace::Span span("cairn.harness.checkpoint", [&] { return Json{{"runId", run_id_}}; });
  check_cancelled();
  for (const auto& write : with_op([](const OpState& op) { return op.pending_writes; })) append_if_missing(write);
  take_config();
  auto steering = take_queued(&OpState::pending_steer, config_.steering_mode);
  for (const auto& message : steering) append_if_missing(message);
  if (!steering.empty()) publish_queue_update();
  compact_if_over_threshold();
}

std::vector<ProvisionedEntry> RunProcedure::take_queued(std::vector<ProvisionedEntry> OpState::*queue, QueueMode mode) {
  std::lock_guard lock(core_.mu);
  const auto& items = (*rt_->op).*queue;
  if (items.empty()) return {};
  if (mode == QueueMode::all) return items;
  return {items.front()};
}

// The newest message the run appended is not the assistant's: the model
// owes a response.
bool RunProcedure::needs_response() {
  return with_op([](const OpState& op) { return op.last_role && *op.last_role != "assistant"; });
}

void RunProcedure::publish_queue_update() {
  Json data;
  {
    std::lock_guard lock(core_.mu);
    data = queue_lists(*rt_);
  }
  core_.publish(event(EventType::queue_update, std::move(data)));
}

void RunProcedure::step() {
  const std::string step_id = core_.session->new_entry_id();
  trace::Span span("cairn.harness.step", [&] { return Json{{"runId", run_id_}, {"stepId", step_id}}; });
  if (watched()) core_.publish(event(EventType::step_start, {{"stepId", step_id}}));
  AssistantMessage assistant = request_assistant();
  publish_context_usage();
  Json results = Json::array();
  if (std::any_of(assistant.content.begin(), assistant.content.end(),
                  [](const AssistantBlock& b) { return std::holds_alternative<ToolCall>(b); })) {
    const auto batch = with_op([](const OpState& op) { return op.tool_batch; });
    if (batch) results = reconcile_tool_batch(*batch, step_id);
  }
  if (watched()) {
    core_.publish(event(EventType::step_end, {{"stepId", step_id}, {"toolResults", results}}, std::nullopt,
                        std::make_shared<const AgentMessage>(std::move(assistant))));
  }
}

std::optional<std::string> RunProcedure::before_run_end() {
  const auto handlers = core_.hooks.handlers(&Hooks::Lists::before_run_end);
  if (handlers.empty()) return std::nullopt;  // nobody to read the run's messages back for
  std::vector<AgentMessage> messages;
  for (const auto& id : with_op([](const OpState& op) { return op.message_ids; })) {
    auto entry = core_.session->get_entry(id);
    if (!entry) throw AppendFailed{entry.error()};
    if (*entry) {
      if (const auto* body = std::get_if<MessageBody>(&(*entry)->body)) {
        messages.push_back(body->message);
        if (std::holds_alternative<ToolResultMessage>(messages.back())) place_tool_result(messages);  // as the context lists them
      }
    }
  }
  std::optional<std::string> follow_up;
  each_hook("before_run_end", handlers, [&](const auto& hook) {
    if (auto out = hook(hook_context(), BeforeRunEndEvent{messages}); out && out->follow_up) follow_up = out->follow_up;
  });
  return follow_up;
}

// ---- auto-compaction ----------------------------------------------------------

// At a checkpoint: compacts when the context is over the threshold. A
// refusal (nothing to shed) is reported once and not retried in this run.
void RunProcedure::compact_if_over_threshold() {
  if (threshold_refused_ || !config_.compaction.enabled) return;
  if (!should_compact(rt_->context.size().tokens, config_.branch.model.context_window, config_.compaction)) return;
  auto_compact(CompactionReason::threshold);
}

// Compaction inside a run, bracketed by compaction_start / compaction_end.
// True when the context was compacted. A refusal or a hook's cancel leaves
// the context as it was and the run going; a summary that cannot be had
// fails the run (RunFailed).
bool RunProcedure::auto_compact(CompactionReason reason) {
  trace::Span span("cairn.harness.compaction", [&] { return Json{{"runId", run_id_}, {"reason", reason}}; });
  core_.publish(event(EventType::compaction_start, {{"reason", reason}}));
  try {
    Compacted done = compact_branch(reason, std::nullopt, core_.session->new_entry_id());
    span.set("outcome", done.cancelled ? "cancelled" : "completed");
    if (done.cancelled) {
      core_.publish(event(EventType::compaction_end, {{"reason", reason}, {"outcome", "cancelled"}, {"fromHook", false}}));
      return false;
    }
    core_.publish(event(EventType::compaction_end, {{"reason", reason},
                                           {"outcome", "completed"},
                                           {"entry", encode(*done.entry)},
                                           {"fromHook", done.from_hook}}));
    publish_context_usage();
    return true;
  } catch (const RunFailed& failure) {
    span.fail(failure.error.code, failure.error.message);
    core_.publish(event(EventType::compaction_end, {{"reason", reason},
                                           {"outcome", "failed"},
                                           {"fromHook", false},
                                           {"error", {{"code", failure.error.code}, {"message", failure.error.message}}}}));
    if (failure.error.is(Errc::nothing_to_compact) || failure.error.is(Errc::would_split_tool_call)) {
      threshold_refused_ = true;
      return false;
    }
    throw;
  }
}

// ---- the cancellation path ------------------------------------------------------

// Answers, in source order, every call of the batch with no result: one
// that never started is "aborted"; one that started and has no result can
// only have been running when its process died (a live batch lets what
// started end before it is cancelled), so it is settled and "interrupted" —
// except a call that runs a child session, whose child is ended and whose
// result says how (ended_child_result).
// Then the pending writes, and the aborted closure the transcript ends with.
RunResult RunProcedure::cancellation_path() {
  const auto [batch, writes, damaged] = with_op([](const OpState& op) {
    return std::tuple(op.tool_batch, op.pending_writes, op.damaged);
  });
  if (batch) {
    for (const auto& call : batch->calls) {
      if (call.result_exists) continue;
      ToolResult result = cancelled_call_result(call, damaged);
      ToolResultMessage message{.tool_call_id = call.call_id, .tool_name = call.name,
                                .content = std::move(result.content), .details = std::move(result.details),
                                .is_error = true, .timestamp = now_unix_ms()};
      append_if_missing(message_entry(std::move(message), call.started ? call.started->result_entry_id : std::string()),
                        true);
    }
  }
  for (const auto& write : writes) append_if_missing(write, true);
  const auto last = with_op([](const OpState& op) { return op.last_assistant; });
  if (!last || last->stop_reason != StopReason::aborted) {
    // The closure names the model the branch has now, the writes applied.
    AssistantMessage closure = error_message(take_config().branch.model, "Operation aborted");
    closure.stop_reason = StopReason::aborted;
    append_entry(message_entry(std::move(closure)), true);
  }
  return *finish(Outcome::aborted, std::nullopt);
}

ToolResult RunProcedure::cancelled_call_result(const ToolCallState& call, bool damaged) {
  if (call.started && replay_of(*call.started) == Replay::resume) return ended_child_result(call);
  if (call.started) return interrupted_result("and the run was then aborted", settle(call));
  // Where the log was damaged, a call without a tool_started may have lost
  // it: nobody can say it did not run.
  if (damaged) {
    return ToolResult{.content = {TextContent{.text = "Tool call was aborted; the log was damaged where "
                                                      "its start would be, so whether it ran is unknown."}},
                      .details = Json{{"interrupted", true}, {"damagedLog", true}},
                      .is_error = true};
  }
  return ToolResult{.content = {TextContent{.text = "Tool call was aborted before it started."}},
                    .details = Json{{"aborted", true}},
                    .is_error = true};
}

AssistantMessage RunProcedure::error_message(const Model& model, std::string text) {
  AssistantMessage message;
  message.api = model.api;
  message.provider = model.provider;
  message.model = model.id;
  message.stop_reason = StopReason::error;
  message.error_message = std::move(text);
  message.timestamp = now_unix_ms();
  return message;
}

}  // namespace cairn
