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
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "sqlite_db.hpp"
#include "sqlite_lock.hpp"
#include "sqlite_medium.hpp"
#include "sqlite_records.hpp"

namespace cairn {
namespace {

using namespace sqlite;

// Ids name lock files, so they keep to a portable file-name alphabet.
bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 128 || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// Runs `body`, turning any exception (allocation failure, a library throwing)
// into an io_error: no exception leaves the store.
template <class Body>
auto guarded(std::string_view what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail("io_error", fmt::format("{}: {}", what, e.what()));
  } catch (...) {
    return fail("io_error", fmt::format("{}: unknown failure", what));
  }
}

class SqliteStore final : public Store {
 public:
  SqliteStore(std::string file, StoreOptions options, Database db)
      : file_(std::move(file)), options_(options), db_(std::move(db)) {}

  std::string uri() const override { return "sqlite:" + file_; }
  SyncPolicy sync_policy() const override { return options_.sync; }

  Result<std::vector<SessionHeader>> list() override {
    return guarded(fmt::format("sqlite file {}: list", file_), [&] { return list_sessions(); });
  }
  Result<std::shared_ptr<Session>> create(const CreateOptions& options) override {
    return guarded(fmt::format("sqlite file {}: create", file_), [&] { return create_session(options); });
  }
  Result<std::shared_ptr<Session>> open(std::string_view id, const OpenOptions& options) override {
    return guarded(where(file_, id), [&] { return open_session(std::string(id), options); });
  }
  Status remove(std::string_view id) override {
    return guarded(where(file_, id), [&] { return remove_session(std::string(id)); });
  }
  Result<RepairReport> repair(std::string_view id) override {
    return guarded(where(file_, id), [&] { return repair_session(std::string(id)); });
  }

 private:
  Result<std::vector<SessionHeader>> list_sessions();
  Result<std::shared_ptr<Session>> create_session(const CreateOptions& options);
  Result<std::shared_ptr<Session>> open_session(const std::string& id, const OpenOptions& options);
  Status remove_session(const std::string& id);
  Result<RepairReport> repair_session(const std::string& id);

  // The following use db_: the caller holds mu_.
  Result<SessionHeader> read_header(const std::string& id);
  Result<bool> exists(const std::string& id);
  Result<RecordReader*> record_reader(const std::string& id);
  Error locked_error(const std::string& id, std::chrono::milliseconds waited);

  // Takes the writer's lock, waiting or breaking it as `options` say. Called
  // without mu_: waiting must not stop the store's other callers.
  Result<SessionLock> take_lock(const std::string& id, const OpenOptions& options);

  Error not_found(const std::string& id) const {
    return Error{"not_found", fmt::format("no session {} in sqlite file {}", id, file_)};
  }
  Error io_error(const std::string& id, std::string_view what, const DbError& error) const {
    return Error{"io_error", fmt::format("{}: {}: {}", where(file_, id), what, error.message)};
  }

  const std::string file_;
  const StoreOptions options_;
  std::mutex mu_;  // guards db_ and the statements
  Database db_;
  std::optional<RecordReader> reader_;  // prepared on first use
};

// ---- list -------------------------------------------------------------------

Result<std::vector<SessionHeader>> SqliteStore::list_sessions() {
  std::lock_guard guard(mu_);
  auto statement = db_.prepare(
      "SELECT id, version, timestamp, cwd, parent_session, header FROM sessions ORDER BY timestamp DESC, id DESC");
  if (!statement) return fail("io_error", fmt::format("sqlite file {}: cannot list: {}", file_, statement.error().message));
  std::vector<SessionHeader> headers;
  for (;;) {
    auto row = statement->step();
    if (!row) return fail("io_error", fmt::format("sqlite file {}: cannot list: {}", file_, row.error().message));
    if (!*row) break;
    const std::string_view text = statement->text(5);
    const Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (auto header = decode_header(json)) {
      headers.push_back(std::move(*header));
      continue;
    }
    // A damaged header still lists (open() will refuse it): from its columns.
    SessionHeader header;
    header.id = std::string(statement->text(0));
    header.version = statement->int64(1);
    header.timestamp = std::string(statement->text(2));
    header.cwd = std::string(statement->text(3));
    header.parent_session = statement->optional_text(4);
    headers.push_back(std::move(header));
  }
  return headers;
}

// ---- create -----------------------------------------------------------------

Result<std::shared_ptr<Session>> SqliteStore::create_session(const CreateOptions& options) {
  SessionHeader header;
  header.id = options.id ? *options.id : new_session_id();
  if (!valid_id(header.id)) {
    return fail("invalid_argument", fmt::format("sqlite file {}: '{}' is not a valid session id (letters, digits, "
                                                "'-', '_', '.'; at most 128)",
                                                file_, header.id));
  }
  header.version = kLogFormatVersion;
  header.timestamp = now_iso8601();
  header.cwd = options.cwd;
  header.parent_session = options.parent_session;
  header.extra = options.header_extra;
  const std::string header_json = encode(header).dump(-1, ' ', false, Json::error_handler_t::replace);
  const std::string& id = header.id;

  {
    std::lock_guard guard(mu_);
    auto found = exists(id);
    if (!found) return std::unexpected(found.error());
    if (*found) return fail("already_exists", fmt::format("session {} already exists in sqlite file {}", id, file_));
  }
  auto lock = SessionLock::try_acquire(lock_path(file_, id));
  if (!lock) return std::unexpected(lock.error());
  if (!*lock) {
    std::lock_guard guard(mu_);
    return std::unexpected(locked_error(id, std::chrono::milliseconds(0)));
  }
  auto medium = SqliteMedium::open(file_, id, std::move(**lock), options_.sync);
  if (!medium) return std::unexpected(medium.error());
  if (auto created = (*medium)->create(header, header_json); !created) {
    // Unless another creator won the race, no session owns the lock file.
    if (created.error().code != "already_exists") (*medium)->lock().remove_file();
    return std::unexpected(created.error());
  }
  return std::make_shared<Session>(std::move(header), SessionIndex(), std::move(*medium), OpenReport{});
}

// ---- open -------------------------------------------------------------------

Result<std::shared_ptr<Session>> SqliteStore::open_session(const std::string& id, const OpenOptions& options) {
  if (!valid_id(id)) return std::unexpected(not_found(id));
  {
    // Refuse a missing or unreadable session before touching its lock file.
    std::lock_guard guard(mu_);
    if (auto header = read_header(id); !header) return std::unexpected(header.error());
  }

  std::unique_ptr<SqliteMedium> medium;
  if (!options.read_only) {
    auto lock = take_lock(id, options);
    if (!lock) return std::unexpected(lock.error());
    auto opened = SqliteMedium::open(file_, id, std::move(*lock), options_.sync);
    if (!opened) return std::unexpected(opened.error());
    if (auto claimed = (*opened)->claim(); !claimed) {
      if (claimed.error().code == "not_found") (*opened)->lock().remove_file();  // removed meanwhile
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
  auto index = (*reader)->load(id);
  if (!index) return std::unexpected(index.error());
  if (auto ended = tx->commit(); !ended) return std::unexpected(io_error(id, "cannot end the read", ended.error()));
  return std::make_shared<Session>(std::move(*header), std::move(*index), std::move(medium), OpenReport{});
}

Result<bool> SqliteStore::exists(const std::string& id) {
  auto statement = db_.prepare("SELECT 1 FROM sessions WHERE id = ?1");
  if (!statement) return std::unexpected(io_error(id, "cannot look the session up", statement.error()));
  auto row = statement->bind(1, std::string_view(id)).step();
  if (!row) return std::unexpected(io_error(id, "cannot look the session up", row.error()));
  return *row;
}

Result<SessionHeader> SqliteStore::read_header(const std::string& id) {
  auto statement = db_.prepare("SELECT header, version FROM sessions WHERE id = ?1");
  if (!statement) return std::unexpected(io_error(id, "cannot read the header", statement.error()));
  auto row = statement->bind(1, std::string_view(id)).step();
  if (!row) return std::unexpected(io_error(id, "cannot read the header", row.error()));
  if (!*row) return std::unexpected(not_found(id));

  const std::string_view text = statement->text(0);
  const Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return fail("corrupt_log", fmt::format("{}: the header is not a JSON object", where(file_, id)));
  }
  // A newer format is refused before its header is judged by our rules.
  std::int64_t version = statement->is_null(1) ? 0 : statement->int64(1);
  if (auto it = json.find("version"); it != json.end() && it->is_number_integer()) {
    version = std::max(version, it->get<std::int64_t>());
  }
  if (version > kLogFormatVersion) {
    return fail("newer_version", fmt::format("{}: the header's format version {} is newer than this build's {}",
                                             where(file_, id), version, kLogFormatVersion));
  }
  auto header = decode_header(json);
  if (!header) return fail("corrupt_log", fmt::format("{}: {}", where(file_, id), header.error().message));
  if (header->id != id) {
    return fail("corrupt_log", fmt::format("{}: the header names session {}", where(file_, id), header->id));
  }
  return header;
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

Error SqliteStore::locked_error(const std::string& id, std::chrono::milliseconds waited) {
  std::string holder_text = "another writer (not recorded)";
  if (auto statement = db_.prepare("SELECT holder FROM sessions WHERE id = ?1")) {
    if (auto row = statement->bind(1, std::string_view(id)).step(); row && *row && !statement->is_null(0)) {
      if (auto holder = decode_holder(statement->text(0))) holder_text = describe_holder(*holder);
    }
  }
  std::string message = fmt::format("session {} in {} is held by {}", id, file_, holder_text);
  if (waited.count() > 0) message += fmt::format("; waited {} ms", waited.count());
  return Error{"locked", std::move(message)};
}

// ---- remove -----------------------------------------------------------------

Status SqliteStore::remove_session(const std::string& id) {
  if (!valid_id(id)) return std::unexpected(not_found(id));
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
  if (!valid_id(id)) return std::unexpected(not_found(id));
  {
    std::lock_guard guard(mu_);
    auto found = exists(id);
    if (!found) return std::unexpected(found.error());
    if (!*found) return std::unexpected(not_found(id));
  }
  // Repair writes: it needs the session to itself, like any writer.
  auto lock = SessionLock::try_acquire(lock_path(file_, id));
  if (!lock) return std::unexpected(lock.error());
  std::lock_guard guard(mu_);
  if (!*lock) return std::unexpected(locked_error(id, std::chrono::milliseconds(0)));

  auto tx = Transaction::begin(db_, Transaction::Mode::immediate);
  if (!tx) return std::unexpected(io_error(id, "cannot repair", tx.error()));
  auto reader = record_reader(id);
  if (!reader) return std::unexpected(reader.error());
  auto salvage = (*reader)->salvage(id);
  if (!salvage) return std::unexpected(salvage.error());

  RepairReport report;
  report.location = where(file_, id);
  report.kept_records = salvage->kept;
  for (const DamagedRow& row : salvage->damaged) {
    report.removed.push_back(fmt::format("seq {} ({}, {} bytes): {}", row.seq, kEntryTables[row.table], row.bytes,
                                         row.reason));
    report.removed_bytes += row.bytes;
  }
  for (const DamagedRow& row : salvage->damaged) {
    auto statement =
        db_.prepare(fmt::format("DELETE FROM {} WHERE session_id = ?1 AND seq = ?2", kEntryTables[row.table]));
    if (!statement) return std::unexpected(io_error(id, "cannot repair", statement.error()));
    if (auto ran = statement->bind(1, std::string_view(id)).bind(2, row.seq).run(); !ran) {
      return std::unexpected(io_error(id, fmt::format("cannot remove seq {}", row.seq), ran.error()));
    }
  }
  if (auto committed = tx->commit(); !committed) return std::unexpected(io_error(id, "cannot repair", committed.error()));
  return report;
}

}  // namespace

Result<std::unique_ptr<Store>> make_sqlite_store(const std::string& file, const StoreOptions& options) {
  if (file.empty()) return fail("invalid_argument", "sqlite: needs a database file, e.g. sqlite:/var/lib/cairn/sessions.db");
  return guarded(fmt::format("sqlite file {}", file), [&]() -> Result<std::unique_ptr<Store>> {
    const std::filesystem::path parent = std::filesystem::path(file).parent_path();
    if (std::error_code error; !parent.empty() && !std::filesystem::is_directory(parent, error)) {
      std::filesystem::create_directories(parent, error);
      if (error) {
        return fail("io_error", fmt::format("sqlite file {}: cannot create directory {}: {}", file, parent.string(),
                                            error.message()));
      }
    }
    auto db = open_connection(file, options.sync);
    if (!db) return fail("io_error", fmt::format("sqlite file {}: cannot open: {}", file, db.error().message));
    auto version = create_schema(*db);
    if (!version) {
      return fail(version.error().code == SQLITE_CORRUPT ? "corrupt_log" : "io_error",
                  fmt::format("sqlite file {}: cannot set up the schema: {}", file, version.error().message));
    }
    if (*version > kSchemaVersion) {
      return fail("newer_version", fmt::format("sqlite file {}: schema version {} is newer than this build's {}", file,
                                               *version, kSchemaVersion));
    }
    return std::make_unique<SqliteStore>(file, options, std::move(*db));
  });
}

}  // namespace cairn
