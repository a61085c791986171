// JSON codec of messages and content blocks, in pi's session format v3.
//
// Decoding checks the shape (types, required keys) and keeps unknown keys in
// `extra`; value rules (non-empty ids, lossless JSON) are check_fields' job.
// Encoding writes the known fields in pi's order, then `extra`. Each block's
// and message's fields are one table (field_table.hpp), read both ways.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "cairn/log/message.hpp"
#include "cairn/overloaded.hpp"
#include "field_table.hpp"
#include "json_reader.hpp"

namespace cairn {

using detail::ObjectReader;

namespace detail {

// ---- the tables -------------------------------------------------------------

// What a message's and a block's alternatives are called in the log, in the
// order of their variant: the `role` and `type` keys name them.
constexpr std::array<std::string_view, 7> kRoles{
    "user", "assistant", "toolResult", "custom", "branchSummary", "compactionSummary", "bashExecution"};
constexpr std::array<std::string_view, 2> kUserBlockTypes{"text", "image"};
constexpr std::array<std::string_view, 3> kAssistantBlockTypes{"text", "thinking", "toolCall"};
static_assert(kRoles.size() == std::variant_size_v<AgentMessage>);
static_assert(kUserBlockTypes.size() == std::variant_size_v<UserBlock>);
static_assert(kAssistantBlockTypes.size() == std::variant_size_v<AssistantBlock>);

template <class Block>
constexpr const auto& block_types() {
  if constexpr (std::is_same_v<Block, UserBlock>) {
    return kUserBlockTypes;
  } else {
    return kAssistantBlockTypes;
  }
}

// {"type": …, fields…, extra…}
template <class Block>
Json encode_block(const Block& block) {
  Json out = {{"type", block_types<Block>()[block.index()]}};
  std::visit([&](const auto& b) { write_object(out, b); }, block);
  return out;
}

// A block whose type must be one of Block's; the error names those it may be.
template <class Block>
Result<Block> decode_block(const Json& json, const std::string& path) {
  ObjectReader r(json, path);
  const std::string type = r.string("type");
  if (!r.ok()) return std::unexpected(r.status().error());
  const auto& types = block_types<Block>();
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] != type) continue;
    Block block = read_alternative<Block>(i, r);
    if (!r.ok()) return std::unexpected(r.status().error());
    return block;
  }
  std::string allowed;
  for (std::size_t i = 0; i < types.size(); ++i) {
    allowed += fmt::format("{}'{}'", i == 0 ? "" : i + 1 == types.size() ? " or " : ", ", types[i]);
  }
  return invalid(r.field("type"), fmt::format("expected {}, got '{}'", allowed, type));
}

template <class Block>
Result<std::vector<Block>> decode_blocks(const Json& json, const std::string& path) {
  if (!json.is_array()) return invalid(path, "expected an array");
  std::vector<Block> blocks;
  blocks.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    auto block = decode_block<Block>(json[i], index_path(path, i));
    if (!block) return std::unexpected(block.error());
    blocks.push_back(std::move(*block));
  }
  return blocks;
}

template <class Block>
  requires std::is_same_v<Block, UserBlock> || std::is_same_v<Block, AssistantBlock>
struct FieldCodec<std::vector<Block>> {
  static void write(Json& out, std::string_view key, const std::vector<Block>& blocks) {
    Json list = Json::array();
    for (const auto& block : blocks) list.push_back(encode_block(block));
    out[std::string(key)] = std::move(list);
  }
  static void read(ObjectReader& r, std::string_view key, std::vector<Block>& blocks) {
    if (const Json* value = r.required(key)) blocks = r.take(decode_blocks<Block>(*value, r.field(key)));
  }
};

void FieldCodec<UserContent>::write(Json& out, std::string_view key, const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) {
    out[std::string(key)] = *text;
  } else {
    FieldCodec<std::vector<UserBlock>>::write(out, key, std::get<std::vector<UserBlock>>(content));
  }
}

void FieldCodec<UserContent>::read(ObjectReader& r, std::string_view key, UserContent& content) {
  if (const Json* value = r.required(key)) content = r.take(decode_user_content(*value, r.field(key)));
}

template <>
struct FieldCodec<Cost> : NestedObject<Cost> {};
template <>
struct FieldCodec<Usage> : NestedObject<Usage> {};

template <>
inline constexpr auto kFields<TextContent> = std::tuple{
    field("text", &TextContent::text),
    field("textSignature", &TextContent::text_signature),
};

template <>
inline constexpr auto kFields<ImageContent> = std::tuple{
    field("data", &ImageContent::data),
    field("mimeType", &ImageContent::mime_type),
};

template <>
inline constexpr auto kFields<ThinkingContent> = std::tuple{
    field("thinking", &ThinkingContent::thinking),
    field("thinkingSignature", &ThinkingContent::thinking_signature),
    field("redacted", &ThinkingContent::redacted),
};

template <>
inline constexpr auto kFields<ToolCall> = std::tuple{
    field("id", &ToolCall::id),
    field("name", &ToolCall::name),
    field("arguments", &ToolCall::arguments),
    field("rawArguments", &ToolCall::raw_arguments),
};

template <>
inline constexpr auto kFields<Cost> = std::tuple{
    field("input", &Cost::input),
    field("output", &Cost::output),
    field("cacheRead", &Cost::cache_read),
    field("cacheWrite", &Cost::cache_write),
    field("total", &Cost::total),
};

template <>
inline constexpr auto kFields<Usage> = std::tuple{
    field("input", &Usage::input, Rule::count),
    field("output", &Usage::output, Rule::count),
    field("cacheRead", &Usage::cache_read, Rule::count),
    field("cacheWrite", &Usage::cache_write, Rule::count),
    field("totalTokens", &Usage::total_tokens, Rule::count),
    field("cost", &Usage::cost),
};

template <>
inline constexpr auto kFields<UserMessage> = std::tuple{
    field("content", &UserMessage::content),
};

template <>
inline constexpr auto kFields<AssistantMessage> = std::tuple{
    field("content", &AssistantMessage::content),
    field("api", &AssistantMessage::api),
    field("provider", &AssistantMessage::provider),
    field("model", &AssistantMessage::model),
    field("usage", &AssistantMessage::usage),
    field("stopReason", &AssistantMessage::stop_reason),
    field("errorMessage", &AssistantMessage::error_message),
};

template <>
inline constexpr auto kFields<ToolResultMessage> = std::tuple{
    field("toolCallId", &ToolResultMessage::tool_call_id),
    field("toolName", &ToolResultMessage::tool_name),
    field("content", &ToolResultMessage::content),
    field("details", &ToolResultMessage::details),
    field("isError", &ToolResultMessage::is_error),
};

template <>
inline constexpr auto kFields<CustomMessage> = std::tuple{
    field("customType", &CustomMessage::custom_type),
    field("content", &CustomMessage::content),
    field("display", &CustomMessage::display),
    field("details", &CustomMessage::details),
};

template <>
inline constexpr auto kFields<BranchSummaryMessage> = std::tuple{
    field("summary", &BranchSummaryMessage::summary),
    field("fromId", &BranchSummaryMessage::from_id),
};

template <>
inline constexpr auto kFields<CompactionSummaryMessage> = std::tuple{
    field("summary", &CompactionSummaryMessage::summary),
    field("tokensBefore", &CompactionSummaryMessage::tokens_before),
};

// Older pi writes an absent exit code as null, and a false
// excludeFromContext or none at all: each is kept as it was written.
void write_exit_code(Json& out, const BashExecutionMessage& m) {
  if (m.exit_code) {
    out["exitCode"] = *m.exit_code;
  } else if (m.exit_code_null) {
    out["exitCode"] = nullptr;
  }
}

void read_exit_code(ObjectReader& r, BashExecutionMessage& m) {
  if (const Json* exit_code = r.optional("exitCode"); exit_code != nullptr && exit_code->is_null()) {
    m.exit_code_null = true;
  } else {
    m.exit_code = r.optional_integer("exitCode");
  }
}

void write_exclude(Json& out, const BashExecutionMessage& m) {
  if (m.exclude_from_context || m.has_exclude_from_context) out["excludeFromContext"] = m.exclude_from_context;
}

void read_exclude(ObjectReader& r, BashExecutionMessage& m) {
  m.has_exclude_from_context = r.has("excludeFromContext");
  m.exclude_from_context = r.optional_boolean("excludeFromContext").value_or(false);
}

template <>
inline constexpr auto kFields<BashExecutionMessage> = std::tuple{
    field("command", &BashExecutionMessage::command),
    field("output", &BashExecutionMessage::output),
    ByHand<BashExecutionMessage>{write_exit_code, read_exit_code},
    field("cancelled", &BashExecutionMessage::cancelled),
    field("truncated", &BashExecutionMessage::truncated),
    field("fullOutputPath", &BashExecutionMessage::full_output_path),
    ByHand<BashExecutionMessage>{write_exclude, read_exclude},
};

}  // namespace detail

// ---- public -----------------------------------------------------------------

std::string_view role_of(const AgentMessage& message) { return detail::kRoles[message.index()]; }

Json encode(const UserBlock& block) { return detail::encode_block(block); }

Json encode(const AssistantBlock& block) { return detail::encode_block(block); }

Json encode(const AgentMessage& message) {
  Json out = {{"role", role_of(message)}};
  std::visit([&](const auto& m) { detail::write_object(out, m); }, message);
  return out;
}

Json encode(const LlmMessage& message) {
  return std::visit([](const auto& m) { return encode(AgentMessage{m}); }, message);
}

Result<UserContent> decode_user_content(const Json& json, std::string_view path) {
  if (json.is_string()) return UserContent{json.get<std::string>()};
  if (!json.is_array()) return detail::invalid(path, "expected a string or an array");
  auto blocks = detail::decode_blocks<UserBlock>(json, std::string(path));
  if (!blocks) return std::unexpected(blocks.error());
  return UserContent{std::move(*blocks)};
}

Result<AgentMessage> decode_message(const Json& json, std::string_view path) {
  // The reader checks every access; this only guards against a nlohmann throw
  // this code did not foresee, which must not escape as an exception.
  try {
    ObjectReader r(json, std::string(path));
    const std::string role = r.string("role");
    if (!r.ok()) return std::unexpected(r.status().error());
    const auto known = std::find(detail::kRoles.begin(), detail::kRoles.end(), role);
    if (known == detail::kRoles.end()) return detail::invalid(r.field("role"), fmt::format("unknown role '{}'", role));
    AgentMessage message =
        detail::read_alternative<AgentMessage>(static_cast<std::size_t>(known - detail::kRoles.begin()), r);
    if (!r.ok()) return std::unexpected(r.status().error());
    return message;
  } catch (const Json::exception& error) {
    return detail::invalid(path, error.what());
  }
}

// ---- projection to the model (pi's convertToLlm) ----------------------------

const char* const kCompactionSummaryPrefix =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const char* const kCompactionSummarySuffix = "\n</summary>";
const char* const kBranchSummaryPrefix =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const char* const kBranchSummarySuffix = "</summary>";

namespace {

// pi's bashExecutionToText, character for character: the model must see what
// it would see under pi for an imported session.
std::string bash_execution_text(const BashExecutionMessage& m) {
  std::string text = fmt::format("Ran `{}`\n", m.command);
  if (!m.output.empty()) {
    text += fmt::format("```\n{}\n```", m.output);
  } else {
    text += "(no output)";
  }
  if (m.cancelled) {
    text += "\n\n(command cancelled)";
  } else if (m.exit_code && *m.exit_code != 0) {
    text += fmt::format("\n\nCommand exited with code {}", *m.exit_code);
  }
  if (m.truncated && m.full_output_path) {
    text += fmt::format("\n\n[Output truncated. Full output: {}]", *m.full_output_path);
  }
  return text;
}

// A user message standing in for `source`: it keeps the source's timestamp
// (and its absence), as pi's projection does.
template <class M>
UserMessage user_message(std::vector<UserBlock> blocks, const M& source) {
  UserMessage user;
  user.content = std::move(blocks);
  user.timestamp = source.timestamp;
  user.has_timestamp = source.has_timestamp;
  return user;
}

std::vector<UserBlock> one_text(std::string text) { return {TextContent{std::move(text), std::nullopt}}; }

}  // namespace

std::optional<LlmMessage> to_llm(const AgentMessage& message) {
  return std::visit(
      Overloaded{
          [](const UserMessage& m) -> std::optional<LlmMessage> { return m; },
          [](const AssistantMessage& m) -> std::optional<LlmMessage> { return m; },
          [](const ToolResultMessage& m) -> std::optional<LlmMessage> { return m; },
          [](const BashExecutionMessage& m) -> std::optional<LlmMessage> {
            // `!!command`: run for the user only, never shown to the model.
            if (m.exclude_from_context) return std::nullopt;
            return user_message(one_text(bash_execution_text(m)), m);
          },
          [](const CustomMessage& m) -> std::optional<LlmMessage> {
            if (const auto* text = std::get_if<std::string>(&m.content)) return user_message(one_text(*text), m);
            return user_message(std::get<std::vector<UserBlock>>(m.content), m);
          },
          [](const BranchSummaryMessage& m) -> std::optional<LlmMessage> {
            return user_message(one_text(kBranchSummaryPrefix + m.summary + kBranchSummarySuffix), m);
          },
          [](const CompactionSummaryMessage& m) -> std::optional<LlmMessage> {
            return user_message(one_text(kCompactionSummaryPrefix + m.summary + kCompactionSummarySuffix), m);
          },
      },
      message);
}

std::vector<LlmMessage> convert_to_llm(const std::vector<AgentMessage>& messages) {
  std::vector<LlmMessage> out;
  out.reserve(messages.size());
  for (const auto& message : messages) {
    if (auto converted = to_llm(message)) out.push_back(std::move(*converted));
  }
  return out;
}

}  // namespace cairn
