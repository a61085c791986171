// The SQLite store's pieces shared by its files: connection setup, the schema,
// the writer's lock and holder, and the medium that appends one session's
// records (one transaction per group commit, fenced by the session's
// generation).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/store/session.hpp"
#include "cairn/store/store.hpp"
#include "sqlite_db.hpp"
#include "sqlite_lock.hpp"
#include "store/log_medium.hpp"

namespace cairn::sqlite {

// The schema this build writes and reads (the meta table's schema_version).
// 2: session_entries has no unique index on (session_id, id). Nothing queried
// it, the session's writer already refuses a duplicate id (the log's
// invariants, checked again by verify), and keeping it cost a random B-tree
// page per appended entry (ids are random): a third of SQLite's append rate.
// A version-1 file is moved to 2 when a writer opens it.
inline constexpr std::int64_t kSchemaVersion = 2;
// How long a connection waits for another one's write transaction.
inline constexpr int kBusyTimeoutMs = 10000;

// A connection with the store's settings: WAL, the sync policy, busy timeout.
DbResult<Database> open_connection(const std::string& file, SyncPolicy sync);
// Creates the tables if missing and returns the file's schema version. A file
// whose version is newer than kSchemaVersion is left as it is.
DbResult<std::int64_t> create_schema(Database& db);

// "sqlite file F, session S": how messages name a session.
std::string where(const std::string& file, std::string_view session_id);
std::string lock_path(const std::string& file, std::string_view session_id);

// The holder column: JSON {pid, host, generation, since}.
std::string encode_holder(const LockHolder& holder);
std::optional<LockHolder> decode_holder(std::string_view json);
// "pid P on HOST since T (generation G)"
std::string describe_holder(const LockHolder& holder);
// This process as a holder at `generation`.
LockHolder this_process(std::int64_t generation);

// Inserts records as rows of one session: prepared once on a connection,
// which must outlive it. The caller holds the write transaction.
class RecordInserter {
 public:
  static DbResult<RecordInserter> prepare(Database& db);
  // `line` is the record's stored line; `meta` its index fields.
  DbStatus insert(std::string_view session_id, const RecordMeta& meta, std::string_view line);

 private:
  RecordInserter() = default;
  Statement tree_;
  Statement harness_;
  Statement ignorable_;
};

class SqliteMedium final : public LogMedium {
  struct Key {
    explicit Key() = default;
  };

 public:
  // Opens the medium's own connection; `lock` is already held.
  static Result<std::unique_ptr<SqliteMedium>> open(std::string file, std::string session_id, SessionLock lock,
                                                    SyncPolicy sync);
  ~SqliteMedium() override;

  // Takes the session over: its generation grows by one and the holder
  // becomes this process. Every writer with an older generation is now stale.
  Status claim();
  // Inserts the session's row, held by this process at generation 1.
  Status create(const SessionHeader& header, const std::string& header_json);

  Status append(const std::vector<PreparedRecord>& records) override;
  // For repair, after claim(): replaces every row of the session by
  // `records` (seq 0 … n-1) and, given one, its header, in one transaction.
  Status rewrite(const std::vector<PreparedRecord>& records, const std::optional<SessionHeader>& header);
  std::string describe() const override;

  // The lock file, for a session that turned out not to exist.
  SessionLock& lock() { return lock_; }

  // Through open() only (Key is private).
  SqliteMedium(Key, std::string file, std::string session_id, SessionLock lock, Database db);

 private:
  Status insert(const PreparedRecord& record);
  Status prepare_statements();

  std::string file_;
  std::string session_id_;
  std::int64_t generation_ = 0;  // 0 until claim() or create()
  std::mutex mu_;                // one append at a time on the connection

  // Destroyed bottom-up: statements, then the connection, then the lock, so
  // the lock is released only once the connection is closed.
  SessionLock lock_;
  Database db_;
  Statement generation_of_;
  std::optional<RecordInserter> inserter_;
};

}  // namespace cairn::sqlite
