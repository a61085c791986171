// Reading a JSONL session file: the header, then one record per line.
#pragma once

#include <string>
#include <vector>

#include "cairn/log/index.hpp"
#include "cairn/store/session.hpp"

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

// What repair keeps: everything before the first damaged record.
struct JsonlSalvage {
  long long good_length = 0;
  std::int64_t kept_records = 0;
  std::vector<std::string> removed;
};
Result<JsonlSalvage> salvage_jsonl_session(const std::string& path);

}  // namespace cairn
