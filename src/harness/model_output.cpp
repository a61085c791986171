#include "model_output.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "llm/tool_arguments.hpp"
#include "cairn/utf8.hpp"
#include "utf8.hpp"

namespace cairn {
namespace {

// Ids every provider takes: OpenAI's chat completions allow 40 characters,
// Anthropic's tool_use ids must match ^[a-zA-Z0-9_-]+$.
constexpr std::size_t kMaxCallId = 40;
// How much of arguments that are not JSON the error result quotes.
constexpr std::size_t kQuotedArguments = 200;

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// The stem a renamed id is built from: the call id's own safe characters.
// Of an OpenAI Responses id ("call_id|item_id") only the call id is kept:
// the item id pairs with a reasoning item the server knows, and a made-up
// one would fail that pairing, while a call without one is taken as it is.
std::string id_stem(std::string_view id) {
  id = id.substr(0, id.find('|'));
  std::string stem;
  for (char c : id) {
    if (id_char(c)) stem += c;
  }
  return stem.empty() ? "call" : stem;
}

// `stem` + "_" + n, for the smallest n from `from` that names no call yet.
std::string fresh_id(const std::string& stem, std::size_t from, const std::set<std::string>& taken) {
  for (std::size_t n = from;; ++n) {
    const std::string suffix = fmt::format("_{}", n);
    std::string id = stem.substr(0, kMaxCallId - suffix.size()) + suffix;
    if (!taken.contains(id)) return id;
  }
}

void answerable_calls(AssistantMessage& message) {
  std::set<std::string> taken;  // every id the message holds, so a rename takes none of them
  for (const auto& block : message.content) {
    if (const auto* call = std::get_if<ToolCall>(&block)) taken.insert(call->id);
  }
  std::set<std::string> seen;
  std::size_t position = 0;
  for (auto& block : message.content) {
    auto* call = std::get_if<ToolCall>(&block);
    if (!call) continue;
    ++position;
    if (call->id.empty()) {
      call->id = fresh_id("call", position, taken);
    } else if (seen.contains(call->id)) {
      call->id = fresh_id(id_stem(call->id), 2, taken);
    }
    taken.insert(call->id);
    seen.insert(call->id);
    if (!call->arguments.is_object()) {
      // A hook's or an older provider's doing: answered like unparsable text.
      if (!call->raw_arguments) call->raw_arguments = call->arguments.dump();
      call->arguments = Json::object();
    }
  }
}

}  // namespace

bool redact_partial(AssistantMessage& message, const Secrets& secrets) {
  if (secrets.empty()) return false;
  bool changed = false;
  for (auto& block : message.content) {
    if (auto* text = std::get_if<TextContent>(&block)) {
      changed |= secrets.redact_in_place(text->text);
    } else if (auto* thinking = std::get_if<ThinkingContent>(&block)) {
      changed |= secrets.redact_in_place(thinking->thinking);
    } else if (auto* call = std::get_if<ToolCall>(&block)) {
      changed |= secrets.redact_in_place(call->name);
      changed |= secrets.redact_in_place(call->arguments);
      if (call->raw_arguments) changed |= secrets.redact_in_place(*call->raw_arguments);
    }
  }
  if (message.error_message) changed |= secrets.redact_in_place(*message.error_message);
  return changed;
}

void sanitize_response(AssistantMessage& message, const Secrets& secrets) {
  redact_partial(message, secrets);
  for (auto& block : message.content) {
    std::visit(
        [](auto& b) {
          using B = std::decay_t<decltype(b)>;
          if constexpr (std::is_same_v<B, TextContent>) {
            make_valid_utf8(b.text);
            if (b.text_signature) make_valid_utf8(*b.text_signature);
          } else if constexpr (std::is_same_v<B, ThinkingContent>) {
            make_valid_utf8(b.thinking);
            if (b.thinking_signature) make_valid_utf8(*b.thinking_signature);
          } else {
            make_valid_utf8(b.id);
            make_valid_utf8(b.name);
            make_valid_utf8(b.arguments);
            if (b.raw_arguments) make_valid_utf8(*b.raw_arguments);
          }
          make_valid_utf8(b.extra);
        },
        block);
  }
  if (message.error_message) make_valid_utf8(*message.error_message);
  make_valid_utf8(message.extra);
  answerable_calls(message);
}

void sanitize_result(ToolResult& result, const Secrets& secrets) {
  for (auto& block : result.content) {
    if (auto* text = std::get_if<TextContent>(&block)) {
      secrets.redact_in_place(text->text);
      make_valid_utf8(text->text);
    }
  }
  if (result.details) {
    secrets.redact_in_place(*result.details);
    make_valid_utf8(*result.details);
  }
}

std::string sanitize_text(std::string text, const Secrets& secrets) {
  secrets.redact_in_place(text);
  make_valid_utf8(text);
  return text;
}

ToolResult invalid_arguments_result(std::string_view raw_arguments) {
  // The provider layer's reading, which also tells nesting too deep to use
  // (a JSON parser would accept it, and build a value as deep).
  std::string why = tool_arguments_problem(raw_arguments);
  if (why.empty()) why = "an object, yet marked as not one";  // not expected of a provider
  if (why.starts_with("not valid JSON ")) why.erase(0, 15);   // said once, by the prefix below
  std::string began(raw_arguments);
  if (raw_arguments.size() > kQuotedArguments) {
    began = std::string(raw_arguments.substr(0, utf8_floor(raw_arguments, kQuotedArguments))) + "…";
  }
  make_valid_utf8(began);
  return ToolResult{.content = {TextContent{.text = fmt::format("Tool call arguments are not valid JSON: {}; they began: {}",
                                                                why, began)}},
                    .details = Json{{"invalidArguments", true}},
                    .is_error = true};
}

}  // namespace cairn
