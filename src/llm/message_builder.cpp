#include "message_builder.hpp"

#include <fmt/format.h>

#include "cairn/store/session.hpp"

namespace cairn::wire {

MessageBuilder::MessageBuilder(const Model& model, const ProviderEventSink& on_event)
    : model_(model), on_event_(on_event) {
  AssistantMessage& message = response_.message;
  message.api = model.api;
  message.provider = model.provider;
  message.model = model.id;
  message.timestamp = now_unix_ms();
}

void MessageBuilder::emit(ProviderEvent::Type type, int index, std::string_view delta) {
  if (!on_event_) return;
  on_event_(ProviderEvent{.type = type, .content_index = index, .delta = std::string(delta), .partial = &response_.message});
}

void MessageBuilder::start() {
  if (started_) return;
  started_ = true;
  emit(ProviderEvent::Type::start, -1);
}

int MessageBuilder::begin_text(std::optional<std::string> signature) {
  start();
  response_.message.content.push_back(TextContent{.text_signature = std::move(signature)});
  int index = static_cast<int>(response_.message.content.size()) - 1;
  open_.insert(index);
  emit(ProviderEvent::Type::text_start, index);
  return index;
}

void MessageBuilder::text_delta(int index, std::string_view delta) {
  if (delta.empty()) return;
  block<TextContent>(index).text += delta;
  emit(ProviderEvent::Type::text_delta, index, delta);
}

void MessageBuilder::end_text(int index) {
  if (open_.erase(index) == 0) return;
  emit(ProviderEvent::Type::text_end, index);
}

int MessageBuilder::begin_thinking(std::optional<std::string> signature) {
  start();
  response_.message.content.push_back(ThinkingContent{.thinking_signature = std::move(signature)});
  int index = static_cast<int>(response_.message.content.size()) - 1;
  open_.insert(index);
  emit(ProviderEvent::Type::thinking_start, index);
  return index;
}

void MessageBuilder::thinking_delta(int index, std::string_view delta) {
  if (delta.empty()) return;
  block<ThinkingContent>(index).thinking += delta;
  emit(ProviderEvent::Type::thinking_delta, index, delta);
}

void MessageBuilder::end_thinking(int index) {
  if (open_.erase(index) == 0) return;
  emit(ProviderEvent::Type::thinking_end, index);
}

int MessageBuilder::begin_tool_call(std::string id, std::string name, std::string arguments_so_far) {
  start();
  ToolCall call{.id = std::move(id), .name = std::move(name)};
  if (!arguments_so_far.empty()) {
    Json partial = parse_partial_json(arguments_so_far);
    if (partial.is_object()) call.arguments = std::move(partial);
  }
  response_.message.content.push_back(std::move(call));
  int index = static_cast<int>(response_.message.content.size()) - 1;
  open_.insert(index);
  arguments_[index] = std::move(arguments_so_far);
  emit(ProviderEvent::Type::toolcall_start, index);
  return index;
}

void MessageBuilder::tool_call_delta(int index, std::string_view fragment) {
  if (fragment.empty()) return;
  std::string& text = arguments_[index];
  text += fragment;
  Json partial = parse_partial_json(text);
  if (partial.is_object()) block<ToolCall>(index).arguments = std::move(partial);
  emit(ProviderEvent::Type::toolcall_delta, index, fragment);
}

void MessageBuilder::set_tool_call_arguments(int index, std::string text) { arguments_[index] = std::move(text); }

std::optional<Failure> MessageBuilder::end_tool_call(int index) {
  if (!open_.contains(index)) return std::nullopt;
  ToolCall& call = block<ToolCall>(index);
  const std::string& text = arguments_[index];
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    call.arguments = Json::object();  // a tool that takes nothing; some servers send ""
  } else {
    Json parsed = Json::parse(text, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      // The model's own output: a new attempt may well get it right, but
      // that is the caller's decision, not a transport fault.
      return Failure{.message = fmt::format("the arguments of tool call '{}' ({}) are not a JSON object: {}", call.name,
                                            call.id, sanitize_utf8(text.substr(0, 200)))};
    }
    call.arguments = std::move(parsed);
  }
  open_.erase(index);
  arguments_.erase(index);
  emit(ProviderEvent::Type::toolcall_end, index);
  return std::nullopt;
}

std::optional<Failure> MessageBuilder::end_block(int index) {
  const AssistantBlock& content = response_.message.content.at(static_cast<std::size_t>(index));
  if (std::holds_alternative<TextContent>(content)) {
    end_text(index);
  } else if (std::holds_alternative<ThinkingContent>(content)) {
    end_thinking(index);
  } else {
    return end_tool_call(index);
  }
  return std::nullopt;
}

std::optional<Failure> MessageBuilder::end_open_blocks() {
  while (!open_.empty()) {
    if (auto failure = end_block(*open_.begin())) return failure;
  }
  return std::nullopt;
}

ProviderResponse MessageBuilder::finish(StopReason reason) {
  start();
  AssistantMessage& message = response_.message;
  message.usage.cost = cost_of(message.usage, model_.prices);
  message.stop_reason = reason;
  emit(ProviderEvent::Type::done, -1);
  return std::move(response_);
}

ProviderResponse MessageBuilder::fail(const Failure& failure, std::span<const std::string> secrets) {
  AssistantMessage& message = response_.message;
  message.usage.cost = cost_of(message.usage, model_.prices);
  message.stop_reason = StopReason::error;
  message.error_message = sanitize_utf8(redact(failure.message, secrets));
  response_.retryable = failure.retryable;
  response_.retry_after_ms = failure.retry_after_ms;
  response_.context_overflow = failure.context_overflow;
  if (failure.status != 0) response_.status = failure.status;  // else the stream's own, kept when it began
  emit(ProviderEvent::Type::error, -1);
  return std::move(response_);
}

ProviderResponse MessageBuilder::abort() {
  AssistantMessage& message = response_.message;
  message.usage.cost = cost_of(message.usage, model_.prices);
  message.stop_reason = StopReason::aborted;
  message.error_message = "aborted";
  response_.retryable = false;
  response_.retry_after_ms.reset();
  response_.context_overflow = false;
  emit(ProviderEvent::Type::error, -1);
  return std::move(response_);
}

}  // namespace cairn::wire
