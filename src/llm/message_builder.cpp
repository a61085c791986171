#include "message_builder.hpp"

#include "llm/tool_arguments.hpp"

namespace cairn::wire {

MessageBuilder::MessageBuilder(const Model& model, const ProviderEventSink& on_event)
    : model_(model), on_event_(on_event), response_(response_for(model)) {}

void MessageBuilder::emit(ProviderEvent::Type type, int index, std::string delta) {
  if (!on_event_) return;
  on_event_(ProviderEvent{.type = type, .content_index = index, .delta = std::move(delta), .partial = &response_.message});
}

void MessageBuilder::report(int index) {
  std::string delta = pacer_.take(index);
  if (delta.empty()) return;
  AssistantBlock& content = response_.message.content.at(static_cast<std::size_t>(index));
  if (std::holds_alternative<TextContent>(content)) {
    emit(ProviderEvent::Type::text_delta, index, std::move(delta));
  } else if (std::holds_alternative<ThinkingContent>(content)) {
    emit(ProviderEvent::Type::thinking_delta, index, std::move(delta));
  } else {
    if (open_.contains(index)) {
      Json partial = parse_partial_json(arguments_[index]);
      if (partial.is_object()) std::get<ToolCall>(content).arguments = std::move(partial);
    }
    emit(ProviderEvent::Type::toolcall_delta, index, std::move(delta));
  }
}

void MessageBuilder::report_open_blocks() {
  for (int index : open_) report(index);
}

void MessageBuilder::start() {
  if (started_) return;
  started_ = true;
  emit(ProviderEvent::Type::start, -1);
}

int MessageBuilder::open_block(AssistantBlock block, ProviderEvent::Type started) {
  start();
  response_.message.content.push_back(std::move(block));
  const int index = static_cast<int>(response_.message.content.size()) - 1;
  open_.insert(index);
  emit(started, index);
  return index;
}

int MessageBuilder::begin_text(std::optional<std::string> signature) {
  return open_block(TextContent{.text_signature = std::move(signature)}, ProviderEvent::Type::text_start);
}

void MessageBuilder::text_delta(int index, std::string_view delta) {
  if (delta.empty()) return;
  block<TextContent>(index).text += delta;
  if (pacer_.add(index, delta)) report(index);
}

void MessageBuilder::end_text(int index) {
  if (!open_.contains(index)) return;
  report(index);
  open_.erase(index);
  emit(ProviderEvent::Type::text_end, index);
}

int MessageBuilder::begin_thinking(std::optional<std::string> signature) {
  return open_block(ThinkingContent{.thinking_signature = std::move(signature)}, ProviderEvent::Type::thinking_start);
}

int MessageBuilder::begin_redacted_thinking(std::string data) {
  return open_block(ThinkingContent{.thinking = "[Reasoning redacted]", .thinking_signature = std::move(data), .redacted = true},
                    ProviderEvent::Type::thinking_start);
}

void MessageBuilder::thinking_delta(int index, std::string_view delta) {
  if (delta.empty()) return;
  block<ThinkingContent>(index).thinking += delta;
  if (pacer_.add(index, delta)) report(index);
}

void MessageBuilder::end_thinking(int index) {
  if (!open_.contains(index)) return;
  report(index);
  open_.erase(index);
  emit(ProviderEvent::Type::thinking_end, index);
}

int MessageBuilder::begin_tool_call(std::string id, std::string name, std::string arguments_so_far) {
  ToolCall call{.id = std::move(id), .name = std::move(name)};
  if (!arguments_so_far.empty()) {
    Json partial = parse_partial_json(arguments_so_far);
    if (partial.is_object()) call.arguments = std::move(partial);
  }
  // Kept before the start is told, so that a listener sees them with it.
  const int index = static_cast<int>(response_.message.content.size());
  arguments_[index] = std::move(arguments_so_far);
  return open_block(std::move(call), ProviderEvent::Type::toolcall_start);
}

void MessageBuilder::tool_call_delta(int index, std::string_view fragment) {
  if (fragment.empty()) return;
  arguments_[index] += fragment;
  if (pacer_.add(index, fragment)) report(index);
}

void MessageBuilder::set_tool_call_arguments(int index, std::string text) { arguments_[index] = std::move(text); }

void MessageBuilder::end_tool_call(int index) {
  if (!open_.contains(index)) return;
  ToolCall& call = block<ToolCall>(index);
  ToolArguments read = read_tool_arguments(arguments_[index]);
  call.arguments = std::move(read.arguments);
  call.raw_arguments = std::move(read.raw);
  open_.erase(index);
  arguments_.erase(index);
  report(index);
  emit(ProviderEvent::Type::toolcall_end, index);
}

void MessageBuilder::end_block(int index) {
  const AssistantBlock& content = response_.message.content.at(static_cast<std::size_t>(index));
  if (std::holds_alternative<TextContent>(content)) {
    end_text(index);
  } else if (std::holds_alternative<ThinkingContent>(content)) {
    end_thinking(index);
  } else {
    end_tool_call(index);
  }
}

void MessageBuilder::end_open_blocks() {
  while (!open_.empty()) end_block(*open_.begin());
}

ProviderResponse MessageBuilder::finish(StopReason reason) {
  start();
  AssistantMessage& message = response_.message;
  message.usage.cost = cost_of(message.usage, model_.prices);
  message.stop_reason = reason;
  report_open_blocks();
  emit(ProviderEvent::Type::done, -1);
  return std::move(response_);
}

ProviderResponse MessageBuilder::fail(const Failure& failure, const Secrets& secrets) {
  AssistantMessage& message = response_.message;
  message.usage.cost = cost_of(message.usage, model_.prices);
  message.stop_reason = StopReason::error;
  message.error_message = to_valid_utf8(secrets.redact(failure.message));
  response_.retryable = failure.retryable;
  response_.retry_after_ms = failure.retry_after_ms;
  response_.context_overflow = failure.context_overflow;
  if (failure.status != 0) response_.status = failure.status;  // else the stream's own, kept when it began
  // Whoever adds up the deltas gets all that arrived, as the message has it.
  report_open_blocks();
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
  report_open_blocks();
  emit(ProviderEvent::Type::error, -1);
  return std::move(response_);
}

}  // namespace cairn::wire
