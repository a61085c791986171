// Reading one session's records from the SQLite store: into its index when
// the session is opened, and row by row when it is repaired.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
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

  // Builds the index from the columns alone, reading no payload: the index
  // reads a record's payload (through SqliteLines) when a query needs it.
  // Refuses what
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
  Statement tables_[3];       // with payloads, for salvage()
  Statement open_tables_[3];  // index columns only, for load()
  Statement last_seq_;
};

// The stored lines of one session's records, read one at a time for an index
// that load() built without them. Has a connection of its own, opened on
// first use: the session may outlive the store that opened it, and the
// store's connections are busy with other sessions and with appends. Records
// never change once committed, so any snapshot holds the line the index
// expects (the index checks the id all the same: a repair in another process
// could have replaced it).
class SqliteLines final : public LineSource {
 public:
  SqliteLines(std::string file, std::string session_id);
  ~SqliteLines() override;
  Result<Stored> line(std::int64_t seq, RecordType type) const override;
  Result<std::vector<Stored>> lines(std::int64_t begin, std::int64_t end) const override;
  Result<std::int64_t> bytes_before(std::int64_t end) const override;

 private:
  struct Connection;
  // The connection, opened if this is the first use; mu_ is held.
  DbResult<Connection*> connect() const;

  const std::string file_;
  const std::string session_id_;
  mutable std::mutex mu_;  // one query at a time on the connection
  mutable std::unique_ptr<Connection> connection_;
};

}  // namespace cairn::sqlite
