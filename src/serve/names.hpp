// The names a client gives the server for a session, ref, entry or input
// request, in a path or inside a body (an A2A context id): the same rules
// everywhere, so that nothing one route accepts is a name another route
// cannot address. At most 256 bytes, not "." or "..", and no separator or
// control character of either set (no newline, NUL, ESC, DEL, nor a C1
// control such as U+009B, a one-character CSI), and UTF-8 throughout.
#pragma once

#include <string>
#include <string_view>

#include "cairn/error.hpp"

namespace cairn::serve {

inline constexpr std::size_t kMaxNameBytes = 256;

// invalid_argument naming `what` ("session", "ref" …) when `name` breaks a rule.
Status check_name(std::string_view name, std::string_view what);

// A path segment: percent-decoded, then checked.
Result<std::string> path_name(std::string_view raw, std::string_view what);

}  // namespace cairn::serve
