// Text a user hands the agent (a prompt, a steering message, compaction
// instructions) is refused at the door when it is not UTF-8. The log holds
// only valid UTF-8, so such text would be accepted and then fault the
// session; replacing the bad bytes instead would record words the user did
// not write, and a script piping a binary file would never hear of it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cairn::cli::tui {

// Where `text` stops being UTF-8 ("byte 0xE9 at line 2, column 4"), or
// nothing when all of it is. Columns count characters from 1.
std::optional<std::string> first_invalid_utf8(std::string_view text);

}  // namespace cairn::cli::tui
