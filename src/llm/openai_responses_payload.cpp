#include "openai_responses_payload.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "openai_completions_payload.hpp"
#include "wire_support.hpp"

namespace cairn::wire {
namespace {

// The Responses API's limit on ids it is given back.
constexpr std::size_t kMaxId = 64;

Json input_image(const ImageContent& image) {
  return {{"type", "input_image"}, {"detail", "auto"}, {"image_url", "data:" + image.mime_type + ";base64," + image.data}};
}

std::string sanitize_id(std::string_view id) {
  std::string out(id);
  for (char& c : out) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '_';
  }
  if (out.size() > kMaxId) out.resize(kMaxId);
  while (out.size() > 1 && out.back() == '_') out.pop_back();  // some servers refuse a trailing underscore
  return out;
}

// Another API's tool call ids as this one takes them: "call_id|item_id"
// with item ids that start "fc", each part at most 64 safe characters.
std::string normalise_tool_call_id(const std::string& id) {
  std::size_t bar = id.find('|');
  if (bar == std::string::npos) return sanitize_id(id);
  std::string item = sanitize_id(std::string_view(id).substr(bar + 1));
  if (!item.starts_with("fc")) item = sanitize_id("fc_" + item);
  return sanitize_id(std::string_view(id).substr(0, bar)) + "|" + item;
}

// A stable short name for an id too long to send back.
std::string short_id(std::string_view prefix, std::string_view id) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : id) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("{}{:016x}", prefix, hash);
}

Json user_item(const Model& model, const UserContent& content) {
  Json parts = Json::array();
  if (const auto* text = std::get_if<std::string>(&content)) {
    parts.push_back({{"type", "input_text"}, {"text", *text}});
  } else {
    for (const UserBlock& block : std::get<std::vector<UserBlock>>(content)) {
      if (const auto* text = std::get_if<TextContent>(&block)) {
        parts.push_back({{"type", "input_text"}, {"text", text->text}});
      } else if (takes_images(model)) {
        parts.push_back(input_image(std::get<ImageContent>(block)));
      }
    }
  }
  return {{"role", "user"}, {"content", std::move(parts)}};
}

// The reasoning item a thinking block kept, if it can be replayed: with
// "store": false only its encrypted content lets the server see it again.
std::optional<Json> replayable_reasoning(const ThinkingContent& thinking) {
  if (!thinking.thinking_signature) return std::nullopt;
  Json item = Json::parse(*thinking.thinking_signature, nullptr, false);
  if (string_field(item, "type") != "reasoning" || string_field(item, "encrypted_content").empty()) return std::nullopt;
  return item;
}

void append_assistant(Json& input, const AssistantMessage& message, const Model& model, std::size_t position) {
  bool from_this_model = same_model(message, model);
  bool skipped_reasoning = false;
  for (const AssistantBlock& block : message.content) {
    if (const auto* thinking = std::get_if<ThinkingContent>(&block)) {
      if (auto item = replayable_reasoning(*thinking)) {
        input.push_back(std::move(*item));
      } else {
        skipped_reasoning = true;
      }
    } else if (const auto* text = std::get_if<TextContent>(&block)) {
      auto signature = decode_text_signature(text->text_signature);
      std::string id = signature ? signature->id : fmt::format("msg_{}", position);
      if (id.size() > kMaxId) id = short_id("msg_", id);
      Json item = {{"type", "message"},
                   {"role", "assistant"},
                   {"content", Json::array({{{"type", "output_text"}, {"text", text->text}, {"annotations", Json::array()}}})},
                   {"status", "completed"},
                   {"id", id}};
      if (signature && signature->phase) item["phase"] = *signature->phase;
      input.push_back(std::move(item));
    } else {
      const auto& call = std::get<ToolCall>(block);
      std::size_t bar = call.id.find('|');
      Json item = {{"type", "function_call"},
                   {"call_id", call.id.substr(0, bar)},
                   {"name", call.name},
                   // Arguments that were not an object go back as the model wrote them.
                   {"arguments", call.raw_arguments.value_or(call.arguments.dump())}};
      // The server pairs a function call's item id with the reasoning item
      // before it; without that item (another model's call, or reasoning
      // that could not be replayed) the id would fail the pairing.
      if (bar != std::string::npos && from_this_model && !skipped_reasoning) item["id"] = call.id.substr(bar + 1);
      input.push_back(std::move(item));
    }
  }
}

void append_tool_result(Json& input, const ToolResultMessage& result, const Model& model) {
  auto [text, images] = tool_result_parts(result, model, input_image);
  input.push_back({{"type", "function_call_output"},
                   {"call_id", result.tool_call_id.substr(0, result.tool_call_id.find('|'))},
                   {"output", std::move(text)}});
  if (!images.empty()) {
    images.insert(images.begin(), Json{{"type", "input_text"}, {"text", "Attached image(s) from tool result:"}});
    input.push_back({{"role", "user"}, {"content", std::move(images)}});
  }
}

}  // namespace

std::string encode_text_signature(const TextSignature& signature) {
  Json json = {{"v", 1}, {"id", signature.id}};
  if (signature.phase) json["phase"] = *signature.phase;
  return json.dump();
}

std::optional<TextSignature> decode_text_signature(const std::optional<std::string>& signature) {
  if (!signature || signature->empty()) return std::nullopt;
  if (signature->starts_with("{")) {
    Json json = Json::parse(*signature, nullptr, false);
    if (int_field(json, "v") == 1 && !string_field(json, "id").empty()) {
      TextSignature out{std::string(string_field(json, "id")), std::nullopt};
      std::string_view phase = string_field(json, "phase");
      if (phase == "commentary" || phase == "final_answer") out.phase = std::string(phase);
      return out;
    }
  }
  return TextSignature{*signature, std::nullopt};
}

Json responses_payload(const Model& model, const LlmContext& context, const StreamOptions& options) {
  Json input = Json::array();
  if (!context.system_prompt.empty()) {
    input.push_back({{"role", model.reasoning ? "developer" : "system"}, {"content", context.system_prompt}});
  }
  std::vector<LlmMessage> prepared = prepare_messages(context.messages, model, normalise_tool_call_id);
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    const LlmMessage& message = prepared[i];
    if (const auto* user = std::get_if<UserMessage>(&message)) {
      Json item = user_item(model, user->content);
      if (!item["content"].empty()) input.push_back(std::move(item));
    } else if (const auto* assistant = std::get_if<AssistantMessage>(&message)) {
      append_assistant(input, *assistant, model, i);
    } else {
      append_tool_result(input, std::get<ToolResultMessage>(message), model);
    }
  }

  const Json& compat = model.compat;
  auto flag = [&](std::string_view key, bool fallback) {
    const Json* value = field(compat, key);
    return value != nullptr && value->is_boolean() ? value->get<bool>() : fallback;
  };
  Json payload = {{"model", model.id}, {"input", std::move(input)}, {"stream", true}};
  if (flag("supportsStore", true)) payload["store"] = false;
  if (options.max_tokens) payload["max_output_tokens"] = *options.max_tokens;
  if (options.temperature) payload["temperature"] = *options.temperature;
  if (!context.tools.empty()) {
    Json tools = Json::array();
    for (const ToolDefinition& tool : context.tools) {
      tools.push_back({{"type", "function"},
                       {"name", tool.name},
                       {"description", tool.description},
                       {"parameters", tool.parameters},
                       {"strict", false}});
    }
    payload["tools"] = std::move(tools);
  }
  if (const Json* choice = field(options.extra, "toolChoice")) payload["tool_choice"] = *choice;

  if (model.reasoning) {
    if (auto effort = reasoning_effort(options.thinking_level, flag("supportsXhigh", false))) {
      Json reasoning = {{"effort", *effort}};
      std::string_view summary = string_field(options.extra, "reasoningSummary");
      if (summary.empty()) summary = "auto";
      if (summary != "off") reasoning["summary"] = summary;
      payload["reasoning"] = std::move(reasoning);
    }
    // Whatever the effort, a reasoning model reasons; unless its items come
    // back encrypted they cannot be replayed in a stateless conversation.
    if (flag("includeEncryptedReasoning", true)) payload["include"] = Json::array({"reasoning.encrypted_content"});
  }
  return payload;
}

}  // namespace cairn::wire
