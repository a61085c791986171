// parse_partial_json: tool-call arguments while they are still arriving.
//
// A recursive descent over the prefix that builds the value as it goes. Each
// step reports whether its value ended properly; the first one that did not
// (the text ran out, or a byte no JSON could continue with) ends the parse,
// and every enclosing container is closed around what was read so far.

#include <optional>
#include <string>

#include "llm/tool_arguments.hpp"
#include "wire_support.hpp"

namespace cairn::wire {
namespace {

// As deep as finished arguments may nest; bounds the recursion. What is
// deeper is left out of the partial view, as the finished call keeps it raw.
constexpr int kMaxDepth = kMaxToolArgumentDepth;

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

std::optional<std::uint32_t> hex4(std::string_view digits) {
  std::uint32_t value = 0;
  for (char c : digits) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      value |= static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      value |= static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
  }
  return value;
}

class PartialParser {
 public:
  explicit PartialParser(std::string_view text) : text_(text) {}

  struct Parsed {
    Json value;
    bool complete = false;  // the value's text ended; false: cut short
  };

  // The value starting at the next non-blank byte; nullopt when nothing of
  // it is usable.
  std::optional<Parsed> value(int depth) {
    skip_blanks();
    if (at_end()) return std::nullopt;
    char c = text_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxDepth) return std::nullopt;
      return c == '{' ? object(depth) : array(depth);
    }
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    return literal();
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }

  void skip_blanks() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) ++pos_;
  }

  // Steps to the next member of `container`, which `close` ends: true at
  // the member, false when there is none: the container has closed (and is
  // complete) or the text is cut short or broken before the member.
  bool next_member(Parsed& container, char close, bool first) {
    skip_blanks();
    if (at_end()) return false;
    if (text_[pos_] == close) {
      ++pos_;
      container.complete = true;
      return false;
    }
    if (!first) {
      if (text_[pos_] != ',') return false;
      ++pos_;
    }
    return true;
  }

  std::optional<Parsed> object(int depth) {
    ++pos_;  // '{'
    Parsed out{Json::object(), false};
    for (bool first = true;; first = false) {
      if (!next_member(out, '}', first)) return out;
      skip_blanks();
      if (at_end() || text_[pos_] != '"') return out;
      std::optional<Parsed> key = string();
      if (!key || !key->complete) return out;  // a key cut short names nothing yet
      skip_blanks();
      if (at_end() || text_[pos_] != ':') return out;
      ++pos_;
      std::optional<Parsed> member = value(depth + 1);
      if (!member) return out;
      out.value[key->value.get_ref<const std::string&>()] = std::move(member->value);
      if (!member->complete) return out;
    }
  }

  std::optional<Parsed> array(int depth) {
    ++pos_;  // '['
    Parsed out{Json::array(), false};
    for (bool first = true;; first = false) {
      if (!next_member(out, ']', first)) return out;
      std::optional<Parsed> element = value(depth + 1);
      if (!element) return out;
      out.value.push_back(std::move(element->value));
      if (!element->complete) return out;
    }
  }

  // A string, decoded; cut short before an unfinished escape or UTF-8
  // sequence and before any byte JSON forbids there.
  std::optional<Parsed> string() {
    ++pos_;  // '"'
    std::string out;
    auto cut = [&] { return Parsed{Json(std::move(out)), false}; };
    while (!at_end()) {
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return Parsed{Json(std::move(out)), true};
      }
      if (c == '\\') {
        if (pos_ + 1 >= text_.size()) return cut();
        char e = text_[pos_ + 1];
        static constexpr std::string_view kSimple = "\"\\/bfnrt";
        static constexpr std::string_view kDecoded = "\"\\/\b\f\n\r\t";
        if (std::size_t i = kSimple.find(e); i != std::string_view::npos) {
          out += kDecoded[i];
          pos_ += 2;
          continue;
        }
        if (e != 'u' || pos_ + 6 > text_.size()) return cut();
        std::optional<std::uint32_t> unit = hex4(text_.substr(pos_ + 2, 4));
        if (!unit || (*unit >= 0xDC00 && *unit <= 0xDFFF)) return cut();  // not hex, or a lone low surrogate
        if (*unit >= 0xD800 && *unit <= 0xDBFF) {
          // A high surrogate is only a character with the low one after it.
          if (pos_ + 12 > text_.size() || text_.substr(pos_ + 6, 2) != "\\u") return cut();
          std::optional<std::uint32_t> low = hex4(text_.substr(pos_ + 8, 4));
          if (!low || *low < 0xDC00 || *low > 0xDFFF) return cut();
          append_utf8(out, 0x10000 + ((*unit - 0xD800) << 10) + (*low - 0xDC00));
          pos_ += 12;
        } else {
          append_utf8(out, *unit);
          pos_ += 6;
        }
        continue;
      }
      auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20) return cut();  // a raw control character
      if (byte < 0x80) {
        out += c;
        ++pos_;
        continue;
      }
      int length = utf8_sequence(text_.substr(pos_));
      if (length <= 0) return cut();
      out.append(text_.substr(pos_, static_cast<std::size_t>(length)));
      pos_ += static_cast<std::size_t>(length);
    }
    return cut();
  }

  // A number; at the end of the text it may be a prefix of a longer one and
  // is read as far as it is one already ("12." as 12, "1e" as 1; "-" not at
  // all), so that a value once shown does not vanish as more arrives.
  std::optional<Parsed> number() {
    std::size_t start = pos_;
    while (!at_end() && std::string_view("0123456789+-.eE").find(text_[pos_]) != std::string_view::npos) ++pos_;
    std::string_view digits = text_.substr(start, pos_ - start);
    if (at_end()) {
      while (!digits.empty() && std::string_view("+-.eE").find(digits.back()) != std::string_view::npos) {
        digits.remove_suffix(1);
      }
    }
    Json value = Json::parse(digits, nullptr, false);
    if (digits.empty() || value.is_discarded()) return std::nullopt;
    return Parsed{std::move(value), !at_end()};
  }

  std::optional<Parsed> literal() {
    for (auto [word, value] : {std::pair<std::string_view, Json>{"true", true}, {"false", false}, {"null", nullptr}}) {
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += word.size();
        return Parsed{value, true};
      }
    }
    return std::nullopt;  // cut short ("tr") or not a literal at all
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Json parse_partial_json(std::string_view text) {
  try {
    // At the end of a stream the whole text is JSON; before that it rarely
    // ends like a whole value, and trying would scan every prefix twice.
    std::size_t last = text.find_last_not_of(" \t\r\n");
    if (last != std::string_view::npos && (text[last] == '}' || text[last] == ']') &&
        !nests_deeper_than(text, kMaxDepth)) {
      Json whole = Json::parse(text, nullptr, false);
      if (!whole.is_discarded()) return whole;
    }
    PartialParser parser(text);
    std::optional<PartialParser::Parsed> parsed = parser.value(0);
    if (!parsed) return Json::object();
    return std::move(parsed->value);
  } catch (...) {
    // Only allocation can fail here; a partial view is never worth a crash.
    return Json::object();
  }
}

}  // namespace cairn::wire
