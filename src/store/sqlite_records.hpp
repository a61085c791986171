// Reading one session's records from the SQLite store into its index.
#pragma once

#include <string>
#include <string_view>

#include "cairn/log/index.hpp"
#include "sqlite_db.hpp"

namespace cairn::sqlite {

// The tables that hold records, by the number the readers use for them.
inline constexpr std::string_view kEntryTables[] = {"session_entries", "harness_entries", "ignorable_entries"};

// Builds a session's index from the entry tables' columns, in seq order,
// without parsing a payload: a three-way merge of three scans, each already in
// seq order (the tables are clustered by (session_id, seq)). SQLite's own
// UNION ALL … ORDER BY merges too, but copies every payload through its
// co-routines; merging here reads each payload once, straight off its page.
//
// Checks on the way what a damaged table would break: seq contiguous from 0,
// known types (unknown_type), each kind in its table, and the log invariants
// (corrupt_log naming the seq).
class RecordReader {
 public:
  // Prepares the statements on `db`, which must outlive the reader. `file`
  // names the database in messages.
  static DbResult<RecordReader> prepare(Database& db, std::string file);

  // Call inside a read transaction, so the three scans see one snapshot.
  Result<SessionIndex> load(const std::string& session_id);

 private:
  RecordReader() = default;
  std::string file_;
  Statement tables_[3];
};

}  // namespace cairn::sqlite
