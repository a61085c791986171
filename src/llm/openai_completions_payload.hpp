// The Chat Completions request body: cairn's context in the shape OpenAI's
// API and its compatible servers take, with each server's quirks resolved
// from Model::compat (the keys are documented in openai_completions.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/json.hpp"
#include "cairn/llm/provider.hpp"

namespace cairn::wire {

struct CompletionsCompat {
  std::string max_tokens_field = "max_completion_tokens";
  bool supports_usage_in_streaming = true;
  bool supports_store = false;
  bool supports_developer_role = false;
  bool supports_reasoning_effort = true;
  bool supports_xhigh = false;
  std::string thinking_format = "openai";  // openai, zai, qwen
  bool requires_tool_result_name = false;
  bool requires_assistant_after_tool_result = false;
  bool requires_thinking_as_text = false;
  bool requires_mistral_tool_ids = false;
};

// Model::compat over the defaults guessed from the model's provider and
// base URL.
CompletionsCompat resolve_completions_compat(const Model& model);

// The reasoning field names a server may stream thinking in, in the order
// they are looked for; a thinking block's signature names the one it came
// in, so that it is replayed there.
inline constexpr std::string_view kReasoningFields[] = {"reasoning_content", "reasoning", "reasoning_text"};

Json completions_payload(const Model& model, const LlmContext& context, const StreamOptions& options);

// A tool result as both OpenAI APIs carry it: a tool's output holds text
// only, so its text blocks are joined by line breaks ("(see attached
// image)" when there are only images) and its images, each `image(block)`,
// are for a user message after it (none when the model takes no images).
struct ToolResultParts {
  std::string text;
  Json images = Json::array();
};
ToolResultParts tool_result_parts(const ToolResultMessage& result, const Model& model,
                                  const std::function<Json(const ImageContent&)>& image);

// A thinking level as an OpenAI reasoning effort; nullopt for "off".
std::optional<std::string> reasoning_effort(ThinkingLevel thinking_level, bool supports_xhigh);

}  // namespace cairn::wire
