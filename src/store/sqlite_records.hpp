// Reading one session's records from the SQLite store: into its index when
// the session is opened, and row by row when it is repaired.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/log/index.hpp"
#include "sqlite_db.hpp"

namespace cairn::sqlite {

// The tables that hold records, by the number the readers use for them.
inline constexpr std::string_view kEntryTables[] = {"session_entries", "harness_entries", "ignorable_entries"};

// A row repair removes, and why.
struct DamagedRow {
  int table = 0;  // index into kEntryTables
  std::int64_t seq = 0;
  std::int64_t bytes = 0;  // its payload's
  std::string reason;
};

struct Salvage {
  std::int64_t kept = 0;            // rows before the first damaged one
  std::vector<DamagedRow> damaged;  // that row and every later one, in seq order
};

// Reads a session's rows in seq order: a three-way merge of three scans, each
// already in seq order (the tables are clustered by (session_id, seq)).
// SQLite's own UNION ALL … ORDER BY merges too, but copies every payload
// through its co-routines; merging here reads each payload once, off its page.
class RecordReader {
 public:
  // Prepares the statements on `db`, which must outlive the reader. `file`
  // names the database in messages.
  static DbResult<RecordReader> prepare(Database& db, std::string file);

  // Builds the index from the columns alone, parsing no payload. Refuses what
  // a damaged table would break: seq contiguous from 0 (corrupt_log), known
  // types (unknown_type), each kind in its table and the log's invariants
  // (corrupt_log naming the seq). Call inside a read transaction, so the
  // three scans see one snapshot.
  Result<SessionIndex> load(const std::string& session_id);

  // For repair: runs load()'s checks and also checks each payload (well-formed
  // JSON whose index fields agree with the columns); reports the first row
  // failing any check and every row after it.
  Result<Salvage> salvage(const std::string& session_id);

 private:
  RecordReader() = default;
  std::string file_;
  Statement tables_[3];
  Statement last_seq_;
};

}  // namespace cairn::sqlite
