#include "llm/tool_arguments.hpp"

#include <fmt/format.h>

#include "wire_support.hpp"

namespace cairn {
namespace {

// A parser's message can quote what it read, which may be most of the text.
std::string shortened(std::string text) {
  constexpr std::size_t kLongest = 300;
  if (text.size() <= kLongest) return text;
  text.resize(utf8_floor(text, kLongest));
  return text + "…";
}

}  // namespace

namespace wire {

bool nests_deeper_than(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // whatever is escaped, it neither ends the string nor opens anything
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if (c == '}' || c == ']') {
      --depth;  // below zero only in text that is not JSON, which the parse then says
    }
  }
  return false;
}

}  // namespace wire

ToolArguments read_tool_arguments(std::string_view text) {
  if (wire::blank(text)) return {};
  if (!wire::nests_deeper_than(text, kMaxToolArgumentDepth)) {
    Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded() && parsed.is_object()) return ToolArguments{.arguments = std::move(parsed)};
  }
  // The decoders hand over text from parsed JSON strings, valid UTF-8; the
  // log refuses anything else, so this is the last place to make sure.
  return ToolArguments{.raw = to_valid_utf8(text)};
}

std::string tool_arguments_problem(std::string_view text) {
  if (wire::blank(text)) return {};
  if (wire::nests_deeper_than(text, kMaxToolArgumentDepth)) {
    return fmt::format("nested deeper than {} levels", kMaxToolArgumentDepth);
  }
  try {
    Json parsed = Json::parse(text);
    if (parsed.is_object()) return {};
    return fmt::format("a JSON {}, not an object", parsed.type_name());
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 12: …"
    std::string_view what = e.what();
    if (std::size_t at = what.find("parse error "); at != std::string_view::npos) {
      what.remove_prefix(at + std::string_view("parse error ").size());
    }
    return shortened(to_valid_utf8(fmt::format("not valid JSON {}", what)));
  }
}

}  // namespace cairn
