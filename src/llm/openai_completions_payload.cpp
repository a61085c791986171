#include "openai_completions_payload.hpp"

#include <algorithm>

#include "wire_support.hpp"

namespace cairn::wire {
namespace {

std::string data_url(const ImageContent& image) { return "data:" + image.mime_type + ";base64," + image.data; }

// Mistral takes tool call ids of exactly nine letters and digits.
std::string mistral_tool_id(const std::string& id) {
  std::string out;
  for (char c : id) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) out += c;
  }
  // Padding derived from nothing but the length keeps a call and its result
  // mapping to the same id.
  static constexpr std::string_view kPadding = "ABCDEFGHI";
  if (out.size() < 9) out += kPadding.substr(0, 9 - out.size());
  return out.substr(0, 9);
}

// Another API's tool call ids, as this one takes them: the Responses API's
// "call_id|item_id" becomes its call id; OpenAI allows 40 characters.
std::function<std::string(const std::string&)> tool_id_normaliser(const Model& model, const CompletionsCompat& compat) {
  return [&model, &compat](const std::string& id) {
    if (compat.requires_mistral_tool_ids) return mistral_tool_id(id);
    if (std::size_t bar = id.find('|'); bar != std::string::npos) {
      std::string call = id.substr(0, bar);
      for (char& c : call) {
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '_';
      }
      return call.substr(0, 40);
    }
    if (model.provider == "openai" && id.size() > 40) return id.substr(0, 40);
    return id;
  };
}

bool known_reasoning_field(std::string_view name) {
  return std::find(std::begin(kReasoningFields), std::end(kReasoningFields), name) != std::end(kReasoningFields);
}

Json completions_user_content(const Model& model, const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) return *text;
  Json parts = Json::array();
  for (const UserBlock& block : std::get<std::vector<UserBlock>>(content)) {
    if (const auto* text = std::get_if<TextContent>(&block)) {
      parts.push_back({{"type", "text"}, {"text", text->text}});
    } else if (takes_images(model)) {
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", data_url(std::get<ImageContent>(block))}}}});
    }
  }
  return parts;
}

// One assistant message, or nothing when it has nothing to say (an empty
// assistant message is refused by most servers).
std::optional<Json> assistant_message(const AssistantMessage& message, const CompletionsCompat& compat) {
  std::string text, thinking;
  std::optional<std::string> reasoning_field;
  Json tool_calls = Json::array();
  for (const AssistantBlock& block : message.content) {
    if (const auto* t = std::get_if<TextContent>(&block)) {
      if (blank(t->text)) continue;
      if (!text.empty()) text += "\n\n";
      text += t->text;
    } else if (const auto* th = std::get_if<ThinkingContent>(&block)) {
      if (blank(th->thinking)) continue;
      if (!thinking.empty()) thinking += compat.requires_thinking_as_text ? "\n\n" : "\n";
      thinking += th->thinking;
      if (!reasoning_field && th->thinking_signature && known_reasoning_field(*th->thinking_signature)) {
        reasoning_field = th->thinking_signature;
      }
    } else {
      const auto& call = std::get<ToolCall>(block);
      // Arguments that were not an object go back as the model wrote them:
      // the conversation shows it what it sent and the error it got.
      tool_calls.push_back({{"id", call.id},
                            {"type", "function"},
                            {"function", {{"name", call.name},
                                          {"arguments", call.raw_arguments.value_or(call.arguments.dump())}}}});
    }
  }
  if (!thinking.empty() && compat.requires_thinking_as_text) {
    text = text.empty() ? thinking : thinking + "\n\n" + text;
  }
  // Plain text rather than parts: every compatible server takes a string
  // here, and some refuse parts in an assistant message.
  Json out = {{"role", "assistant"}, {"content", nullptr}};
  if (!text.empty()) {
    out["content"] = text;
  } else if (compat.requires_assistant_after_tool_result) {
    out["content"] = "";
  }
  // Servers that stream reasoning in a field (llama.cpp, DeepSeek, vLLM)
  // read it back from the same field.
  if (!thinking.empty() && !compat.requires_thinking_as_text && reasoning_field) out[*reasoning_field] = thinking;
  if (!tool_calls.empty()) out["tool_calls"] = std::move(tool_calls);
  if (text.empty() && !out.contains("tool_calls")) return std::nullopt;
  return out;
}

Json messages(const Model& model, const LlmContext& context, const CompletionsCompat& compat) {
  Json out = Json::array();
  if (!context.system_prompt.empty()) {
    std::string role = model.reasoning && compat.supports_developer_role ? "developer" : "system";
    out.push_back({{"role", role}, {"content", context.system_prompt}});
  }
  const Json bridge = {{"role", "assistant"}, {"content", "I have processed the tool results."}};
  std::vector<LlmMessage> prepared = prepare_messages(context.messages, model, tool_id_normaliser(model, compat));
  bool after_tool_result = false;
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    const LlmMessage& message = prepared[i];
    if (const auto* user = std::get_if<UserMessage>(&message)) {
      Json content = completions_user_content(model, user->content);
      if (content.is_array() && content.empty()) continue;  // only images, for a model that sees none
      if (after_tool_result && compat.requires_assistant_after_tool_result) out.push_back(bridge);
      out.push_back({{"role", "user"}, {"content", std::move(content)}});
      after_tool_result = false;
    } else if (const auto* assistant = std::get_if<AssistantMessage>(&message)) {
      if (auto converted = assistant_message(*assistant, compat)) {
        out.push_back(std::move(*converted));
        after_tool_result = false;
      }
    } else {
      // A run of tool results; their images can only travel in a user
      // message, which follows the run.
      Json images = Json::array();
      for (; i < prepared.size() && std::holds_alternative<ToolResultMessage>(prepared[i]); ++i) {
        const auto& result = std::get<ToolResultMessage>(prepared[i]);
        ToolResultParts parts = tool_result_parts(result, model, [](const ImageContent& image) {
          return Json{{"type", "image_url"}, {"image_url", {{"url", data_url(image)}}}};
        });
        for (Json& image : parts.images) images.push_back(std::move(image));
        Json tool = {{"role", "tool"}, {"tool_call_id", result.tool_call_id}, {"content", std::move(parts.text)}};
        if (compat.requires_tool_result_name && !result.tool_name.empty()) tool["name"] = result.tool_name;
        out.push_back(std::move(tool));
      }
      --i;
      after_tool_result = true;
      if (!images.empty()) {
        if (compat.requires_assistant_after_tool_result) out.push_back(bridge);
        images.insert(images.begin(), Json{{"type", "text"}, {"text", "Attached image(s) from tool result:"}});
        out.push_back({{"role", "user"}, {"content", std::move(images)}});
        after_tool_result = false;
      }
    }
  }
  return out;
}

bool host_is(const Model& model, std::string_view host) { return model.base_url.find(host) != std::string::npos; }

}  // namespace

ToolResultParts tool_result_parts(const ToolResultMessage& result, const Model& model,
                                  const std::function<Json(const ImageContent&)>& image) {
  ToolResultParts parts;
  bool has_image = false;
  for (const UserBlock& block : result.content) {
    if (const auto* t = std::get_if<TextContent>(&block)) {
      if (!parts.text.empty()) parts.text += "\n";
      parts.text += t->text;
    } else {
      has_image = true;
      if (takes_images(model)) parts.images.push_back(image(std::get<ImageContent>(block)));
    }
  }
  if (parts.text.empty() && has_image) parts.text = "(see attached image)";
  return parts;
}

std::optional<std::string> reasoning_effort(ThinkingLevel thinking_level, bool supports_xhigh) {
  if (thinking_level == ThinkingLevel::off) return std::nullopt;
  if (thinking_level == ThinkingLevel::xhigh && !supports_xhigh) return "high";
  return std::string(to_string(thinking_level));
}

CompletionsCompat resolve_completions_compat(const Model& model) {
  const bool openai = model.provider == "openai" || host_is(model, "api.openai.com");
  const bool mistral = model.provider == "mistral" || host_is(model, "mistral.ai");
  const bool xai = model.provider == "xai" || host_is(model, "api.x.ai");
  const bool zai = model.provider == "zai" || host_is(model, "api.z.ai");

  CompletionsCompat compat;
  compat.max_tokens_field = openai ? "max_completion_tokens" : "max_tokens";
  compat.supports_store = openai;
  compat.supports_developer_role = openai;
  compat.supports_reasoning_effort = !xai && !zai;
  compat.thinking_format = zai ? "zai" : "openai";
  compat.requires_tool_result_name = mistral;
  compat.requires_thinking_as_text = mistral;
  compat.requires_mistral_tool_ids = mistral;

  const Json& given = model.compat;
  auto flag = [&](std::string_view key, bool& into) {
    if (const Json* value = field(given, key); value != nullptr && value->is_boolean()) into = value->get<bool>();
  };
  auto text = [&](std::string_view key, std::string& into, std::initializer_list<std::string_view> allowed) {
    std::string_view value = string_field(given, key);
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) into = std::string(value);
  };
  text("maxTokensField", compat.max_tokens_field, {"max_tokens", "max_completion_tokens"});
  text("thinkingFormat", compat.thinking_format, {"openai", "zai", "qwen"});
  flag("supportsUsageInStreaming", compat.supports_usage_in_streaming);
  flag("supportsStore", compat.supports_store);
  flag("supportsDeveloperRole", compat.supports_developer_role);
  flag("supportsReasoningEffort", compat.supports_reasoning_effort);
  flag("supportsXhigh", compat.supports_xhigh);
  flag("requiresToolResultName", compat.requires_tool_result_name);
  flag("requiresAssistantAfterToolResult", compat.requires_assistant_after_tool_result);
  flag("requiresThinkingAsText", compat.requires_thinking_as_text);
  flag("requiresMistralToolIds", compat.requires_mistral_tool_ids);
  return compat;
}

Json completions_payload(const Model& model, const LlmContext& context, const StreamOptions& options) {
  CompletionsCompat compat = resolve_completions_compat(model);
  Json payload = {{"model", model.id}, {"messages", messages(model, context, compat)}, {"stream", true}};
  if (compat.supports_usage_in_streaming) payload["stream_options"] = {{"include_usage", true}};
  if (compat.supports_store) payload["store"] = false;
  if (options.max_tokens) payload[compat.max_tokens_field] = *options.max_tokens;
  if (options.temperature) payload["temperature"] = *options.temperature;
  if (!context.tools.empty()) {
    Json tools = Json::array();
    for (const ToolDefinition& tool : context.tools) {
      tools.push_back({{"type", "function"},
                       {"function", {{"name", tool.name}, {"description", tool.description}, {"parameters", tool.parameters}}}});
    }
    payload["tools"] = std::move(tools);
  }
  if (const Json* choice = field(options.extra, "toolChoice")) payload["tool_choice"] = *choice;

  if (model.reasoning) {
    std::optional<std::string> effort = reasoning_effort(options.thinking_level, compat.supports_xhigh);
    if (compat.thinking_format == "zai") {
      // Z.ai thinks unless told not to.
      payload["thinking"] = {{"type", effort ? "enabled" : "disabled"}};
    } else if (compat.thinking_format == "qwen") {
      payload["enable_thinking"] = effort.has_value();
    } else if (effort && compat.supports_reasoning_effort) {
      payload["reasoning_effort"] = *effort;
    }
  }
  return payload;
}

}  // namespace cairn::wire
