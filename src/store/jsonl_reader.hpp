// Reading a JSONL session file: the header, then one record per line.
#pragma once

#include <string>
#include <vector>

#include "log/index.hpp"
#include "cairn/store/session.hpp"
#include "cairn/store/store.hpp"

namespace cairn {

struct JsonlContents {
  SessionHeader header;
  SessionIndex index;
  OpenReport report;
  // Bytes of the file that hold the header and complete, valid records: what
  // a writer keeps and appends after.
  long long good_length = 0;
};

// Reads and verifies a whole session file. A torn last line is left out of
// the index and described in `report` (the caller decides whether to cut it);
// damage anywhere before it refuses the session with corrupt_log, naming the
// file, the line, the seq and the reason.
Result<JsonlContents> read_jsonl_session(const std::string& path);

// The session header on the first line of `path`: corrupt_log when it does
// not decode, newer_version when this build cannot read its format.
Result<SessionHeader> parse_jsonl_header(const std::string& path, std::string_view line);

// Repairs the session file at `path`, whose id is `id` (the caller holds the
// session's writer lock): see Store::repair and repair.hpp.
Result<RepairReport> repair_jsonl_session(const std::string& path, std::string_view id);

}  // namespace cairn
