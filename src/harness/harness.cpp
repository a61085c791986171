// AgentHarness and AgentRef: the API's handles, restore and config. What the
// calls on a ref accept is decided in acceptance.cpp; the operations then
// run their procedures (run_procedure.cpp, compaction_procedure.cpp,
// navigation_procedure.cpp).
#include <algorithm>

#include <fmt/format.h>

#include "core.hpp"
#include "model_output.hpp"
#include "utf8.hpp"

namespace cairn {

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::ok: return "ok";
    case Outcome::rejected: return "rejected";
    case Outcome::failed: return "failed";
    case Outcome::aborted: return "aborted";
    case Outcome::cancelled: return "cancelled";
    case Outcome::faulted: return "faulted";
    case Outcome::awaiting_input: return "awaiting_input";
  }
  return "unknown";
}

std::string_view to_string(OperationStatus status) {
  switch (status) {
    case OperationStatus::running: return "running";
    case OperationStatus::suspended: return "suspended";
    case OperationStatus::cancelling: return "cancelling";
    case OperationStatus::awaiting_input: return "awaiting_input";
  }
  return "unknown";
}

std::optional<Error> invalid_text(const Json& encoded, std::string_view what, Errc code) {
  auto invalid = find_invalid_utf8(encoded);
  if (!invalid) return std::nullopt;
  return Error(code, invalid->describe(what));
}

std::vector<AgentMessage> messages_of(const std::vector<ProvisionedEntry>& items) {
  std::vector<AgentMessage> out;
  for (const auto& item : items) {
    if (const auto* body = std::get_if<MessageBody>(&item.body)) out.push_back(body->message);
  }
  return out;
}

namespace {

UserMessage make_user_message(std::string text, std::vector<ImageContent> images) {
  UserMessage message{.timestamp = now_unix_ms()};
  if (images.empty()) {
    message.content = std::move(text);
  } else {
    std::vector<UserBlock> blocks{TextContent{.text = std::move(text)}};
    for (auto& image : images) blocks.push_back(std::move(image));
    message.content = std::move(blocks);
  }
  return message;
}

}  // namespace

// ---- HarnessCore ------------------------------------------------------------

HarnessCore::HarnessCore(HarnessOptions opts) : session(opts.session), options(std::move(opts)) {
  bus.set_error_sink([this](const Event& failed, const std::string& what) {
    report_handler_error(failed.ref, failed.run_id, "event", std::string(to_string(failed.type)), what);
  });
}

std::shared_ptr<RefRuntime> HarnessCore::find_ref(std::string_view name) {
  std::lock_guard lock(mu);
  auto it = refs.find(name);
  return it == refs.end() ? nullptr : it->second;
}

Result<HarnessCore::BranchConfig> HarnessCore::branch_config(const std::string& ref) {
  auto context = session->branch_settings(ref);
  if (!context) return std::unexpected(context.error());
  return config_from(*context);
}

HarnessCore::BranchConfig HarnessCore::config_from(const SessionContext& settings) {
  std::lock_guard lock(mu);
  return config_from_locked(settings);
}

HarnessCore::BranchConfig HarnessCore::config_from_locked(const SessionContext& settings) const {
  mu.assert_held();
  const SessionContext* context = &settings;
  BranchConfig config;
  config.model = options.model;
  config.model_ref = ModelRef{options.model.provider, options.model.id};
  if (context->model) {
    config.model_ref = *context->model;
    if (const auto* entry = options.models.find(context->model->provider, context->model->model_id)) {
      config.model = entry->model;
    } else {
      config.model_known = false;
      config.model.provider = context->model->provider;
      config.model.id = context->model->model_id;
    }
  }
  config.thinking_level = context->has_thinking_level ? context->thinking_level : options.thinking_level;
  if (context->active_tool_names) {
    config.active_tools = *context->active_tool_names;
  } else if (options.active_tool_names) {
    config.active_tools = *options.active_tool_names;
  } else {
    for (const auto& tool : options.tools) config.active_tools.push_back(tool.name);
  }
  return config;
}

Result<std::vector<SuspendedOperation>> HarnessCore::restore() {
  std::vector<SuspendedOperation> suspended;
  for (const auto& info : session->refs()) {
    auto rt = std::make_shared<RefRuntime>();
    rt->name = info.name;
    if (info.open_operation) {
      auto restored = restore_operation(*rt, *info.open_operation);
      if (!restored) return std::unexpected(restored.error());
      suspended.push_back(std::move(*restored));
    }
    if (auto queued = restore_next_run(*rt); !queued) return std::unexpected(queued.error());
    refs.emplace(info.name, std::move(rt));
  }
  if (auto rules = restore_remembered(); !rules) return std::unexpected(rules.error());
  return suspended;
}

// The ref's open operation, suspended: its state folded from the records
// after its operation_started.
Result<SuspendedOperation> HarnessCore::restore_operation(RefRuntime& rt, const std::string& open_id) {
  const auto seq = session->seq_of(open_id);
  auto record = seq ? session->get_record(*seq) : Result<std::optional<Record>>(std::nullopt);
  if (!record) return std::unexpected(record.error());
  if (!*record || !std::holds_alternative<HarnessRecord>((*record)->body)) {
    return fail(Errc::corrupt_log, fmt::format("ref '{}': its open operation '{}' has no operation_started record",
                                           rt.name, open_id));
  }
  const auto& started = std::get<HarnessRecord>((*record)->body);
  std::optional<SuspendedOperation::Damaged> damaged;
  // A placeholder standing for the operation_started: what the operation
  // was is lost, so it is a run that can only be ended.
  OpState op = std::holds_alternative<Damaged>(started.body)
                   ? OpState{.id = started.id, .kind = OperationKind::run, .ref = started.ref, .start_seq = *seq,
                             .started_at = started.timestamp, .intent = RunIntent{}}
                   : open_operation(started, *seq);
  if (std::holds_alternative<Damaged>(started.body)) damaged = SuspendedOperation::Damaged{{*seq}};
  if (auto folded = fold_tail(rt.name, *seq, op, damaged); !folded) return std::unexpected(folded.error());

  SuspendedOperation s{.ref = rt.name, .kind = op.kind, .id = op.id, .started_at = op.started_at};
  op.damaged = damaged.has_value();
  s.damaged = std::move(damaged);
  if (const auto* intent = std::get_if<RunIntent>(&op.intent)) {
    for (const auto& message : intent->initial_messages) {
      const auto* body = std::get_if<MessageBody>(&message.body);
      const auto* user = body ? std::get_if<UserMessage>(&body->message) : nullptr;
      if (!user) continue;
      if (const auto* text = std::get_if<std::string>(&user->content)) {
        s.prompt.push_back(TextContent{.text = *text});
      } else {
        s.prompt = std::get<std::vector<UserBlock>>(user->content);
      }
      break;
    }
  }
  if (op.cancelled) {
    s.cancelled = SuspendedOperation::Cancelled{messages_of(op.pending_steer), messages_of(op.pending_follow_up)};
  } else if (!s.damaged) {
    if (auto noted = note_missing(rt.name, op, s.missing); !noted) return std::unexpected(noted.error());
    restore_child_inputs(rt, op);
  }
  rt.op = std::move(op);
  s.awaiting_input = rt.all_pending_inputs();
  rt.status = rt.op->cancelled               ? OperationStatus::cancelling
              : !s.awaiting_input.empty() ? OperationStatus::awaiting_input
                                          : OperationStatus::suspended;
  rt.suspended = s;
  return s;
}

// The input requests the operation's open child sessions wait for: each
// call of replay "resume" without a result asks its tool for its child's.
void HarnessCore::restore_child_inputs(RefRuntime& rt, const OpState& op) {
  if (!op.tool_batch) return;
  for (const auto& call : op.tool_batch->calls) {
    if (call.result_exists || !call.started || replay_of(*call.started) != Replay::resume) continue;
    const auto tool = std::find_if(options.tools.begin(), options.tools.end(),
                                   [&](const Tool& t) { return t.name == call.name; });
    if (tool == options.tools.end() || !tool->child_inputs) continue;
    ToolContext context{.ref = rt.name, .run_id = op.id, .tool_call_id = call.call_id, .update = [](const ToolResult&) {},
                        .session_id = session->header().id, .child_session = call.started->child_session,
                        .recovery = true};
    try {
      for (auto& input : tool->child_inputs(context)) {
        rt.child_inputs.push_back(RefRuntime::ChildInput{std::move(input), call.name, call.call_id});
      }
    } catch (const std::exception& e) {
      // Resuming runs the call again, which finds out for itself.
      report_handler_error(rt.name, op.id, "tool", call.name, fmt::format("listing its child's input requests failed: {}", e.what()));
    }
  }
}

std::vector<PendingInput> RefRuntime::all_pending_inputs() const {
  std::vector<PendingInput> out = op ? op->pending_inputs() : std::vector<PendingInput>{};
  for (const auto& child : child_inputs) out.push_back(child.input);
  return out;
}

// Folds the ref's bounded tail — everything after its operation_started at
// `start_seq` — into `op`, noting placeholders that may hide its records.
Status HarnessCore::fold_tail(const std::string& ref, std::int64_t start_seq, OpState& op,
                              std::optional<SuspendedOperation::Damaged>& damaged) {
  auto tail = session->get_log(start_seq);
  if (!tail) return std::unexpected(tail.error());
  for (const auto& line : *tail) {
    auto decoded = decode_record(Json::parse(line.json));
    if (!decoded) return std::unexpected(decoded.error());
    decoded->seq = line.seq;
    // A placeholder written while the operation was open may hide one of
    // its records, whatever ref it now names.
    if (const DamageReport* damage = damage_of(*decoded)) {
      const auto& runs = damage->open_runs;
      if (std::find(runs.begin(), runs.end(), op.id) != runs.end()) {
        if (!damaged) damaged.emplace();
        damaged->placeholders.push_back(line.seq);
      }
    }
    std::string_view owner;
    if (const auto* entry = std::get_if<TreeEntry>(&decoded->body)) {
      owner = entry->ref ? std::string_view(*entry->ref) : std::string_view("main");
    } else if (const auto* harness = std::get_if<HarnessRecord>(&decoded->body)) {
      owner = harness->ref;
    }
    if (owner != ref) continue;
    // Around damage the tail may be one the harness could not have
    // written (a result whose call was lost): what does not fold is
    // left out, and the operation can only be aborted anyway.
    if (auto folded = reduce(op, *decoded); !folded && !damaged) return std::unexpected(folded.error());
  }
  return {};
}

// What resuming would need: the tools of calls that must run again, and
// the branch's model.
Status HarnessCore::note_missing(const std::string& ref, const OpState& op, SuspendedOperation::Missing& missing) {
  if (op.tool_batch) {
    for (const auto& call : op.tool_batch->calls) {
      const bool rerun = !call.result_exists && (!call.started || replay_of(*call.started) != Replay::never);
      // A tool the application describes as gone (an MCP server's) is
      // answered with an error result instead: resuming is not refused.
      const bool known = std::any_of(options.tools.begin(), options.tools.end(),
                                     [&](const Tool& t) { return t.name == call.name; }) ||
                         (options.describe_missing_tool && options.describe_missing_tool(call.name));
      if (rerun && call.started && !known &&
          std::find(missing.tools.begin(), missing.tools.end(), call.name) == missing.tools.end()) {
        missing.tools.push_back(call.name);
      }
    }
  }
  auto config = branch_config(ref);
  if (!config) return std::unexpected(config.error());
  if (!config->model_known) {
    missing.models.push_back(fmt::format("{}/{}", config->model_ref.provider, config->model_ref.model_id));
  }
  return {};
}

// Next-run items: accepted after the ref's last run started, not yet in the tree.
Status HarnessCore::restore_next_run(RefRuntime& rt) {
  std::optional<std::int64_t> last_run_seq;
  HarnessQuery starts{.type = RecordType::operation_started, .ref = rt.name, .order = Order::newest_first, .limit = 16};
  while (true) {
    auto page = session->find_harness_entries(starts);
    if (!page) return std::unexpected(page.error());
    for (const auto& record : page->items) {
      if (kind_of(std::get<OperationStarted>(record.body).intent) == OperationKind::run) {
        last_run_seq = session->seq_of(record.id);
        break;
      }
    }
    if (last_run_seq || !page->next_cursor) break;
    starts.cursor = page->next_cursor;
  }
  auto queued = session->find_harness_entries(
      HarnessQuery{.type = RecordType::queue_enqueued, .ref = rt.name, .after_seq = last_run_seq});
  if (!queued) return std::unexpected(queued.error());
  for (const auto& record : queued->items) {
    const auto& item = std::get<QueueEnqueued>(record.body);
    if (item.queue == QueueKind::next_run && !session->seq_of(item.target.id)) rt.next_run.push_back(item.target);
  }
  return {};
}

void HarnessCore::enter_fault(const Error& error) {
  {
    std::lock_guard lock(mu);
    if (faulted) return;
    faulted = true;
  }
  // options.secrets is set at creation and never changed: read without mu.
  publish(Event{EventType::fault, "", std::nullopt, std::nullopt,
                {{"code", error.code}, {"message", sanitize_text(error.message, options.secrets)}}});
}

void HarnessCore::report_handler_error(const std::string& ref, const std::optional<std::string>& run_id,
                                       std::string kind, std::string name, std::string what) {
  const std::string key = kind == "hook" || kind == "tool" ? kind : "event";
  Json data = {{"kind", kind}, {key, std::move(name)}, {"error", sanitize_text(std::move(what), options.secrets)}};
  publish(Event{EventType::handler_error, ref, run_id, std::nullopt, std::move(data)});
}

void HarnessCore::became_idle(RefRuntime& rt, std::vector<std::function<void()>>& callbacks) {
  mu.assert_held();
  if (!rt.active) {
    for (auto& callback : rt.when_idle) callbacks.push_back(std::move(callback));
    rt.when_idle.clear();
  }
  idle_cv.notify_all();
}

// ---- AgentHarness -----------------------------------------------------------

Result<AgentHarness::Created> AgentHarness::create(HarnessOptions options) {
  if (!options.session) return fail(Errc::invalid_argument, "the harness needs a session");
  if (options.session->read_only()) return fail(Errc::read_only, "the harness needs a session opened for writing");
  std::map<std::string, std::shared_ptr<const ArgumentValidator>, std::less<>> validators;
  for (const auto& tool : options.tools) {
    auto validator = ArgumentValidator::compile(tool.parameters);
    if (!validator) return fail(Errc::invalid_argument, fmt::format("tool {}: {}", tool.name, validator.error().message));
    validators[tool.name] = std::make_shared<const ArgumentValidator>(std::move(*validator));
  }
  auto core = std::make_shared<HarnessCore>(std::move(options));
  core->validators = std::move(validators);
  auto suspended = core->restore();
  if (!suspended) return std::unexpected(suspended.error());
  return Created{AgentHarness(core), std::move(*suspended)};
}

AgentHarness::AgentHarness(std::shared_ptr<HarnessCore> core) : core_(std::move(core)) {}
AgentHarness::~AgentHarness() = default;
AgentHarness::AgentHarness(AgentHarness&&) noexcept = default;
AgentHarness& AgentHarness::operator=(AgentHarness&&) noexcept = default;

AgentRef AgentHarness::main() const { return AgentRef(core_, "main"); }

std::optional<AgentRef> AgentHarness::ref(std::string_view name) const {
  if (!core_->find_ref(name)) return std::nullopt;
  return AgentRef(core_, std::string(name));
}

Result<AgentRef> AgentHarness::create_ref(std::string name, std::optional<std::string> at) {
  if (name.empty()) return fail(Errc::invalid_argument, "a ref needs a name");
  {
    std::lock_guard lock(core_->mu);
    if (core_->closed) return fail(Errc::closed, "the harness is closed");
    if (core_->faulted) return fail(Errc::faulted, "the harness is faulted: appends stopped working");
    if (core_->refs.contains(name)) return fail(Errc::ref_exists, fmt::format("ref '{}' already exists", name));
  }
  if (at) {
    auto entry = core_->session->get_entry(*at);
    if (!entry) return std::unexpected(entry.error());
    if (!*entry) return fail(Errc::unknown_entry, fmt::format("ref '{}' cannot be anchored at '{}': no such entry", name, *at));
  }
  auto rt = std::make_shared<RefRuntime>();
  rt->name = name;
  HarnessRecord record{.id = core_->session->new_entry_id(), .ref = name, .timestamp = now_iso8601(),
                       .body = RefCreated{.name = name, .at = at}};
  auto appended = core_->session->append(Record{.body = record});
  if (!appended) {
    if (appended.error().is(Errc::ref_exists)) return std::unexpected(appended.error());
    core_->enter_fault(appended.error());
    return std::unexpected(appended.error());
  }
  {
    std::lock_guard lock(core_->mu);
    core_->refs.emplace(name, rt);
  }
  core_->publish(Event{EventType::ref_created, name, std::nullopt, appended->first_seq, {{"at", at ? Json(*at) : Json(nullptr)}}});
  return AgentRef(core_, name);
}

Status AgentHarness::delete_ref(const std::string& name) {
  if (name == "main") return fail(Errc::main_ref, "ref main cannot be deleted");
  auto rt = core_->find_ref(name);
  if (!rt) return fail(Errc::unknown_ref, fmt::format("ref '{}' does not exist", name));
  std::int64_t seq;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    {
      std::lock_guard lock(core_->mu);
      if (core_->closed) return fail(Errc::closed, "the harness is closed");
      if (core_->faulted) return fail(Errc::faulted, "the harness is faulted: appends stopped working");
      if (rt->op || rt->active) {
        return fail(Errc::ref_active, fmt::format("ref '{}' has an {} operation", name, rt->active ? "active" : "suspended"));
      }
    }
    HarnessRecord record{.id = core_->session->new_entry_id(), .ref = name, .timestamp = now_iso8601(),
                         .body = RefDeleted{.name = name}};
    auto appended = core_->session->append(Record{.body = record});
    if (!appended) {
      core_->enter_fault(appended.error());
      return std::unexpected(appended.error());
    }
    seq = appended->first_seq;
    std::lock_guard lock(core_->mu);
    rt->deleted = true;
    core_->refs.erase(name);
  }
  core_->publish(Event{EventType::ref_deleted, name, std::nullopt, seq, Json::object()});
  return {};
}

std::vector<RefStatus> AgentHarness::refs() const {
  std::vector<RefStatus> out;
  std::vector<std::shared_ptr<RefRuntime>> runtimes;
  {
    std::lock_guard lock(core_->mu);
    for (const auto& [name, rt] : core_->refs) {
      RefStatus status{.name = name};
      if (rt->op) status.run = RefStatus::Run{rt->op->id, rt->op->kind, rt->active ? rt->status : idle_status(*rt)};
      out.push_back(std::move(status));
    }
  }
  for (auto& status : out) status.leaf_id = core_->session->leaf(status.name);
  return out;
}

std::vector<std::string> AgentHarness::tool_names() const {
  std::lock_guard lock(core_->mu);
  std::vector<std::string> names;
  for (const auto& tool : core_->options.tools) names.push_back(tool.name);
  return names;
}

Status AgentHarness::set_tools(std::vector<Tool> tools) {
  std::map<std::string, std::shared_ptr<const ArgumentValidator>, std::less<>> validators;
  for (const auto& tool : tools) {
    auto validator = ArgumentValidator::compile(tool.parameters);
    if (!validator) return fail(Errc::invalid_argument, fmt::format("tool {}: {}", tool.name, validator.error().message));
    validators[tool.name] = std::make_shared<const ArgumentValidator>(std::move(*validator));
  }
  std::lock_guard lock(core_->mu);
  core_->options.tools = std::move(tools);
  core_->validators = std::move(validators);
  return {};
}

namespace {

// One setting of the harness's configuration, read or replaced under mu.
template <class T>
T read_setting(HarnessCore& core, T HarnessOptions::*setting) {
  std::lock_guard lock(core.mu);
  return core.options.*setting;
}
template <class T>
void write_setting(HarnessCore& core, T HarnessOptions::*setting, T value) {
  std::lock_guard lock(core.mu);
  core.options.*setting = std::move(value);
}

}  // namespace

RetryPolicy AgentHarness::retry_policy() const { return read_setting(*core_, &HarnessOptions::retry); }
void AgentHarness::set_retry_policy(RetryPolicy policy) { write_setting(*core_, &HarnessOptions::retry, policy); }
CompactionSettings AgentHarness::compaction_settings() const { return read_setting(*core_, &HarnessOptions::compaction); }
void AgentHarness::set_compaction_settings(CompactionSettings settings) {
  write_setting(*core_, &HarnessOptions::compaction, settings);
}
QueueMode AgentHarness::steering_mode() const { return read_setting(*core_, &HarnessOptions::steering_mode); }
QueueMode AgentHarness::follow_up_mode() const { return read_setting(*core_, &HarnessOptions::follow_up_mode); }
void AgentHarness::set_steering_mode(QueueMode mode) { write_setting(*core_, &HarnessOptions::steering_mode, mode); }
void AgentHarness::set_follow_up_mode(QueueMode mode) { write_setting(*core_, &HarnessOptions::follow_up_mode, mode); }
StreamOptions AgentHarness::stream_options() const { return read_setting(*core_, &HarnessOptions::stream_options); }
void AgentHarness::set_stream_options(StreamOptions options) {
  write_setting(*core_, &HarnessOptions::stream_options, std::move(options));
}

Hooks& AgentHarness::hooks() { return core_->hooks; }
Subscription AgentHarness::on_event(EventListener listener) { return core_->bus.subscribe(std::nullopt, std::move(listener)); }
bool AgentHarness::faulted() const {
  std::lock_guard lock(core_->mu);
  return core_->faulted;
}
std::shared_ptr<Session> AgentHarness::session() const { return core_->session; }
void AgentHarness::close() {
  std::lock_guard lock(core_->mu);
  core_->closed = true;
}

// ---- AgentRef -----------------------------------------------------------------

namespace {
template <class R>
R unknown_ref(const std::string& name) {
  R result;
  result.outcome = Outcome::rejected;
  result.error = Error(Errc::unknown_ref, fmt::format("ref '{}' does not exist", name));
  return result;
}
}  // namespace

std::optional<std::string> AgentRef::leaf_id() const { return core_->session->leaf(name_); }

Result<ForkResult> AgentRef::fork(Store& store, ForkOptions options) const {
  if (!core_->find_ref(name_)) return fail(Errc::unknown_ref, fmt::format("no ref '{}'", name_));
  options.ref = name_;
  return store.fork(core_->session->id(), options);
}

RunResult AgentRef::prompt(std::string text, std::vector<ImageContent> images) {
  return prompt(std::vector<AgentMessage>{make_user_message(std::move(text), std::move(images))});
}

RunResult AgentRef::prompt(std::vector<AgentMessage> messages) {
  auto rt = core_->find_ref(name_);
  if (!rt) return unknown_ref<RunResult>(name_);
  return core_->prompt(rt, std::move(messages));
}

RunResult AgentRef::compact(std::optional<std::string> custom_instructions) {
  auto rt = core_->find_ref(name_);
  if (!rt) return unknown_ref<RunResult>(name_);
  return core_->compact(rt, std::move(custom_instructions));
}

RunResult AgentRef::navigate_tree(const std::string& target_id, NavigateOptions options) {
  auto rt = core_->find_ref(name_);
  if (!rt) return unknown_ref<RunResult>(name_);
  return core_->navigate(rt, target_id, std::move(options));
}

ResumeResult AgentRef::resume() {
  auto rt = core_->find_ref(name_);
  if (!rt) return unknown_ref<RunResult>(name_);
  return core_->resume(rt);
}

AbortResult AgentRef::abort() {
  auto rt = core_->find_ref(name_);
  if (!rt) return unknown_ref<AbortResult>(name_);
  return core_->abort(rt);
}

std::vector<PendingInput> AgentRef::pending_inputs() const {
  auto rt = core_->find_ref(name_);
  if (!rt) return {};
  std::lock_guard lock(core_->mu);
  return rt->all_pending_inputs();
}

InputResult AgentRef::respond(const std::string& request_id, InputResponse response) {
  auto rt = core_->find_ref(name_);
  if (!rt) return unknown_ref<InputResult>(name_);
  return core_->respond(rt, request_id, std::move(response));
}

namespace {

QueueResult enqueue_on(HarnessCore& core, const std::string& ref, QueueKind queue, AgentMessage message) {
  auto rt = core.find_ref(ref);
  if (!rt) return unknown_ref<QueueResult>(ref);
  return core.enqueue(rt, queue, std::move(message));
}

}  // namespace

QueueResult AgentRef::steer(std::string text, std::vector<ImageContent> images) {
  return enqueue_on(*core_, name_, QueueKind::steer, make_user_message(std::move(text), std::move(images)));
}
QueueResult AgentRef::steer(AgentMessage message) { return enqueue_on(*core_, name_, QueueKind::steer, std::move(message)); }
QueueResult AgentRef::follow_up(std::string text, std::vector<ImageContent> images) {
  return enqueue_on(*core_, name_, QueueKind::follow_up, make_user_message(std::move(text), std::move(images)));
}
QueueResult AgentRef::follow_up(AgentMessage message) { return enqueue_on(*core_, name_, QueueKind::follow_up, std::move(message)); }
QueueResult AgentRef::next_run(std::string text, std::vector<ImageContent> images) {
  return enqueue_on(*core_, name_, QueueKind::next_run, make_user_message(std::move(text), std::move(images)));
}
QueueResult AgentRef::next_run(AgentMessage message) { return enqueue_on(*core_, name_, QueueKind::next_run, std::move(message)); }

void AgentRef::wait_for_idle() const {
  auto rt = core_->find_ref(name_);
  if (!rt) return;
  std::unique_lock lock(core_->mu);
  core_->idle_cv.wait(lock, [&] { return !rt->active; });
}

void AgentRef::run_when_idle(std::function<void()> callback) {
  auto rt = core_->find_ref(name_);
  {
    std::lock_guard lock(core_->mu);
    if (rt && rt->active) {
      rt->when_idle.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

Model AgentRef::model() const {
  auto config = core_->branch_config(name_);
  if (!config) {
    std::lock_guard lock(core_->mu);
    return core_->options.model;
  }
  return config->model;
}

ThinkingLevel AgentRef::thinking_level() const {
  auto config = core_->branch_config(name_);
  return config ? config->thinking_level : ThinkingLevel::off;
}

std::vector<std::string> AgentRef::active_tools() const {
  auto config = core_->branch_config(name_);
  return config ? config->active_tools : std::vector<std::string>{};
}

Result<std::string> AgentRef::set_model(const std::string& provider, const std::string& id) {
  auto rt = core_->find_ref(name_);
  if (!rt) return fail(Errc::unknown_ref, fmt::format("ref '{}' does not exist", name_));
  {
    std::lock_guard lock(core_->mu);
    if (!core_->options.models.find(provider, id)) {
      return fail(Errc::unknown_model, fmt::format("model '{}/{}' is not configured", provider, id));
    }
  }
  const Model previous = model();
  auto written = core_->write(rt, TreeEntry{.body = ModelChange{provider, id}});
  if (written) {
    core_->publish(Event{EventType::config_update, name_, std::nullopt, std::nullopt,
                         {{"property", "model"},
                          {"value", {{"provider", provider}, {"modelId", id}}},
                          {"previous", {{"provider", previous.provider}, {"modelId", previous.id}}}}});
  }
  return written;
}

Result<std::string> AgentRef::set_thinking_level(ThinkingLevel level) {
  auto rt = core_->find_ref(name_);
  if (!rt) return fail(Errc::unknown_ref, fmt::format("ref '{}' does not exist", name_));
  const ThinkingLevel previous = thinking_level();
  auto written = core_->write(rt, TreeEntry{.body = ThinkingLevelChange{level}});
  if (written) {
    core_->publish(Event{EventType::config_update, name_, std::nullopt, std::nullopt,
                         {{"property", "thinkingLevel"}, {"value", level}, {"previous", previous}}});
  }
  return written;
}

Result<std::string> AgentRef::set_active_tools(std::vector<std::string> names) {
  auto rt = core_->find_ref(name_);
  if (!rt) return fail(Errc::unknown_ref, fmt::format("ref '{}' does not exist", name_));
  {
    std::lock_guard lock(core_->mu);
    for (const auto& name : names) {
      const bool known = std::any_of(core_->options.tools.begin(), core_->options.tools.end(),
                                     [&](const Tool& t) { return t.name == name; });
      if (!known) return fail(Errc::unknown_tool, fmt::format("no tool named '{}' is registered", name));
    }
  }
  const auto previous = active_tools();
  auto written = core_->write(rt, TreeEntry{.body = ActiveToolsChange{names}});
  if (written) {
    core_->publish(Event{EventType::config_update, name_, std::nullopt, std::nullopt,
                         {{"property", "activeTools"}, {"value", names}, {"previous", previous}}});
  }
  return written;
}

Subscription AgentRef::on_event(EventListener listener) const {
  return core_->bus.subscribe(name_, std::move(listener));
}

}  // namespace cairn
