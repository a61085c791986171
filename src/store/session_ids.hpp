// The one rule for session ids, shared by every store. An id names files
// (DIR/<id>.jsonl, FILE.<id>.lock), so it keeps to a portable file-name
// alphabet; the memory store applies the rule too, so that a session built in
// memory first (import, fork) is one every store can hold.
#pragma once

#include <string>
#include <string_view>

namespace cairn {

// Letters, digits, '-', '_' and '.', 1 to 128 of them, not starting with '.'.
bool valid_session_id(std::string_view id);

// "'bad id' is not a valid session id (...)": the rule, for an error message.
std::string invalid_session_id(std::string_view id);

}  // namespace cairn
