// A request body's JSON, read as an attacker may write it. Every route that
// parses a body goes through here: the depth is checked before the parser
// builds anything (a value nested 50,000 deep is refused, not copied or
// printed recursively later), a NUL byte is refused (the JSON library
// reads one as the end of its input and would run the text before it), and
// so is anything after the value.
#pragma once

#include <cstddef>
#include <string_view>

#include "cairn/error.hpp"
#include "cairn/json.hpp"

namespace cairn::serve {

inline constexpr std::size_t kMaxJsonDepth = 64;

// The value `text` holds, or invalid_argument saying what is wrong and at
// which byte.
Result<Json> parse_request_json(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

}  // namespace cairn::serve
