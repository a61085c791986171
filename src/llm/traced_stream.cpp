#include "traced_stream.hpp"

#include "cairn/trace.hpp"

namespace cairn {
namespace {

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::stop: return "stop";
    case StopReason::length: return "length";
    case StopReason::tool_use: return "tool_use";
    case StopReason::error: return "error";
    case StopReason::aborted: return "aborted";
  }
  return "unknown";
}

// Content as the GenAI conventions carry it: the messages as JSON text,
// secrets redacted.
std::string traced_messages(const std::vector<LlmMessage>& messages, const Secrets& secrets) {
  Json out = Json::array();
  for (const auto& message : messages) out.push_back(encode(message));
  secrets.redact_in_place(out);
  return out.dump();
}

}  // namespace

ProviderResponse stream_traced(Provider& provider, const Model& model, const LlmContext& context,
                               const StreamOptions& options, const PayloadHook& before_payload,
                               const ProviderEventSink& on_event, std::stop_token cancel, const Secrets& secrets) {
  trace::Span span("cairn.llm.request", [&] {
    Json payload = {{"api", model.api},
                    {"provider", model.provider},
                    {"model", model.id},
                    {"gen_ai.operation.name", "chat"},
                    {"gen_ai.provider.name", model.provider},
                    {"gen_ai.request.model", model.id}};
    if (options.max_tokens) payload["gen_ai.request.max_tokens"] = *options.max_tokens;
    payload["reasoning"] = to_string(options.thinking_level);
    if (trace::capture_content()) {
      payload["gen_ai.input.messages"] = traced_messages(context.messages, secrets);
      if (!context.system_prompt.empty()) payload["gen_ai.system_instructions"] = secrets.redact(context.system_prompt);
    }
    return payload;
  });
  ProviderResponse response = provider.stream(model, context, options, before_payload, on_event, std::move(cancel));
  if (!span) return response;
  const AssistantMessage& message = response.message;
  span.set("stopReason", stop_reason_name(message.stop_reason));
  span.set("gen_ai.response.finish_reasons", Json::array({stop_reason_name(message.stop_reason)}));
  if (!message.model.empty()) span.set("gen_ai.response.model", message.model);
  span.set("gen_ai.usage.input_tokens", message.usage.input);
  span.set("gen_ai.usage.output_tokens", message.usage.output);
  if (message.usage.cache_read) span.set("gen_ai.usage.cache_read.input_tokens", message.usage.cache_read);
  if (response.status) span.set("http.response.status_code", response.status);
  if (response.retryable) span.set("retryable", true);
  if (trace::capture_content()) span.set("gen_ai.output.messages", traced_messages({message}, secrets));
  if (message.stop_reason == StopReason::error || message.stop_reason == StopReason::aborted) {
    const std::string type = message.stop_reason == StopReason::aborted ? "aborted"
                             : response.context_overflow                ? "context_overflow"
                                                                        : "provider_error";
    span.fail(type, secrets.redact(message.error_message.value_or("the provider failed")));
  }
  return response;
}

}  // namespace cairn
