// The SQLite medium: a session's appends, each group commit one transaction.
//
// Fencing. A writer's right to append is its generation: the sessions row's
// generation when it took the session. Every append transaction reads the
// row's generation first, under the database's write lock (BEGIN IMMEDIATE),
// so a writer whose lock was broken — the breaker bumped the generation in a
// transaction of its own — fails before writing a single row, whatever the
// state of the lock files.
#include "sqlite_medium.hpp"

#include <unistd.h>

#include <charconv>
#include <utility>

#include <simdjson.h>

#include <fmt/format.h>

namespace cairn::sqlite {

namespace {

// The tables. Entry tables are clustered by (session_id, seq) (WITHOUT ROWID):
// opening a session reads its records in seq order, and one B-tree walk over
// contiguous pages is about a third faster than an index walk with a table
// lookup per row. harness_entries has the design document's columns and
// indexes; the extra nullable columns (target_id, name, custom_type, role) hold
// the index fields a record's type needs, so that opening never parses JSON.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS sessions (
  id             TEXT PRIMARY KEY,
  version        INTEGER,
  timestamp      TEXT,
  cwd            TEXT,
  parent_session TEXT,
  header         TEXT NOT NULL,
  generation     INTEGER NOT NULL DEFAULT 0,
  holder         TEXT
);
CREATE INDEX IF NOT EXISTS idx_sessions_timestamp ON sessions(timestamp);
CREATE TABLE IF NOT EXISTS session_entries (
  session_id  TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  id          TEXT NOT NULL,
  parent_id   TEXT,
  type        TEXT NOT NULL,
  ref         TEXT NOT NULL,
  timestamp   TEXT,
  target_id   TEXT,
  name        TEXT,
  custom_type TEXT,
  role        TEXT,
  payload     TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
-- What opening a session reads (sqlite_records.cpp): the index columns in seq
-- order, not the payloads, which are read when used. These narrow copies fill
-- a fraction of the pages the table does.
CREATE INDEX IF NOT EXISTS idx_entries_open
  ON session_entries(session_id, seq, type, id, parent_id, ref, target_id, name, custom_type, role);
CREATE TABLE IF NOT EXISTS harness_entries (
  session_id  TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  id          TEXT NOT NULL,
  type        TEXT NOT NULL,
  ref         TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  op_kind     TEXT,
  timestamp   TEXT NOT NULL,
  payload     TEXT NOT NULL,
  target_id   TEXT,
  name        TEXT,
  custom_type TEXT,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS idx_harness_session_id ON harness_entries(session_id, id);
CREATE INDEX IF NOT EXISTS idx_harness_ref_type_seq ON harness_entries(session_id, ref, type, seq);
CREATE INDEX IF NOT EXISTS idx_harness_ref_kind_seq ON harness_entries(session_id, ref, type, op_kind, seq);
CREATE INDEX IF NOT EXISTS idx_harness_open
  ON harness_entries(session_id, seq, type, id, ref, run_id, target_id, name, custom_type);
CREATE TABLE IF NOT EXISTS ignorable_entries (
  session_id TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  id         TEXT,
  type       TEXT NOT NULL,
  payload    TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
)sql";

constexpr std::string_view kInsertTree =
    "INSERT INTO session_entries (session_id, seq, id, parent_id, type, ref, timestamp, target_id, name, "
    "custom_type, role, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
constexpr std::string_view kInsertHarness =
    "INSERT INTO harness_entries (session_id, seq, id, type, ref, run_id, op_kind, timestamp, target_id, name, "
    "custom_type, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
constexpr std::string_view kInsertIgnorable =
    "INSERT INTO ignorable_entries (session_id, seq, id, type, payload) VALUES (?1, ?2, ?3, ?4, ?5)";

// Index fields RecordMeta does not carry, read from the stored line at append.
// The views point into the parser's buffer: valid until the next line.
struct LineFields {
  std::optional<std::string_view> timestamp;
  std::optional<std::string_view> type;
  std::optional<std::string_view> op_kind;  // operation_started: intent.kind
};

LineFields scan_fields(std::string_view line) {
  thread_local simdjson::dom::parser parser;
  LineFields fields;
  simdjson::dom::object object;
  if (parser.parse(line.data(), line.size()).get_object().get(object) != simdjson::SUCCESS) return fields;
  std::string_view text;
  if (object["timestamp"].get_string().get(text) == simdjson::SUCCESS) fields.timestamp = text;
  if (object["type"].get_string().get(text) == simdjson::SUCCESS) fields.type = text;
  if (object.at_pointer("/intent/kind").get_string().get(text) == simdjson::SUCCESS) fields.op_kind = text;
  return fields;
}

Statement& bind_nonempty(Statement& statement, int index, std::string_view text) {
  return text.empty() ? statement.bind_null(index) : statement.bind(index, text);
}

Error io_error(const std::string& where, std::string_view what, const DbError& error) {
  return Error{error_code(error), fmt::format("{}: {}: {}", where, what, error.message)};
}

}  // namespace

// ---- connections and schema -------------------------------------------------

DbResult<Database> open_connection(const std::string& file, SyncPolicy sync) {
  auto db = Database::open(file);
  if (!db) return db;
  db->set_busy_timeout(kBusyTimeoutMs);
  auto mode = db->query_text("PRAGMA journal_mode=WAL");
  if (!mode) return std::unexpected(std::move(mode.error()));
  if (*mode != "wal") {
    return std::unexpected(DbError{SQLITE_ERROR, fmt::format("cannot use WAL mode (journal mode is '{}')", *mode)});
  }
  auto synchronous = db->exec(sync == SyncPolicy::full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF");
  if (!synchronous) return std::unexpected(std::move(synchronous.error()));
  // Memory-mapped reads: opening a session reads every row of it, and copying
  // each page out of the page cache took longer than indexing the rows. cairn
  // never shrinks the database file (no VACUUM), the case in which a mapped
  // reader could fault.
  if (auto mapped = db->exec("PRAGMA mmap_size=4294967296"); !mapped) return std::unexpected(std::move(mapped.error()));
  return db;
}

DbResult<std::int64_t> create_schema(Database& db) {
  auto tx = Transaction::begin(db, Transaction::Mode::immediate);
  if (!tx) return std::unexpected(std::move(tx.error()));
  // A file written by a newer build keeps its schema: we only read its version.
  if (auto meta = db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"); !meta) {
    return std::unexpected(std::move(meta.error()));
  }
  auto stored = db.query_text("SELECT value FROM meta WHERE key = 'schema_version'");
  if (!stored) return std::unexpected(std::move(stored.error()));
  if (!stored->empty()) {
    std::int64_t version = 0;
    const auto [end, error] = std::from_chars(stored->data(), stored->data() + stored->size(), version);
    if (error != std::errc() || end != stored->data() + stored->size()) {
      return std::unexpected(DbError{SQLITE_CORRUPT, fmt::format("schema version '{}' is not a number", *stored)});
    }
    if (version > kSchemaVersion) return version;
    if (version == 1) {  // 1 -> 2: the unique index on entry ids goes
      if (auto dropped = db.exec("DROP INDEX IF EXISTS idx_entries_session_id; "
                                 "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
          !dropped) {
        return std::unexpected(std::move(dropped.error()));
      }
    }
  }
  if (auto created = db.exec(kSchema); !created) return std::unexpected(std::move(created.error()));
  auto insert = db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?1)");
  if (!insert) return std::unexpected(std::move(insert.error()));
  const std::string version = std::to_string(kSchemaVersion);
  if (auto inserted = insert->bind(1, std::string_view(version)).run(); !inserted) {
    return std::unexpected(std::move(inserted.error()));
  }
  if (auto committed = tx->commit(); !committed) return std::unexpected(std::move(committed.error()));
  return kSchemaVersion;
}

std::string where(const std::string& file, std::string_view session_id) {
  return fmt::format("sqlite file {}, session {}", file, session_id);
}

std::string lock_path(const std::string& file, std::string_view session_id) {
  return fmt::format("{}.{}.lock", file, session_id);
}

// ---- holders ------------------------------------------------------------------

std::string encode_holder(const LockHolder& holder) {
  Json json = Json::object();
  json["pid"] = holder.pid;
  json["host"] = holder.host;
  json["generation"] = holder.generation;
  json["since"] = holder.since;
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<LockHolder> decode_holder(std::string_view text) {
  Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  LockHolder holder;
  if (auto it = json.find("pid"); it != json.end() && it->is_number_integer()) holder.pid = it->get<std::int64_t>();
  if (auto it = json.find("host"); it != json.end() && it->is_string()) holder.host = it->get<std::string>();
  if (auto it = json.find("generation"); it != json.end() && it->is_number_integer()) {
    holder.generation = it->get<std::int64_t>();
  }
  if (auto it = json.find("since"); it != json.end() && it->is_string()) holder.since = it->get<std::string>();
  return holder;
}

std::string describe_holder(const LockHolder& holder) {
  return fmt::format("pid {} on {} since {} (generation {})", holder.pid, holder.host, holder.since,
                     holder.generation);
}

LockHolder this_process(std::int64_t generation) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return LockHolder{static_cast<std::int64_t>(::getpid()), host[0] != '\0' ? host : "unknown host", generation,
                    now_iso8601()};
}

// ---- the medium ---------------------------------------------------------------

SqliteMedium::SqliteMedium(Key, std::string file, std::string session_id, SessionLock lock, Database db)
    : file_(std::move(file)), session_id_(std::move(session_id)), lock_(std::move(lock)), db_(std::move(db)) {}

Result<std::unique_ptr<SqliteMedium>> SqliteMedium::open(std::string file, std::string session_id, SessionLock lock,
                                                         SyncPolicy sync) {
  auto db = open_connection(file, sync);
  if (!db) return std::unexpected(io_error(where(file, session_id), "cannot open a connection", db.error()));
  auto medium = std::make_unique<SqliteMedium>(Key{}, std::move(file), std::move(session_id), std::move(lock),
                                               std::move(*db));
  if (auto prepared = medium->prepare_statements(); !prepared) return std::unexpected(prepared.error());
  return medium;
}

Status SqliteMedium::prepare_statements() {
  struct Wanted {
    Statement* statement;
    std::string_view sql;
  };
  const Wanted wanted[] = {
      {&generation_of_, "SELECT generation, holder FROM sessions WHERE id = ?1"},
  };
  for (const Wanted& w : wanted) {
    auto statement = db_.prepare(w.sql);
    if (!statement) return std::unexpected(io_error(describe(), "cannot prepare a statement", statement.error()));
    *w.statement = std::move(*statement);
  }
  auto inserter = RecordInserter::prepare(db_);
  if (!inserter) return std::unexpected(io_error(describe(), "cannot prepare a statement", inserter.error()));
  inserter_.emplace(std::move(*inserter));
  return {};
}

SqliteMedium::~SqliteMedium() {
  // The holder column names the current writer; clear it if it is still us.
  // Best effort and short: a failure only leaves a stale description behind
  // (the lock file, not the column, decides who may write).
  if (generation_ == 0 || !db_.get()) return;
  try {
    db_.set_busy_timeout(1000);
    auto release = db_.prepare("UPDATE sessions SET holder = NULL WHERE id = ?1 AND generation = ?2");
    if (release) (void)release->bind(1, std::string_view(session_id_)).bind(2, generation_).run();
  } catch (...) {
  }
}

std::string SqliteMedium::describe() const { return where(file_, session_id_); }

Status SqliteMedium::claim() {
  auto tx = Transaction::begin(db_, Transaction::Mode::immediate);
  if (!tx) return std::unexpected(io_error(describe(), "cannot take the session", tx.error()));
  generation_of_.reset().bind(1, std::string_view(session_id_));
  auto row = generation_of_.step();
  if (!row) return std::unexpected(io_error(describe(), "cannot read the generation", row.error()));
  if (!*row) return fail(Errc::not_found, fmt::format("no session {} in sqlite file {}", session_id_, file_));
  const std::int64_t next = generation_of_.int64(0) + 1;
  generation_of_.reset();

  const std::string holder = encode_holder(this_process(next));
  auto update = db_.prepare("UPDATE sessions SET generation = ?1, holder = ?2 WHERE id = ?3");
  if (!update) return std::unexpected(io_error(describe(), "cannot take the session", update.error()));
  if (auto ran = update->bind(1, next).bind(2, std::string_view(holder)).bind(3, std::string_view(session_id_)).run();
      !ran) {
    return std::unexpected(io_error(describe(), "cannot take the session", ran.error()));
  }
  if (auto committed = tx->commit(); !committed) {
    return std::unexpected(io_error(describe(), "cannot take the session", committed.error()));
  }
  generation_ = next;
  return {};
}

Status SqliteMedium::create(const SessionHeader& header, const std::string& header_json) {
  auto tx = Transaction::begin(db_, Transaction::Mode::immediate);
  if (!tx) return std::unexpected(io_error(describe(), "cannot create the session", tx.error()));
  generation_of_.reset().bind(1, std::string_view(session_id_));
  auto row = generation_of_.step();
  generation_of_.reset();
  if (!row) return std::unexpected(io_error(describe(), "cannot create the session", row.error()));
  if (*row) return fail(Errc::already_exists, fmt::format("session {} already exists in sqlite file {}", session_id_, file_));

  const std::string holder = encode_holder(this_process(1));
  auto insert = db_.prepare(
      "INSERT INTO sessions (id, version, timestamp, cwd, parent_session, header, generation, holder) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7)");
  if (!insert) return std::unexpected(io_error(describe(), "cannot create the session", insert.error()));
  insert->bind(1, std::string_view(session_id_))
      .bind(2, header.version)
      .bind(3, std::string_view(header.timestamp))
      .bind(4, std::string_view(header.cwd))
      .bind(5, header.parent_session)
      .bind(6, std::string_view(header_json))
      .bind(7, std::string_view(holder));
  if (auto ran = insert->run(); !ran) {
    return std::unexpected(io_error(describe(), "cannot create the session", ran.error()));
  }
  if (auto committed = tx->commit(); !committed) {
    return std::unexpected(io_error(describe(), "cannot create the session", committed.error()));
  }
  generation_ = 1;
  return {};
}

DbResult<RecordInserter> RecordInserter::prepare(Database& db) {
  RecordInserter inserter;
  for (auto [statement, sql] : {std::pair{&inserter.tree_, kInsertTree}, std::pair{&inserter.harness_, kInsertHarness},
                                std::pair{&inserter.ignorable_, kInsertIgnorable}}) {
    auto prepared = db.prepare(sql);
    if (!prepared) return std::unexpected(std::move(prepared.error()));
    *statement = std::move(*prepared);
  }
  return inserter;
}

DbStatus RecordInserter::insert(std::string_view session_id, const RecordMeta& meta, std::string_view line) {
  const LineFields fields = scan_fields(line);
  const std::string_view type_name = to_string(meta.type);
  Statement* statement = nullptr;
  if (is_tree_type(meta.type)) {
    statement = &tree_;
    statement->reset()
        .bind(1, session_id)
        .bind(2, meta.seq)
        .bind(3, std::string_view(meta.id))
        .bind(4, meta.parent_id)
        .bind(5, type_name)
        .bind(6, meta.ref.empty() ? std::string_view("main") : std::string_view(meta.ref));
    if (fields.timestamp) statement->bind(7, *fields.timestamp);
    statement->bind(8, meta.target_id);
    bind_nonempty(*statement, 9, meta.name);
    bind_nonempty(*statement, 10, meta.custom_type);
    bind_nonempty(*statement, 11, meta.role);
    statement->bind(12, line);
  } else if (is_harness_type(meta.type)) {
    statement = &harness_;
    statement->reset()
        .bind(1, session_id)
        .bind(2, meta.seq)
        .bind(3, std::string_view(meta.id))
        .bind(4, type_name)
        .bind(5, std::string_view(meta.ref))
        .bind(6, std::string_view(meta.run_id))
        .bind(8, fields.timestamp.value_or(std::string_view()));
    if (meta.type == RecordType::operation_started && fields.op_kind) statement->bind(7, *fields.op_kind);
    statement->bind(9, meta.target_id);
    bind_nonempty(*statement, 10, meta.name);
    bind_nonempty(*statement, 11, meta.custom_type);
    statement->bind(12, line);
  } else {
    statement = &ignorable_;
    statement->reset().bind(1, session_id).bind(2, meta.seq);
    bind_nonempty(*statement, 3, meta.id);
    statement->bind(4, fields.type.value_or(type_name)).bind(5, line);
  }
  return statement->run();
}

Status SqliteMedium::insert(const PreparedRecord& record) {
  if (auto ran = inserter_->insert(session_id_, record.meta, record.line); !ran) {
    return std::unexpected(io_error(describe(), fmt::format("cannot insert seq {}", record.meta.seq), ran.error()));
  }
  return {};
}

Status SqliteMedium::rewrite(const std::vector<PreparedRecord>& records, const std::optional<SessionHeader>& header) {
  try {
    std::lock_guard guard(mu_);
    auto tx = Transaction::begin(db_, Transaction::Mode::immediate);
    if (!tx) return std::unexpected(io_error(describe(), "cannot begin the repair", tx.error()));
    generation_of_.reset().bind(1, std::string_view(session_id_));
    auto row = generation_of_.step();
    if (!row) return std::unexpected(io_error(describe(), "cannot read the generation", row.error()));
    const bool current = *row && generation_of_.int64(0) == generation_;
    generation_of_.reset();
    if (!current) return fail(Errc::stale_writer, fmt::format("{}: another writer took the session during its repair", describe()));
    for (std::string_view table : {"session_entries", "harness_entries", "ignorable_entries"}) {
      auto erase = db_.prepare(fmt::format("DELETE FROM {} WHERE session_id = ?1", table));
      if (!erase) return std::unexpected(io_error(describe(), "cannot repair", erase.error()));
      if (auto ran = erase->bind(1, std::string_view(session_id_)).run(); !ran) {
        return std::unexpected(io_error(describe(), "cannot repair", ran.error()));
      }
    }
    for (const PreparedRecord& record : records) {
      if (auto inserted = insert(record); !inserted) return inserted;  // tx rolls back
    }
    if (header) {
      const std::string json = encode(*header).dump(-1, ' ', false, Json::error_handler_t::replace);
      auto update = db_.prepare("UPDATE sessions SET header = ?1, version = ?2, timestamp = ?3, cwd = ?4 WHERE id = ?5");
      if (!update) return std::unexpected(io_error(describe(), "cannot repair the header", update.error()));
      if (auto ran = update->bind(1, std::string_view(json))
                         .bind(2, header->version)
                         .bind(3, std::string_view(header->timestamp))
                         .bind(4, std::string_view(header->cwd))
                         .bind(5, std::string_view(session_id_))
                         .run();
          !ran) {
        return std::unexpected(io_error(describe(), "cannot repair the header", ran.error()));
      }
    }
    if (auto committed = tx->commit(); !committed) {
      return std::unexpected(io_error(describe(), "cannot commit the repair", committed.error()));
    }
    return {};
  } catch (const std::exception& e) {
    return fail(Errc::io_error, fmt::format("{}: repair failed: {}", describe(), e.what()));
  }
}

Status SqliteMedium::append(const std::vector<PreparedRecord>& records) {
  if (records.empty()) return {};
  try {
    std::lock_guard guard(mu_);
    const std::int64_t first = records.front().meta.seq;
    const std::int64_t last = records.back().meta.seq;
    auto tx = Transaction::begin(db_, Transaction::Mode::immediate);
    if (!tx) return std::unexpected(io_error(describe(), fmt::format("cannot begin seq {}..{}", first, last), tx.error()));

    // The fence: under the write lock, before any row is written.
    generation_of_.reset().bind(1, std::string_view(session_id_));
    auto row = generation_of_.step();
    if (!row) return std::unexpected(io_error(describe(), "cannot read the generation", row.error()));
    if (!*row) {
      generation_of_.reset();
      return fail(Errc::stale_writer, fmt::format("{}: the session was removed; this writer (generation {}) appended "
                                              "nothing of seq {}..{}",
                                              describe(), generation_, first, last));
    }
    const std::int64_t current = generation_of_.int64(0);
    const std::optional<LockHolder> holder =
        generation_of_.is_null(1) ? std::nullopt : decode_holder(generation_of_.text(1));
    generation_of_.reset();
    if (current != generation_) {
      return fail(Errc::stale_writer,
                  fmt::format("{}: this writer's generation {} is stale (the session is at generation {}, held by "
                              "{}); seq {}..{} not appended",
                              describe(), generation_, current,
                              holder ? describe_holder(*holder) : std::string("an unknown writer"), first, last));
    }

    for (const PreparedRecord& record : records) {
      if (auto inserted = insert(record); !inserted) return inserted;  // tx rolls back
    }
    if (auto committed = tx->commit(); !committed) {
      return std::unexpected(
          io_error(describe(), fmt::format("cannot commit seq {}..{}", first, last), committed.error()));
    }
    return {};
  } catch (const std::exception& e) {
    return fail(Errc::io_error, fmt::format("{}: append failed: {}", describe(), e.what()));
  }
}

}  // namespace cairn::sqlite
