// sqlite:FILE — many sessions in one SQLite database (WAL).
//
// Each record is one row: tree entries in session_entries, harness records in
// harness_entries, unknown-but-ignorable records in ignorable_entries, all
// sharing one seq per session. A row holds the record's stored line (payload)
// beside the index fields, so opening a session builds its index from columns
// alone and parses no JSON.
//
// Writers: one per session, excluded by a flock on `<FILE>.<id>.lock` and
// fenced by the sessions row's generation (see sqlite_medium.cpp). The store's
// own connection serves list/create/open/remove/repair under a mutex; every
// writable session appends through a connection of its own.
//
// A file this process may not write (or whose directory it may not write:
// SQLite's FILE-wal and FILE-shm, and the lock files, live there) is opened
// read-only: sessions can be listed and read, and every write is refused up
// front, naming the file and the reason.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "sqlite_db.hpp"
#include "sqlite_lock.hpp"
#include "sqlite_medium.hpp"
#include "log/checksum.hpp"
#include "guarded.hpp"
#include "repair.hpp"
#include "sqlite_records.hpp"
#include "session_ids.hpp"
#include "sql_store.hpp"

namespace cairn {
namespace {

using namespace sqlite;

// Ids name lock files, so they keep to a portable file-name alphabet.

// Why this process cannot write the store at `file` (which exists), or
// nothing when it can. SQLite writes the file and creates FILE-wal and
// FILE-shm beside it; writers create their lock files there too.
std::optional<std::string> why_not_writable(const std::string& file) {
  const std::filesystem::path path(file);
  const std::string dir = path.has_parent_path() ? path.parent_path().string() : std::string(".");
  if (::faccessat(AT_FDCWD, file.c_str(), W_OK, AT_EACCESS) != 0) {
    return fmt::format("{}: {}", file, std::strerror(errno));
  }
  if (::faccessat(AT_FDCWD, dir.c_str(), W_OK, AT_EACCESS) != 0) {
    return fmt::format("directory {}: {}", dir, std::strerror(errno));
  }
  return std::nullopt;
}

class SqliteStore final : public SqlStore {
 public:
  // `read_only`: why this process cannot write the file; it is then only read.
  SqliteStore(std::string file, StoreOptions options, Database db, std::optional<std::string> read_only)
      : file_(std::move(file)), options_(options), read_only_(std::move(read_only)), db_(std::move(db)) {}

  std::string uri() const override { return "sqlite:" + file_; }
  SyncPolicy sync_policy() const override { return options_.sync; }

 private:
  std::string name() const override { return fmt::format("sqlite file {}", file_); }
  Result<std::vector<SessionHeader>> list_sessions() override;
  Result<std::shared_ptr<Session>> create_session(const CreateOptions& options) override;
  Result<std::shared_ptr<Session>> create_session_with_log(const SessionHeader& header,
                                                           const std::vector<LogLine>& log) override;
  Result<std::shared_ptr<Session>> open_session(const std::string& id, const OpenOptions& options) override;
  Status remove_session(const std::string& id) override;
  Result<RepairReport> repair_session(const std::string& id) override;
  Result<std::string> stamp_of(const std::string& id) override;
  // Copies the session's rows, as they are, into a new database `backup`.
  Status back_up(const std::string& id, const std::string& backup);

  // The following use db_: the caller holds mu_.
  Result<SessionRow> read_row(const std::string& id) override;
  Result<bool> exists(const std::string& id);
  Result<RecordReader*> record_reader(const std::string& id);
  Error locked_error(const std::string& id, std::chrono::milliseconds waited);

  // Takes the writer's lock, waiting or breaking it as `options` say. Called
  // without mu_: waiting must not stop the store's other callers.
  Result<SessionLock> take_lock(const std::string& id, const OpenOptions& options);
  // The medium of a session being created or repaired, under the writer's
  // lock taken at once: a held lock is an error, not a wait. Called without mu_.
  Result<std::unique_ptr<SqliteMedium>> open_medium_at_once(const std::string& id);

  std::string where(std::string_view id) const override { return sqlite::where(file_, id); }
  Error not_found(std::string_view id) const override {
    return Error{Errc::not_found, fmt::format("no session {} in sqlite file {}", id, file_)};
  }
  Error io_error(const std::string& id, std::string_view what, const DbError& error) const {
    return Error{error_code(error), fmt::format("{}: {}: {}", where(id), what, error.message)};
  }
  // What a store this process may only read says to a writer.
  Error read_only_error(std::string_view what) const {
    return Error{Errc::read_only,
                 fmt::format("cannot {}: sqlite file {} is read-only for this user ({})", what, file_, *read_only_)};
  }

  const std::string file_;
  const StoreOptions options_;
  const std::optional<std::string> read_only_;
  // mu_ (SqlStore) guards db_ and the statements.
  Database db_;
  std::optional<RecordReader> reader_;  // prepared on first use
  std::optional<RecordInserter> inserter_;  // prepared on first use
};

// The columns of a session's row, as row_of reads them.
constexpr const char* kSqliteSessionRows = "SELECT id, version, timestamp, cwd, parent_session, header FROM sessions";

// The session row a kSqliteSessionRows statement stands on.
SessionRow row_of(Statement& statement) {
  return SessionRow{.id = std::string(statement.text(0)),
                    .version = statement.is_null(1) ? 0 : statement.int64(1),
                    .timestamp = std::string(statement.text(2)),
                    .cwd = std::string(statement.text(3)),
                    .parent_session = statement.optional_text(4),
                    .header = std::string(statement.text(5))};
}

// ---- list -------------------------------------------------------------------

Result<std::vector<SessionHeader>> SqliteStore::list_sessions() {
  std::lock_guard guard(mu_);
  auto statement = db_.prepare(fmt::format("{} ORDER BY timestamp DESC, id DESC", kSqliteSessionRows));
  if (!statement) {
    return fail(error_code(statement.error()), fmt::format("sqlite file {}: cannot list: {}", file_, statement.error().message));
  }
  std::vector<SessionHeader> headers;
  for (;;) {
    auto row = statement->step();
    if (!row) return fail(error_code(row.error()), fmt::format("sqlite file {}: cannot list: {}", file_, row.error().message));
    if (!*row) break;
    headers.push_back(listed_header(row_of(*statement)));
  }
  return headers;
}

// ---- create -----------------------------------------------------------------

Result<std::shared_ptr<Session>> SqliteStore::create_session(const CreateOptions& options) {
  auto made = new_session_header(options, fmt::format("sqlite file {}", file_));
  if (!made) return std::unexpected(made.error());
  SessionHeader& header = *made;
  if (read_only_) return std::unexpected(read_only_error(fmt::format("create session {}", header.id)));
  const std::string header_json = encode(header).dump(-1, ' ', false, Json::error_handler_t::replace);
  const std::string& id = header.id;

  {
    std::lock_guard guard(mu_);
    auto found = exists(id);
    if (!found) return std::unexpected(found.error());
    if (*found) return fail(Errc::already_exists, fmt::format("session {} already exists in sqlite file {}", id, file_));
  }
  auto medium = open_medium_at_once(id);
  if (!medium) return std::unexpected(medium.error());
  if (auto created = (*medium)->create(header, header_json); !created) {
    // Unless another creator won the race, no session owns the lock file.
    if (!created.error().is(Errc::already_exists)) (*medium)->lock().remove_file();
    return std::unexpected(created.error());
  }
  return std::make_shared<Session>(std::move(header), SessionIndex(), std::move(*medium), OpenReport{});
}

// The rows go in one transaction on the store's connection, with no writer
// lock: the session does not exist until the commit, so nobody can hold it,
// and BEGIN IMMEDIATE orders this against every other creator. The new row
// has generation 0; the open that follows takes the lock and claims it.
Result<std::shared_ptr<Session>> SqliteStore::create_session_with_log(const SessionHeader& header,
                                                                      const std::vector<LogLine>& log) {
  const std::string& id = header.id;
  if (!valid_session_id(id)) return fail(Errc::invalid_argument, fmt::format("sqlite file {}: {}", file_, invalid_session_id(id)));
  if (read_only_) return std::unexpected(read_only_error(fmt::format("create session {}", id)));
  const std::string header_json = encode(header).dump(-1, ' ', false, Json::error_handler_t::replace);
  {
    std::lock_guard guard(mu_);
    auto tx = Transaction::begin(db_, Transaction::Mode::immediate);
    if (!tx) return std::unexpected(io_error(id, "cannot create the session", tx.error()));
    auto found = exists(id);
    if (!found) return std::unexpected(found.error());
    if (*found) return fail(Errc::already_exists, fmt::format("session {} already exists in sqlite file {}", id, file_));
    auto insert = db_.prepare(
        "INSERT INTO sessions (id, version, timestamp, cwd, parent_session, header, generation, holder) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, NULL)");
    if (!insert) return std::unexpected(io_error(id, "cannot create the session", insert.error()));
    insert->bind(1, std::string_view(id))
        .bind(2, header.version)
        .bind(3, std::string_view(header.timestamp))
        .bind(4, std::string_view(header.cwd))
        .bind(5, header.parent_session)
        .bind(6, std::string_view(header_json));
    if (auto ran = insert->run(); !ran) return std::unexpected(io_error(id, "cannot create the session", ran.error()));
    if (!inserter_) {
      auto prepared = RecordInserter::prepare(db_);
      if (!prepared) return std::unexpected(io_error(id, "cannot prepare a statement", prepared.error()));
      inserter_.emplace(std::move(*prepared));
    }
    for (const LogLine& line : log) {
      // The index fields, as an append has them; the views last until the next scan.
      auto meta = scan_line(line.json);
      if (!meta) {
        return fail(meta.error(), fmt::format("{}: seq {}: {}", where(id), line.seq, meta.error().message));
      }
      if (auto inserted = inserter_->insert(id, *meta, line.json); !inserted) {
        return std::unexpected(io_error(id, fmt::format("cannot insert seq {}", line.seq), inserted.error()));
      }
    }
    if (auto committed = tx->commit(); !committed) {
      return std::unexpected(io_error(id, "cannot create the session", committed.error()));
    }
  }
  return open_session(id, OpenOptions{});
}

// ---- open -------------------------------------------------------------------

Result<std::shared_ptr<Session>> SqliteStore::open_session(const std::string& id, const OpenOptions& options) {
  if (auto openable = check_openable(id); !openable) return std::unexpected(openable.error());

  std::unique_ptr<SqliteMedium> medium;
  if (!options.read_only) {
    if (read_only_) return std::unexpected(read_only_error(fmt::format("open session {} for writing", id)));
    auto lock = take_lock(id, options);
    if (!lock) return std::unexpected(lock.error());
    auto opened = SqliteMedium::open(file_, id, std::move(*lock), options_.sync);
    if (!opened) return std::unexpected(opened.error());
    if (auto claimed = (*opened)->claim(); !claimed) {
      if (claimed.error().is(Errc::not_found)) (*opened)->lock().remove_file();  // removed meanwhile
      return std::unexpected(claimed.error());
    }
    medium = std::move(*opened);
  }

  // The header and the records from one snapshot. A writer taking over after
  // our claim cannot have appended before it: every record it wrote is here.
  std::lock_guard guard(mu_);
  auto tx = Transaction::begin(db_, Transaction::Mode::deferred);
  if (!tx) return std::unexpected(io_error(id, "cannot begin a read", tx.error()));
  auto header = read_header(id);
  if (!header) return std::unexpected(header.error());
  auto reader = record_reader(id);
  if (!reader) return std::unexpected(reader.error());
  // A session opened for writing must be whole: every payload is checked.
  // Reading it needs less: each payload is checked when a query reads it.
  const bool checksums = checksums_required(header->version);
  auto index = (*reader)->load(id, /*verify_payloads=*/!options.read_only, checksums);
  if (!index) return std::unexpected(index.error());
  if (auto ended = tx->commit(); !ended) return std::unexpected(io_error(id, "cannot end the read", ended.error()));
  index->require_checksums(checksums);
  return std::make_shared<Session>(std::move(*header), std::move(*index), std::move(medium), OpenReport{});
}

Result<bool> SqliteStore::exists(const std::string& id) {
  auto statement = db_.prepare("SELECT 1 FROM sessions WHERE id = ?1");
  if (!statement) return std::unexpected(io_error(id, "cannot look the session up", statement.error()));
  auto row = statement->bind(1, std::string_view(id)).step();
  if (!row) return std::unexpected(io_error(id, "cannot look the session up", row.error()));
  return *row;
}

// The session's creation time (a session removed and made again is another)
// and its newest seq: four primary-key lookups, no payload read.
Result<std::string> SqliteStore::stamp_of(const std::string& id) {
  if (!valid_session_id(id)) return std::unexpected(not_found(id));
  std::lock_guard guard(mu_);
  auto statement = db_.prepare(
      "SELECT timestamp, max(coalesce((SELECT max(seq) FROM session_entries WHERE session_id = ?1), -1), "
      "coalesce((SELECT max(seq) FROM harness_entries WHERE session_id = ?1), -1), "
      "coalesce((SELECT max(seq) FROM ignorable_entries WHERE session_id = ?1), -1)) FROM sessions WHERE id = ?1");
  if (!statement) return std::unexpected(io_error(id, "cannot read the newest seq", statement.error()));
  auto row = statement->bind(1, std::string_view(id)).step();
  if (!row) return std::unexpected(io_error(id, "cannot read the newest seq", row.error()));
  if (!*row) return std::unexpected(not_found(id));
  return fmt::format("{}:{}", statement->text(0), statement->int64(1));
}

Result<SessionRow> SqliteStore::read_row(const std::string& id) {
  auto statement = db_.prepare(fmt::format("{} WHERE id = ?1", kSqliteSessionRows));
  if (!statement) return std::unexpected(io_error(id, "cannot read the header", statement.error()));
  auto row = statement->bind(1, std::string_view(id)).step();
  if (!row) return std::unexpected(io_error(id, "cannot read the header", row.error()));
  if (!*row) return std::unexpected(not_found(id));
  return row_of(*statement);
}

Result<RecordReader*> SqliteStore::record_reader(const std::string& id) {
  if (!reader_) {
    auto prepared = RecordReader::prepare(db_, file_);
    if (!prepared) return std::unexpected(io_error(id, "cannot read the records", prepared.error()));
    reader_.emplace(std::move(*prepared));
  }
  return &*reader_;
}

// ---- locks ------------------------------------------------------------------

Result<SessionLock> SqliteStore::take_lock(const std::string& id, const OpenOptions& options) {
  using Clock = std::chrono::steady_clock;
  const std::string path = lock_path(file_, id);
  if (options.break_lock) {
    auto lock = SessionLock::break_and_acquire(path);
    if (!lock) return std::unexpected(lock.error());
    if (*lock) return std::move(**lock);
    // Another writer took the fresh lock file between our unlink and our flock.
  }
  const auto timeout = std::max(options.lock_timeout, std::chrono::milliseconds(0));
  const auto start = Clock::now();
  for (;;) {
    auto lock = SessionLock::try_acquire(path);
    if (!lock) return std::unexpected(lock.error());
    if (*lock) return std::move(**lock);
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (options.break_lock || waited >= timeout) {
      std::lock_guard guard(mu_);
      return std::unexpected(locked_error(id, waited));
    }
    std::this_thread::sleep_for(std::min(std::chrono::milliseconds(5), timeout - waited));
  }
}

Result<std::unique_ptr<SqliteMedium>> SqliteStore::open_medium_at_once(const std::string& id) {
  auto lock = SessionLock::try_acquire(lock_path(file_, id));
  if (!lock) return std::unexpected(lock.error());
  if (!*lock) {
    std::lock_guard guard(mu_);
    return std::unexpected(locked_error(id, std::chrono::milliseconds(0)));
  }
  return SqliteMedium::open(file_, id, std::move(**lock), options_.sync);
}

Error SqliteStore::locked_error(const std::string& id, std::chrono::milliseconds waited) {
  std::string holder_text = "another writer (not recorded)";
  if (auto statement = db_.prepare("SELECT holder FROM sessions WHERE id = ?1")) {
    if (auto row = statement->bind(1, std::string_view(id)).step(); row && *row && !statement->is_null(0)) {
      if (auto holder = decode_holder(statement->text(0))) holder_text = describe_holder(*holder);
    }
  }
  std::string message = fmt::format("session {} in {} is held by {}", id, file_, holder_text);
  if (waited.count() > 0) message += fmt::format("; waited {} ms", waited.count());
  return Error{Errc::locked, std::move(message)};
}

// ---- remove -----------------------------------------------------------------

Status SqliteStore::remove_session(const std::string& id) {
  if (!valid_session_id(id)) return std::unexpected(not_found(id));
  if (read_only_) return std::unexpected(read_only_error(fmt::format("remove session {}", id)));
  {
    std::lock_guard guard(mu_);
    auto found = exists(id);
    if (!found) return std::unexpected(found.error());
    if (!*found) return std::unexpected(not_found(id));
  }
  auto lock = SessionLock::try_acquire(lock_path(file_, id));
  if (!lock) return std::unexpected(lock.error());
  std::lock_guard guard(mu_);
  if (!*lock) return std::unexpected(locked_error(id, std::chrono::milliseconds(0)));

  auto tx = Transaction::begin(db_, Transaction::Mode::immediate);
  if (!tx) return std::unexpected(io_error(id, "cannot remove", tx.error()));
  for (std::string_view sql : {"DELETE FROM session_entries WHERE session_id = ?1",
                               "DELETE FROM harness_entries WHERE session_id = ?1",
                               "DELETE FROM ignorable_entries WHERE session_id = ?1",
                               "DELETE FROM sessions WHERE id = ?1"}) {
    auto statement = db_.prepare(sql);
    if (!statement) return std::unexpected(io_error(id, "cannot remove", statement.error()));
    if (auto ran = statement->bind(1, std::string_view(id)).run(); !ran) {
      return std::unexpected(io_error(id, "cannot remove", ran.error()));
    }
  }
  if (sqlite3_changes(db_.get()) == 0) return std::unexpected(not_found(id));  // removed meanwhile
  if (auto committed = tx->commit(); !committed) return std::unexpected(io_error(id, "cannot remove", committed.error()));
  (*lock)->remove_file();
  return {};
}

// ---- repair -----------------------------------------------------------------

Result<RepairReport> SqliteStore::repair_session(const std::string& id) {
  if (!valid_session_id(id)) return std::unexpected(not_found(id));
  {
    std::lock_guard guard(mu_);
    auto found = exists(id);
    if (!found) return std::unexpected(found.error());
    if (!*found) return std::unexpected(not_found(id));
  }
  // Repair writes: it needs the session to itself, like any writer, and
  // fences off any writer that still thinks it holds it.
  auto medium = open_medium_at_once(id);
  if (!medium) return std::unexpected(medium.error());
  if (auto claimed = (*medium)->claim(); !claimed) return std::unexpected(claimed.error());

  RepairReport report;
  report.location = where(id);
  std::lock_guard guard(mu_);
  std::optional<SessionHeader> rebuilt;
  auto header = header_to_repair(id, report, rebuilt);
  if (!header) return std::unexpected(header.error());
  const bool checksums = checksums_required(header->version);

  auto tx = Transaction::begin(db_, Transaction::Mode::deferred);
  if (!tx) return std::unexpected(io_error(id, "cannot read the records", tx.error()));
  auto reader = record_reader(id);
  if (!reader) return std::unexpected(reader.error());
  auto rows = (*reader)->read_rows(id);
  if (!rows) return std::unexpected(rows.error());
  if (auto ended = tx->commit(); !ended) return std::unexpected(io_error(id, "cannot end the read", ended.error()));

  std::vector<repair::StoredRow> read;
  read.reserve(rows->rows.size());
  for (const StoredRow& row : rows->rows) read.push_back({row.seq, row.payload, row.columns, kEntryTables[row.table]});
  auto [stored, moved] = repair::place_rows(read, checksums, report);
  repair::Plan plan = repair::plan_into(report, stored, checksums);
  if (!report.changed() && !moved) return report;

  // The original rows first: a database beside the store holding this
  // session's rows exactly as they were.
  const std::string backup = repair::backup_path(file_, fmt::format(".{}", id));
  if (auto saved = back_up(id, backup); !saved) return std::unexpected(saved.error());
  report.backup = backup;

  StringArena strings;
  auto records = repair::repaired_records(stored, plan, strings);
  if (!records) return std::unexpected(records.error());
  if (auto written = (*medium)->rewrite(*records, rebuilt); !written) return std::unexpected(written.error());
  return report;
}

Status SqliteStore::back_up(const std::string& id, const std::string& backup) {
  auto attach = db_.prepare("ATTACH DATABASE ?1 AS backup");
  if (!attach) return std::unexpected(io_error(id, "cannot create the backup", attach.error()));
  if (auto ran = attach->bind(1, std::string_view(backup)).run(); !ran) {
    return std::unexpected(io_error(id, fmt::format("cannot create the backup {}", backup), ran.error()));
  }
  Status status;
  for (const char* sql : {"CREATE TABLE backup.sessions AS SELECT * FROM main.sessions WHERE id = ?1",
                          "CREATE TABLE backup.session_entries AS SELECT * FROM main.session_entries WHERE session_id = ?1",
                          "CREATE TABLE backup.harness_entries AS SELECT * FROM main.harness_entries WHERE session_id = ?1",
                          "CREATE TABLE backup.ignorable_entries AS SELECT * FROM main.ignorable_entries WHERE session_id = ?1"}) {
    auto copy = db_.prepare(sql);
    if (!copy) {
      status = std::unexpected(io_error(id, fmt::format("cannot write the backup {}", backup), copy.error()));
      break;
    }
    if (auto ran = copy->bind(1, std::string_view(id)).run(); !ran) {
      status = std::unexpected(io_error(id, fmt::format("cannot write the backup {}", backup), ran.error()));
      break;
    }
  }
  // The backup database is a connection-local attachment: a failed detach
  // leaves it until the connection closes, and the backup itself is written.
  (void)db_.exec("DETACH DATABASE backup");
  return status;
}

// A store this process may read but not write (`reason` says why): its
// connections only read, and whatever would write says so. Nothing is set
// up, so the file must already hold a cairn schema.
Result<std::unique_ptr<Store>> open_read_only_store(const std::string& file, const StoreOptions& options,
                                                    std::string reason) {
  auto db = Database::open_read_only(file);
  if (!db) {
    return fail(error_code(db.error()), fmt::format("sqlite file {} (read-only for this user: {}): cannot open: {}",
                                                    file, reason, db.error().message));
  }
  db->set_busy_timeout(kBusyTimeoutMs);
  auto stored = db->query_text("SELECT value FROM meta WHERE key = 'schema_version'");
  if (!stored) {
    return fail(error_code(stored.error()),
                fmt::format("sqlite file {} holds no cairn store it can read (and is read-only for this user: {}): {}",
                            file, reason, stored.error().message));
  }
  std::int64_t version = 0;
  const auto [end, parsed] = std::from_chars(stored->data(), stored->data() + stored->size(), version);
  if (parsed != std::errc() || end != stored->data() + stored->size()) {
    return fail(Errc::corrupt_log, fmt::format("sqlite file {}: schema version '{}' is not a number", file, *stored));
  }
  if (version > kSchemaVersion) {
    return fail(Errc::newer_version, fmt::format("sqlite file {}: schema version {} is newer than this build's {}", file,
                                             version, kSchemaVersion));
  }
  return std::make_unique<SqliteStore>(file, options, std::move(*db), std::move(reason));
}

}  // namespace

Result<std::unique_ptr<Store>> make_sqlite_store(const std::string& file, const StoreOptions& options) {
  if (file.empty()) return fail(Errc::invalid_argument, "sqlite: needs a database file, e.g. sqlite:/var/lib/cairn/sessions.db");
  return guarded(fmt::format("sqlite file {}", file), [&]() -> Result<std::unique_ptr<Store>> {
    const std::filesystem::path parent = std::filesystem::path(file).parent_path();
    if (std::error_code error; !parent.empty() && !std::filesystem::is_directory(parent, error)) {
      std::filesystem::create_directories(parent, error);
      if (error) {
        return fail(Errc::io_error, fmt::format("sqlite file {}: cannot create directory {}: {}", file, parent.string(),
                                            error.message()));
      }
    }
    std::error_code error;
    if (std::filesystem::exists(file, error)) {
      if (auto reason = why_not_writable(file)) return open_read_only_store(file, options, std::move(*reason));
    }
    auto db = open_connection(file, options.sync);
    if (!db) {
      return fail(error_code(db.error()), fmt::format("sqlite file {}: cannot open: {}", file, db.error().message));
    }
    auto version = create_schema(*db);
    if (!version) {
      return fail(error_code(version.error()),
                  fmt::format("sqlite file {}: cannot set up the schema: {}", file, version.error().message));
    }
    if (*version > kSchemaVersion) {
      return fail(Errc::newer_version, fmt::format("sqlite file {}: schema version {} is newer than this build's {}", file,
                                               *version, kSchemaVersion));
    }
    return std::make_unique<SqliteStore>(file, options, std::move(*db), std::nullopt);
  });
}

}  // namespace cairn
