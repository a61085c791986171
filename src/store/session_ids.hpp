// The one rule for session ids, and the header of a new session, shared by
// every store. An id names files
// (DIR/<id>.jsonl, FILE.<id>.lock), so it keeps to a portable file-name
// alphabet; the memory store applies the rule too, so that a session built in
// memory first (import, fork) is one every store can hold.
#pragma once

#include <string>
#include <string_view>

#include "cairn/store/store.hpp"

namespace cairn {

// Letters, digits, '-', '_' and '.', 1 to 128 of them, not starting with '.'.
bool valid_session_id(std::string_view id);

// "'bad id' is not a valid session id (...)": the rule, for an error message.
std::string invalid_session_id(std::string_view id);

// The header of a session create() makes: the id asked for, or a new one;
// created now, in this build's format. invalid_argument, prefixed with
// `store` ("jsonl", "sqlite file F"), when the id breaks the rule.
Result<SessionHeader> new_session_header(const CreateOptions& options, std::string_view store);

}  // namespace cairn
