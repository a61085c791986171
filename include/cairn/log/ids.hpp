// Ids and the clock: the bottom layer's, because every layer above stamps
// what it makes (entries, sessions, messages) with them.
#pragma once

#include <cstdint>
#include <string>

namespace cairn {

// A fresh id for a tree entry or harness record: 12 hex digits, 48 random
// bits. Among a million ids two collide with odds of about 1 in 560, so an id
// for a session comes from Session::new_entry_id, which also checks it is new.
std::string new_entry_id();
// A fresh, time-ordered session id (UUID version 7).
std::string new_session_id();
// Now, as ISO 8601 UTC with milliseconds ("2026-11-30T10:03:18.123Z").
std::string now_iso8601();
std::int64_t now_unix_ms();

}  // namespace cairn
