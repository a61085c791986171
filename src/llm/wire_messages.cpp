// prepare_messages: a conversation made fit for one model's API before it is
// converted to that API's wire shape. The rules are pi's (transform-messages),
// so a session moves between models and providers as it does there.

#include <algorithm>
#include <map>
#include <set>

#include "wire_support.hpp"

namespace cairn::wire {
namespace {

// An assistant message as `model` may receive it.
AssistantMessage adapt(const AssistantMessage& message, const Model& model,
                       const std::function<std::string(const std::string&)>& normalize_tool_call_id,
                       std::map<std::string, std::string>& renamed) {
  if (same_model(message, model)) return message;
  AssistantMessage out = message;
  out.content.clear();
  for (const AssistantBlock& block : message.content) {
    if (const auto* thinking = std::get_if<ThinkingContent>(&block)) {
      // Another model's reasoning is only words to this one; its signature
      // and anything redacted mean nothing here.
      if (thinking->redacted.value_or(false) || blank(thinking->thinking)) continue;
      out.content.push_back(TextContent{.text = thinking->thinking});
    } else if (const auto* text = std::get_if<TextContent>(&block)) {
      out.content.push_back(TextContent{.text = text->text});
    } else {
      ToolCall call = std::get<ToolCall>(block);
      if (normalize_tool_call_id) {
        std::string id = normalize_tool_call_id(call.id);
        if (id != call.id) {
          renamed[call.id] = id;
          call.id = std::move(id);
        }
      }
      out.content.push_back(std::move(call));
    }
  }
  return out;
}

ToolResultMessage missing_result(const ToolCall& call, std::int64_t timestamp) {
  ToolResultMessage result;
  result.tool_call_id = call.id;
  result.tool_name = call.name;
  result.content.push_back(TextContent{.text = "No result provided"});
  result.is_error = true;
  result.timestamp = timestamp;
  return result;
}

}  // namespace

std::vector<LlmMessage> prepare_messages(const std::vector<LlmMessage>& messages, const Model& model,
                                         const std::function<std::string(const std::string&)>& normalize_tool_call_id) {
  std::vector<LlmMessage> out;
  out.reserve(messages.size());
  std::map<std::string, std::string> renamed;  // tool call ids changed for this model
  std::vector<ToolCall> pending;               // the last assistant message's tool calls
  std::set<std::string> answered;              // which of them have a result so far
  std::int64_t last_timestamp = 0;

  auto answer_pending = [&] {
    for (const ToolCall& call : pending) {
      if (!answered.contains(call.id)) out.emplace_back(missing_result(call, last_timestamp));
    }
    pending.clear();
    answered.clear();
  };

  for (const LlmMessage& message : messages) {
    if (const auto* assistant = std::get_if<AssistantMessage>(&message)) {
      answer_pending();
      last_timestamp = assistant->timestamp;
      // An unfinished turn is not a state the model can continue from.
      if (assistant->stop_reason == StopReason::error || assistant->stop_reason == StopReason::aborted) continue;
      AssistantMessage adapted = adapt(*assistant, model, normalize_tool_call_id, renamed);
      for (const AssistantBlock& block : adapted.content) {
        if (const auto* call = std::get_if<ToolCall>(&block)) pending.push_back(*call);
      }
      out.emplace_back(std::move(adapted));
    } else if (const auto* result = std::get_if<ToolResultMessage>(&message)) {
      ToolResultMessage copy = *result;
      if (auto it = renamed.find(copy.tool_call_id); it != renamed.end()) copy.tool_call_id = it->second;
      // A result must follow the message that made its call, once: every API
      // refuses the request otherwise. One whose call is not there (the
      // message was lost to damage and replaced by a placeholder, or
      // imported without it) or that repeats an answered call is left out,
      // so the conversation can go on.
      const bool called = std::any_of(pending.begin(), pending.end(),
                                      [&](const ToolCall& call) { return call.id == copy.tool_call_id; });
      if (!called || !answered.insert(copy.tool_call_id).second) continue;
      last_timestamp = copy.timestamp;
      out.emplace_back(std::move(copy));
    } else {
      answer_pending();
      last_timestamp = std::get<UserMessage>(message).timestamp;
      out.push_back(message);
    }
  }
  // Tool calls still waiting at the end are the ones the caller is about to
  // answer, or a conversation that ends there; neither gets a made-up result.
  return out;
}

}  // namespace cairn::wire
