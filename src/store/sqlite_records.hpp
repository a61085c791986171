// Reading one session's records from the SQLite store: into its index when
// the session is opened, and row by row when it is repaired.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log/index.hpp"
#include "sqlite_db.hpp"

namespace cairn::sqlite {

// The tables that hold records, by the number the readers use for them.
inline constexpr std::string_view kEntryTables[] = {"session_entries", "harness_entries", "ignorable_entries"};

// One row as repair reads it: where it is, its index columns and its payload.
struct StoredRow {
  int table = 0;  // index into kEntryTables
  std::int64_t seq = 0;
  // The columns as a record's index fields (views into StoredRows::strings);
  // nullopt when they do not even make one (an unknown type, a record in the
  // wrong table).
  std::optional<RecordMeta> columns;
  std::string payload;
};
struct StoredRows {
  std::vector<StoredRow> rows;  // in seq order
  StringArena strings;
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
  //
  // `verify_payloads`, for a session opened for writing: also reads every
  // payload and refuses the session (corrupt_log, naming the seq) when one
  // fails its checksum, lacks one where `checksums` says the format requires
  // it, or (without a checksum) disagrees with its columns. A session whose
  // log is damaged can be read, never appended to, until it is repaired.
  Result<SessionIndex> load(const std::string& session_id, bool verify_payloads, bool checksums);

  // For repair: every row of the session with its columns and payload, in seq order.
  Result<StoredRows> read_rows(const std::string& session_id);

 private:
  RecordReader() = default;
  std::string file_;
  Database::Access access_ = Database::Access::read_write;  // how the lines' connections open the file
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
  // `access`: as the store's own connection opened the file.
  SqliteLines(std::string file, std::string session_id, Database::Access access);
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
  const Database::Access access_;
  mutable std::mutex mu_;  // one query at a time on the connection
  mutable std::unique_ptr<Connection> connection_;
};

}  // namespace cairn::sqlite
