// Acceptance: what the API's calls on a ref decide and append before any
// procedure runs (prompt, compact, navigate, resume, abort, the queues,
// writes). Whatever is accepted is in the log when the call returns
// (invariant 8); an accepted operation then runs its procedure on the
// calling thread (run_operation).
#include <cassert>

#include <fmt/format.h>

#include "model_output.hpp"
#include "operation.hpp"
#include "utf8.hpp"

namespace cairn {
namespace {

bool user_side(const AgentMessage& message) {
  const std::string_view role = role_of(message);
  return role == "user" || role == "custom";
}

// The blocks of a user message, however its content is spelled.
std::vector<UserBlock> user_blocks(const UserMessage& user) {
  if (const auto* text = std::get_if<std::string>(&user.content)) return {TextContent{.text = *text}};
  return std::get<std::vector<UserBlock>>(user.content);
}

Json queued_messages(const std::vector<ProvisionedEntry>& items) {
  Json out = Json::array();
  for (const auto& item : items) {
    if (const auto* body = std::get_if<MessageBody>(&item.body)) out.push_back(encode(body->message));
  }
  return out;
}

}  // namespace

Json queue_lists(const RefRuntime& rt) {
  const bool running = rt.op && rt.op->kind == OperationKind::run;
  return {{"steer", running ? queued_messages(rt.op->pending_steer) : Json::array()},
          {"followUp", running ? queued_messages(rt.op->pending_follow_up) : Json::array()},
          {"nextRun", queued_messages(rt.next_run)}};
}

std::optional<Error> HarnessCore::fold_own(RefRuntime& rt, const Record& record) {
  mu.assert_held();
  auto folded = reduce(*rt.op, record);
  // Invariant: the harness built `record` for this operation, so the fold
  // accepts it. A refusal means the state in memory no longer matches the
  // log: a bug, caught here in a debug build; a release build faults.
  assert(folded && "the fold refused a record the harness built");
  if (folded) return std::nullopt;
  return Error{Errc::internal_error, fmt::format("the state of run '{}' does not match its log: {}", rt.op->id,
                                                folded.error().message)};
}

std::optional<HarnessCore::Refusal> HarnessCore::refusal(const RefRuntime& rt, bool check_ref) const {
  mu.assert_held();
  if (closed) return Refusal{Outcome::rejected, Error(Errc::closed, "the harness is closed")};
  if (faulted) return Refusal{Outcome::faulted, Error(Errc::faulted, "the harness is faulted: appends stopped working")};
  if (check_ref && rt.deleted) {
    return Refusal{Outcome::rejected, Error(Errc::unknown_ref, fmt::format("ref '{}' was deleted", rt.name))};
  }
  return std::nullopt;
}

// Reserves the idle ref for a new operation: a second one is refused from
// here on, until the operation ends or release() hands the ref back.
std::optional<HarnessCore::Refusal> HarnessCore::reserve(RefRuntime& rt) {
  std::lock_guard lock(mu);
  if (auto refused = refusal(rt)) return refused;
  if (rt.op || rt.active) {
    return Refusal{Outcome::rejected, Error(Errc::busy, fmt::format("ref '{}' already has an {} operation", rt.name,
                                                                    rt.active ? "active" : "suspended"))};
  }
  rt.active = true;
  return std::nullopt;
}

void HarnessCore::release(RefRuntime& rt) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu);
    rt.active = false;
    became_idle(rt, callbacks);
  }
  for (auto& callback : callbacks) callback();
}

Result<std::pair<std::string, std::int64_t>> HarnessCore::start_operation(RefRuntime& rt, OperationIntent intent,
                                                                          bool takes_next_run) {
  rt.ref_mu.assert_held();
  HarnessRecord started{.id = session->new_entry_id(), .ref = rt.name, .timestamp = now_iso8601(),
                        .body = OperationStarted{.source_leaf_id = session->leaf(rt.name), .intent = std::move(intent)}};
  auto appended = session->append(Record{.body = started});
  if (!appended) {
    enter_fault(appended.error());
    release(rt);
    return std::unexpected(appended.error());
  }
  std::lock_guard lock(mu);
  rt.op = open_operation(started, appended->first_seq);
  rt.status = OperationStatus::running;
  renew(rt.cancel);
  if (takes_next_run) rt.next_run.clear();
  return std::pair(started.id, appended->first_seq);
}

// ---- prompt -------------------------------------------------------------------

namespace {

std::optional<Error> invalid_prompt(const std::vector<AgentMessage>& messages) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const AgentMessage& message = messages[i];
    if (!user_side(message)) {
      return Error(Errc::invalid_message, fmt::format("a prompt takes user or custom messages, not '{}'", role_of(message)));
    }
    const std::string what = messages.size() == 1 ? "the prompt" : fmt::format("message {} of the prompt", i + 1);
    if (auto invalid = invalid_text(encode(message), what, Errc::invalid_message)) return invalid;
  }
  return std::nullopt;
}

}  // namespace

RunResult HarnessCore::prompt(const std::shared_ptr<RefRuntime>& rt, std::vector<AgentMessage> messages) {
  if (auto invalid = invalid_prompt(messages)) return RunResult{.outcome = Outcome::rejected, .error = std::move(invalid)};
  if (auto refused = reserve(*rt)) return RunResult{.outcome = refused->outcome, .error = std::move(refused->error)};

  std::vector<AgentMessage> injected;
  RunIntent intent = before_run(*rt, messages, injected);
  std::int64_t seq;
  std::string run_id;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    {
      std::lock_guard lock(mu);
      intent.initial_messages = rt->next_run;
    }
    for (auto* list : {&messages, &injected}) {
      for (auto& message : *list) {
        intent.initial_messages.push_back(
            ProvisionedEntry{.id = session->new_entry_id(), .body = MessageBody{std::move(message)}});
      }
    }
    auto started = start_operation(*rt, std::move(intent), /*takes_next_run=*/true);
    if (!started) return RunResult{.outcome = Outcome::faulted, .error = started.error()};
    std::tie(run_id, seq) = *started;
  }
  publish(Event{EventType::run_start, rt->name, run_id, seq, Json::object()});
  return run_operation(*this, rt, false);
}

// before_run: once, before acceptance; its output is persisted in the
// intent (and `injected`, the messages it adds).
RunIntent HarnessCore::before_run(const RefRuntime& rt, const std::vector<AgentMessage>& messages,
                                  std::vector<AgentMessage>& injected) {
  std::vector<UserBlock> prompt_blocks;
  if (!messages.empty()) {
    if (const auto* user = std::get_if<UserMessage>(&messages.front())) prompt_blocks = user_blocks(*user);
  }
  std::string system_prompt;
  SystemPrompt configured;
  {
    std::lock_guard lock(mu);
    configured = options.system_prompt;
  }
  if (configured) {
    auto config = branch_config(rt.name);
    system_prompt = configured(config ? config->active_tools : std::vector<std::string>{});
  }
  RunIntent intent;
  call_hooks(*this, rt.name, std::nullopt, "before_run", hooks.handlers(&Hooks::Lists::before_run), [&](const auto& hook) {
    auto out = hook(HookContext{rt.name, ""}, BeforeRunEvent{prompt_blocks, system_prompt});
    if (!out) return;
    for (auto& message : out->messages) {
      // The log could not hold it: left out, and said so.
      if (auto invalid = invalid_text(encode(message), "a message it returned", Errc::invalid_message)) {
        report_handler_error(rt.name, std::nullopt, "hook", "before_run", invalid->message);
        continue;
      }
      injected.push_back(std::move(message));
    }
    if (out->system_prompt && invalid_utf8_at(*out->system_prompt)) {
      report_handler_error(rt.name, std::nullopt, "hook", "before_run",
                           "the system prompt it returned is not valid UTF-8: the configured one is kept");
      out->system_prompt.reset();
    }
    if (out->system_prompt) intent.system_prompt_override = out->system_prompt;
    if (out->resume_data) intent.resume_data = out->resume_data;
  });
  return intent;
}

// ---- compaction and navigation ------------------------------------------------------

// Accepts a compaction or a navigation: operation_started with its intent,
// then its procedure on this thread.
RunResult HarnessCore::run_structural(const std::shared_ptr<RefRuntime>& rt, OperationIntent intent) {
  const OperationKind kind = kind_of(intent);
  if (auto invalid = invalid_text(encode(HarnessRecord{.body = OperationStarted{.intent = intent}}),
                                  fmt::format("the {}'s options", to_string(kind)), Errc::invalid_message)) {
    return RunResult{.outcome = Outcome::rejected, .kind = kind, .error = std::move(invalid)};
  }
  if (auto refused = reserve(*rt)) return RunResult{.outcome = refused->outcome, .kind = kind, .error = std::move(refused->error)};
  {
    std::lock_guard ref_lock(rt->ref_mu);
    auto started = start_operation(*rt, std::move(intent), /*takes_next_run=*/false);
    if (!started) return RunResult{.outcome = Outcome::faulted, .kind = kind, .error = started.error()};
  }
  return run_operation(*this, rt, false);
}

RunResult HarnessCore::compact(const std::shared_ptr<RefRuntime>& rt, std::optional<std::string> custom_instructions) {
  return run_structural(rt, CompactionIntent{.custom_instructions = std::move(custom_instructions),
                                             .result_entry_id = session->new_entry_id()});
}

RunResult HarnessCore::navigate(const std::shared_ptr<RefRuntime>& rt, const std::string& target_id,
                                NavigateOptions options) {
  auto target = session->get_entry(target_id);
  if (!target) return RunResult{.outcome = Outcome::faulted, .kind = OperationKind::navigation, .error = target.error()};
  if (!*target) {
    return RunResult{.outcome = Outcome::rejected, .kind = OperationKind::navigation,
                     .error = Error(Errc::unknown_entry, fmt::format("no entry '{}' to navigate to", target_id))};
  }
  // A user message as the target: the leaf goes to its parent, and its text
  // comes back for editing (a new prompt then branches off there).
  std::optional<std::string> destination = target_id;
  std::optional<std::string> editor_text;
  if (const auto* body = std::get_if<MessageBody>(&(*target)->body)) {
    if (const auto* user = std::get_if<UserMessage>(&body->message)) {
      destination = (*target)->parent_id;
      if (const auto* text = std::get_if<std::string>(&user->content)) {
        editor_text = *text;
      } else {
        std::string joined;
        for (const auto& block : std::get<std::vector<UserBlock>>(user->content)) {
          if (const auto* t = std::get_if<TextContent>(&block)) joined += t->text;
        }
        editor_text = std::move(joined);
      }
    }
  }
  NavigationIntent intent{.target_id = target_id,
                          .destination_leaf_id = destination,
                          .summarize = options.summarize,
                          .custom_instructions = std::move(options.custom_instructions),
                          .label = std::move(options.label),
                          .leaf_entry_id = session->new_entry_id()};
  if (intent.summarize) intent.summary_entry_id = session->new_entry_id();
  if (intent.label) intent.label_entry_id = session->new_entry_id();
  RunResult result = run_structural(rt, std::move(intent));
  if (result.ok()) result.editor_text = std::move(editor_text);
  return result;
}

}  // namespace cairn

namespace cairn {

// ---- resume and abort --------------------------------------------------------------

// Why the suspended operation cannot be resumed, if it cannot: it was open
// where the log was repaired, or its log names tools or models this harness
// lacks. Called with mu held.
std::optional<Error> HarnessCore::unresumable(const RefRuntime& rt) const {
  mu.assert_held();
  if (!rt.suspended) return std::nullopt;
  const OpState& op = *rt.op;
  if (rt.suspended->damaged && !op.cancelled) {
    const auto& seqs = rt.suspended->damaged->placeholders;
    std::string listed;
    for (std::size_t i = 0; i < seqs.size() && i < 5; ++i) listed += fmt::format("{}{}", i ? ", " : "", seqs[i]);
    return Error(Errc::damaged_log, fmt::format("run '{}' was open where the log was damaged and repaired "
                                                "(placeholders at seq {}{}): a tool of it may have started "
                                                "there, so it is not resumed; abort ends it",
                                                op.id, listed, seqs.size() > 5 ? ", ..." : ""));
  }
  // A run that recorded a sandbox runs its later calls under it, here as
  // on the machine that recorded it; a machine that cannot is refused
  // before anything runs (DESIGN.md, invariant 18).
  if (op.sandbox && !op.cancelled && options.sandbox_check) {
    if (std::string missing = options.sandbox_check(*op.sandbox); !missing.empty()) {
      return Error(Errc::sandbox_unavailable,
                   fmt::format("run '{}' recorded the sandbox policy {}, which this machine cannot enforce: {}", op.id,
                               to_string(op.sandbox->mode), missing));
    }
  }
  const auto& missing = rt.suspended->missing;
  if (missing.tools.empty() && missing.models.empty()) return std::nullopt;
  std::string named;
  for (const auto& t : missing.tools) named += fmt::format("{}tool {}", named.empty() ? "" : ", ", t);
  for (const auto& m : missing.models) named += fmt::format("{}model {}", named.empty() ? "" : ", ", m);
  return Error(Errc::missing_identities, fmt::format("the log of run '{}' names what this harness lacks: {}", op.id, named));
}

// What before_resume is told of the operation. Called with mu held.
BeforeResumeEvent HarnessCore::resume_event(const OpState& op) const {
  mu.assert_held();
  BeforeResumeEvent event{.kind = op.kind};
  const auto* run_intent = std::get_if<RunIntent>(&op.intent);
  if (!run_intent) return event;
  event.system_prompt_override = run_intent->system_prompt_override;
  event.resume_data = run_intent->resume_data;
  for (const auto& message : run_intent->initial_messages) {
    const auto* body = std::get_if<MessageBody>(&message.body);
    const auto* user = body ? std::get_if<UserMessage>(&body->message) : nullptr;
    if (!user) continue;
    event.prompt = user_blocks(*user);
    break;
  }
  return event;
}

RunResult HarnessCore::resume(const std::shared_ptr<RefRuntime>& rt) {
  BeforeResumeEvent hook_event;
  std::string run_id;
  {
    std::lock_guard lock(mu);
    if (auto refused = refusal(*rt, /*check_ref=*/false)) {
      return RunResult{.outcome = refused->outcome, .error = std::move(refused->error)};
    }
    if (!rt->op || rt->active) {
      return RunResult{.outcome = Outcome::rejected,
                       .error = Error(rt->active ? Errc::busy : Errc::not_suspended,
                                          fmt::format("ref '{}' has no suspended operation", rt->name))};
    }
    if (auto refused = unresumable(*rt)) {
      return RunResult{.outcome = Outcome::rejected, .kind = rt->op->kind, .run_id = rt->op->id, .error = std::move(refused)};
    }
    if (!rt->op->cancelled) {
      // Nothing to do until a human answers: the model is not asked again.
      if (auto pending = rt->all_pending_inputs(); !pending.empty()) {
        return RunResult{.outcome = Outcome::awaiting_input, .kind = rt->op->kind,
                         .run_id = rt->op->id, .awaiting_input = std::move(pending)};
      }
    }
    rt->active = true;
    rt->status = rt->op->cancelled ? OperationStatus::cancelling : OperationStatus::running;
    renew(rt->cancel);
    rt->suspended.reset();
    run_id = rt->op->id;
    hook_event = resume_event(*rt->op);
  }
  // Recovery work nests under cairn.harness.resume: the before_resume
  // hooks and the operation's own span.
  trace::Span span("cairn.harness.resume", [&] {
    return Json{{"runId", run_id}, {"sessionId", session->id()}, {"ref", rt->name}, {"recovery", true}};
  });
  call_hooks(*this, rt->name, run_id, "before_resume", hooks.handlers(&Hooks::Lists::before_resume),
             [&](const auto& hook) { hook(HookContext{rt->name, run_id}, hook_event); });
  publish(Event{EventType::run_resume, rt->name, run_id, std::nullopt, {{"recovery", true}}});
  RunResult result = run_operation(*this, rt, true);
  if (span) span.set("outcome", to_string(result.outcome));
  return result;
}

AbortResult HarnessCore::abort(const std::shared_ptr<RefRuntime>& rt) {
  AbortResult result;
  bool suspended_op = false;
  bool already_cancelled = false;
  std::int64_t seq = -1;
  std::optional<Error> fold_error;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    std::string run_id;
    {
      std::lock_guard lock(mu);
      if (faulted) return AbortResult{.outcome = Outcome::faulted, .error = Error(Errc::faulted, "the harness is faulted: appends stopped working")};
      if (!rt->op || rt->finishing) return result;  // idle: nothing to abort
      result.run_id = rt->op->id;
      run_id = rt->op->id;
      suspended_op = !rt->active;
      // Cancelling here already: its run ends it.
      if (rt->op->cancelled && !suspended_op) return result;
      if (suspended_op) {
        if (closed) return AbortResult{.outcome = Outcome::rejected, .error = Error(Errc::closed, "the harness is closed")};
        rt->active = true;
        rt->suspended.reset();
      }
      // Cancelled before its process died (a crash during an abort): the
      // operation_cancelled is in the log; what is left is to finish it.
      if (rt->op->cancelled) {
        rt->status = OperationStatus::cancelling;
        rt->child_inputs.clear();
        already_cancelled = true;
      }
    }
    if (!already_cancelled) {
      HarnessRecord record{.id = session->new_entry_id(), .ref = rt->name, .timestamp = now_iso8601(),
                           .body = OperationCancelled{.run_id = run_id, .reason = CancelReason::user}};
      auto appended = session->append(Record{.body = record});
      if (!appended) {
        enter_fault(appended.error());
        std::lock_guard lock(mu);
        if (suspended_op) rt->active = false;
        return AbortResult{.outcome = Outcome::faulted, .run_id = run_id, .error = appended.error()};
      }
      seq = appended->first_seq;
      std::lock_guard lock(mu);
      fold_error = fold_own(*rt, Record{.seq = seq, .body = record});
      rt->status = OperationStatus::cancelling;
      rt->child_inputs.clear();  // the cancellation path aborts the children (Tool::settle)
      result.cleared_steer = messages_of(rt->op->pending_steer);
      result.cleared_follow_up = messages_of(rt->op->pending_follow_up);
      if (!fold_error) {
        Json cleared_steer = Json::array(), cleared_follow_up = Json::array();
        for (const auto& m : result.cleared_steer) cleared_steer.push_back(encode(m));
        for (const auto& m : result.cleared_follow_up) cleared_follow_up.push_back(encode(m));
        // Queued before the stop is requested: what the stopped tools and
        // steps publish next comes after it, as their records come after its.
        bus.enqueue(Event{EventType::run_cancel, rt->name, result.run_id, seq,
                          {{"clearedSteer", cleared_steer}, {"clearedFollowUp", cleared_follow_up}}});
      }
      rt->cancel.request_stop();
    }
  }
  if (fold_error) {
    enter_fault(*fold_error);
    return AbortResult{.outcome = Outcome::faulted, .run_id = result.run_id, .error = std::move(fold_error)};
  }
  if (!already_cancelled) bus.deliver();
  if (suspended_op) {
    // Nobody runs a suspended operation: finish its cancellation here.
    {
      std::lock_guard lock(mu);
      renew(rt->cancel);
      rt->cancel.request_stop();
    }
    trace::Span span("cairn.harness.resume", [&] {
      return Json{{"runId", result.run_id}, {"sessionId", session->id()}, {"ref", rt->name}, {"recovery", true},
                  {"abort", true}};
    });
    auto ended = run_operation(*this, rt, true);
    if (ended.outcome == Outcome::faulted) {
      result.outcome = Outcome::faulted;
      result.error = ended.error;
    }
  }
  return result;
}

// ---- queues and writes -----------------------------------------------------------------

QueueResult HarnessCore::enqueue(const std::shared_ptr<RefRuntime>& rt, QueueKind queue, AgentMessage message) {
  if (!user_side(message)) {
    return QueueResult{Outcome::rejected,
                       Error(Errc::invalid_message, fmt::format("queues take user or custom messages, not '{}'", role_of(message)))};
  }
  const std::string what = queue == QueueKind::steer       ? "the steering message"
                           : queue == QueueKind::follow_up ? "the follow-up message"
                                                           : "the next-run message";
  if (auto invalid = invalid_text(encode(message), what, Errc::invalid_message)) {
    return QueueResult{Outcome::rejected, std::move(*invalid)};
  }
  std::int64_t seq;
  Json data;
  std::optional<std::string> run_id;
  std::optional<Error> fold_error;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    {
      std::lock_guard lock(mu);
      if (auto refused = refusal(*rt)) return QueueResult{refused->outcome, std::move(refused->error)};
      if (queue != QueueKind::next_run) {
        // A run parked awaiting input takes them too: they are read after
        // the answer, at its next checkpoint.
        const bool running = rt->op && (rt->active || idle_status(*rt) == OperationStatus::awaiting_input);
        if (!running || rt->op->cancelled || rt->finishing || rt->op->kind != OperationKind::run) {
          return QueueResult{Outcome::rejected,
                             Error(Errc::no_active_run, fmt::format("ref '{}' has no active run to {}", rt->name,
                                                                    queue == QueueKind::steer ? "steer" : "follow up"))};
        }
        run_id = rt->op->id;
      }
    }
    HarnessRecord record{.id = session->new_entry_id(), .ref = rt->name, .timestamp = now_iso8601(),
                         .body = QueueEnqueued{.queue = queue, .run_id = run_id,
                                               .target = ProvisionedEntry{.id = session->new_entry_id(),
                                                                          .body = MessageBody{std::move(message)}}}};
    auto appended = session->append(Record{.body = record});
    if (!appended) {
      enter_fault(appended.error());
      return QueueResult{Outcome::faulted, appended.error()};
    }
    seq = appended->first_seq;
    std::lock_guard lock(mu);
    if (run_id) {
      fold_error = fold_own(*rt, Record{.seq = seq, .body = record});
    } else {
      rt->next_run.push_back(std::get<QueueEnqueued>(record.body).target);
    }
    data = queue_lists(*rt);
  }
  if (fold_error) {
    enter_fault(*fold_error);
    return QueueResult{Outcome::faulted, std::move(fold_error)};
  }
  publish(Event{EventType::queue_update, rt->name, run_id, seq, std::move(data)});
  return QueueResult{};
}

// A tree write on the ref: appended now when idle; while an operation is
// open, deferred (write_deferred) to its next checkpoint.
Result<std::string> HarnessCore::write(const std::shared_ptr<RefRuntime>& rt, TreeEntry entry) {
  const bool message = std::holds_alternative<MessageBody>(entry.body);
  if (auto invalid = invalid_text(encode(entry), message ? "the message" : "the entry",
                                  message ? Errc::invalid_message : Errc::invalid_entry)) {
    return std::unexpected(std::move(*invalid));
  }
  if (entry.id.empty()) entry.id = session->new_entry_id();
  std::int64_t seq;
  std::optional<std::string> run_id;
  std::optional<Error> fold_error;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    {
      std::lock_guard lock(mu);
      if (auto refused = refusal(*rt)) return std::unexpected(std::move(refused->error));
      // While the ref has an open operation its tree belongs to the run: the
      // write waits for the next checkpoint, after the step's messages.
      if (rt->op && !rt->finishing) run_id = rt->op->id;
    }
    Record record;
    if (run_id) {
      record.body = HarnessRecord{.id = session->new_entry_id(), .ref = rt->name, .timestamp = now_iso8601(),
                                  .body = WriteDeferred{.run_id = *run_id, .target = entry}};
    } else {
      entry.parent_id = session->leaf(rt->name);
      entry.ref = rt->name;
      entry.timestamp = now_iso8601();
      record.body = entry;
    }
    auto appended = session->append(record);
    if (!appended) {
      enter_fault(appended.error());
      return std::unexpected(appended.error());
    }
    seq = appended->first_seq;
    if (run_id) {
      std::lock_guard lock(mu);
      fold_error = fold_own(*rt, Record{.seq = seq, .body = record.body});
    }
  }
  if (fold_error) {
    enter_fault(*fold_error);
    return std::unexpected(std::move(*fold_error));
  }
  if (run_id) {
    publish(Event{EventType::write_pending, rt->name, run_id, seq, {{"entryId", entry.id}, {"entry", encode_provisioned(entry)}}});
  } else if (const auto* body = std::get_if<MessageBody>(&entry.body)) {
    auto message = std::make_shared<const AgentMessage>(body->message);
    publish(Event{EventType::message_start, rt->name, std::nullopt, std::nullopt, Json::object(), message});
    publish(Event{EventType::message_end, rt->name, std::nullopt, seq, {{"entryId", entry.id}}, message});
  } else {
    publish(Event{EventType::entry_added, rt->name, std::nullopt, seq, {{"entry", encode(entry)}}});
  }
  return entry.id;
}

}  // namespace cairn
