// UTF-8 hygiene. The log is JSON, and JSON text is UTF-8: a string that is
// not valid UTF-8 cannot be written at all, so the harness refuses such
// input at acceptance and repairs what a model or a tool hands it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/json.hpp"
#include "cairn/utf8.hpp"  // invalid_utf8_at

namespace cairn {

// Every byte that does not begin a valid sequence replaced by U+FFFD; true
// when something changed.
bool make_valid_utf8(std::string& text);
// The same for every string and key inside `value`.
bool make_valid_utf8(Json& value);

// The first string or key inside `value` that is not valid UTF-8.
struct InvalidUtf8 {
  std::string path;  // "content[1].text", or "" for `value` itself
  std::size_t offset = 0;
  std::string describe(std::string_view what) const;  // "<what> is not valid UTF-8: <path> has …"
};
std::optional<InvalidUtf8> find_invalid_utf8(const Json& value);

}  // namespace cairn
