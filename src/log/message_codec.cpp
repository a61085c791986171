// JSON codec of messages and content blocks, in pi's session format v3.
//
// Decoding checks the shape (types, required keys) and keeps unknown keys in
// `extra`; value rules (non-empty ids, lossless JSON) are check_fields' job.
// Encoding writes the known fields in pi's order, then `extra`.
#include <fmt/format.h>

#include "cairn/log/message.hpp"
#include "cairn/overloaded.hpp"
#include "json_reader.hpp"

namespace cairn {

using detail::index_path;
using detail::ObjectReader;

namespace {


// ---- encoding ---------------------------------------------------------------

Json encode_text(const TextContent& block) {
  Json out = {{"type", "text"}, {"text", block.text}};
  if (block.text_signature) out["textSignature"] = *block.text_signature;
  detail::append_extra(out, block.extra);
  return out;
}

Json encode_image(const ImageContent& block) {
  Json out = {{"type", "image"}, {"data", block.data}, {"mimeType", block.mime_type}};
  detail::append_extra(out, block.extra);
  return out;
}

Json encode_thinking(const ThinkingContent& block) {
  Json out = {{"type", "thinking"}, {"thinking", block.thinking}};
  if (block.thinking_signature) out["thinkingSignature"] = *block.thinking_signature;
  if (block.redacted) out["redacted"] = *block.redacted;
  detail::append_extra(out, block.extra);
  return out;
}

Json encode_tool_call(const ToolCall& block) {
  Json out = {{"type", "toolCall"}, {"id", block.id}, {"name", block.name}, {"arguments", block.arguments}};
  if (block.raw_arguments) out["rawArguments"] = *block.raw_arguments;
  detail::append_extra(out, block.extra);
  return out;
}

Json encode_blocks(const std::vector<UserBlock>& blocks) {
  Json out = Json::array();
  for (const auto& block : blocks) out.push_back(encode(block));
  return out;
}

Json encode_user_content(const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) return *text;
  return encode_blocks(std::get<std::vector<UserBlock>>(content));
}

Json encode_usage(const Usage& usage) {
  Json cost = {{"input", detail::number_json(usage.cost.input)},
               {"output", detail::number_json(usage.cost.output)},
               {"cacheRead", detail::number_json(usage.cost.cache_read)},
               {"cacheWrite", detail::number_json(usage.cost.cache_write)},
               {"total", detail::number_json(usage.cost.total)}};
  detail::append_extra(cost, usage.cost.extra);
  Json out = {{"input", usage.input},           {"output", usage.output},
              {"cacheRead", usage.cache_read},  {"cacheWrite", usage.cache_write},
              {"totalTokens", usage.total_tokens}, {"cost", std::move(cost)}};
  detail::append_extra(out, usage.extra);
  return out;
}

// Every message ends with its timestamp (when it had one) and its extra keys.
template <class M>
Json finish(Json out, const M& message) {
  if (message.has_timestamp) out["timestamp"] = message.timestamp;
  detail::append_extra(out, message.extra);
  return out;
}

Json encode_user(const UserMessage& m) {
  return finish({{"role", "user"}, {"content", encode_user_content(m.content)}}, m);
}

Json encode_assistant(const AssistantMessage& m) {
  Json content = Json::array();
  for (const auto& block : m.content) content.push_back(encode(block));
  Json out = {{"role", "assistant"}, {"content", std::move(content)}, {"api", m.api}, {"provider", m.provider},
              {"model", m.model},    {"usage", encode_usage(m.usage)}, {"stopReason", to_string(m.stop_reason)}};
  if (m.error_message) out["errorMessage"] = *m.error_message;
  return finish(std::move(out), m);
}

Json encode_tool_result(const ToolResultMessage& m) {
  Json out = {{"role", "toolResult"},
              {"toolCallId", m.tool_call_id},
              {"toolName", m.tool_name},
              {"content", encode_blocks(m.content)}};
  if (m.details) out["details"] = *m.details;
  out["isError"] = m.is_error;
  return finish(std::move(out), m);
}

Json encode_custom(const CustomMessage& m) {
  Json out = {{"role", "custom"},
              {"customType", m.custom_type},
              {"content", encode_user_content(m.content)},
              {"display", m.display}};
  if (m.details) out["details"] = *m.details;
  return finish(std::move(out), m);
}

Json encode_branch_summary(const BranchSummaryMessage& m) {
  return finish({{"role", "branchSummary"}, {"summary", m.summary}, {"fromId", m.from_id}}, m);
}

Json encode_compaction_summary(const CompactionSummaryMessage& m) {
  return finish({{"role", "compactionSummary"}, {"summary", m.summary}, {"tokensBefore", m.tokens_before}}, m);
}

Json encode_bash(const BashExecutionMessage& m) {
  Json out = {{"role", "bashExecution"}, {"command", m.command}, {"output", m.output}};
  if (m.exit_code) {
    out["exitCode"] = *m.exit_code;
  } else if (m.exit_code_null) {
    out["exitCode"] = nullptr;
  }
  out["cancelled"] = m.cancelled;
  out["truncated"] = m.truncated;
  if (m.full_output_path) out["fullOutputPath"] = *m.full_output_path;
  if (m.exclude_from_context || m.has_exclude_from_context) out["excludeFromContext"] = m.exclude_from_context;
  return finish(std::move(out), m);
}

// ---- decoding ---------------------------------------------------------------

TextContent decode_text(ObjectReader& r) {
  TextContent block;
  block.text = r.string("text");
  block.text_signature = r.optional_string("textSignature");
  return block;
}

ImageContent decode_image(ObjectReader& r) {
  ImageContent block;
  block.data = r.string("data");
  block.mime_type = r.string("mimeType");
  return block;
}

ThinkingContent decode_thinking(ObjectReader& r) {
  ThinkingContent block;
  block.thinking = r.string("thinking");
  block.thinking_signature = r.optional_string("thinkingSignature");
  block.redacted = r.optional_boolean("redacted");
  return block;
}

ToolCall decode_tool_call(ObjectReader& r) {
  ToolCall block;
  block.id = r.string("id");
  block.name = r.string("name");
  block.arguments = r.object("arguments");
  block.raw_arguments = r.optional_string("rawArguments");
  return block;
}

// Decodes one block whose type must be one of the alternatives of Block;
// `allowed` spells them for the error message.
template <class Block>
Result<Block> decode_block(const Json& json, const std::string& path, std::string_view allowed) {
  ObjectReader r(json, path);
  std::string type = r.string("type");
  if (!r.ok()) return std::unexpected(r.status().error());
  auto with_extra = [&](auto decoded) -> Result<Block> {
    decoded.extra = r.extra();
    if (!r.ok()) return std::unexpected(r.status().error());
    return Block{std::move(decoded)};
  };
  if constexpr (std::is_same_v<Block, UserBlock>) {
    if (type == "text") return with_extra(decode_text(r));
    if (type == "image") return with_extra(decode_image(r));
  } else {
    if (type == "text") return with_extra(decode_text(r));
    if (type == "thinking") return with_extra(decode_thinking(r));
    if (type == "toolCall") return with_extra(decode_tool_call(r));
  }
  return detail::invalid(r.field("type"), fmt::format("expected {}, got '{}'", allowed, type));
}

template <class Block>
Result<std::vector<Block>> decode_blocks(const Json& json, const std::string& path, std::string_view allowed) {
  if (!json.is_array()) return detail::invalid(path, "expected an array");
  std::vector<Block> blocks;
  blocks.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    auto block = decode_block<Block>(json[i], index_path(path, i), allowed);
    if (!block) return std::unexpected(block.error());
    blocks.push_back(std::move(*block));
  }
  return blocks;
}

constexpr std::string_view kUserBlockTypes = "'text' or 'image'";
constexpr std::string_view kAssistantBlockTypes = "'text', 'thinking' or 'toolCall'";

Result<std::vector<UserBlock>> decode_user_blocks(const Json& json, const std::string& path) {
  return decode_blocks<UserBlock>(json, path, kUserBlockTypes);
}

UserContent read_user_content(ObjectReader& r, std::string_view key) {
  const Json* value = r.required(key);
  if (value == nullptr) return {};
  return r.take(decode_user_content(*value, r.field(key)));
}

std::vector<UserBlock> read_user_blocks(ObjectReader& r, std::string_view key) {
  const Json* value = r.required(key);
  if (value == nullptr) return {};
  return r.take(decode_user_blocks(*value, r.field(key)));
}

Usage read_usage(ObjectReader& message) {
  Usage usage;
  message.nested("usage", ObjectReader::Presence::required, [&](ObjectReader& r) {
    usage.input = r.count("input");
    usage.output = r.count("output");
    usage.cache_read = r.count("cacheRead");
    usage.cache_write = r.count("cacheWrite");
    usage.total_tokens = r.count("totalTokens");
    r.nested("cost", ObjectReader::Presence::required, [&](ObjectReader& c) {
      usage.cost.input = c.number("input");
      usage.cost.output = c.number("output");
      usage.cost.cache_read = c.number("cacheRead");
      usage.cost.cache_write = c.number("cacheWrite");
      usage.cost.total = c.number("total");
      usage.cost.extra = c.extra();
    });
    usage.extra = r.extra();
  });
  return usage;
}

// Reads the timestamp common to every message: lenient when absent (older or
// hand-written pi files), strict about its type when present.
template <class M>
void read_timestamp(ObjectReader& r, M& message) {
  message.has_timestamp = r.has("timestamp");
  if (message.has_timestamp) message.timestamp = r.integer("timestamp");
  r.skip("timestamp");
}

UserMessage decode_user(ObjectReader& r) {
  UserMessage m;
  m.content = read_user_content(r, "content");
  read_timestamp(r, m);
  return m;
}

AssistantMessage decode_assistant(ObjectReader& r) {
  AssistantMessage m;
  if (const Json* content = r.required("content")) {
    m.content = r.take(decode_blocks<AssistantBlock>(*content, r.field("content"), kAssistantBlockTypes));
  }
  m.api = r.string("api");
  m.provider = r.string("provider");
  m.model = r.string("model");
  m.usage = read_usage(r);
  m.stop_reason = r.one_of<StopReason>("stopReason");
  m.error_message = r.optional_string("errorMessage");
  read_timestamp(r, m);
  return m;
}

ToolResultMessage decode_tool_result(ObjectReader& r) {
  ToolResultMessage m;
  m.tool_call_id = r.string("toolCallId");
  m.tool_name = r.string("toolName");
  m.content = read_user_blocks(r, "content");
  m.details = r.optional_value("details");
  m.is_error = r.boolean("isError");
  read_timestamp(r, m);
  return m;
}

CustomMessage decode_custom(ObjectReader& r) {
  CustomMessage m;
  m.custom_type = r.string("customType");
  m.content = read_user_content(r, "content");
  m.display = r.boolean("display");
  m.details = r.optional_value("details");
  read_timestamp(r, m);
  return m;
}

BranchSummaryMessage decode_branch_summary(ObjectReader& r) {
  BranchSummaryMessage m;
  m.summary = r.string("summary");
  m.from_id = r.string("fromId");
  read_timestamp(r, m);
  return m;
}

CompactionSummaryMessage decode_compaction_summary(ObjectReader& r) {
  CompactionSummaryMessage m;
  m.summary = r.string("summary");
  m.tokens_before = r.integer("tokensBefore");
  read_timestamp(r, m);
  return m;
}

BashExecutionMessage decode_bash(ObjectReader& r) {
  BashExecutionMessage m;
  m.command = r.string("command");
  m.output = r.string("output");
  if (const Json* exit_code = r.optional("exitCode"); exit_code != nullptr && exit_code->is_null()) {
    m.exit_code_null = true;
  } else {
    m.exit_code = r.optional_integer("exitCode");
  }
  m.cancelled = r.boolean("cancelled");
  m.truncated = r.boolean("truncated");
  m.full_output_path = r.optional_string("fullOutputPath");
  m.has_exclude_from_context = r.has("excludeFromContext");
  m.exclude_from_context = r.optional_boolean("excludeFromContext").value_or(false);
  read_timestamp(r, m);
  return m;
}

}  // namespace

// ---- public -----------------------------------------------------------------

std::string_view role_of(const AgentMessage& message) {
  return std::visit(Overloaded{
                        [](const UserMessage&) { return std::string_view("user"); },
                        [](const AssistantMessage&) { return std::string_view("assistant"); },
                        [](const ToolResultMessage&) { return std::string_view("toolResult"); },
                        [](const CustomMessage&) { return std::string_view("custom"); },
                        [](const BranchSummaryMessage&) { return std::string_view("branchSummary"); },
                        [](const CompactionSummaryMessage&) { return std::string_view("compactionSummary"); },
                        [](const BashExecutionMessage&) { return std::string_view("bashExecution"); },
                    },
                    message);
}

Json encode(const UserBlock& block) {
  return std::visit(Overloaded{[](const TextContent& b) { return encode_text(b); },
                               [](const ImageContent& b) { return encode_image(b); }},
                    block);
}

Json encode(const AssistantBlock& block) {
  return std::visit(Overloaded{[](const TextContent& b) { return encode_text(b); },
                               [](const ThinkingContent& b) { return encode_thinking(b); },
                               [](const ToolCall& b) { return encode_tool_call(b); }},
                    block);
}

Json encode(const AgentMessage& message) {
  return std::visit(Overloaded{
                        [](const UserMessage& m) { return encode_user(m); },
                        [](const AssistantMessage& m) { return encode_assistant(m); },
                        [](const ToolResultMessage& m) { return encode_tool_result(m); },
                        [](const CustomMessage& m) { return encode_custom(m); },
                        [](const BranchSummaryMessage& m) { return encode_branch_summary(m); },
                        [](const CompactionSummaryMessage& m) { return encode_compaction_summary(m); },
                        [](const BashExecutionMessage& m) { return encode_bash(m); },
                    },
                    message);
}

Json encode(const LlmMessage& message) {
  return std::visit([](const auto& m) { return encode(AgentMessage{m}); }, message);
}

Result<UserContent> decode_user_content(const Json& json, std::string_view path) {
  if (json.is_string()) return UserContent{json.get<std::string>()};
  if (!json.is_array()) return detail::invalid(path, "expected a string or an array");
  auto blocks = decode_user_blocks(json, std::string(path));
  if (!blocks) return std::unexpected(blocks.error());
  return UserContent{std::move(*blocks)};
}

Result<AgentMessage> decode_message(const Json& json, std::string_view path) {
  // The reader checks every access; this only guards against a nlohmann throw
  // this code did not foresee, which must not escape as an exception.
  try {
    ObjectReader r(json, std::string(path));
    std::string role = r.string("role");
    if (!r.ok()) return std::unexpected(r.status().error());
    auto decoded = [&](auto message) -> Result<AgentMessage> {
      message.extra = r.extra();
      if (!r.ok()) return std::unexpected(r.status().error());
      return AgentMessage{std::move(message)};
    };
    if (role == "user") return decoded(decode_user(r));
    if (role == "assistant") return decoded(decode_assistant(r));
    if (role == "toolResult") return decoded(decode_tool_result(r));
    if (role == "custom") return decoded(decode_custom(r));
    if (role == "branchSummary") return decoded(decode_branch_summary(r));
    if (role == "compactionSummary") return decoded(decode_compaction_summary(r));
    if (role == "bashExecution") return decoded(decode_bash(r));
    return detail::invalid(r.field("role"), fmt::format("unknown role '{}'", role));
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
