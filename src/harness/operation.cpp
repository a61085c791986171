// The plumbing every operation procedure shares (operation.hpp): appends
// folded into the operation's state, announcements, spend, the end.
#include "operation.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cairn/trace.hpp"
#include "model_output.hpp"

namespace cairn {

void renew(std::stop_source& source) {
  std::stop_source fresh;
  source.swap(fresh);
}

RunResult run_operation(HarnessCore& core, const std::shared_ptr<RefRuntime>& rt, bool recovery) {
  const OperationKind kind = [&] {
    std::lock_guard lock(core.mu);
    return rt->op->kind;
  }();
  std::unique_ptr<Operation> operation;
  switch (kind) {
    case OperationKind::run: operation = make_run_procedure(core, rt, recovery); break;
    case OperationKind::compaction: operation = make_compaction_procedure(core, rt, recovery); break;
    case OperationKind::navigation: operation = make_navigation_procedure(core, rt, recovery); break;
  }
  RunResult result = operation->run();
  // Parked, but every answer came while it was parking (respond() from
  // another thread): nothing to wait for, so it goes on.
  if (result.outcome == Outcome::awaiting_input && result.awaiting_input.empty()) return core.resume(rt);
  return result;
}

Operation::Operation(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery)
    : core_(core), rt_(std::move(rt)), recovery_(recovery) {
  std::lock_guard lock(core_.mu);
  run_id_ = rt_->op->id;
  cancel_ = rt_->cancel.get_token();
}

// The operation's span: cairn.harness.run (a run), .compaction or
// .navigation, with the outcome it ended in.
RunResult Operation::run() {
  trace::Span span(span_name(kind()), [&] {
    Json payload = {{"runId", run_id_}, {"sessionId", core_.session->id()}, {"ref", rt_->name}, {"recovery", recovery_},
                    {"gen_ai.conversation.id", core_.session->id()}};
    if (kind() == OperationKind::run) payload["gen_ai.operation.name"] = "invoke_agent";
    return payload;
  });
  RunResult result = run_procedure();
  if (span) {
    span.set("outcome", to_string(result.outcome));
    if (spend_.input || spend_.output) {
      span.set("gen_ai.usage.input_tokens", spend_.input);
      span.set("gen_ai.usage.output_tokens", spend_.output);
    }
    if (result.error && (result.outcome == Outcome::failed || result.outcome == Outcome::faulted)) {
      span.fail(result.error->code, result.error->message);
    }
  }
  return result;
}

std::string_view Operation::span_name(OperationKind kind) {
  switch (kind) {
    case OperationKind::run: return "cairn.harness.run";
    case OperationKind::compaction: return "cairn.harness.compaction";
    case OperationKind::navigation: return "cairn.harness.navigation";
  }
  return "cairn.harness.operation";
}

RunResult Operation::run_procedure() {
  try {
    try {
      return procedure();
    } catch (const RunCancelled&) {
      return cancellation_path();
    } catch (const RunWaiting&) {
      if (auto parked = park()) return *parked;
      return cancellation_path();
    } catch (const RunFailed& failure) {
      return failed(failure.error);
    }
  } catch (const AppendFailed& failure) {
    return fault(failure.error);
  } catch (const std::exception& e) {
    return fault(Error{Errc::internal_error, fmt::format("run '{}' stopped on an unexpected error: {}", run_id_, e.what())});
  }
}

RunResult Operation::cancellation_path() {
  apply_pending_writes();
  return *finish(Outcome::aborted, std::nullopt);
}

RunResult Operation::failed(Error error) {
  apply_pending_writes();
  return *finish(Outcome::failed, std::move(error));
}

// ---- state -----------------------------------------------------------------

void Operation::check_cancelled() {
  if (with_op([](const OpState& op) { return op.cancelled; })) throw RunCancelled{};
}

const StepConfig& Operation::take_config() {
  if (auto synced = rt_->context.sync(*core_.session, rt_->name); !synced) throw AppendFailed{synced.error()};
  std::lock_guard lock(core_.mu);
  const HarnessOptions& options = core_.options;
  HarnessCore::BranchConfig branch = core_.config_from_locked(rt_->context.settings());
  const Models::Entry* served = options.models.find(branch.model_ref.provider, branch.model_ref.model_id);
  StreamOptions stream_options = options.stream_options;
  stream_options.thinking_level = branch.thinking_level;
  config_ = StepConfig{.branch = std::move(branch),
                       .served = served ? std::optional<Models::Entry>(*served) : std::nullopt,
                       .retry = options.retry,
                       .stream_options = std::move(stream_options),
                       .compaction = options.compaction,
                       .steering_mode = options.steering_mode,
                       .follow_up_mode = options.follow_up_mode,
                       .tools = options.tools,
                       .validators = core_.validators,
                       .system_prompt = options.system_prompt,
                       .convert_to_llm = options.convert_to_llm,
                       .tool_context = options.tool_context,
                       .describe_missing_tool = options.describe_missing_tool};
  return config_;
}

std::string StepConfig::missing_tool_message(std::string_view name, std::string_view what) const {
  std::string message = fmt::format("Tool {} {}", name, what);
  if (describe_missing_tool) {
    if (auto more = describe_missing_tool(name)) message += fmt::format(": {}", *more);
  }
  return message;
}

const Tool* StepConfig::find_tool(std::string_view name) const {
  auto it = std::find_if(tools.begin(), tools.end(), [&](const Tool& tool) { return tool.name == name; });
  return it == tools.end() ? nullptr : &*it;
}

const Tool* StepConfig::find_active_tool(std::string_view name) const {
  if (std::find(branch.active_tools.begin(), branch.active_tools.end(), name) == branch.active_tools.end()) return nullptr;
  return find_tool(name);
}

Event Operation::event(EventType type, Json data, std::optional<std::int64_t> seq,
                       std::shared_ptr<const AgentMessage> message) const {
  if (recovery_) data["recovery"] = true;
  return Event{type, rt_->name, run_id_, seq, std::move(data), std::move(message)};
}

// ---- appends -----------------------------------------------------------------

Record Operation::append_record(Record record, bool after_cancel) {
  std::lock_guard ref_lock(rt_->ref_mu);
  if (!after_cancel) check_cancelled();
  return append_locked(std::move(record));
}

Record Operation::append_locked(Record record) {
  rt_->ref_mu.assert_held();
  auto* entry = std::get_if<TreeEntry>(&record.body);
  if (entry) {
    entry->parent_id = core_.session->leaf(rt_->name);
    entry->ref = rt_->name;
    if (entry->timestamp.empty()) entry->timestamp = now_iso8601();
    if (entry->id.empty()) entry->id = core_.session->new_entry_id();
  } else {
    auto& harness = std::get<HarnessRecord>(record.body);
    harness.ref = rt_->name;
    if (harness.id.empty()) harness.id = core_.session->new_entry_id();
    if (harness.timestamp.empty()) harness.timestamp = now_iso8601();
  }
  auto appended = core_.session->append(record);
  if (!appended) throw AppendFailed{appended.error()};
  record.seq = appended->first_seq;
  if (entry) rt_->context.extend(*entry);
  std::lock_guard lock(core_.mu);
  if (auto folded = reduce(*rt_->op, record); !folded) throw AppendFailed{folded.error()};
  return record;
}

std::int64_t Operation::append_harness(HarnessBody body, bool after_cancel) {
  return append_record(Record{.body = HarnessRecord{.body = std::move(body)}}, after_cancel).seq;
}

TreeEntry Operation::append_entry(TreeEntry entry, bool after_cancel, bool started) {
  Record record = append_record(Record{.body = std::move(entry)}, after_cancel);
  TreeEntry& committed = std::get<TreeEntry>(record.body);
  announce(committed, record.seq, started);
  return std::move(committed);
}

void Operation::announce(const TreeEntry& entry, std::int64_t seq, bool started) {
  if (!watched()) return;
  if (const auto* body = std::get_if<MessageBody>(&entry.body)) {
    auto message = std::make_shared<const AgentMessage>(body->message);
    if (!started) core_.publish(event(EventType::message_start, Json::object(), std::nullopt, message));
    core_.publish(event(EventType::message_end, {{"entryId", entry.id}}, seq, message));
  } else {
    core_.publish(event(EventType::entry_added, {{"entry", encode(entry)}}, seq));
  }
}

void Operation::append_if_missing(const ProvisionedEntry& target, bool after_cancel) {
  if (core_.session->seq_of(target.id)) return;
  append_entry(target, after_cancel);
}

TreeEntry Operation::message_entry(AgentMessage message, std::string id) {
  return TreeEntry{.id = std::move(id), .body = MessageBody{std::move(message)}};
}

void Operation::apply_pending_writes() {
  const auto writes = with_op([](const OpState& op) { return op.pending_writes; });
  for (const auto& write : writes) append_if_missing(write, /*after_cancel=*/true);
}

// ---- spend -------------------------------------------------------------------

// Every token this operation was billed for: steps, retried and failed
// attempts, summaries.
void Operation::add_spend(const Usage& usage) { add_usage(spend_, usage); }

// How full the model's context is, reported apart from what the operation
// has spent — the two are easily confused and differ by far: the context
// is what the next request carries (the last response's provider-counted
// total plus an estimate of what followed it, or an estimate alone when no
// response counts it), the spend is the sum over every billed request.
void Operation::publish_context_usage() {
  if (!watched()) return;
  if (auto synced = rt_->context.sync(*core_.session, rt_->name); !synced) return;  // the next append reports it
  const HarnessCore::BranchConfig config = core_.config_from(rt_->context.settings());
  const ContextSize size = rt_->context.size();
  const std::int64_t window = config.model.context_window;
  Json context = {{"tokens", size.tokens},
                  {"contextWindow", window},
                  {"percent", window > 0 ? Json(100.0 * static_cast<double>(size.tokens) / static_cast<double>(window))
                                         : Json(nullptr)},
                  {"measured", size.counted == 0 ? "estimated" : size.estimated == 0 ? "provider" : "provider+estimate"},
                  {"providerCountedTokens", size.counted},
                  {"estimatedTokens", size.estimated}};
  Json spend = {{"input", spend_.input},
                {"output", spend_.output},
                {"cacheRead", spend_.cache_read},
                {"cacheWrite", spend_.cache_write},
                {"totalTokens", spend_.total_tokens},
                {"cost", spend_.cost.total}};
  core_.publish(event(EventType::context_usage, {{"context", std::move(context)}, {"operationSpend", std::move(spend)}}));
}

// ---- the end -------------------------------------------------------------------

namespace {

// How operation_finished words an outcome: the operations end ok (completed),
// failed, aborted or cancelled, and each is recorded as such.
OperationOutcome recorded_outcome(Outcome outcome) {
  switch (outcome) {
    case Outcome::ok: return OperationOutcome::completed;
    case Outcome::aborted: return OperationOutcome::aborted;
    case Outcome::cancelled: return OperationOutcome::cancelled;
    default: return OperationOutcome::failed;
  }
}

}  // namespace

std::optional<RunResult> Operation::finish(Outcome outcome, std::optional<Error> error, bool unless_pending) {
  if (error) error->message = sanitize_text(std::move(error->message), secrets());
  const OperationOutcome recorded = recorded_outcome(outcome);
  std::int64_t seq;
  {
    std::lock_guard ref_lock(rt_->ref_mu);
    {
      std::lock_guard lock(core_.mu);
      const OpState& op = *rt_->op;
      if (unless_pending) {
        if (op.cancelled) throw RunCancelled{};
        if (!op.pending_steer.empty() || !op.pending_follow_up.empty() || !op.pending_writes.empty()) {
          return std::nullopt;
        }
      }
      rt_->finishing = true;
    }
    try {
      seq = append_locked(Record{.body = HarnessRecord{.body = OperationFinished{.run_id = run_id_, .outcome = recorded, .error = error}}}).seq;
    } catch (const AppendFailed& failure) {
      return fault(failure.error);
    }
  }
  const OperationKind ended = kind();
  RunResult result{.outcome = outcome, .kind = ended, .run_id = run_id_, .error = error};
  Json data = {{"outcome", cairn::to_string(recorded)}};
  describe_end(outcome, result, data);
  if (error) data["error"] = {{"code", error->code}, {"message", error->message}};
  // A compaction or navigation changed what the next request carries.
  if (ended != OperationKind::run && outcome == Outcome::ok) publish_context_usage();
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(core_.mu);
    rt_->op.reset();
    rt_->child_inputs.clear();
    rt_->finishing = false;
    rt_->active = false;
    rt_->streaming.reset();
    rt_->running_tools.clear();
    rt_->retry.reset();
    core_.became_idle(*rt_, callbacks);
  }
  const EventType end_event = ended == OperationKind::run          ? EventType::run_end
                              : ended == OperationKind::compaction ? EventType::compaction_end
                                                                   : EventType::navigation_end;
  core_.publish(event(end_event, std::move(data), seq));
  for (auto& callback : callbacks) callback();
  core_.bus.flush();
  return result;
}

void Operation::stop_running(OperationStatus status, std::vector<std::function<void()>>& callbacks) {
  core_.mu.assert_held();
  rt_->active = false;
  rt_->finishing = false;
  rt_->status = status;
  rt_->streaming.reset();
  rt_->running_tools.clear();
  rt_->retry.reset();
  core_.became_idle(*rt_, callbacks);
}

std::optional<RunResult> Operation::park() {
  RunResult result{.outcome = Outcome::awaiting_input, .kind = kind(), .run_id = run_id_};
  std::vector<std::function<void()>> callbacks;
  {
    // Under the ref's lock, as abort() decides under it whether a thread
    // runs the operation: an abort either came first (the cancellation
    // path runs here) or finds the operation parked and ends it itself.
    std::lock_guard ref_lock(rt_->ref_mu);
    std::lock_guard lock(core_.mu);
    if (rt_->op->cancelled) return std::nullopt;
    result.awaiting_input = rt_->all_pending_inputs();
    SuspendedOperation s{.ref = rt_->name, .kind = result.kind, .id = run_id_, .started_at = rt_->op->started_at};
    s.awaiting_input = result.awaiting_input;
    rt_->suspended = std::move(s);
    stop_running(OperationStatus::awaiting_input, callbacks);
  }
  for (auto& callback : callbacks) callback();
  core_.bus.flush();
  return result;
}

RunResult Operation::fault(Error error) {
  error.message = sanitize_text(std::move(error.message), secrets());
  core_.enter_fault(error);
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(core_.mu);
    stop_running(OperationStatus::suspended, callbacks);
  }
  for (auto& callback : callbacks) callback();
  core_.bus.flush();
  return RunResult{.outcome = Outcome::faulted, .run_id = run_id_, .error = error};
}

}  // namespace cairn
