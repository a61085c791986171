// The fast path of decoding a stored line: message entries (nearly every
// line of a conversation, and every line build_context, tree and verify read
// whole) decoded straight from the line's bytes with simdjson, without a
// nlohmann DOM in between.
//
// It takes only what it is sure the general decoder (record_codec.cpp, over
// ObjectReader) would decode to the same value: the keys cairn and pi write,
// each once, of the types they must have. Anything else — another record
// type, an unknown key (kept in `extra` there), a duplicate key (nlohmann
// keeps the last), a value of the wrong type, a "-0" (an integer to nlohmann,
// a double here) — declines, and the general decoder decides: every error,
// and every lenient reading, stays that decoder's.
#include <simdjson.h>

#include <array>
#include <cmath>
#include <limits>

#include "log/checksum.hpp"
#include "log/index.hpp"
#include "cairn/log/record.hpp"

namespace cairn {
namespace {

using simdjson::SUCCESS;
using simdjson::dom::element;
using simdjson::dom::element_type;

// An object's fields by name: `keys` are the ones this path takes. False for
// anything but an object of those keys, each at most once.
template <std::size_t N>
bool fields_of(element value, const std::array<std::string_view, N>& keys, std::array<element, N>& out,
               std::array<bool, N>& present) {
  simdjson::dom::object object;
  if (value.get_object().get(object) != SUCCESS) return false;
  for (auto field : object) {
    std::size_t i = 0;
    while (i < N && keys[i] != field.key) ++i;
    if (i == N || present[i]) return false;
    out[i] = field.value;
    present[i] = true;
  }
  return true;
}

// The fields of one object, read by key index.
template <std::size_t N>
struct Fields {
  std::array<element, N> value{};
  std::array<bool, N> present{};

  bool read(element object, const std::array<std::string_view, N>& keys) {
    return fields_of(object, keys, value, present);
  }
  bool has(std::size_t i) const { return present[i]; }

  bool string(std::size_t i, std::string& out) const {
    std::string_view text;
    if (!present[i] || value[i].get_string().get(text) != SUCCESS) return false;
    out.assign(text);
    return true;
  }
  bool optional_string(std::size_t i, std::optional<std::string>& out) const {
    if (!present[i]) return true;
    std::string_view text;
    if (value[i].get_string().get(text) != SUCCESS) return false;
    out.emplace(text);
    return true;
  }
  bool nullable_string(std::size_t i, std::optional<std::string>& out) const {
    if (!present[i]) return false;
    if (value[i].is_null()) return true;
    return optional_string(i, out);
  }
  // A JSON integer within int64 (nlohmann reads either kind the same).
  bool integer(std::size_t i, std::int64_t& out) const {
    return present[i] && value[i].type() == element_type::INT64 && value[i].get_int64().get(out) == SUCCESS;
  }
  bool count(std::size_t i, std::int64_t& out) const { return integer(i, out) && out >= 0; }
  bool number(std::size_t i, double& out) const {
    if (!present[i]) return false;
    switch (value[i].type()) {
      case element_type::INT64: {
        std::int64_t n = 0;
        if (value[i].get_int64().get(n) != SUCCESS) return false;
        out = static_cast<double>(n);
        return true;
      }
      case element_type::UINT64: {
        std::uint64_t n = 0;
        if (value[i].get_uint64().get(n) != SUCCESS) return false;
        out = static_cast<double>(n);
        return true;
      }
      case element_type::DOUBLE:
        if (value[i].get_double().get(out) != SUCCESS) return false;
        return !(out == 0 && std::signbit(out));  // "-0": see the note at the top
      default:
        return false;
    }
  }
  bool boolean(std::size_t i, bool& out) const { return present[i] && value[i].get_bool().get(out) == SUCCESS; }
  bool optional_boolean(std::size_t i, std::optional<bool>& out) const {
    if (!present[i]) return true;
    bool flag = false;
    if (value[i].get_bool().get(flag) != SUCCESS) return false;
    out = flag;
    return true;
  }
  // A message's timestamp: lenient when absent, an integer when present.
  template <class M>
  bool timestamp(std::size_t i, M& message) const {
    message.has_timestamp = present[i];
    return !present[i] || integer(i, message.timestamp);
  }
};

// Any JSON value as nlohmann's parser would have built it: non-negative
// integers unsigned, negative ones signed, keys in their order.
bool to_json(element value, Json& out, int depth) {
  if (depth > 64) return false;
  switch (value.type()) {
    case element_type::OBJECT: {
      out = Json::object();
      for (auto field : simdjson::dom::object(value)) {
        // A duplicate key: nlohmann keeps the last; decline rather than copy that.
        if (out.size() > 32) return false;
        if (out.contains(field.key)) return false;
        Json child;
        if (!to_json(field.value, child, depth + 1)) return false;
        out.emplace(std::string(field.key), std::move(child));
      }
      return true;
    }
    case element_type::ARRAY: {
      out = Json::array();
      for (element item : simdjson::dom::array(value)) {
        Json child;
        if (!to_json(item, child, depth + 1)) return false;
        out.push_back(std::move(child));
      }
      return true;
    }
    case element_type::STRING:
      out = std::string(std::string_view(value));
      return true;
    case element_type::INT64: {
      const std::int64_t n = std::int64_t(value);
      if (n >= 0) {
        out = static_cast<std::uint64_t>(n);
      } else {
        out = n;
      }
      return true;
    }
    case element_type::UINT64:
      out = std::uint64_t(value);
      return true;
    case element_type::DOUBLE: {
      const double d = double(value);
      if (d == 0 && std::signbit(d)) return false;
      out = d;
      return true;
    }
    case element_type::BOOL:
      out = bool(value);
      return true;
    case element_type::NULL_VALUE:
      out = nullptr;
      return true;
  }
  return false;
}

constexpr std::array<std::string_view, 3> kTextKeys{"type", "text", "textSignature"};
constexpr std::array<std::string_view, 3> kImageKeys{"type", "data", "mimeType"};
constexpr std::array<std::string_view, 4> kThinkingKeys{"type", "thinking", "thinkingSignature", "redacted"};
constexpr std::array<std::string_view, 5> kToolCallKeys{"type", "id", "name", "arguments", "rawArguments"};

std::string_view block_type(element block) {
  std::string_view type;
  if (block.at_key("type").get_string().get(type) != SUCCESS) return {};
  return type;
}

bool text_block(element block, TextContent& out) {
  Fields<3> f;
  return f.read(block, kTextKeys) && f.string(1, out.text) && f.optional_string(2, out.text_signature);
}

bool image_block(element block, ImageContent& out) {
  Fields<3> f;
  return f.read(block, kImageKeys) && f.string(1, out.data) && f.string(2, out.mime_type);
}

// An array of content blocks, each appended to `out` by read(type, item, out)
// (false: not a block this path takes).
template <class Block, class Read>
bool blocks(element value, std::vector<Block>& out, Read&& read) {
  simdjson::dom::array array;
  if (value.get_array().get(array) != SUCCESS) return false;
  out.reserve(array.size());
  for (element item : array) {
    if (!read(block_type(item), item, out)) return false;
  }
  return true;
}

bool user_blocks(element value, std::vector<UserBlock>& out) {
  return blocks(value, out, [](std::string_view type, element item, std::vector<UserBlock>& list) {
    if (type == "text") return text_block(item, std::get<TextContent>(list.emplace_back(TextContent{})));
    if (type == "image") return image_block(item, std::get<ImageContent>(list.emplace_back(ImageContent{})));
    return false;
  });
}

bool user_content(element value, UserContent& out) {
  std::string_view text;
  if (value.get_string().get(text) == SUCCESS) {
    out = std::string(text);
    return true;
  }
  return user_blocks(value, out.emplace<std::vector<UserBlock>>());
}

bool assistant_blocks(element value, std::vector<AssistantBlock>& out) {
  return blocks(value, out, [](std::string_view type, element item, std::vector<AssistantBlock>& list) {
    if (type == "text") return text_block(item, std::get<TextContent>(list.emplace_back(TextContent{})));
    if (type == "thinking") {
      auto& block = std::get<ThinkingContent>(list.emplace_back(ThinkingContent{}));
      Fields<4> f;
      return f.read(item, kThinkingKeys) && f.string(1, block.thinking) &&
             f.optional_string(2, block.thinking_signature) && f.optional_boolean(3, block.redacted);
    }
    if (type == "toolCall") {
      auto& block = std::get<ToolCall>(list.emplace_back(ToolCall{}));
      Fields<5> f;
      return f.read(item, kToolCallKeys) && f.string(1, block.id) && f.string(2, block.name) && f.has(3) &&
             f.value[3].type() == element_type::OBJECT && to_json(f.value[3], block.arguments, 0) &&
             f.optional_string(4, block.raw_arguments);
    }
    return false;
  });
}

constexpr std::array<std::string_view, 6> kUsageKeys{"input", "output", "cacheRead", "cacheWrite", "totalTokens",
                                                     "cost"};
constexpr std::array<std::string_view, 5> kCostKeys{"input", "output", "cacheRead", "cacheWrite", "total"};

bool usage(element value, Usage& out) {
  Fields<6> f;
  Fields<5> c;
  return f.read(value, kUsageKeys) && f.count(0, out.input) && f.count(1, out.output) &&
         f.count(2, out.cache_read) && f.count(3, out.cache_write) && f.count(4, out.total_tokens) && f.has(5) &&
         c.read(f.value[5], kCostKeys) && c.number(0, out.cost.input) && c.number(1, out.cost.output) &&
         c.number(2, out.cost.cache_read) && c.number(3, out.cost.cache_write) && c.number(4, out.cost.total);
}

constexpr std::array<std::string_view, 3> kUserKeys{"role", "content", "timestamp"};
constexpr std::array<std::string_view, 9> kAssistantKeys{"role",  "content",    "api",          "provider", "model",
                                                         "usage", "stopReason", "errorMessage", "timestamp"};
constexpr std::array<std::string_view, 7> kToolResultKeys{"role",    "toolCallId", "toolName", "content",
                                                          "details", "isError",    "timestamp"};

bool message(element value, AgentMessage& out) {
  std::string_view role;
  if (value.at_key("role").get_string().get(role) != SUCCESS) return false;
  if (role == "user") {
    auto& m = out.emplace<UserMessage>();
    Fields<3> f;
    return f.read(value, kUserKeys) && f.has(1) && user_content(f.value[1], m.content) && f.timestamp(2, m);
  }
  if (role == "assistant") {
    auto& m = out.emplace<AssistantMessage>();
    Fields<9> f;
    std::string stop_reason;
    if (!f.read(value, kAssistantKeys) || !f.has(1) || !assistant_blocks(f.value[1], m.content) ||
        !f.string(2, m.api) || !f.string(3, m.provider) || !f.string(4, m.model) || !f.has(5) ||
        !usage(f.value[5], m.usage) || !f.string(6, stop_reason) || !f.optional_string(7, m.error_message) ||
        !f.timestamp(8, m)) {
      return false;
    }
    const auto parsed = parse_stop_reason(stop_reason);
    if (!parsed) return false;
    m.stop_reason = *parsed;
    return true;
  }
  if (role == "toolResult") {
    auto& m = out.emplace<ToolResultMessage>();
    Fields<7> f;
    if (!f.read(value, kToolResultKeys) || !f.string(1, m.tool_call_id) || !f.string(2, m.tool_name) ||
        !f.has(3) || !user_blocks(f.value[3], m.content) || !f.boolean(5, m.is_error) || !f.timestamp(6, m)) {
      return false;
    }
    if (f.has(4) && !to_json(f.value[4], m.details.emplace(), 0)) return false;
    return true;
  }
  return false;
}

constexpr std::array<std::string_view, 8> kEntryKeys{"type", "seq", "id", "parentId", "timestamp", "ref", "message",
                                                     kChecksumKey};

}  // namespace

std::optional<Record> decode_common_line(std::string_view line) {
  thread_local simdjson::dom::parser parser;
  element doc;
  if (parser.parse(line.data(), line.size(), /*realloc_if_needed=*/true).get(doc) != SUCCESS) return std::nullopt;
  Fields<8> f;
  std::string_view type;
  if (!f.read(doc, kEntryKeys) || !f.has(0) || f.value[0].get_string().get(type) != SUCCESS || type != "message") {
    return std::nullopt;
  }
  Record record;
  if (!f.integer(1, record.seq) || record.seq < 0) return std::nullopt;
  TreeEntry& entry = record.body.emplace<TreeEntry>();
  MessageBody& body = entry.body.emplace<MessageBody>();
  if (!f.string(2, entry.id) || !f.nullable_string(3, entry.parent_id) || !f.string(4, entry.timestamp) ||
      !f.optional_string(5, entry.ref) || !f.has(6) || !message(f.value[6], body.message)) {
    return std::nullopt;
  }
  return record;
}

std::optional<Result<Record>> decode_record_line(std::string_view line) {
  if (auto record = decode_common_line(line)) {
    if (auto status = check_fields(*record); !status) return Result<Record>(std::unexpected(status.error()));
    return Result<Record>(std::move(*record));
  }
  const Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return std::nullopt;
  return decode_record(json);
}

}  // namespace cairn
