// cairn's context as a Messages API request body. The shape follows
// Anthropic's API reference; the choices where the API leaves room follow
// pi-ai's anthropic provider (whose sessions cairn reads), each noted where
// it is made.
#include <algorithm>

#include "anthropic_wire.hpp"

namespace cairn::anthropic {
namespace {

// The API requires max_tokens. A model whose limit nobody wrote down gets a
// modest one rather than a request the server refuses.
constexpr std::int64_t kFallbackMaxTokens = 4096;
// pi's budgets per thinking level; "xhigh" has no budget of its own and
// thinks as "high" does.
constexpr std::int64_t kMinimalBudget = 1024, kLowBudget = 2048, kMediumBudget = 8192, kHighBudget = 16384;
// The least answer left beside a thinking budget that fills max_tokens.
constexpr std::int64_t kMinOutputTokens = 1024;

Json ephemeral() { return {{"type", "ephemeral"}}; }

Json image_block(const ImageContent& image) {
  return {{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", image.mime_type}, {"data", image.data}}}};
}

bool accepts_images(const Model& model) {
  return std::find(model.input.begin(), model.input.end(), "image") != model.input.end();
}

// A user message's content, or nullopt when nothing in it is worth sending
// (the API refuses empty text blocks and empty messages).
std::optional<Json> user_content(const UserContent& content, bool images) {
  if (const auto* text = std::get_if<std::string>(&content)) {
    if (wire::blank(*text)) return std::nullopt;
    return Json(*text);
  }
  // A model without image input would refuse the request with an image in
  // it; pi leaves them out.
  Json blocks = Json::array();
  for (const auto& block : std::get<std::vector<UserBlock>>(content)) {
    if (const auto* text = std::get_if<TextContent>(&block)) {
      if (!wire::blank(text->text)) blocks.push_back({{"type", "text"}, {"text", text->text}});
    } else if (images) {
      blocks.push_back(image_block(std::get<ImageContent>(block)));
    }
  }
  if (blocks.empty()) return std::nullopt;
  return blocks;
}

// A tool result's content: plain text as one string, or blocks when images
// are among it (with a text block first, as pi does, when there is no text).
Json tool_result_content(const std::vector<UserBlock>& content) {
  bool has_image = std::any_of(content.begin(), content.end(),
                               [](const UserBlock& b) { return std::holds_alternative<ImageContent>(b); });
  if (!has_image) {
    std::string joined;
    for (const auto& block : content) {
      if (!joined.empty()) joined += '\n';
      joined += std::get<TextContent>(block).text;
    }
    return joined;
  }
  Json blocks = Json::array();
  bool has_text = false;
  for (const auto& block : content) {
    if (const auto* text = std::get_if<TextContent>(&block)) {
      blocks.push_back({{"type", "text"}, {"text", text->text}});
      has_text = true;
    } else {
      blocks.push_back(image_block(std::get<ImageContent>(block)));
    }
  }
  if (!has_text) blocks.insert(blocks.begin(), Json{{"type", "text"}, {"text", "(see attached image)"}});
  return blocks;
}

// An assistant message's blocks as the API takes them back. Another model's
// thinking has been made text already (wire::prepare_messages); what is left
// is this model's own, replayed with its signature.
Json assistant_content(const AssistantMessage& message) {
  Json blocks = Json::array();
  for (const auto& block : message.content) {
    if (const auto* text = std::get_if<TextContent>(&block)) {
      if (!wire::blank(text->text)) blocks.push_back({{"type", "text"}, {"text", text->text}});
    } else if (const auto* thinking = std::get_if<ThinkingContent>(&block)) {
      const std::string signature = thinking->thinking_signature.value_or("");
      if (thinking->redacted.value_or(false)) {
        // pi keeps a redacted block's opaque data in the signature field.
        if (!signature.empty()) blocks.push_back({{"type", "redacted_thinking"}, {"data", signature}});
      } else if (!signature.empty()) {
        // Kept even with empty text: a thinking block whose display was
        // omitted is only its signature, and a tool-use turn needs it back.
        blocks.push_back({{"type", "thinking"}, {"thinking", thinking->thinking}, {"signature", signature}});
      } else if (!wire::blank(thinking->thinking)) {
        // Unsigned (an aborted stream): the API would refuse it as a
        // thinking block. Plain text, without tags the model might learn to
        // imitate.
        blocks.push_back({{"type", "text"}, {"text", thinking->thinking}});
      }
    } else {
      const auto& call = std::get<ToolCall>(block);
      // The API takes only an object: arguments that were not one (kept in
      // raw_arguments, `arguments` empty) go back as {}.
      blocks.push_back({{"type", "tool_use"},
                        {"id", call.id},
                        {"name", call.name},
                        {"input", call.arguments.is_object() && !call.raw_arguments ? call.arguments : Json::object()}});
    }
  }
  return blocks;
}

// Builds the messages array from a conversation wire::prepare_messages has
// made fit for the model (failed turns left out, unanswered tool calls given
// an error result). Consecutive tool results become one user message, as
// some Anthropic-compatible servers insist.
class MessageList {
 public:
  explicit MessageList(const Model& model) : model_(model) {}

  void add(const LlmMessage& message) {
    std::visit([this](const auto& m) { add_one(m); }, message);
  }

  Json finish() {
    mark_last_user_message_for_caching();
    return std::move(messages_);
  }

 private:
  void add_one(const UserMessage& message) {
    if (auto content = user_content(message.content, accepts_images(model_))) push("user", std::move(*content));
  }

  void add_one(const AssistantMessage& message) {
    Json content = assistant_content(message);
    if (!content.empty()) push("assistant", std::move(content));
  }

  void add_one(const ToolResultMessage& message) {
    if (!last_holds_tool_results_) {
      push("user", Json::array());
      last_holds_tool_results_ = true;
    }
    messages_.back()["content"].push_back({{"type", "tool_result"},
                                           {"tool_use_id", message.tool_call_id},
                                           {"content", tool_result_content(message.content)},
                                           {"is_error", message.is_error}});
  }

  void push(const char* role, Json content) {
    messages_.push_back({{"role", role}, {"content", std::move(content)}});
    last_holds_tool_results_ = false;
  }

  // The conversation up to here is cached for the next request, which
  // repeats it (pi's placement: the last block of the last user message).
  void mark_last_user_message_for_caching() {
    if (messages_.empty() || messages_.back()["role"] != "user") return;
    Json& content = messages_.back()["content"];
    if (content.is_string()) {
      content = Json::array({{{"type", "text"}, {"text", content.get<std::string>()}, {"cache_control", ephemeral()}}});
    } else if (!content.empty()) {
      content.back()["cache_control"] = ephemeral();
    }
  }

  const Model& model_;
  Json messages_ = Json::array();
  bool last_holds_tool_results_ = false;
};

Json tool_definition(const ToolDefinition& tool) {
  // The schema goes as written; the API only insists that it describe an object.
  Json schema = tool.parameters.is_object() ? tool.parameters : Json::object();
  if (!schema.contains("type")) schema["type"] = "object";
  return {{"name", tool.name}, {"description", tool.description}, {"input_schema", std::move(schema)}};
}

}  // namespace

std::optional<ThinkingPlan> plan_thinking(ThinkingLevel level, std::int64_t max_tokens, std::int64_t model_max_tokens,
                                          const Json& budgets) {
  std::int64_t budget = 0;
  if (level == ThinkingLevel::xhigh) level = ThinkingLevel::high;
  switch (level) {
    case ThinkingLevel::minimal: budget = kMinimalBudget; break;
    case ThinkingLevel::low: budget = kLowBudget; break;
    case ThinkingLevel::medium: budget = kMediumBudget; break;
    case ThinkingLevel::high: budget = kHighBudget; break;
    default: return std::nullopt;
  }
  const std::string key(to_string(level));
  if (budgets.is_object() && budgets.contains(key) && budgets[key].is_number_integer()) {
    budget = budgets[key].get<std::int64_t>();
  }
  // The budget is spent out of max_tokens: raise it so the answer keeps its
  // room, as far as the model allows. A model too small for both thinks less.
  ThinkingPlan plan;
  plan.max_tokens = max_tokens + budget;
  if (model_max_tokens > 0) plan.max_tokens = std::min(plan.max_tokens, model_max_tokens);
  plan.budget_tokens = budget;
  if (plan.max_tokens <= budget) plan.budget_tokens = std::max<std::int64_t>(0, plan.max_tokens - kMinOutputTokens);
  return plan;
}

std::string normalize_tool_call_id(std::string_view id) {
  std::string out(id.substr(0, 64));
  for (char& c : out) {
    const bool fits = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!fits) c = '_';
  }
  return out;
}

Json build_payload(const Model& model, const LlmContext& context, const StreamOptions& options) {
  std::int64_t max_tokens = options.max_tokens.value_or(model.max_tokens);
  if (max_tokens <= 0) max_tokens = kFallbackMaxTokens;

  std::optional<ThinkingPlan> thinking;
  if (model.reasoning) {
    const Json budgets = options.extra.is_object() ? options.extra.value("thinkingBudgets", Json::object()) : Json::object();
    thinking = plan_thinking(options.thinking_level, max_tokens, model.max_tokens, budgets);
  }
  if (thinking) max_tokens = thinking->max_tokens;

  MessageList messages(model);
  for (const auto& message : wire::prepare_messages(context.messages, model, normalize_tool_call_id)) {
    messages.add(message);
  }

  Json payload = {{"model", model.id}, {"max_tokens", max_tokens}, {"stream", true}};
  if (!context.system_prompt.empty()) {
    payload["system"] =
        Json::array({{{"type", "text"}, {"text", context.system_prompt}, {"cache_control", ephemeral()}}});
  }
  payload["messages"] = messages.finish();
  if (!context.tools.empty()) {
    Json tools = Json::array();
    for (const auto& tool : context.tools) tools.push_back(tool_definition(tool));
    payload["tools"] = std::move(tools);
  }
  if (thinking) {
    payload["thinking"] = {{"type", "enabled"}, {"budget_tokens", thinking->budget_tokens}};
  } else if (options.temperature) {
    // With thinking on the API refuses any temperature but its own.
    payload["temperature"] = *options.temperature;
  }
  return payload;
}

}  // namespace cairn::anthropic
