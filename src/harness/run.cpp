// The run procedure (durable-harness-design.txt: runProcedure, driverLoop,
// requestAssistant, reconcileToolBatch, cancellationPath), one object per
// operation, on the thread of the call that runs it (prompt or resume).
//
// Two internal exceptions unwind it, both caught in run(): RunFailed (an
// orderly, durable failure) and AppendFailed (the log stopped accepting: the
// harness faults). RunCancelled unwinds to the cancellation path. They never
// leave this file; the API returns results.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core.hpp"

namespace cairn {
namespace {

struct AppendFailed {
  Error error;
};
struct RunFailed {
  Error error;
};
struct RunCancelled {};

Json encode_blocks(const std::vector<UserBlock>& blocks) {
  Json out = Json::array();
  for (const auto& block : blocks) out.push_back(encode(block));
  return out;
}

Json encode_result(const ToolResult& result) {
  Json json = {{"content", encode_blocks(result.content)}, {"isError", result.is_error}};
  if (result.details) json["details"] = *result.details;
  return json;
}

bool has_tool_calls(const AssistantMessage& message) {
  return std::any_of(message.content.begin(), message.content.end(),
                     [](const AssistantBlock& b) { return std::holds_alternative<ToolCall>(b); });
}

std::chrono::milliseconds backoff(const RetryPolicy& policy, std::int64_t attempt,
                                  std::optional<std::int64_t> retry_after_ms) {
  if (retry_after_ms) return std::chrono::milliseconds(std::max<std::int64_t>(0, *retry_after_ms));
  const double base = static_cast<double>(policy.base_delay.count()) * std::pow(2.0, static_cast<double>(attempt - 1));
  const double capped = std::min(base, static_cast<double>(policy.max_delay.count()));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> spread(1.0 - policy.jitter, 1.0 + policy.jitter);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.0, capped * spread(rng))));
}

std::string iso8601_in(std::chrono::milliseconds delay) {
  const auto at = std::chrono::system_clock::now() + delay;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec, ms % 1000);
}

// Sleeps unless cancelled first; true when cancelled.
bool cancellable_sleep(std::chrono::milliseconds delay, std::stop_token cancel) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, cancel, delay, [] { return false; });
  return cancel.stop_requested();
}

class RunProcedure {
 public:
  RunProcedure(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery)
      : core_(core), rt_(std::move(rt)), recovery_(recovery) {
    std::lock_guard lock(core_.mu);
    run_id_ = rt_->op->id;
    kind_ = rt_->op->kind;
    cancel_ = rt_->cancel.get_token();
  }

  RunResult run() {
    try {
      try {
        if (kind_ == "compaction") return compaction_procedure();
        if (kind_ == "navigation") return navigation_procedure();
        const auto intent = std::get<RunIntent>(op_copy().intent);
        for (const auto& message : intent.initial_messages) append_if_missing(message, /*after_cancel=*/true);
        check_cancelled();
        auto batch = op_copy().tool_batch;
        if (batch && batch->unresolved()) {
          Json results = execute_tool_batch(*batch);
          const OpState op = op_copy();
          Event ended = event("step_end", {{"toolResults", results}});
          if (op.last_assistant) ended.message = std::make_shared<const AgentMessage>(*op.last_assistant);
          core_.publish(std::move(ended));
          check_cancelled();
        }
        recovery_ = false;
        return driver_loop();
      } catch (const RunCancelled&) {
        if (kind_ != "run") {
          apply_pending_writes();
          return *finish(Outcome::aborted, std::nullopt);
        }
        return cancellation_path();
      } catch (const RunFailed& failure) {
        if (kind_ != "run") apply_pending_writes();
        return *finish(Outcome::failed, failure.error);
      }
    } catch (const AppendFailed& failure) {
      return fault(failure.error);
    } catch (const std::exception& e) {
      return fault(Error{"internal_error", fmt::format("run '{}' stopped on an unexpected error: {}", run_id_, e.what())});
    }
  }

 private:
  // ---- state ---------------------------------------------------------------

  OpState op_copy() {
    std::lock_guard lock(core_.mu);
    return *rt_->op;
  }

  void check_cancelled() {
    std::lock_guard lock(core_.mu);
    if (rt_->op->cancelled) throw RunCancelled{};
  }

  HookContext hook_context() const { return HookContext{rt_->name, run_id_}; }

  // The model, thinking level and active tools at the ref's leaf, from the
  // context cache (brought to the leaf first).
  Result<HarnessCore::BranchConfig> branch_config() {
    if (auto synced = rt_->context.sync(*core_.session, rt_->name); !synced) return std::unexpected(synced.error());
    return core_.config_from(rt_->context.settings());
  }

  // Whether anyone listens. The hot events (a message encoded for every
  // streamed chunk, tool progress, steps) are not even built otherwise: when
  // nobody watches they are most of a step's cost.
  bool watched() const { return core_.bus.has_listeners(); }

  Event event(std::string type, Json data = Json::object(), std::optional<std::int64_t> seq = {},
              std::shared_ptr<const AgentMessage> message = nullptr) const {
    if (recovery_) data["recovery"] = true;
    return Event{std::move(type), rt_->name, run_id_, seq, std::move(data), std::move(message)};
  }

  // ---- appends -------------------------------------------------------------

  // Appends `record` for this ref and folds it into the operation's state.
  // Tree entries become children of the ref's leaf. Unless `after_cancel`,
  // nothing is appended once the operation is cancelled: the cancellation
  // path takes over from there.
  std::int64_t append(Record record, bool after_cancel) { return append_record(std::move(record), after_cancel).seq; }

  // The same, returning the record as appended (ids, parent, timestamp and
  // seq filled in).
  Record append_record(Record record, bool after_cancel) {
    std::lock_guard ref_lock(rt_->ref_mu);
    if (!after_cancel) check_cancelled();
    return append_locked(std::move(record));
  }

  // The same, with ref_mu already held.
  Record append_locked(Record record) {
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

  std::int64_t append_harness(HarnessBody body, bool after_cancel = false) {
    return append(Record{.body = HarnessRecord{.body = std::move(body)}}, after_cancel);
  }

  // Appends a tree entry and announces it.
  TreeEntry append_entry(TreeEntry entry, bool after_cancel = false, bool started = false) {
    Record record = append_record(Record{.body = std::move(entry)}, after_cancel);
    TreeEntry& committed = std::get<TreeEntry>(record.body);
    announce(committed, record.seq, started);
    return std::move(committed);
  }

  void announce(const TreeEntry& entry, std::int64_t seq, bool started) {
    if (!watched()) return;
    if (const auto* body = std::get_if<MessageBody>(&entry.body)) {
      auto message = std::make_shared<const AgentMessage>(body->message);
      if (!started) core_.publish(event("message_start", Json::object(), std::nullopt, message));
      core_.publish(event("message_end", {{"entryId", entry.id}}, seq, message));
    } else {
      core_.publish(event("entry_added", {{"entry", encode(entry)}}, seq));
    }
  }

  // Recovery appends by provisioned id: an entry that exists is not appended
  // again, which makes resuming twice harmless.
  void append_if_missing(const ProvisionedEntry& target, bool after_cancel = false) {
    if (core_.session->seq_of(target.id)) return;
    append_entry(target, after_cancel);
  }

  TreeEntry message_entry(AgentMessage message, std::string id = {}) {
    return TreeEntry{.id = std::move(id), .body = MessageBody{std::move(message)}};
  }

  // ---- the loop ------------------------------------------------------------

  RunResult driver_loop() {
    while (true) {
      checkpoint();
      if (needs_response()) {
        step();
        continue;
      }
      auto follow_ups = take_queued(&OpState::pending_follow_up, follow_up_mode());
      if (!follow_ups.empty()) {
        for (const auto& message : follow_ups) append_if_missing(message);
        publish_queue_update();
        continue;
      }
      if (auto follow_up = before_run_end()) {
        core_.enqueue(rt_, "followUp", UserMessage{.content = *follow_up, .timestamp = now_unix_ms()});
      }
      if (auto finished = try_finish()) return *finished;
    }
  }

  void checkpoint() {
    check_cancelled();
    const OpState op = op_copy();
    for (const auto& write : op.pending_writes) append_if_missing(write);
    auto steering = take_queued(&OpState::pending_steer, steering_mode());
    for (const auto& message : steering) append_if_missing(message);
    if (!steering.empty()) publish_queue_update();
    compact_if_over_threshold();
  }

  std::vector<ProvisionedEntry> take_queued(std::vector<ProvisionedEntry> OpState::*queue, QueueMode mode) {
    std::lock_guard lock(core_.mu);
    const auto& items = (*rt_->op).*queue;
    if (items.empty()) return {};
    if (mode == QueueMode::all) return items;
    return {items.front()};
  }

  QueueMode steering_mode() {
    std::lock_guard lock(core_.mu);
    return core_.options.steering_mode;
  }
  QueueMode follow_up_mode() {
    std::lock_guard lock(core_.mu);
    return core_.options.follow_up_mode;
  }

  bool needs_response() {
    std::lock_guard lock(core_.mu);
    const auto& role = rt_->op->last_role;
    return role && *role != "assistant";
  }

  void publish_queue_update() {
    Json data;
    {
      std::lock_guard lock(core_.mu);
      auto list = [](const std::vector<ProvisionedEntry>& items) {
        Json out = Json::array();
        for (const auto& item : items) {
          if (const auto* body = std::get_if<MessageBody>(&item.body)) out.push_back(encode(body->message));
        }
        return out;
      };
      data = {{"steer", list(rt_->op->pending_steer)},
              {"followUp", list(rt_->op->pending_follow_up)},
              {"nextRun", list(rt_->next_run)}};
    }
    core_.publish(event("queue_update", std::move(data)));
  }

  // Every token this operation was billed for: steps, retried and failed
  // attempts, summaries.
  void add_spend(const Usage& usage) {
    spend_.input += usage.input;
    spend_.output += usage.output;
    spend_.cache_read += usage.cache_read;
    spend_.cache_write += usage.cache_write;
    spend_.total_tokens += usage.total_tokens;
    spend_.cost.total += usage.cost.total;
  }

  // How full the model's context is, reported apart from what the operation
  // has spent — the two are easily confused and differ by far: the context
  // is what the next request carries (the last response's provider-counted
  // total plus an estimate of what followed it, or an estimate alone when no
  // response counts it), the spend is the sum over every billed request.
  void publish_context_usage() {
    if (!watched()) return;
    auto config = branch_config();
    if (!config) return;  // the next append reports the store's failure
    const ContextSize size = rt_->context.size();
    const std::int64_t window = config->model.context_window;
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
    core_.publish(event("context_usage", {{"context", std::move(context)}, {"operationSpend", std::move(spend)}}));
  }

  void step() {
    const std::string step_id = core_.session->new_entry_id();
    if (watched()) core_.publish(event("step_start", {{"stepId", step_id}}));
    auto [assistant, entry_id] = request_assistant();
    publish_context_usage();
    Json results = Json::array();
    if (has_tool_calls(assistant)) {
      auto batch = op_copy().tool_batch;
      if (batch) results = execute_tool_batch(*batch, step_id);
    }
    if (watched()) {
      core_.publish(event("step_end", {{"stepId", step_id}, {"toolResults", results}}, std::nullopt,
                          std::make_shared<const AgentMessage>(std::move(assistant))));
    }
  }

  // ---- requests ------------------------------------------------------------

  std::pair<AssistantMessage, std::string> request_assistant() {
    bool retrying = false;
    while (true) {
      check_cancelled();
      std::int64_t attempt;
      RetryPolicy policy;
      {
        std::lock_guard lock(core_.mu);
        attempt = rt_->op->request_attempts + 1;
        policy = core_.options.retry;
      }
      auto config = branch_config();
      if (!config) throw AppendFailed{config.error()};
      if (attempt > policy.max_attempts) {
        auto message = error_message(config->model, fmt::format("retries exhausted: {} attempts failed", attempt - 1));
        append_entry(message_entry(message));
        throw RunFailed{Error{"retries_exhausted", *message.error_message}};
      }
      const Models::Entry* served = nullptr;
      {
        std::lock_guard lock(core_.mu);
        served = core_.options.models.find(config->model_ref.provider, config->model_ref.model_id);
      }
      if (!served) {
        throw RunFailed{Error{"unknown_model", fmt::format("model '{}/{}' is not configured", config->model_ref.provider,
                                                           config->model_ref.model_id)}};
      }
      LlmContext scratch;
      const LlmContext& context = build_request(*config, scratch);
      StreamOptions options;
      {
        std::lock_guard lock(core_.mu);
        options = core_.options.stream_options;
      }
      options.thinking_level = config->thinking_level;
      for (const auto& hook : core_.hooks.handlers(&Hooks::Lists::before_request)) {
        try {
          if (auto out = hook(hook_context(), BeforeRequestEvent{config->model, "step", attempt, options})) options = *out;
        } catch (const std::exception& e) {
          core_.report_handler_error(rt_->name, run_id_, "hook", "before_request", e.what());
        }
      }

      append_harness(GenerationStarted{.run_id = run_id_, .purpose = "step", .attempt = attempt,
                                       .model = ModelRef{config->model_ref.provider, config->model_ref.model_id}});
      bool started = false;
      auto on_event = [&](const ProviderEvent& e) {
        // One copy of the partial message per chunk, shared by the snapshot
        // and the events.
        auto partial = std::make_shared<const AgentMessage>(*e.partial);
        {
          std::lock_guard lock(core_.mu);
          rt_->streaming = partial;
        }
        if (!watched()) {
          started = true;
          return;
        }
        if (!started) {
          started = true;
          core_.publish(event("message_start", Json::object(), std::nullopt, partial));
        }
        Json delta = {{"type", to_string(e.type)}};
        if (e.content_index >= 0) delta["contentIndex"] = e.content_index;
        if (!e.delta.empty()) delta["delta"] = e.delta;
        core_.publish(event("message_update", {{"assistantMessageEvent", std::move(delta)}}, std::nullopt, std::move(partial)));
      };
      // No handlers, no hook: a provider then need not build a payload
      // value for nobody to see.
      auto payload_handlers = core_.hooks.handlers(&Hooks::Lists::before_payload);
      PayloadHook payload_hook;
      if (!payload_handlers.empty()) payload_hook = [this, handlers = std::move(payload_handlers)](const Model& model, Json payload) {
        for (const auto& hook : handlers) {
          try {
            if (auto out = hook(hook_context(), model, payload)) payload = std::move(*out);
          } catch (const std::exception& e) {
            core_.report_handler_error(rt_->name, run_id_, "hook", "before_payload", e.what());
          }
        }
        return payload;
      };
      ProviderResponse response =
          served->provider->stream(served->model, context, options, payload_hook, on_event, cancel_);
      AssistantMessage& message = response.message;
      add_spend(message.usage);
      {
        std::lock_guard lock(core_.mu);
        rt_->streaming.reset();
        rt_->retry.reset();
      }

      bool cancelled;
      {
        std::lock_guard lock(core_.mu);
        cancelled = rt_->op->cancelled;
      }
      if (cancelled) {
        // The aborted response is the run's closure. Its tool calls were never
        // answered, and a later request would be invalid with them in it.
        std::erase_if(message.content, [](const AssistantBlock& b) { return std::holds_alternative<ToolCall>(b); });
        message.stop_reason = StopReason::aborted;
        if (!message.error_message) message.error_message = "Operation aborted";
        append_entry(message_entry(message), /*after_cancel=*/true, started);
        throw RunCancelled{};
      }
      if (message.stop_reason == StopReason::error || message.stop_reason == StopReason::aborted) {
        const std::string what = message.error_message.value_or("the provider failed");
        // Too big for the model: nothing leaves the log, the context is
        // compacted and the step tried once more.
        if (response.context_overflow && !overflow_compacted_ && compaction_settings().enabled) {
          overflow_compacted_ = true;
          if (auto_compact("overflow")) continue;
        }
        if (response.retryable && attempt < policy.max_attempts) {
          const auto delay = backoff(policy, attempt, response.retry_after_ms);
          {
            std::lock_guard lock(core_.mu);
            rt_->retry = RunSnapshot::Retry{attempt + 1, policy.max_attempts, iso8601_in(delay)};
          }
          core_.publish(event("retry_scheduled", {{"purpose", "step"},
                                                  {"attempt", attempt},
                                                  {"maxAttempts", policy.max_attempts},
                                                  {"delayMs", delay.count()},
                                                  {"errorMessage", what}}));
          if (cancellable_sleep(delay, cancel_)) throw RunCancelled{};
          retrying = true;
          core_.publish(event("retry_start", {{"purpose", "step"}, {"attempt", attempt + 1}}));
          continue;
        }
        append_entry(message_entry(message), false, started);
        if (retrying) {
          core_.publish(event("retry_end", {{"purpose", "step"}, {"attempt", attempt}, {"success", false}, {"finalError", what}}));
        }
        const std::string code = response.retryable      ? "retries_exhausted"
                                 : response.context_overflow ? "context_overflow"
                                                             : "provider_error";
        throw RunFailed{Error{code, what}};
      }

      for (const auto& hook : core_.hooks.handlers(&Hooks::Lists::after_response)) {
        try {
          if (auto out = hook(hook_context(), AfterResponseEvent{response.status, response.headers, message})) {
            message = std::move(*out);
          }
        } catch (const std::exception& e) {
          core_.report_handler_error(rt_->name, run_id_, "hook", "after_response", e.what());
        }
      }
      TreeEntry committed = append_entry(message_entry(message), false, started);
      if (retrying) core_.publish(event("retry_end", {{"purpose", "step"}, {"attempt", attempt}, {"success", true}}));
      return {message, committed.id};
    }
  }

  AssistantMessage error_message(const Model& model, std::string text) {
    AssistantMessage message;
    message.api = model.api;
    message.provider = model.provider;
    message.model = model.id;
    message.stop_reason = StopReason::error;
    message.error_message = std::move(text);
    message.timestamp = now_unix_ms();
    return message;
  }

  // The request for the ref's context at its leaf. With no transform_context
  // hook and the default conversion it is the context cache's own request,
  // extended by each step's appends; otherwise it is built into `scratch`
  // from the cached messages, which costs a copy of the context.
  const LlmContext& build_request(const HarnessCore::BranchConfig& config, LlmContext& scratch) {
    if (auto synced = rt_->context.sync(*core_.session, rt_->name); !synced) throw AppendFailed{synced.error()};
    std::function<std::vector<LlmMessage>(const std::vector<AgentMessage>&)> convert;
    SystemPrompt system_prompt;
    std::vector<ToolDefinition> tools;
    {
      std::lock_guard lock(core_.mu);
      convert = core_.options.convert_to_llm;
      system_prompt = core_.options.system_prompt;
      for (const auto& tool : core_.options.tools) {
        if (std::find(config.active_tools.begin(), config.active_tools.end(), tool.name) != config.active_tools.end()) {
          tools.push_back(ToolDefinition{tool.name, tool.description, tool.parameters});
        }
      }
    }
    const auto transforms = core_.hooks.handlers(&Hooks::Lists::transform_context);
    LlmContext* request = &rt_->context.request();
    if (convert || !transforms.empty()) {
      std::vector<AgentMessage> messages = rt_->context.messages();
      for (const auto& hook : transforms) {
        try {
          if (auto out = hook(hook_context(), TransformContextEvent{messages})) messages = std::move(*out);
        } catch (const std::exception& e) {
          core_.report_handler_error(rt_->name, run_id_, "hook", "transform_context", e.what());
        }
      }
      std::erase_if(messages, is_failed_response);
      scratch.messages = convert ? convert(messages) : convert_to_llm(messages);
      request = &scratch;
    }
    request->tools = std::move(tools);
    request->system_prompt.clear();
    std::optional<std::string> override_prompt;
    {
      std::lock_guard lock(core_.mu);
      override_prompt = std::get<RunIntent>(rt_->op->intent).system_prompt_override;
    }
    if (override_prompt) {
      request->system_prompt = std::move(*override_prompt);
    } else if (system_prompt) {
      request->system_prompt = system_prompt(config.active_tools);
    }
    return *request;
  }

  // ---- tools ---------------------------------------------------------------

  struct PreparedCall {
    ToolCallState call;
    std::optional<Tool> tool;  // set: execute it
    Json args;
    std::string result_id;
    std::optional<ToolResult> result;  // set: the outcome is known without executing
    bool began = false;                // a tool_start event was published
  };

  // Answers every call of `batch` that has no result yet, in source order:
  // calls that never began take the full path (lookup, validation,
  // before_tool, tool_started, execution); calls that began before a crash
  // run again if their tool is replay-safe and get a synthetic "interrupted"
  // result otherwise, with no hooks.
  Json execute_tool_batch(const ToolBatch& batch, const std::string& step_id = {}) {
    std::vector<PreparedCall> prepared;
    try {
      for (const auto& call : batch.calls) {
        if (call.result_exists) continue;
        prepared.push_back(prepare(call, batch.assistant_entry_id, step_id));
      }
    } catch (const RunCancelled&) {
      // Calls prepared so far run to their end below; the rest are answered
      // by the cancellation path.
    }
    run_tools(prepared, step_id);
    Json results = Json::array();
    for (auto& p : prepared) {
      ToolResult result = std::move(*p.result);
      if (p.tool) result = after_tool(p, std::move(result));
      if (p.began || p.tool) {
        {
          std::lock_guard lock(core_.mu);
          std::erase_if(rt_->running_tools, [&](const RunningTool& r) { return r.tool_call_id == p.call.call_id; });
        }
        if (watched()) core_.publish(event("tool_end", {{"stepId", step_id}, {"toolCallId", p.call.call_id}, {"toolName", p.call.name},
                                         {"result", encode_result(result)}, {"isError", result.is_error}}));
      }
      ToolResultMessage message{.tool_call_id = p.call.call_id, .tool_name = p.call.name, .content = result.content,
                                .details = result.details, .is_error = result.is_error, .timestamp = now_unix_ms()};
      if (watched()) results.push_back(encode(AgentMessage(message)));
      ProvisionedEntry entry = message_entry(std::move(message), p.result_id);
      append_if_missing(entry, /*after_cancel=*/true);
    }
    return results;
  }

  PreparedCall prepare(const ToolCallState& call, const std::string& assistant_id, const std::string& step_id) {
    PreparedCall p{.call = call, .args = call.args};
    if (call.started) {
      p.result_id = call.started->result_entry_id;
      p.args = call.started->effective_args;
      if (call.started->replay == "safe") {
        p.tool = find_tool(call.name);
        if (!p.tool) p.result = ToolResult::text(fmt::format("Tool {} is not available to run again", call.name), true);
      } else {
        p.result = ToolResult{.content = {TextContent{.text = "Tool execution was interrupted: the process stopped "
                                                               "while it ran, and the tool is not safe to run again. "
                                                               "Its effects, if any, are unknown."}},
                              .details = Json{{"interrupted", true}},
                              .is_error = true};
      }
      return p;
    }
    check_cancelled();
    p.result_id = core_.session->new_entry_id();
    auto tool = find_active_tool(call.name);
    if (!tool) {
      p.result = ToolResult::text(fmt::format("Tool {} not found", call.name), true);
      return p;
    }
    std::shared_ptr<const ArgumentValidator> validator;
    {
      std::lock_guard lock(core_.mu);
      if (auto it = core_.validators.find(call.name); it != core_.validators.end()) validator = it->second;
    }
    if (validator) {
      if (auto valid = validator->validate(call.args); !valid) {
        p.result = ToolResult::text(fmt::format("Invalid arguments for tool {}: {}", call.name, valid.error().message), true);
        return p;
      }
    }
    for (const auto& hook : core_.hooks.handlers(&Hooks::Lists::before_tool)) {
      try {
        auto out = hook(hook_context(), BeforeToolEvent{call.call_id, call.name, p.args});
        if (!out) continue;
        if (out->args) p.args = std::move(*out->args);
        if (out->block) {
          p.result = ToolResult::text(fmt::format("Tool call blocked: {}", *out->block), true);
          return p;
        }
      } catch (const std::exception& e) {
        core_.report_handler_error(rt_->name, run_id_, "hook", "before_tool", e.what());
      }
    }
    const std::int64_t seq = append_harness(ToolStarted{.run_id = run_id_, .assistant_entry_id = assistant_id,
                                                        .tool_index = call.index, .tool_call_id = call.call_id,
                                                        .tool_name = call.name, .effective_args = p.args,
                                                        .result_entry_id = p.result_id,
                                                        .replay = std::string(to_string(tool->replay))});
    {
      std::lock_guard lock(core_.mu);
      rt_->running_tools.push_back(RunningTool{call.call_id, call.name, p.args, std::nullopt});
    }
    if (watched()) core_.publish(event("tool_start", {{"stepId", step_id}, {"toolCallId", call.call_id}, {"toolName", call.name}, {"args", p.args}}, seq));
    p.began = true;
    p.tool = std::move(tool);
    return p;
  }

  std::optional<Tool> find_tool(const std::string& name) {
    std::lock_guard lock(core_.mu);
    for (const auto& tool : core_.options.tools) {
      if (tool.name == name) return tool;
    }
    return std::nullopt;
  }

  std::optional<Tool> find_active_tool(const std::string& name) {
    auto config = branch_config();
    if (!config) throw AppendFailed{config.error()};
    if (std::find(config->active_tools.begin(), config->active_tools.end(), name) == config->active_tools.end()) {
      return std::nullopt;
    }
    return find_tool(name);
  }

  void run_tools(std::vector<PreparedCall>& prepared, const std::string& step_id) {
    auto run_one = [&](PreparedCall& p, std::any app) {
      ToolContext context{.ref = rt_->name, .run_id = run_id_, .tool_call_id = p.call.call_id, .cancel = cancel_,
                          .app = std::move(app)};
      context.update = [&](const ToolResult& partial) {
        {
          std::lock_guard lock(core_.mu);
          for (auto& running : rt_->running_tools) {
            if (running.tool_call_id == p.call.call_id) running.partial_result = partial;
          }
        }
        if (watched()) core_.publish(event("tool_update", {{"stepId", step_id}, {"toolCallId", p.call.call_id},
                                            {"toolName", p.call.name}, {"partialResult", encode_result(partial)}}));
      };
      try {
        p.result = p.tool->execute ? p.tool->execute(p.args, context)
                                   : ToolResult::text(fmt::format("Tool {} has no implementation", p.tool->name), true);
      } catch (const std::exception& e) {
        p.result = ToolResult::text(fmt::format("Tool {} failed: {}", p.tool->name, e.what()), true);
      } catch (...) {
        p.result = ToolResult::text(fmt::format("Tool {} failed", p.tool->name), true);
      }
    };
    std::function<std::any()> make_context;
    {
      std::lock_guard lock(core_.mu);
      make_context = core_.options.tool_context;
    }
    // The application's context for each call, made here on the run's
    // thread, so that the factory need not be thread-safe. A factory that
    // throws fails that call, not the run.
    std::vector<std::pair<PreparedCall*, std::any>> runnable;
    for (auto& p : prepared) {
      if (!p.tool || p.result) continue;
      std::any app;
      try {
        if (make_context) app = make_context();
      } catch (const std::exception& e) {
        p.result = ToolResult::text(fmt::format("Tool {} could not start: its context failed: {}", p.tool->name, e.what()), true);
        continue;
      }
      runnable.emplace_back(&p, std::move(app));
    }
    const bool parallel = runnable.size() > 1 &&
                          std::all_of(runnable.begin(), runnable.end(), [](const auto& r) { return r.first->tool->parallel; });
    if (!parallel) {
      for (auto& [p, app] : runnable) run_one(*p, std::move(app));
      return;
    }
    std::vector<std::jthread> threads;
    for (auto& [p, app] : runnable) threads.emplace_back([&run_one, p = p, app = std::move(app)]() mutable { run_one(*p, std::move(app)); });
  }

  ToolResult after_tool(const PreparedCall& p, ToolResult result) {
    for (const auto& hook : core_.hooks.handlers(&Hooks::Lists::after_tool)) {
      try {
        auto out = hook(hook_context(), AfterToolEvent{p.call.call_id, p.call.name, p.args, result});
        if (!out) continue;
        if (out->content) result.content = std::move(*out->content);
        if (out->details) result.details = std::move(*out->details);
        if (out->is_error) result.is_error = *out->is_error;
      } catch (const std::exception& e) {
        core_.report_handler_error(rt_->name, run_id_, "hook", "after_tool", e.what());
      }
    }
    return result;
  }

  // ---- compaction ----------------------------------------------------------

  CompactionSettings compaction_settings() {
    std::lock_guard lock(core_.mu);
    return core_.options.compaction;
  }

  // The manual operation (AgentRef::compact): its compaction entry has a
  // provisioned id, so a resumed operation that finds it skips to the end.
  RunResult compaction_procedure() {
    const auto intent = std::get<CompactionIntent>(op_copy().intent);
    core_.publish(event("compaction_start", {{"reason", "manual"}}));  // again on resume
    check_cancelled();
    auto seq = core_.session->seq_of(intent.result_entry_id);
    if (!seq) {
      Compacted done = compact_branch("manual", intent.custom_instructions, intent.result_entry_id);
      if (done.cancelled) {
        apply_pending_writes();
        return *finish(Outcome::cancelled, std::nullopt);
      }
      compaction_entry_ = std::move(done.entry);
      from_hook_ = done.from_hook;
    } else {
      auto record = core_.session->get_record(*seq);
      if (!record || !*record) throw AppendFailed{record ? Error{"corrupt_log", "the compaction entry vanished"} : record.error()};
      compaction_entry_ = std::get<TreeEntry>((*record)->body);
      from_hook_ = std::get<Compaction>(compaction_entry_->body).from_hook.value_or(false);
    }
    apply_pending_writes();
    return *finish(Outcome::ok, std::nullopt);
  }

  // Deferred writes are facts: an operation that ends in any way applies them.
  void apply_pending_writes() {
    const OpState op = op_copy();
    for (const auto& write : op.pending_writes) append_if_missing(write, /*after_cancel=*/true);
  }

  // At a run's checkpoint: compacts when the context is over the threshold.
  // A refusal (nothing to shed) is reported once and not retried in this run.
  void compact_if_over_threshold() {
    if (kind_ != "run" || threshold_refused_) return;
    const CompactionSettings settings = compaction_settings();
    if (!settings.enabled) return;
    auto config = branch_config();
    if (!config) throw AppendFailed{config.error()};
    if (!should_compact(rt_->context.size().tokens, config->model.context_window, settings)) return;
    auto_compact("threshold");
  }

  // Compaction inside a run, bracketed by compaction_start / compaction_end.
  // True when the context was compacted. A refusal or a hook's cancel leaves
  // the context as it was and the run going; a summary that cannot be had
  // fails the run (RunFailed).
  bool auto_compact(const std::string& reason) {
    core_.publish(event("compaction_start", {{"reason", reason}}));
    try {
      Compacted done = compact_branch(reason, std::nullopt, core_.session->new_entry_id());
      if (done.cancelled) {
        core_.publish(event("compaction_end", {{"reason", reason}, {"outcome", "cancelled"}, {"fromHook", false}}));
        return false;
      }
      core_.publish(event("compaction_end", {{"reason", reason},
                                             {"outcome", "completed"},
                                             {"entry", encode(*done.entry)},
                                             {"fromHook", done.from_hook}}));
      publish_context_usage();
      return true;
    } catch (const RunFailed& failure) {
      core_.publish(event("compaction_end", {{"reason", reason},
                                             {"outcome", "failed"},
                                             {"fromHook", false},
                                             {"error", {{"code", failure.error.code}, {"message", failure.error.message}}}}));
      if (failure.error.code == "nothing_to_compact" || failure.error.code == "would_split_tool_call") {
        threshold_refused_ = true;
        return false;
      }
      throw;
    }
  }

  struct Compacted {
    bool cancelled = false;  // before_compaction declined
    std::optional<TreeEntry> entry;
    bool from_hook = false;
  };

  // Prepares, asks before_compaction, summarises (or takes the hook's
  // summary) and appends the compaction entry as `entry_id`. A refusal or a
  // failed summary throws RunFailed with its cause; the log then holds no
  // compaction entry and the context is unchanged.
  Compacted compact_branch(const std::string& reason, const std::optional<std::string>& instructions,
                           const std::string& entry_id) {
    const CompactionSettings settings = compaction_settings();
    auto path = compaction_path();
    auto prep = prepare_compaction(path, settings);
    if (!prep) throw RunFailed{prep.error()};

    std::optional<SuppliedSummary> supplied;
    for (const auto& hook : core_.hooks.handlers(&Hooks::Lists::before_compaction)) {
      try {
        auto out = hook(hook_context(), BeforeCompactionEvent{reason, *prep, instructions});
        if (!out) continue;
        if (out->cancel) return Compacted{.cancelled = true};
        if (out->compaction) supplied = std::move(out->compaction);
      } catch (const std::exception& e) {
        core_.report_handler_error(rt_->name, run_id_, "hook", "before_compaction", e.what());
      }
    }
    Compaction body{.first_kept_entry_id = prep->first_kept_entry_id, .tokens_before = prep->tokens_before};
    if (supplied) {
      body.summary = std::move(supplied->summary);
      body.details = supplied->details;
      body.from_hook = true;
    } else {
      body.summary = summarise(*prep, settings, instructions);
      body.details = compaction_details(*prep);
    }
    TreeEntry entry = append_entry(TreeEntry{.id = entry_id, .body = std::move(body)});
    return Compacted{.entry = std::move(entry), .from_hook = supplied.has_value()};
  }

  // The branch a compaction looks at, oldest first: from the newest
  // compaction's kept entry (or the root) to the leaf. Decoded from the leaf
  // back, so an often-compacted session reads only its recent part.
  std::vector<TreeEntry> compaction_path() {
    const auto ids = core_.session->path_to(core_.session->leaf(rt_->name));
    std::vector<TreeEntry> path;
    std::optional<std::string> kept;
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
      auto entry = core_.session->get_entry(*it);
      if (!entry) throw AppendFailed{entry.error()};
      if (!*entry) throw AppendFailed{Error{"corrupt_log", fmt::format("entry '{}' on the branch cannot be read", *it)}};
      path.push_back(std::move(**entry));
      if (kept && path.back().id == *kept) break;
      if (const auto* compaction = std::get_if<Compaction>(&path.back().body); compaction && !kept) {
        kept = compaction->first_kept_entry_id;
      }
    }
    std::reverse(path.begin(), path.end());
    return path;
  }

  // The compaction summary: one generation cycle for the history and, when
  // the turn was split, its prefix.
  std::string summarise(const CompactionPreparation& prep, const CompactionSettings& settings,
                        const std::optional<std::string>& instructions) {
    std::vector<SummaryRequest> requests;
    if (!prep.messages_to_summarize.empty()) requests.push_back(history_summary_request(prep, settings, instructions));
    const bool prefix = prep.split_turn && !prep.turn_prefix_messages.empty();
    if (prefix) requests.push_back(turn_prefix_summary_request(prep, settings));
    auto texts = generate("compaction", requests);
    const std::string history = prep.messages_to_summarize.empty() ? "No prior history." : texts.front();
    return compose_summary(prep, history, prefix ? std::optional<std::string>(texts.back()) : std::nullopt);
  }

  // Summary texts: one generation cycle (one generation_started, however many
  // requests it makes), retried as steps are. Throws RunFailed
  // (`<purpose>_failed`) when retrying cannot help.
  std::vector<std::string> generate(const std::string& purpose, const std::vector<SummaryRequest>& requests) {
    bool retrying = false;
    while (true) {
      check_cancelled();
      std::int64_t attempt;
      RetryPolicy policy;
      StreamOptions options;
      {
        std::lock_guard lock(core_.mu);
        attempt = rt_->op->request_attempts + 1;
        policy = core_.options.retry;
        options = core_.options.stream_options;
      }
      auto config = branch_config();
      if (!config) throw AppendFailed{config.error()};
      const std::string failed_code = purpose + "_failed";
      if (attempt > policy.max_attempts) {
        throw RunFailed{Error{failed_code, fmt::format("retries exhausted: {} attempts at the summary failed", attempt - 1)}};
      }
      const Models::Entry* served = nullptr;
      {
        std::lock_guard lock(core_.mu);
        served = core_.options.models.find(config->model_ref.provider, config->model_ref.model_id);
      }
      if (!served) {
        throw RunFailed{Error{"unknown_model", fmt::format("model '{}/{}' is not configured", config->model_ref.provider,
                                                           config->model_ref.model_id)}};
      }
      options.thinking_level = config->thinking_level;
      if (requests.empty()) return {};
      append_harness(GenerationStarted{.run_id = run_id_, .purpose = purpose, .attempt = attempt,
                                       .model = ModelRef{config->model_ref.provider, config->model_ref.model_id}});
      std::optional<ProviderResponse> failed;
      std::vector<std::string> texts;
      for (const auto& request : requests) {
        LlmContext context{.system_prompt = request.system_prompt};
        context.messages.push_back(UserMessage{.content = std::vector<UserBlock>{TextContent{.text = request.prompt}},
                                               .timestamp = now_unix_ms()});
        StreamOptions these = options;
        these.max_tokens = request.max_tokens;
        ProviderResponse response = served->provider->stream(served->model, context, these, {}, {}, cancel_);
        add_spend(response.message.usage);
        if (response_failed(response)) {
          failed = std::move(response);
          break;
        }
        texts.push_back(text_of(response.message));
      }
      if (!failed) {
        if (retrying) core_.publish(event("retry_end", {{"purpose", purpose}, {"attempt", attempt}, {"success", true}}));
        return texts;
      }
      check_cancelled();
      const std::string what = failed->message.error_message.value_or("the provider failed");
      if (failed->retryable && attempt < policy.max_attempts) {
        const auto delay = backoff(policy, attempt, failed->retry_after_ms);
        core_.publish(event("retry_scheduled", {{"purpose", purpose},
                                                {"attempt", attempt},
                                                {"maxAttempts", policy.max_attempts},
                                                {"delayMs", delay.count()},
                                                {"errorMessage", what}}));
        if (cancellable_sleep(delay, cancel_)) throw RunCancelled{};
        retrying = true;
        core_.publish(event("retry_start", {{"purpose", purpose}, {"attempt", attempt + 1}}));
        continue;
      }
      if (retrying) {
        core_.publish(event("retry_end", {{"purpose", purpose}, {"attempt", attempt}, {"success", false}, {"finalError", what}}));
      }
      throw RunFailed{Error{failed_code, fmt::format("the summary request failed: {}", what)}};
    }
  }

  // ---- navigation ----------------------------------------------------------

  // navigate_tree: the leaf moves once, by its provisioned leaf entry; the
  // branch summary and the label follow it, each by provisioned id, so a
  // resumed navigation adds what is missing and nothing twice.
  RunResult navigation_procedure() {
    const OpState op = op_copy();
    const auto intent = std::get<NavigationIntent>(op.intent);
    old_leaf_ = op.source_leaf_id;
    new_leaf_ = intent.destination_leaf_id;
    core_.publish(event("navigation_start", {{"targetId", intent.target_id}}));  // again on resume
    check_cancelled();
    std::optional<std::string> summary_text;
    std::optional<Json> summary_details;
    bool from_hook = false;
    std::optional<std::string> label = intent.label;
    BranchPreparation prep;
    if (!core_.session->seq_of(intent.leaf_entry_id)) {
      const CompactionSettings settings = compaction_settings();
      auto config = branch_config();
      if (!config) throw AppendFailed{config.error()};
      prep = prepare_branch_summary(abandoned_branch(old_leaf_, new_leaf_),
                                    std::max<std::int64_t>(0, config->model.context_window - settings.reserve_tokens));
      for (const auto& hook : core_.hooks.handlers(&Hooks::Lists::before_navigation)) {
        try {
          auto out = hook(hook_context(), BeforeNavigationEvent{intent.target_id, prep});
          if (!out) continue;
          if (out->cancel) {
            apply_pending_writes();
            return *finish(Outcome::cancelled, std::nullopt);
          }
          if (out->summary) {
            summary_text = out->summary->summary;
            summary_details = out->summary->details;
            from_hook = true;
          }
        } catch (const std::exception& e) {
          core_.report_handler_error(rt_->name, run_id_, "hook", "before_navigation", e.what());
        }
      }
      if (intent.summarize && !summary_text) {
        summary_text = summarise_branch(prep, intent.custom_instructions);
        summary_details = branch_summary_details(prep);
      }
      append_entry(TreeEntry{.id = intent.leaf_entry_id, .body = Leaf{new_leaf_}});  // the cursor moves here
    }
    if (intent.summarize && intent.summary_entry_id) {
      if (auto seq = core_.session->seq_of(*intent.summary_entry_id)) {
        nav_summary_ = entry_at(*seq);
      } else {
        if (!summary_text) {
          // The leaf moved before a crash and the summary was lost with it.
          auto config = branch_config();
          if (!config) throw AppendFailed{config.error()};
          prep = prepare_branch_summary(abandoned_branch(old_leaf_, new_leaf_),
                                        std::max<std::int64_t>(0, config->model.context_window - compaction_settings().reserve_tokens));
          summary_text = summarise_branch(prep, intent.custom_instructions);
          summary_details = branch_summary_details(prep);
        }
        nav_summary_ = append_entry(TreeEntry{.id = *intent.summary_entry_id,
                                              .body = BranchSummary{.from_id = old_leaf_.value_or("root"),
                                                                    .summary = *summary_text,
                                                                    .details = summary_details,
                                                                    .from_hook = from_hook ? std::optional<bool>(true) : std::nullopt}});
      }
    }
    if (label && intent.label_entry_id && !core_.session->seq_of(*intent.label_entry_id)) {
      append_entry(TreeEntry{.id = *intent.label_entry_id, .body = Label{.target_id = intent.target_id, .label = label}});
    }
    apply_pending_writes();
    return *finish(Outcome::ok, std::nullopt);
  }

  std::string summarise_branch(const BranchPreparation& prep, const std::optional<std::string>& instructions) {
    if (prep.messages.empty()) return compose_branch_summary(prep, "No content to summarise.");
    return compose_branch_summary(prep, generate("branch_summary", {branch_summary_request(prep, instructions)}).front());
  }

  TreeEntry entry_at(std::int64_t seq) {
    auto record = core_.session->get_record(seq);
    if (!record || !*record) throw AppendFailed{record ? Error{"corrupt_log", fmt::format("seq {} vanished", seq)} : record.error()};
    return std::get<TreeEntry>((*record)->body);
  }

  // The entries a navigation leaves behind, oldest first: from the common
  // ancestor of `from` and `to` (exclusive) to `from`.
  std::vector<TreeEntry> abandoned_branch(const std::optional<std::string>& from, const std::optional<std::string>& to) {
    if (!from) return {};
    const auto from_path = core_.session->path_to(*from);
    const auto to_path = core_.session->path_to(to);
    const std::set<std::string> on_to(to_path.begin(), to_path.end());
    std::size_t first = from_path.size();
    while (first > 0 && !on_to.contains(from_path[first - 1])) --first;
    std::vector<TreeEntry> out;
    for (std::size_t i = first; i < from_path.size(); ++i) {
      auto entry = core_.session->get_entry(from_path[i]);
      if (!entry) throw AppendFailed{entry.error()};
      if (*entry) out.push_back(std::move(**entry));
    }
    return out;
  }

  static bool response_failed(const ProviderResponse& response) {
    return response.message.stop_reason == StopReason::error || response.message.stop_reason == StopReason::aborted;
  }

  static std::string text_of(const AssistantMessage& message) {
    std::string out;
    for (const auto& block : message.content) {
      if (const auto* text = std::get_if<TextContent>(&block)) out += (out.empty() ? "" : "\n") + text->text;
    }
    return out;
  }

  // ---- ends ----------------------------------------------------------------

  std::optional<std::string> before_run_end() {
    const auto handlers = core_.hooks.handlers(&Hooks::Lists::before_run_end);
    if (handlers.empty()) return std::nullopt;  // nobody to read the run's messages back for
    std::vector<AgentMessage> messages;
    for (const auto& id : op_copy().message_ids) {
      auto entry = core_.session->get_entry(id);
      if (!entry) throw AppendFailed{entry.error()};
      if (*entry) {
        if (const auto* body = std::get_if<MessageBody>(&(*entry)->body)) messages.push_back(body->message);
      }
    }
    std::optional<std::string> follow_up;
    for (const auto& hook : handlers) {
      try {
        if (auto out = hook(hook_context(), BeforeRunEndEvent{messages}); out && out->follow_up) follow_up = out->follow_up;
      } catch (const std::exception& e) {
        core_.report_handler_error(rt_->name, run_id_, "hook", "before_run_end", e.what());
      }
    }
    return follow_up;
  }

  // Finishes the run as completed unless work arrived meanwhile. The
  // decision and operation_finished are one step under the ref's lock: a
  // steer, follow-up or write either lands before it (and is seen pending
  // here) or is refused / applied after the operation closed.
  std::optional<RunResult> try_finish() { return finish(Outcome::ok, std::nullopt, /*unless_pending=*/true); }

  RunResult cancellation_path() {
    const OpState op = op_copy();
    if (op.tool_batch) {
      for (const auto& call : op.tool_batch->calls) {
        if (call.result_exists) continue;
        const bool started = call.started.has_value();
        ToolResultMessage message{
            .tool_call_id = call.call_id,
            .tool_name = call.name,
            .content = {TextContent{.text = started ? "Tool execution was interrupted by an abort."
                                                    : "Tool call was aborted before it started."}},
            .details = Json{{started ? "interrupted" : "aborted", true}},
            .is_error = true,
            .timestamp = now_unix_ms()};
        append_if_missing(message_entry(std::move(message), started ? call.started->result_entry_id : std::string()),
                          true);
      }
    }
    for (const auto& write : op.pending_writes) append_if_missing(write, true);
    const OpState now = op_copy();
    if (!now.last_assistant || now.last_assistant->stop_reason != StopReason::aborted) {
      auto config = branch_config();
      if (!config) throw AppendFailed{config.error()};
      AssistantMessage closure = error_message(config->model, "Operation aborted");
      closure.stop_reason = StopReason::aborted;
      append_entry(message_entry(std::move(closure)), true);
    }
    return *finish(Outcome::aborted, std::nullopt);
  }

  std::optional<RunResult> finish(Outcome outcome, std::optional<Error> error, bool unless_pending = false) {
    const std::string text = outcome == Outcome::ok ? "completed" : std::string(to_string(outcome));
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
        seq = append_locked(Record{.body = HarnessRecord{.body = OperationFinished{.run_id = run_id_, .outcome = text, .error = error}}}).seq;
      } catch (const AppendFailed& failure) {
        return fault(failure.error);
      }
    }
    RunResult result{.outcome = outcome, .kind = kind_, .run_id = run_id_, .error = error};
    Json data = {{"outcome", text}};
    if (kind_ == "run") {
      {
        std::lock_guard lock(core_.mu);
        result.final_message = rt_->op->last_assistant;
      }
      if (result.final_message) data["finalMessage"] = encode(AgentMessage(*result.final_message));
    } else if (kind_ == "compaction") {
      data["reason"] = "manual";
      data["fromHook"] = from_hook_;
      if (outcome == Outcome::ok && compaction_entry_) {
        result.entry = compaction_entry_;
        data["entry"] = encode(*compaction_entry_);
      }
    } else {
      const bool moved = core_.session->leaf(rt_->name) != old_leaf_ || outcome == Outcome::ok;
      result.new_leaf_id = moved ? new_leaf_ : old_leaf_;
      data["oldLeafId"] = old_leaf_ ? Json(*old_leaf_) : Json(nullptr);
      data["newLeafId"] = result.new_leaf_id ? Json(*result.new_leaf_id) : Json(nullptr);
      if (outcome == Outcome::ok && nav_summary_) {
        result.entry = nav_summary_;
        data["summaryEntry"] = encode(*nav_summary_);
      }
    }
    if (error) data["error"] = {{"code", error->code}, {"message", error->message}};
    // A compaction or navigation changed what the next request carries.
    if (kind_ != "run" && outcome == Outcome::ok) publish_context_usage();
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard lock(core_.mu);
      rt_->op.reset();
      rt_->finishing = false;
      rt_->active = false;
      rt_->streaming.reset();
      rt_->running_tools.clear();
      rt_->retry.reset();
      core_.became_idle(*rt_, callbacks);
    }
    core_.publish(event(kind_ == "run" ? "run_end" : kind_ == "compaction" ? "compaction_end" : "navigation_end",
                        std::move(data), seq));
    for (auto& callback : callbacks) callback();
    core_.bus.flush();
    return result;
  }

  RunResult fault(const Error& error) {
    core_.enter_fault(error);
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard lock(core_.mu);
      rt_->active = false;
      rt_->finishing = false;
      rt_->status = OperationStatus::suspended;
      rt_->streaming.reset();
      rt_->running_tools.clear();
      rt_->retry.reset();
      core_.became_idle(*rt_, callbacks);
    }
    for (auto& callback : callbacks) callback();
    core_.bus.flush();
    return RunResult{.outcome = Outcome::faulted, .run_id = run_id_, .error = error};
  }

  HarnessCore& core_;
  std::shared_ptr<RefRuntime> rt_;
  bool recovery_;
  std::string run_id_;
  std::string kind_;  // run | compaction | navigation
  std::stop_token cancel_;
  bool overflow_compacted_ = false;  // a run compacts on overflow once
  Usage spend_;                      // this operation's, see add_spend
  bool threshold_refused_ = false;   // a run whose threshold compaction was refused does not retry it
  std::optional<TreeEntry> compaction_entry_;  // the manual compaction's entry
  bool from_hook_ = false;
  std::optional<std::string> old_leaf_, new_leaf_;  // navigation
  std::optional<TreeEntry> nav_summary_;
};

bool user_side(const AgentMessage& message) {
  const std::string_view role = role_of(message);
  return role == "user" || role == "custom";
}

}  // namespace

RunResult HarnessCore::prompt(const std::shared_ptr<RefRuntime>& rt, std::vector<AgentMessage> messages) {
  for (const auto& message : messages) {
    if (!user_side(message)) {
      return RunResult{.outcome = Outcome::rejected,
                       .error = rejection("invalid_message", fmt::format("a prompt takes user or custom messages, not "
                                                                         "'{}'", role_of(message)))};
    }
  }
  {
    std::lock_guard lock(mu);
    if (closed) return RunResult{.outcome = Outcome::rejected, .error = rejection("closed", "the harness is closed")};
    if (faulted) return RunResult{.outcome = Outcome::faulted, .error = rejection("faulted", "the harness is faulted: appends stopped working")};
    if (rt->deleted) return RunResult{.outcome = Outcome::rejected, .error = rejection("unknown_ref", fmt::format("ref '{}' was deleted", rt->name))};
    if (rt->op || rt->active) {
      return RunResult{.outcome = Outcome::rejected,
                       .error = rejection("busy", fmt::format("ref '{}' already has an {} operation", rt->name,
                                                              rt->active ? "active" : "suspended"))};
    }
    rt->active = true;  // reserved: a second prompt is refused from here on
  }
  auto release = [&] {
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard lock(mu);
      rt->active = false;
      became_idle(*rt, callbacks);
    }
    for (auto& callback : callbacks) callback();
  };

  // before_run: once, before acceptance; its output is persisted.
  std::vector<UserBlock> prompt_blocks;
  if (!messages.empty()) {
    if (const auto* user = std::get_if<UserMessage>(&messages.front())) {
      if (const auto* text = std::get_if<std::string>(&user->content)) {
        prompt_blocks.push_back(TextContent{.text = *text});
      } else {
        prompt_blocks = std::get<std::vector<UserBlock>>(user->content);
      }
    }
  }
  std::string system_prompt;
  {
    SystemPrompt fn;
    {
      std::lock_guard lock(mu);
      fn = options.system_prompt;
    }
    if (fn) {
      auto config = branch_config(rt->name);
      system_prompt = fn(config ? config->active_tools : std::vector<std::string>{});
    }
  }
  RunIntent intent;
  std::vector<AgentMessage> injected;
  for (const auto& hook : hooks.handlers(&Hooks::Lists::before_run)) {
    try {
      auto out = hook(HookContext{rt->name, ""}, BeforeRunEvent{prompt_blocks, system_prompt});
      if (!out) continue;
      for (auto& message : out->messages) injected.push_back(std::move(message));
      if (out->system_prompt) intent.system_prompt_override = out->system_prompt;
      if (out->resume_data) intent.resume_data = out->resume_data;
    } catch (const std::exception& e) {
      report_handler_error(rt->name, std::nullopt, "hook", "before_run", e.what());
    }
  }

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
    HarnessRecord started{.id = session->new_entry_id(), .ref = rt->name, .timestamp = now_iso8601(),
                          .body = OperationStarted{.source_leaf_id = session->leaf(rt->name), .intent = intent}};
    auto appended = session->append(Record{.body = started});
    if (!appended) {
      enter_fault(appended.error());
      release();
      return RunResult{.outcome = Outcome::faulted, .error = appended.error()};
    }
    seq = appended->first_seq;
    run_id = started.id;
    std::lock_guard lock(mu);
    rt->op = open_operation(started, seq);
    rt->status = OperationStatus::running;
    rt->cancel = std::stop_source();
    rt->next_run.clear();
  }
  publish(Event{"run_start", rt->name, run_id, seq, Json::object()});
  return RunProcedure(*this, rt, false).run();
}

// Accepts a compaction or a navigation: operation_started with its intent,
// then its procedure on this thread.
RunResult HarnessCore::run_structural(const std::shared_ptr<RefRuntime>& rt, OperationIntent intent) {
  const std::string kind(op_kind(intent));
  {
    std::lock_guard lock(mu);
    if (closed) return RunResult{.outcome = Outcome::rejected, .kind = kind, .error = rejection("closed", "the harness is closed")};
    if (faulted) {
      return RunResult{.outcome = Outcome::faulted, .kind = kind,
                       .error = rejection("faulted", "the harness is faulted: appends stopped working")};
    }
    if (rt->deleted) {
      return RunResult{.outcome = Outcome::rejected, .kind = kind,
                       .error = rejection("unknown_ref", fmt::format("ref '{}' was deleted", rt->name))};
    }
    if (rt->op || rt->active) {
      return RunResult{.outcome = Outcome::rejected, .kind = kind,
                       .error = rejection("busy", fmt::format("ref '{}' already has an {} operation", rt->name,
                                                              rt->active ? "active" : "suspended"))};
    }
    rt->active = true;
  }
  {
    std::lock_guard ref_lock(rt->ref_mu);
    HarnessRecord started{.id = session->new_entry_id(), .ref = rt->name, .timestamp = now_iso8601(),
                          .body = OperationStarted{.source_leaf_id = session->leaf(rt->name), .intent = std::move(intent)}};
    auto appended = session->append(Record{.body = started});
    if (!appended) {
      enter_fault(appended.error());
      std::vector<std::function<void()>> callbacks;
      {
        std::lock_guard lock(mu);
        rt->active = false;
        became_idle(*rt, callbacks);
      }
      for (auto& callback : callbacks) callback();
      return RunResult{.outcome = Outcome::faulted, .kind = kind, .error = appended.error()};
    }
    std::lock_guard lock(mu);
    rt->op = open_operation(started, appended->first_seq);
    rt->status = OperationStatus::running;
    rt->cancel = std::stop_source();
  }
  return RunProcedure(*this, rt, false).run();
}

RunResult HarnessCore::compact(const std::shared_ptr<RefRuntime>& rt, std::optional<std::string> custom_instructions) {
  return run_structural(rt, CompactionIntent{.custom_instructions = std::move(custom_instructions),
                                             .result_entry_id = session->new_entry_id()});
}

RunResult HarnessCore::navigate(const std::shared_ptr<RefRuntime>& rt, const std::string& target_id,
                                NavigateOptions options) {
  auto target = session->get_entry(target_id);
  if (!target) return RunResult{.outcome = Outcome::faulted, .kind = "navigation", .error = target.error()};
  if (!*target) {
    return RunResult{.outcome = Outcome::rejected, .kind = "navigation",
                     .error = rejection("unknown_entry", fmt::format("no entry '{}' to navigate to", target_id))};
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

RunResult HarnessCore::resume(const std::shared_ptr<RefRuntime>& rt) {
  BeforeResumeEvent hook_event;
  std::string run_id;
  {
    std::lock_guard lock(mu);
    if (closed) return RunResult{.outcome = Outcome::rejected, .error = rejection("closed", "the harness is closed")};
    if (faulted) return RunResult{.outcome = Outcome::faulted, .error = rejection("faulted", "the harness is faulted: appends stopped working")};
    if (!rt->op || rt->active) {
      return RunResult{.outcome = Outcome::rejected,
                       .error = rejection(rt->active ? "busy" : "not_suspended",
                                          fmt::format("ref '{}' has no suspended operation", rt->name))};
    }
    if (rt->suspended && (!rt->suspended->missing.tools.empty() || !rt->suspended->missing.models.empty())) {
      std::string missing;
      for (const auto& t : rt->suspended->missing.tools) missing += fmt::format("{}tool {}", missing.empty() ? "" : ", ", t);
      for (const auto& m : rt->suspended->missing.models) missing += fmt::format("{}model {}", missing.empty() ? "" : ", ", m);
      return RunResult{.outcome = Outcome::rejected, .kind = rt->op->kind, .run_id = rt->op->id,
                       .error = rejection("missing_identities",
                                          fmt::format("the log of run '{}' names what this harness lacks: {}",
                                                      rt->op->id, missing))};
    }
    rt->active = true;
    rt->status = rt->op->cancelled ? OperationStatus::cancelling : OperationStatus::running;
    rt->cancel = std::stop_source();
    rt->suspended.reset();
    run_id = rt->op->id;
    hook_event.kind = rt->op->kind;
    const auto* run_intent = std::get_if<RunIntent>(&rt->op->intent);
    if (run_intent) {
      hook_event.system_prompt_override = run_intent->system_prompt_override;
      hook_event.resume_data = run_intent->resume_data;
    }
    for (const auto& message : run_intent ? run_intent->initial_messages : std::vector<ProvisionedEntry>{}) {
      const auto* body = std::get_if<MessageBody>(&message.body);
      const auto* user = body ? std::get_if<UserMessage>(&body->message) : nullptr;
      if (!user) continue;
      if (const auto* text = std::get_if<std::string>(&user->content)) {
        hook_event.prompt.push_back(TextContent{.text = *text});
      } else {
        hook_event.prompt = std::get<std::vector<UserBlock>>(user->content);
      }
      break;
    }
  }
  for (const auto& hook : hooks.handlers(&Hooks::Lists::before_resume)) {
    try {
      hook(HookContext{rt->name, run_id}, hook_event);
    } catch (const std::exception& e) {
      report_handler_error(rt->name, run_id, "hook", "before_resume", e.what());
    }
  }
  publish(Event{"run_resume", rt->name, run_id, std::nullopt, {{"recovery", true}}});
  return RunProcedure(*this, rt, true).run();
}

AbortResult HarnessCore::abort(const std::shared_ptr<RefRuntime>& rt) {
  AbortResult result;
  bool suspended_op = false;
  std::int64_t seq = -1;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    std::string run_id;
    {
      std::lock_guard lock(mu);
      if (faulted) return AbortResult{.outcome = Outcome::faulted, .error = rejection("faulted", "the harness is faulted: appends stopped working")};
      if (!rt->op || rt->finishing) return result;  // idle: nothing to abort
      result.run_id = rt->op->id;
      if (rt->op->cancelled) return result;  // already cancelling
      run_id = rt->op->id;
      suspended_op = !rt->active;
      if (suspended_op) {
        if (closed) return AbortResult{.outcome = Outcome::rejected, .error = rejection("closed", "the harness is closed")};
        rt->active = true;
        rt->suspended.reset();
      }
    }
    HarnessRecord record{.id = session->new_entry_id(), .ref = rt->name, .timestamp = now_iso8601(),
                         .body = OperationCancelled{.run_id = run_id, .reason = "user"}};
    auto appended = session->append(Record{.body = record});
    if (!appended) {
      enter_fault(appended.error());
      std::lock_guard lock(mu);
      if (suspended_op) rt->active = false;
      return AbortResult{.outcome = Outcome::faulted, .run_id = run_id, .error = appended.error()};
    }
    seq = appended->first_seq;
    std::lock_guard lock(mu);
    (void)reduce(*rt->op, Record{.seq = seq, .body = record});
    rt->status = OperationStatus::cancelling;
    auto messages = [](const std::vector<ProvisionedEntry>& items) {
      std::vector<AgentMessage> out;
      for (const auto& item : items) {
        if (const auto* body = std::get_if<MessageBody>(&item.body)) out.push_back(body->message);
      }
      return out;
    };
    result.cleared_steer = messages(rt->op->pending_steer);
    result.cleared_follow_up = messages(rt->op->pending_follow_up);
    rt->cancel.request_stop();
  }
  Json cleared_steer = Json::array(), cleared_follow_up = Json::array();
  for (const auto& m : result.cleared_steer) cleared_steer.push_back(encode(m));
  for (const auto& m : result.cleared_follow_up) cleared_follow_up.push_back(encode(m));
  publish(Event{"run_cancel", rt->name, result.run_id, seq,
                {{"clearedSteer", cleared_steer}, {"clearedFollowUp", cleared_follow_up}}});
  if (suspended_op) {
    // Nobody runs a suspended operation: finish its cancellation here.
    {
      std::lock_guard lock(mu);
      rt->cancel = std::stop_source();
      rt->cancel.request_stop();
    }
    auto ended = RunProcedure(*this, rt, true).run();
    if (ended.outcome == Outcome::faulted) {
      result.outcome = Outcome::faulted;
      result.error = ended.error;
    }
  }
  return result;
}

QueueResult HarnessCore::enqueue(const std::shared_ptr<RefRuntime>& rt, const std::string& queue, AgentMessage message) {
  if (!user_side(message)) {
    return QueueResult{Outcome::rejected,
                       rejection("invalid_message", fmt::format("queues take user or custom messages, not '{}'", role_of(message)))};
  }
  std::int64_t seq;
  Json data;
  std::optional<std::string> run_id;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    {
      std::lock_guard lock(mu);
      if (closed) return QueueResult{Outcome::rejected, rejection("closed", "the harness is closed")};
      if (faulted) return QueueResult{Outcome::faulted, rejection("faulted", "the harness is faulted: appends stopped working")};
      if (rt->deleted) return QueueResult{Outcome::rejected, rejection("unknown_ref", fmt::format("ref '{}' was deleted", rt->name))};
      if (queue != "nextRun") {
        if (!rt->op || !rt->active || rt->op->cancelled || rt->finishing || rt->op->kind != "run") {
          return QueueResult{Outcome::rejected,
                             rejection("no_active_run", fmt::format("ref '{}' has no active run to {}", rt->name,
                                                                    queue == "steer" ? "steer" : "follow up"))};
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
      (void)reduce(*rt->op, Record{.seq = seq, .body = record});
    } else {
      rt->next_run.push_back(std::get<QueueEnqueued>(record.body).target);
    }
    auto list = [](const std::vector<ProvisionedEntry>& items) {
      Json out = Json::array();
      for (const auto& item : items) {
        if (const auto* body = std::get_if<MessageBody>(&item.body)) out.push_back(encode(body->message));
      }
      return out;
    };
    const bool running = rt->op && rt->op->kind == "run";
    data = {{"steer", running ? list(rt->op->pending_steer) : Json::array()},
            {"followUp", running ? list(rt->op->pending_follow_up) : Json::array()},
            {"nextRun", list(rt->next_run)}};
  }
  publish(Event{"queue_update", rt->name, run_id, seq, std::move(data)});
  return QueueResult{};
}

}  // namespace cairn
