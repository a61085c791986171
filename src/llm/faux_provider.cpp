#include <condition_variable>
#include <thread>

#include "cairn/llm/faux.hpp"
#include "wire_support.hpp"

namespace cairn {
namespace {

// Sleeps for `delay` unless `cancel` is requested first; true when cancelled.
bool faux_sleep(std::chrono::milliseconds delay, std::stop_token cancel) {
  if (cancel.stop_requested()) return true;
  if (delay.count() <= 0) return false;
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  return cv.wait_for(lock, cancel, delay, [] { return false; }) || cancel.stop_requested();
}

bool has_tool_call(const AssistantMessage& message) {
  for (const auto& block : message.content) {
    if (std::holds_alternative<ToolCall>(block)) return true;
  }
  return false;
}

}  // namespace

FauxResponse FauxResponse::text(std::string text) {
  FauxResponse response;
  response.content.push_back(TextContent{.text = std::move(text)});
  return response;
}

FauxResponse FauxResponse::tool_call(std::string id, std::string name, Json arguments) {
  FauxResponse response;
  return std::move(response.then_tool_call(std::move(id), std::move(name), std::move(arguments)));
}

FauxResponse FauxResponse::failure(std::string message, bool retryable) {
  FauxResponse response;
  response.error = std::move(message);
  response.retryable = retryable;
  return response;
}

FauxResponse& FauxResponse::then_tool_call(std::string id, std::string name, Json arguments) {
  content.push_back(ToolCall{.id = std::move(id), .name = std::move(name), .arguments = std::move(arguments)});
  return *this;
}

void FauxProvider::push(FauxResponse response) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(response));
}

std::vector<LlmContext> FauxProvider::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void FauxProvider::record_requests(bool on) {
  std::lock_guard lock(mu_);
  record_requests_ = on;
}

std::size_t FauxProvider::remaining() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

Model FauxProvider::model(std::string id) {
  return Model{.provider = "faux", .id = std::move(id), .api = "faux", .context_window = 200000,
               .max_tokens = 8192, .reasoning = true, .input = {"text", "image"}};
}

ProviderResponse FauxProvider::stream(const Model& model, const LlmContext& context, const StreamOptions&,
                                      const PayloadHook& before_payload, const ProviderEventSink& on_event,
                                      std::stop_token cancel) {
  std::optional<FauxResponse> scripted;
  {
    std::lock_guard lock(mu_);
    if (record_requests_) requests_.push_back(context);
    if (!queue_.empty()) {
      scripted = std::move(queue_.front());
      queue_.pop_front();
    }
  }
  if (!scripted && script_) scripted = script_(context);

  ProviderResponse response = wire::response_for(model);
  AssistantMessage& message = response.message;
  auto emit = [&](ProviderEvent::Type type, int index, std::string delta = {}) {
    if (on_event) on_event(ProviderEvent{.type = type, .content_index = index, .delta = std::move(delta), .partial = &message});
  };
  auto finish_error = [&](std::string text, StopReason reason) {
    message.stop_reason = reason;
    message.error_message = std::move(text);
    emit(ProviderEvent::Type::error, -1);
    return response;
  };

  if (!scripted) return finish_error("faux provider: no scripted response left", StopReason::error);
  FauxResponse& script = *scripted;
  if (before_payload) {
    // The faux wire payload: what a real provider would send, in a neutral shape.
    Json payload = {{"model", model.id}, {"system", context.system_prompt}, {"messages", Json::array()}};
    for (const auto& m : context.messages) payload["messages"].push_back(encode(m));
    before_payload(model, std::move(payload));
  }

  emit(ProviderEvent::Type::start, -1);
  for (std::size_t i = 0; i < script.content.size(); ++i) {
    if (faux_sleep(script.chunk_delay, cancel)) return finish_error("aborted", StopReason::aborted);
    const int index = static_cast<int>(i);
    std::visit(
        [&](const auto& block) {
          using B = std::decay_t<decltype(block)>;
          if constexpr (std::is_same_v<B, TextContent>) {
            message.content.push_back(TextContent{});
            emit(ProviderEvent::Type::text_start, index);
            std::get<TextContent>(message.content.back()).text = block.text;
            emit(ProviderEvent::Type::text_delta, index, block.text);
            message.content.back() = block;
            emit(ProviderEvent::Type::text_end, index);
          } else if constexpr (std::is_same_v<B, ThinkingContent>) {
            message.content.push_back(ThinkingContent{});
            emit(ProviderEvent::Type::thinking_start, index);
            std::get<ThinkingContent>(message.content.back()).thinking = block.thinking;
            emit(ProviderEvent::Type::thinking_delta, index, block.thinking);
            message.content.back() = block;
            emit(ProviderEvent::Type::thinking_end, index);
          } else {
            message.content.push_back(ToolCall{.id = block.id, .name = block.name});
            emit(ProviderEvent::Type::toolcall_start, index);
            message.content.back() = block;
            emit(ProviderEvent::Type::toolcall_delta, index, block.arguments.dump());
            emit(ProviderEvent::Type::toolcall_end, index);
          }
        },
        script.content[i]);
    if (script.stall && i == 0) {
      faux_sleep(std::chrono::hours(24), cancel);
      return finish_error("aborted", StopReason::aborted);
    }
  }
  if (script.stall && script.content.empty()) {
    faux_sleep(std::chrono::hours(24), cancel);
    return finish_error("aborted", StopReason::aborted);
  }
  if (cancel.stop_requested()) return finish_error("aborted", StopReason::aborted);

  message.usage = script.usage;
  message.usage.cost = cost_of(script.usage, model.prices);
  if (script.error) {
    response.retryable = script.retryable;
    response.retry_after_ms = script.retry_after_ms;
    response.context_overflow = script.context_overflow;
    return finish_error(*script.error, StopReason::error);
  }
  message.stop_reason = has_tool_call(message) ? StopReason::tool_use : StopReason::stop;
  emit(ProviderEvent::Type::done, -1);
  return response;
}

}  // namespace cairn
