// Messages written as JSON text straight from their typed form: the bytes of
// encode(message).dump(), without the JSON value in between. Printing a long
// context (`cairn context --json`) is then one pass over its messages.
//
// It follows message_codec.cpp's encoders key for key and nlohmann's
// serializer byte for byte (its string escaping, its shortest round-trip
// doubles). What it does not write itself — a message or block with extra
// keys, which the encoder merges, or a string that is not valid UTF-8, which
// the serializer refuses — goes through encode(message).dump(), so the
// result is always that call's.
#include <simdjson.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"
#include "cairn/overloaded.hpp"

namespace cairn {
namespace {

// Whether any of the 8 bytes at `at` must be escaped in a JSON string: a
// control character, a quote or a backslash. Each test is the classic
// "has a zero byte" / "has a byte below n" word trick, exact for n <= 128.
bool needs_escape(const char* at) {
  std::uint64_t word;
  std::memcpy(&word, at, sizeof word);
  constexpr std::uint64_t kOnes = 0x0101010101010101, kHighs = 0x8080808080808080;
  auto has_zero = [&](std::uint64_t v) { return ((v - kOnes) & ~v & kHighs) != 0; };
  const bool control = ((word - 0x20 * kOnes) & ~word & kHighs) != 0;
  return control || has_zero(word ^ ('"' * kOnes)) || has_zero(word ^ ('\\' * kOnes));
}

// False when the text is not valid UTF-8 (nothing is written then).
bool append_string(std::string& out, std::string_view text) {
  if (!simdjson::validate_utf8(text.data(), text.size())) return false;
  out.push_back('"');
  std::size_t plain = 0;  // start of the run of bytes copied as they are
  for (std::size_t i = 0; i < text.size(); ++i) {
    // Most text needs no escape: eight bytes at a time past it.
    while (i + 8 <= text.size() && !needs_escape(text.data() + i)) i += 8;
    if (i == text.size()) break;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(escaped, sizeof escaped);
      }
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out.push_back('"');
  return true;
}

void append_integer(std::string& out, std::int64_t value) {
  std::array<char, 24> buffer;
  const char* end = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value).ptr;
  out.append(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
}

// A cost as detail::number_json writes it: integral values as integers, the
// rest as nlohmann writes a double.
void append_number(std::string& out, double value) {
  constexpr double kExactLimit = 9007199254740992.0;  // 2^53, as number_json
  if (std::isfinite(value) && std::trunc(value) == value && std::fabs(value) <= kExactLimit) {
    append_integer(out, static_cast<std::int64_t>(value));
  } else if (!std::isfinite(value)) {
    out += "null";
  } else {
    std::array<char, 64> buffer;
    char* end = nlohmann::detail::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    out.append(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
  }
}

// Appends `"key":` (keys are known ASCII names).
void key(std::string& out, std::string_view name, bool first = false) {
  if (!first) out.push_back(',');
  out.push_back('"');
  out += name;
  out += "\":";
}

bool no_extra(const Json& extra) { return extra.is_null() || (extra.is_object() && extra.empty()); }

class Writer {
 public:
  // `strict`: a value JSON cannot represent (NaN, infinity) is refused rather
  // than written as null, as prepare() needs before a record is stored.
  explicit Writer(std::string& out, bool strict = false) : out_(out), strict_(strict) {}
  bool ok() const { return ok_; }

  void string(std::string_view name, std::string_view text, bool first = false) {
    key(out_, name, first);
    ok_ = ok_ && append_string(out_, text);
  }
  void json(std::string_view name, const Json& value) {
    key(out_, name);
    if (!strict_) {
      out_ += value.dump();
      return;
    }
    if (!is_lossless(value)) {
      ok_ = false;
      return;
    }
    try {
      out_ += value.dump(-1, ' ', false, Json::error_handler_t::strict);
    } catch (const Json::exception&) {  // a string that is not UTF-8
      ok_ = false;
    }
  }

  void block(const TextContent& b) {
    ok_ = ok_ && no_extra(b.extra);
    out_.push_back('{');
    string("type", "text", true);
    string("text", b.text);
    if (b.text_signature) string("textSignature", *b.text_signature);
    out_.push_back('}');
  }
  void block(const ImageContent& b) {
    ok_ = ok_ && no_extra(b.extra);
    out_.push_back('{');
    string("type", "image", true);
    string("data", b.data);
    string("mimeType", b.mime_type);
    out_.push_back('}');
  }
  void block(const ThinkingContent& b) {
    ok_ = ok_ && no_extra(b.extra);
    out_.push_back('{');
    string("type", "thinking", true);
    string("thinking", b.thinking);
    if (b.thinking_signature) string("thinkingSignature", *b.thinking_signature);
    if (b.redacted) {
      key(out_, "redacted");
      out_ += *b.redacted ? "true" : "false";
    }
    out_.push_back('}');
  }
  void block(const ToolCall& b) {
    ok_ = ok_ && no_extra(b.extra);
    out_.push_back('{');
    string("type", "toolCall", true);
    string("id", b.id);
    string("name", b.name);
    json("arguments", b.arguments);
    if (b.raw_arguments) string("rawArguments", *b.raw_arguments);
    out_.push_back('}');
  }

  template <class Block>
  void blocks(std::string_view name, const std::vector<Block>& list) {
    key(out_, name);
    out_.push_back('[');
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i > 0) out_.push_back(',');
      std::visit([&](const auto& b) { block(b); }, list[i]);
    }
    out_.push_back(']');
  }

  void count(std::string_view name, std::int64_t value, bool first = false) {
    key(out_, name, first);
    append_integer(out_, value);
  }
  void number(std::string_view name, double value, bool first = false) {
    key(out_, name, first);
    ok_ = ok_ && (!strict_ || std::isfinite(value));
    append_number(out_, value);
  }

  void usage(const Usage& u) {
    ok_ = ok_ && no_extra(u.extra) && no_extra(u.cost.extra);
    key(out_, "usage");
    out_.push_back('{');
    count("input", u.input, true);
    count("output", u.output);
    count("cacheRead", u.cache_read);
    count("cacheWrite", u.cache_write);
    count("totalTokens", u.total_tokens);
    key(out_, "cost");
    out_.push_back('{');
    number("input", u.cost.input, true);
    number("output", u.cost.output);
    number("cacheRead", u.cost.cache_read);
    number("cacheWrite", u.cost.cache_write);
    number("total", u.cost.total);
    out_ += "}}";
  }

  // Every message ends with its timestamp (when it had one); extra keys
  // would follow, and a message with any goes through the encoder.
  template <class M>
  void finish(const M& m) {
    ok_ = ok_ && no_extra(m.extra);
    if (m.has_timestamp) count("timestamp", m.timestamp);
    out_.push_back('}');
  }

  void message(const UserMessage& m) {
    out_.push_back('{');
    string("role", "user", true);
    if (const auto* text = std::get_if<std::string>(&m.content)) {
      string("content", *text);
    } else {
      blocks("content", std::get<std::vector<UserBlock>>(m.content));
    }
    finish(m);
  }
  void message(const AssistantMessage& m) {
    out_.push_back('{');
    string("role", "assistant", true);
    blocks("content", m.content);
    string("api", m.api);
    string("provider", m.provider);
    string("model", m.model);
    usage(m.usage);
    string("stopReason", to_string(m.stop_reason));
    if (m.error_message) string("errorMessage", *m.error_message);
    finish(m);
  }
  void message(const ToolResultMessage& m) {
    out_.push_back('{');
    string("role", "toolResult", true);
    string("toolCallId", m.tool_call_id);
    string("toolName", m.tool_name);
    blocks("content", m.content);
    if (m.details) json("details", *m.details);
    key(out_, "isError");
    out_ += m.is_error ? "true" : "false";
    finish(m);
  }

  // A message entry as encode_tree writes it, with seq 0 for the leader to
  // overwrite (session.cpp).
  template <class M>
  void entry(const TreeEntry& e, const M& m) {
    ok_ = ok_ && no_extra(e.extra);
    out_ += R"({"type":"message","seq":0)";
    string("id", e.id);
    key(out_, "parentId");
    if (e.parent_id) {
      ok_ = ok_ && append_string(out_, *e.parent_id);
    } else {
      out_ += "null";
    }
    string("timestamp", e.timestamp);
    if (e.ref) string("ref", *e.ref);
    key(out_, "message");
    message(m);
    out_.push_back('}');
  }

 private:
  std::string& out_;
  bool strict_ = false;
  bool ok_ = true;
};

}  // namespace

namespace {

template <class M>
void write_or_encode(std::string& out, const M& message) {
  const std::size_t start = out.size();
  Writer writer(out);
  writer.message(message);
  if (writer.ok()) return;
  out.resize(start);
  out += encode(LlmMessage(message)).dump();
}

}  // namespace

void append_json(std::string& out, const LlmMessage& message) {
  std::visit([&](const auto& m) { write_or_encode(out, m); }, message);
}

bool append_entry_line(std::string& out, const TreeEntry& entry) {
  const auto* body = std::get_if<MessageBody>(&entry.body);
  if (!body) return false;
  const std::size_t start = out.size();
  Writer writer(out, /*strict=*/true);
  const bool written = std::visit(Overloaded{
                                      [&](const UserMessage& m) { return writer.entry(entry, m), true; },
                                      [&](const AssistantMessage& m) { return writer.entry(entry, m), true; },
                                      [&](const ToolResultMessage& m) { return writer.entry(entry, m), true; },
                                      [&](const auto&) { return false; },
                                  },
                                  body->message);
  if (written && writer.ok()) return true;
  out.resize(start);
  return false;
}

bool append_llm_json(std::string& out, const AgentMessage& message) {
  return std::visit(Overloaded{
                        [&](const UserMessage& m) { return write_or_encode(out, m), true; },
                        [&](const AssistantMessage& m) { return write_or_encode(out, m), true; },
                        [&](const ToolResultMessage& m) { return write_or_encode(out, m), true; },
                        [&](const auto&) {
                          auto converted = to_llm(message);
                          if (converted) append_json(out, *converted);
                          return converted.has_value();
                        },
                    },
                    message);
}

}  // namespace cairn
