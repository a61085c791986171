// Messages and content blocks, shaped as pi's session format v3 (pi-ai's
// Message types plus the coding agent's custom roles), so that a pi session
// file decodes into these types and re-encodes to the same JSON.
//
// Every struct keeps the fields it does not know in `extra`, in their original
// order: a newer writer's additions survive a round trip through this build.
// `extra` is null when there are none (an object once there are): an empty
// object would cost an allocation for every block of every message read, the
// greater part of a long context's allocations. Null and {} mean the same.
//
// Every message also has `has_timestamp`: false when it was read without a
// `timestamp` (lenient pi import); it then reads as 0 and is written back
// without one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"

namespace cairn {

struct TextContent {
  std::string text;
  std::optional<std::string> text_signature;
  Json extra;  // null or an object (see above)
};

struct ImageContent {
  std::string data;  // base64
  std::string mime_type;
  Json extra;  // null or an object (see above)
};

struct ThinkingContent {
  std::string thinking;
  std::optional<std::string> thinking_signature;
  std::optional<bool> redacted;
  Json extra;  // null or an object (see above)
};

struct ToolCall {
  std::string id;
  std::string name;
  Json arguments = Json::object();
  Json extra;  // null or an object (see above)
  // The arguments as the model sent them, when that text is not a JSON
  // object (`arguments` is then empty): the call gets an error result
  // saying so, and the text goes back to the provider as it came. Last, so
  // that no positional initializer that ends with `extra` changes meaning.
  std::optional<std::string> raw_arguments;
};

using UserBlock = std::variant<TextContent, ImageContent>;
using AssistantBlock = std::variant<TextContent, ThinkingContent, ToolCall>;

// pi allows user and custom message content as a plain string or as blocks;
// which one was written is kept so the record re-encodes identically.
using UserContent = std::variant<std::string, std::vector<UserBlock>>;

struct Cost {
  double input = 0, output = 0, cache_read = 0, cache_write = 0, total = 0;
  Json extra;  // null or an object (see above)
};

struct Usage {
  std::int64_t input = 0, output = 0, cache_read = 0, cache_write = 0, total_tokens = 0;
  Cost cost;
  Json extra;  // null or an object (see above)
};

// Adds what `usage` was billed — its token counts and total cost — to `sum`
// (an operation's spend, a subagent's).
inline void add_usage(Usage& sum, const Usage& usage) {
  sum.input += usage.input;
  sum.output += usage.output;
  sum.cache_read += usage.cache_read;
  sum.cache_write += usage.cache_write;
  sum.total_tokens += usage.total_tokens;
  sum.cost.total += usage.cost.total;
}

enum class StopReason { stop, length, tool_use, error, aborted };

struct UserMessage {
  UserContent content;
  std::int64_t timestamp = 0;  // Unix ms
  Json extra;  // null or an object (see above)
  bool has_timestamp = true;  // see the note at the top
};

struct AssistantMessage {
  std::vector<AssistantBlock> content;
  std::string api;
  std::string provider;
  std::string model;
  Usage usage;
  StopReason stop_reason = StopReason::stop;
  std::optional<std::string> error_message;
  std::int64_t timestamp = 0;
  Json extra;  // null or an object (see above)
  bool has_timestamp = true;  // see the note at the top
};

struct ToolResultMessage {
  std::string tool_call_id;
  std::string tool_name;
  std::vector<UserBlock> content;
  std::optional<Json> details;
  bool is_error = false;
  std::int64_t timestamp = 0;
  Json extra;  // null or an object (see above)
  bool has_timestamp = true;  // see the note at the top
};

// An application's own message (pi's sendMessage / hookMessage). Projects to a
// user message for the model.
struct CustomMessage {
  std::string custom_type;
  UserContent content;
  bool display = true;
  std::optional<Json> details;
  std::int64_t timestamp = 0;
  Json extra;  // null or an object (see above)
  bool has_timestamp = true;  // see the note at the top
};

struct BranchSummaryMessage {
  std::string summary;
  std::string from_id;
  std::int64_t timestamp = 0;
  Json extra;  // null or an object (see above)
  bool has_timestamp = true;  // see the note at the top
};

struct CompactionSummaryMessage {
  std::string summary;
  std::int64_t tokens_before = 0;
  std::int64_t timestamp = 0;
  Json extra;  // null or an object (see above)
  bool has_timestamp = true;  // see the note at the top
};

// pi's `!command` record: a shell command the user ran, shown to the model as
// a user message unless excluded.
struct BashExecutionMessage {
  std::string command;
  std::string output;
  std::optional<std::int64_t> exit_code;
  bool cancelled = false;
  bool truncated = false;
  std::optional<std::string> full_output_path;
  bool exclude_from_context = false;
  std::int64_t timestamp = 0;
  Json extra;  // null or an object (see above)
  bool has_timestamp = true;  // see the note at the top
  // How an absent exit code and a false excludeFromContext were written
  // (older pi writes `"exitCode": null`), so the record re-encodes identically.
  bool exit_code_null = false;
  bool has_exclude_from_context = false;
};

using AgentMessage = std::variant<UserMessage, AssistantMessage, ToolResultMessage, CustomMessage,
                                  BranchSummaryMessage, CompactionSummaryMessage, BashExecutionMessage>;

// The three roles a provider understands.
using LlmMessage = std::variant<UserMessage, AssistantMessage, ToolResultMessage>;

std::string_view to_string(StopReason reason);
std::optional<StopReason> parse_stop_reason(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<StopReason> = true;

// How much a reasoning model thinks before it answers: pi's levels, which a
// thinking_level_change records on a branch and each provider maps to its own
// effort or token budget ("off": no thinking asked for).
enum class ThinkingLevel { off, minimal, low, medium, high, xhigh };
std::string_view to_string(ThinkingLevel level);
std::optional<ThinkingLevel> parse_thinking_level(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<ThinkingLevel> = true;

std::string_view role_of(const AgentMessage& message);

// Codec. Decoding checks the shape (JSON types, required keys) and names the
// offending field in the error (`path` prefixes it, e.g. "message.content[2]");
// value rules such as non-empty tool call ids are check_fields' (index.hpp).
Json encode(const AgentMessage& message);
Json encode(const LlmMessage& message);
Json encode(const UserBlock& block);
Json encode(const AssistantBlock& block);
Result<AgentMessage> decode_message(const Json& json, std::string_view path = "message");
// Appends encode(message).dump() to `out`, written straight from the typed
// message (no JSON value is built for it): the same bytes, faster.
void append_json(std::string& out, const LlmMessage& message);
// The same for to_llm(message), without copying a message that passes
// through unchanged; false (nothing appended) when the model never sees it.
bool append_llm_json(std::string& out, const AgentMessage& message);
Result<UserContent> decode_user_content(const Json& json, std::string_view path);

// pi's convertToLlm: custom, branch summary, compaction summary and bash
// execution messages become user messages; the rest pass through.
std::vector<LlmMessage> convert_to_llm(const std::vector<AgentMessage>& messages);
// The same for one message; nullopt: the model never sees it.
std::optional<LlmMessage> to_llm(const AgentMessage& message);

extern const char* const kCompactionSummaryPrefix;
extern const char* const kCompactionSummarySuffix;
extern const char* const kBranchSummaryPrefix;
extern const char* const kBranchSummarySuffix;

}  // namespace cairn
