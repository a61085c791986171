// requestAssistant (durable-harness-design.txt): one step's request cycle.
// Each attempt builds the request from the ref's context, lets the
// before_request hooks adjust its options, appends generation_started,
// streams the response and then decides: cancelled (the aborted response
// closes the run), too big (compact once and try again), retryable (back
// off, see generation.cpp), failed, or the step's assistant message.
#include <algorithm>

#include <fmt/format.h>

#include "llm/traced_stream.hpp"
#include "model_output.hpp"
#include "run_procedure.hpp"
#include "stream_redactor.hpp"

namespace cairn {

AssistantMessage RunProcedure::request_assistant() {
  return generation_cycle<AssistantMessage>(
      Purpose::step, [this](const Attempt& attempt) { return request_attempt(attempt); },
      [this](const Attempt& attempt) { return retries_exhausted(attempt); });
}

// Past the policy's maximum: the transcript records the give-up.
Error RunProcedure::retries_exhausted(const Attempt& attempt) {
  auto message = error_message(attempt.config->branch.model, fmt::format("retries exhausted: {} attempts failed", attempt.number - 1));
  append_entry(message_entry(message));
  return Error{Errc::retries_exhausted, *message.error_message};
}

Operation::AttemptOutcome<AssistantMessage> RunProcedure::request_attempt(const Attempt& attempt) {
  LlmContext scratch;
  const LlmContext& context = build_request(scratch);
  const StreamOptions options = before_request(attempt);
  append_generation_started(Purpose::step, attempt);
  bool started = false;  // message_start was published
  ProviderResponse response = stream_response(attempt, context, options, started);
  return handle_response(response, started);
}

// The request for the ref's context at its leaf. With no transform_context
// hook and the default conversion it is the context cache's own request,
// extended by each step's appends; otherwise it is built into `scratch`
// from the cached messages, which costs a copy of the context.
const LlmContext& RunProcedure::build_request(LlmContext& scratch) {
  if (auto synced = rt_->context.sync(*core_.session, rt_->name); !synced) throw AppendFailed{synced.error()};
  const auto& convert = config_.convert_to_llm;
  const auto& active = config_.branch.active_tools;
  std::vector<ToolDefinition> tools;
  for (const auto& tool : config_.tools) {
    if (std::find(active.begin(), active.end(), tool.name) != active.end()) {
      tools.push_back(ToolDefinition{tool.name, tool.description, tool.parameters});
    }
  }
  auto override_prompt = with_op([](const OpState& op) { return std::get<RunIntent>(op.intent).system_prompt_override; });
  const auto transforms = core_.hooks.handlers(&Hooks::Lists::transform_context);
  LlmContext* request = &rt_->context.request();
  if (convert || !transforms.empty()) {
    std::vector<AgentMessage> messages = rt_->context.messages();
    each_hook("transform_context", transforms, [&](const auto& hook) {
      if (auto out = hook(hook_context(), TransformContextEvent{messages})) messages = std::move(*out);
    });
    std::erase_if(messages, is_failed_response);
    scratch.messages = convert ? convert(messages) : convert_to_llm(messages);
    request = &scratch;
  }
  request->tools = std::move(tools);
  request->system_prompt.clear();
  // The persisted before_run override if set, else the configured prompt
  // evaluated fresh: it sees the current active tools.
  if (override_prompt) {
    request->system_prompt = std::move(*override_prompt);
  } else if (config_.system_prompt) {
    request->system_prompt = config_.system_prompt(active);
  }
  return *request;
}

StreamOptions RunProcedure::before_request(const Attempt& attempt) {
  StreamOptions options = attempt.config->stream_options;
  each_hook("before_request", core_.hooks.handlers(&Hooks::Lists::before_request), [&](const auto& hook) {
    if (auto out = hook(hook_context(), BeforeRequestEvent{attempt.config->branch.model, Purpose::step, attempt.number, options})) {
      options = *out;
    }
  });
  return options;
}

// The before_payload hooks, as the provider calls them on the wire payload.
// No handlers, no hook: a provider then need not build a payload value for
// nobody to see.
PayloadHook RunProcedure::before_payload() {
  auto handlers = core_.hooks.handlers(&Hooks::Lists::before_payload);
  if (handlers.empty()) return {};
  return [this, handlers = std::move(handlers)](const Model& model, Json payload) {
    each_hook("before_payload", handlers, [&](const auto& hook) {
      if (auto out = hook(hook_context(), model, payload)) payload = std::move(*out);
    });
    return payload;
  };
}

ProviderResponse RunProcedure::stream_response(const Attempt& attempt, const LlmContext& context,
                                               const StreamOptions& options, bool& started) {
  StreamRedactor redactor(secrets());
  auto on_event = [&](const ProviderEvent& e) { relay(e, redactor, started); };
  const Models::Entry& served = attempt.served();
  ProviderResponse response =
      stream_traced(*served.provider, served.model, context, options, before_payload(), on_event, cancel_, secrets());
  sanitize_response(response.message, secrets());
  add_spend(response.message.usage);
  std::lock_guard lock(core_.mu);
  rt_->streaming.reset();
  rt_->retry.reset();
  return response;
}

// One streamed chunk: into the snapshot, and (when watched) out as
// message_start / message_update, with any secret held back until its
// block ends.
void RunProcedure::relay(const ProviderEvent& e, StreamRedactor& redactor, bool& started) {
  // One copy of the partial message per chunk, shared by the snapshot and
  // the events.
  AgentMessage copy = *e.partial;
  std::string passed;
  std::vector<std::pair<int, std::string>> released;  // held bytes whose block ended
  const std::string_view delta = redactor.active() ? redact(e, redactor, std::get<AssistantMessage>(copy), passed, released)
                                                   : std::string_view(e.delta);
  auto partial = std::make_shared<const AgentMessage>(std::move(copy));
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
    core_.publish(event(EventType::message_start, Json::object(), std::nullopt, partial));
  }
  for (const auto& [index, held] : released) publish_update(delta_type(*e.partial, index), index, held, partial);
  if (!e.delta.empty() && delta.empty()) return;  // all of it held back
  publish_update(e.type, e.content_index, delta, std::move(partial));
}

// The chunk's delta as it may be shown (into `passed`), the partial message
// redacted once a secret appeared, and what the chunk's end releases.
std::string_view RunProcedure::redact(const ProviderEvent& e, StreamRedactor& redactor, AssistantMessage& partial,
                                      std::string& passed, std::vector<std::pair<int, std::string>>& released) {
  if (!e.delta.empty()) {
    passed = redactor.pass(e.content_index, e.delta);
    if (redactor.revealed()) redact_partial(partial, secrets());
    return passed;
  }
  // Events without a delta may carry whole blocks (a tool call's final
  // arguments): they are checked whole, as they are few.
  if (redact_partial(partial, secrets())) redactor.note_revealed();
  if (e.type == ProviderEvent::Type::text_end || e.type == ProviderEvent::Type::thinking_end ||
      e.type == ProviderEvent::Type::toolcall_end) {
    if (std::string held = redactor.release(e.content_index); !held.empty()) released.emplace_back(e.content_index, std::move(held));
  } else if (e.type == ProviderEvent::Type::done || e.type == ProviderEvent::Type::error) {
    for (auto& [index, held] : redactor.release_all()) released.emplace_back(index, std::move(held));
  }
  return e.delta;
}

void RunProcedure::publish_update(ProviderEvent::Type type, int index, std::string_view delta,
                                  std::shared_ptr<const AgentMessage> partial) {
  Json data = {{"type", to_string(type)}};
  if (index >= 0) data["contentIndex"] = index;
  if (!delta.empty()) data["delta"] = delta;
  core_.publish(event(EventType::message_update, {{"assistantMessageEvent", std::move(data)}}, std::nullopt, std::move(partial)));
}

// The delta type of content block `index` of `message`.
ProviderEvent::Type RunProcedure::delta_type(const AssistantMessage& message, int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= message.content.size()) return ProviderEvent::Type::text_delta;
  const AssistantBlock& block = message.content[static_cast<std::size_t>(index)];
  if (std::holds_alternative<ThinkingContent>(block)) return ProviderEvent::Type::thinking_delta;
  if (std::holds_alternative<ToolCall>(block)) return ProviderEvent::Type::toolcall_delta;
  return ProviderEvent::Type::text_delta;
}

Operation::AttemptOutcome<AssistantMessage> RunProcedure::handle_response(ProviderResponse& response, bool started) {
  AssistantMessage& message = response.message;
  if (with_op([](const OpState& op) { return op.cancelled; })) {
    // The aborted response is the run's closure. Its tool calls were never
    // answered, and a later request would be invalid with them in it.
    std::erase_if(message.content, [](const AssistantBlock& b) { return std::holds_alternative<ToolCall>(b); });
    message.stop_reason = StopReason::aborted;
    if (!message.error_message) message.error_message = "Operation aborted";
    append_entry(message_entry(message), /*after_cancel=*/true, started);
    throw RunCancelled{};
  }
  if (message.stop_reason == StopReason::error || message.stop_reason == StopReason::aborted) {
    // Too big for the model: nothing leaves the log, the context is
    // compacted and the step tried once more.
    if (response.context_overflow && !overflow_compacted_ && config_.compaction.enabled) {
      overflow_compacted_ = true;
      if (auto_compact(CompactionReason::overflow)) return AttemptAgain{};
    }
    const std::string what = message.error_message.value_or("the provider failed");
    const Errc code = response.retryable          ? Errc::retries_exhausted
                      : response.context_overflow ? Errc::context_overflow
                                                  : Errc::provider_error;
    return AttemptFailed{.retryable = response.retryable,
                         .retry_after_ms = response.retry_after_ms,
                         .what = what,
                         .error = Error{code, what},
                         .on_give_up = [this, message, started] { append_entry(message_entry(message), false, started); }};
  }
  message = after_response(response, std::move(message));
  append_entry(message_entry(message), false, started);
  return std::move(message);
}

AssistantMessage RunProcedure::after_response(const ProviderResponse& response, AssistantMessage message) {
  each_hook("after_response", core_.hooks.handlers(&Hooks::Lists::after_response), [&](const auto& hook) {
    if (auto out = hook(hook_context(), AfterResponseEvent{response.status, response.headers, message})) {
      message = std::move(*out);
    }
  });
  sanitize_response(message, secrets());  // again: a hook may have changed it
  return message;
}

}  // namespace cairn
