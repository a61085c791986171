#include "request_json.hpp"

#include <optional>

#include <fmt/format.h>

namespace cairn::serve {

namespace {

// The first reason `text` cannot be parsed safely, found in one pass over
// its bytes: nesting deeper than `max_depth` outside strings, or a NUL byte
// anywhere (raw control characters are invalid inside strings too).
std::optional<Error> unsafe_shape(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (c == '\0') return Error(Errc::invalid_argument, fmt::format("the body holds a NUL byte at byte {}", at));
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return Error(Errc::invalid_argument, fmt::format("the body nests deeper than {} levels (at byte {})", max_depth, at));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<Json> parse_request_json(std::string_view text, std::size_t max_depth) {
  if (auto unsafe = unsafe_shape(text, max_depth)) return std::unexpected(std::move(*unsafe));
  try {
    // Strict: anything but whitespace after the value is an error.
    return Json::parse(text, nullptr, true, false);
  } catch (const Json::exception& error) {
    return fail(Errc::invalid_argument, fmt::format("the body is not JSON: {}", error.what()));
  }
}

}  // namespace cairn::serve
