// postgres://… — many sessions, many processes, many machines, one database.
//
// Each session is a row of cairn_sessions (its header, and its lease: owner,
// generation, expiry, head seq); each record a row of cairn_records keyed by
// (session, seq), holding its stored line beside the columns queries need (id,
// type, ref, run id). A writer appends through a connection of its own under
// its lease (pg_medium.cpp); the store's own connection serves list, create,
// open, remove and repair, one call at a time.
//
// Secrets: the URI may hold a password (better: PGPASSWORD or ~/.pgpass, which
// libpq reads itself); only its redacted form is ever shown.
#include <algorithm>
#include <cassert>
#include <array>
#include <mutex>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "chunk_pipeline.hpp"
#include "log/checksum.hpp"
#include "pg_conn.hpp"
#include "pg_inbox.hpp"
#include "pg_lines.hpp"
#include "pg_medium.hpp"
#include "pg_notify.hpp"
#include "guarded.hpp"
#include "lease_holder.hpp"
#include "repair.hpp"
#include "session_ids.hpp"
#include "sql_store.hpp"

namespace cairn {
namespace {

using pg::Param;
using pg::PgError;

class PostgresStore final : public SqlStore {
 public:
  PostgresStore(std::string conninfo, StoreOptions options, pg::Connection connection)
      : conninfo_(std::move(conninfo)),
        shown_(pg::redact(conninfo_)),
        options_(options),
        db_(std::move(connection)),
        lines_(std::make_shared<pg::LineReader>(conninfo_)) {
    if (options_.announce_appends) announcer_ = pg::Announcer::for_database(conninfo_);
    inbox_ = std::make_unique<pg::PgInbox>(conninfo_, shown_, [this] { return listener(); });
  }

  Inbox* inbox() override { return inbox_.get(); }

  std::string uri() const override { return shown_; }
  SyncPolicy sync_policy() const override { return options_.sync; }

  Result<std::optional<std::shared_ptr<Session>>> claim(const ClaimOptions& options) override {
    return guarded(fmt::format("postgres store {}: claim", shown_), [&] { return claim_session(options); });
  }
  Status end_claim(std::string_view id, ClaimEnd end, std::string_view detail) override {
    return guarded(where(id), [&] { return end_session_claim(std::string(id), end, detail); });
  }
  Result<std::vector<LogLine>> read_log(std::string_view id, std::int64_t after_seq, std::size_t limit) override {
    return guarded(where(id), [&] { return read_session_log(std::string(id), after_seq, limit); });
  }
  Result<std::unique_ptr<LogFollow>> follow(std::string_view id, std::chrono::milliseconds poll,
                                            std::function<void()> changed) override {
    if (poll <= std::chrono::milliseconds::zero()) return fail(Errc::invalid_argument, "a follow's poll must be positive");
    return listener()->follow(std::string(id), poll, std::move(changed));
  }

 private:
  std::string name() const override { return fmt::format("postgres store {}", shown_); }
  Result<std::vector<SessionHeader>> list_sessions() override;
  Result<std::shared_ptr<Session>> create_session(const CreateOptions& options) override;
  Result<std::shared_ptr<Session>> create_session_with_log(const SessionHeader& header,
                                                           const std::vector<LogLine>& log) override;
  Result<std::shared_ptr<Session>> open_session(const std::string& id, const OpenOptions& options) override;
  Status remove_session(const std::string& id) override;
  Result<RepairReport> repair_session(const std::string& id) override;
  Result<std::optional<std::shared_ptr<Session>>> claim_session(const ClaimOptions& options);
  Status end_session_claim(const std::string& id, ClaimEnd end, std::string_view detail);
  Result<std::vector<LogLine>> read_session_log(const std::string& id, std::int64_t after_seq, std::size_t limit);
  Result<std::string> stamp_of(const std::string& id) override;
  // The session's header and records, read in one snapshot, under `medium`'s
  // lease (null: read-only).
  Result<std::shared_ptr<Session>> open_with(const std::string& id, std::unique_ptr<pg::PgMedium> medium);

  // The following use db_: the caller holds mu_.
  // Runs `sql` on the store's connection, reconnecting once if it was lost
  // (nothing the store's connection runs outside a transaction writes twice
  // when retried: reads, and inserts guarded by a key).
  pg::PgResult<pg::Rows> exec(std::string_view sql, std::span<const Param> params = {});
  Result<SessionRow> read_row(const std::string& id) override;
  // Every record of the session, in seq order, checked as an append checks
  // them; inside the caller's snapshot. A session longer than a page is
  // indexed from its rows' index columns (narrow), its payloads read when a
  // query needs them: all of them checked first when it is opened to be
  // written (`medium` given). A row without its columns (written before
  // schema 3, or by an older build) is indexed from its payload, and given
  // its columns when the session is opened to be written.
  Result<SessionIndex> load(const std::string& id, const SessionHeader& header, pg::PgMedium* medium);
  // What load reads from one page of rows, the first of them at seq `first`.
  struct PageRead {
    // The rows are kNarrowLoad's, then `indexed` and the payload (null when
    // indexed and not to be checked); else seq and payload.
    bool narrow = false;
    bool checksums = false;  // the session's format requires them
    // The index columns read from the payloads of rows without them, to be
    // written back (null: not to be).
    std::vector<pg::Param>* backfill = nullptr;
  };
  Status add_page(const std::string& id, const pg::Rows& rows, std::int64_t first, const PageRead& read,
                  SessionIndex& index);

  // One LISTENing connection per store, started by its first follower
  // (of a session's log or its inbox).
  std::shared_ptr<pg::Listener> listener() {
    std::lock_guard lock(listener_mu_);
    if (!listener_) listener_ = pg::Listener::start(conninfo_);
    return listener_;
  }

  std::string where(std::string_view id) const override { return fmt::format("postgres store {}, session {}", shown_, id); }
  pg::Settings settings(const std::string& id) const {
    return pg::Settings{conninfo_, where(id), id, options_.lease_ttl, announcer_};
  }
  Error not_found(std::string_view id) const override {
    return Error{Errc::not_found, fmt::format("no session {} in postgres store {}", id, shown_)};
  }
  Error db_error(std::string_view id, std::string_view what, const PgError& error) const {
    return Error{Errc::io_error, fmt::format("{}: {}: {}", where(id), what, error.message)};
  }

  const std::string conninfo_;
  const std::string shown_;
  const StoreOptions options_;
  // mu_ (SqlStore) guards db_.
  pg::Connection db_;
  std::shared_ptr<pg::LineReader> lines_;  // the payloads of sessions opened from their columns
  std::shared_ptr<pg::Announcer> announcer_;  // null when appends are not announced
  std::mutex listener_mu_;
  std::shared_ptr<pg::Listener> listener_;  // started by the first follow
  std::unique_ptr<pg::PgInbox> inbox_;       // last: it uses the listener
};

pg::PgResult<pg::Rows> PostgresStore::exec(std::string_view sql, std::span<const Param> params) {
  auto rows = db_.exec(sql, params);
  if (rows || !rows.error().connection_lost) return rows;
  if (auto back = db_.reconnect(); !back) return std::unexpected(back.error());
  return db_.exec(sql, params);
}

// The columns of a session's row, as row_of reads them.
constexpr const char* kPgSessionRows = "SELECT id, version, timestamp, cwd, parent_session, header FROM cairn_sessions";

// The session row at result row `i` of a kPgSessionRows query.
SessionRow row_of(const pg::Rows& rows, int i) {
  return SessionRow{.id = std::string(rows.text(i, 0)),
                    .version = rows.int64(i, 1),
                    .timestamp = std::string(rows.text(i, 2)),
                    .cwd = std::string(rows.text(i, 3)),
                    .parent_session = rows.optional_text(i, 4),
                    .header = std::string(rows.text(i, 5))};
}

// ---- list ---------------------------------------------------------------------------

Result<std::vector<SessionHeader>> PostgresStore::list_sessions() {
  std::lock_guard guard(mu_);
  auto rows = exec(fmt::format("{} ORDER BY timestamp DESC, id DESC", kPgSessionRows));
  if (!rows) return fail(Errc::io_error, fmt::format("postgres store {}: cannot list: {}", shown_, rows.error().message));
  std::vector<SessionHeader> headers;
  headers.reserve(static_cast<std::size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) headers.push_back(listed_header(row_of(*rows, i)));
  return headers;
}

// ---- create -------------------------------------------------------------------------

Result<std::shared_ptr<Session>> PostgresStore::create_session(const CreateOptions& options) {
  auto made = new_session_header(options, fmt::format("postgres store {}", shown_));
  if (!made) return std::unexpected(made.error());
  SessionHeader& header = *made;
  const std::string header_json = encode(header).dump(-1, ' ', false, Json::error_handler_t::replace);
  auto medium = pg::PgMedium::create(settings(header.id), header, header_json);
  if (!medium) {
    if (medium.error().is(Errc::already_exists)) {
      return fail(Errc::already_exists, fmt::format("session {} already exists in postgres store {}", header.id, shown_));
    }
    return std::unexpected(medium.error());
  }
  return std::make_shared<Session>(std::move(header), SessionIndex(), std::move(*medium), OpenReport{});
}

// The row and the records go in one transaction on the store's connection:
// the session does not exist until the commit, so nobody can hold it. Its
// generation is 0 and nobody owns it; the open that follows takes the lease.
Result<std::shared_ptr<Session>> PostgresStore::create_session_with_log(const SessionHeader& header,
                                                                        const std::vector<LogLine>& log) {
  const std::string& id = header.id;
  if (!valid_session_id(id)) {
    return fail(Errc::invalid_argument, fmt::format("postgres store {}: {}", shown_, invalid_session_id(id)));
  }
  // The lines must make a log: checked before anything is written.
  std::int64_t open_operations = 0;
  {
    SessionIndex index;
    for (const LogLine& line : log) {
      auto meta = scan_line(line.json);
      Status status = meta ? check_invariants(*meta, index) : Status(std::unexpected(meta.error()));
      if (status && meta->seq != static_cast<std::int64_t>(index.size())) {
        status = fail(Errc::corrupt_log, fmt::format("seq {} where {} belongs", meta->seq, index.size()));
      }
      if (!status) return fail(status.error(), fmt::format("{}: seq {}: {}", where(id), line.seq, status.error().message));
      if (meta->type == RecordType::operation_started) ++open_operations;
      if (meta->type == RecordType::operation_finished) --open_operations;
      index.add(*meta, line.json);
    }
  }
  const std::string header_json = encode(header).dump(-1, ' ', false, Json::error_handler_t::replace);
  {
    std::lock_guard guard(mu_);
    auto tx = pg::Transaction::begin(db_);
    if (!tx) return std::unexpected(db_error(id, "cannot create the session", tx.error()));
    const std::array<Param, 9> row{id,
                                   std::to_string(header.version),
                                   header.timestamp,
                                   header.cwd,
                                   header.parent_session ? Param(*header.parent_session) : Param(),
                                   header_json,
                                   std::to_string(static_cast<std::int64_t>(log.size()) - 1),
                                   std::to_string(open_operations),
                                   is_child_session(header) ? "true" : "false"};
    auto inserted = db_.exec(
        "INSERT INTO cairn_sessions (id, version, timestamp, cwd, parent_session, header, generation, owner, "
        "lease_expires, head_seq, open_ops, child) VALUES ($1, $2, $3, $4, $5, $6, 0, NULL, NULL, $7::bigint, "
        "$8::bigint, $9::boolean) ON CONFLICT (id) DO NOTHING",
        row);
    if (!inserted) return std::unexpected(db_error(id, "cannot create the session", inserted.error()));
    if (inserted->affected() == 0) {
      return fail(Errc::already_exists, fmt::format("session {} already exists in postgres store {}", id, shown_));
    }
    constexpr std::size_t kChunk = 500;
    for (std::size_t at = 0; at < log.size(); at += kChunk) {
      const std::size_t count = std::min(kChunk, log.size() - at);
      std::vector<Param> params;
      params.reserve(1 + count * pg::kRecordParams);
      params.emplace_back(id);
      std::string sql = fmt::format("INSERT INTO cairn_records (session_id, indexed, {}) VALUES ", pg::kRecordColumns);
      for (std::size_t i = 0; i < count; ++i) {
        const LogLine& line = log[at + i];
        auto meta = scan_line(line.json);  // checked above
        if (!meta) return fail(meta.error(), fmt::format("{}: seq {}: {}", where(id), line.seq, meta.error().message));
        sql += fmt::format("{}($1, true, {})", i ? ", " : "", pg::record_placeholders(2 + i * pg::kRecordParams));
        pg::add_record_params(params, *meta, line.json);
      }
      if (auto rows = db_.exec(sql, params); !rows) {
        return std::unexpected(db_error(id, "cannot create the session", rows.error()));
      }
    }
    if (auto committed = tx->commit(); !committed) {
      return std::unexpected(db_error(id, "cannot create the session", committed.error()));
    }
  }
  return open_session(id, OpenOptions{});
}

// ---- open ---------------------------------------------------------------------------

Result<std::shared_ptr<Session>> PostgresStore::open_session(const std::string& id, const OpenOptions& options) {
  if (auto openable = check_openable(id); !openable) return std::unexpected(openable.error());
  std::unique_ptr<pg::PgMedium> medium;
  if (!options.read_only) {
    auto taken = pg::PgMedium::acquire(settings(id), options);
    if (!taken) return std::unexpected(taken.error());
    medium = std::move(*taken);
  }
  return open_with(id, std::move(medium));
}

Result<std::shared_ptr<Session>> PostgresStore::open_with(const std::string& id, std::unique_ptr<pg::PgMedium> medium) {
  // The header and the records from one snapshot taken after the lease: a
  // writer fenced by it cannot have appended after the snapshot.
  std::lock_guard guard(mu_);
  if (auto begun = db_.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !begun) {
    if (!begun.error().connection_lost) return std::unexpected(db_error(id, "cannot begin a read", begun.error()));
    if (auto back = db_.reconnect(); !back) return std::unexpected(db_error(id, "cannot begin a read", back.error()));
    if (auto again = db_.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !again) {
      return std::unexpected(db_error(id, "cannot begin a read", again.error()));
    }
  }
  struct EndRead {
    pg::Connection& db;
    ~EndRead() {
      if (db.connected()) (void)db.run("COMMIT");
    }
  } end_read{db_};
  auto header = read_header(id);
  if (!header) return std::unexpected(header.error());
  auto index = load(id, *header, medium.get());
  if (!index) return std::unexpected(index.error());
  if (medium && medium->head() != static_cast<std::int64_t>(index->size()) - 1) {
    return fail(Errc::corrupt_log, fmt::format("{}: the session row's head is seq {} but {} records are stored", where(id),
                                               medium->head(), index->size()));
  }
  return std::make_shared<Session>(std::move(*header), std::move(*index), std::move(medium), OpenReport{});
}

Result<SessionRow> PostgresStore::read_row(const std::string& id) {
  const std::array<Param, 1> params{id};
  auto rows = exec(fmt::format("{} WHERE id = $1", kPgSessionRows), params);
  if (!rows) return std::unexpected(db_error(id, "cannot read the header", rows.error()));
  if (rows->size() == 0) return std::unexpected(not_found(id));
  return row_of(*rows, 0);
}



// The index columns of a record's row (kRecordColumns' but the payload), in
// the order narrow_meta reads them.
constexpr std::string_view kNarrowLoad = "seq, type, id, parent_id, ref, run_id, target_id, name, custom_type, role";

// A row of a kNarrowLoad query as the index fields it holds; its views point
// into `rows`. Errors say what is wrong with the row, not where it is.
Result<RecordMeta> narrow_meta(const pg::Rows& rows, int row) {
  const auto optional = [&](int column) -> std::optional<std::string_view> {
    if (rows.is_null(row, column)) return std::nullopt;
    return rows.text(row, column);
  };
  RecordMeta meta;
  meta.seq = rows.int64(row, 0);
  const std::string_view type_name = rows.text(row, 1);
  // An ignorable record's column says so (its own type is not one this
  // build knows: parse_record_type has no name for it).
  const std::optional<RecordType> type =
      type_name == to_string(RecordType::ignorable) ? RecordType::ignorable : parse_record_type(type_name);
  if (!type) return fail(Errc::unknown_type, fmt::format("unknown record type '{}' (not marked ignorable)", type_name));
  meta.type = *type;
  meta.id = rows.text(row, 2);
  meta.parent_id = optional(3);
  meta.ref = rows.text(row, 4);
  meta.run_id = rows.text(row, 5);
  meta.target_id = optional(6);
  meta.name = rows.text(row, 7);
  meta.custom_type = rows.text(row, 8);
  meta.role = rows.text(row, 9);
  return meta;
}

// Under the open's read-only snapshot (open_with), so the pages are of one
// log. A page at a time: what libpq holds besides the index is one page's
// result, not a second copy of the whole log.
Result<SessionIndex> PostgresStore::load(const std::string& id, const SessionHeader& header, pg::PgMedium* medium) {
  constexpr std::int64_t kPage = 4096;
  const std::array<Param, 1> params{id};
  auto row = db_.exec("SELECT head_seq FROM cairn_sessions WHERE id = $1", params);
  if (!row) return std::unexpected(db_error(id, "cannot read the session", row.error()));
  if (row->size() == 0) return std::unexpected(not_found(id));
  PageRead read;
  // A session of one page is read whole, lines and all: reading its lines
  // later would cost a connection more than it saves.
  read.narrow = row->int64(0, 0) + 1 > kPage;
  read.checksums = checksums_required(header.version);
  std::vector<Param> backfill;
  if (medium != nullptr) read.backfill = &backfill;
  SessionIndex index;
  if (read.narrow) index.set_line_source(std::make_shared<pg::PgLines>(lines_, id, where(id)));
  // One cursor, one plan: the primary key's order, fetched a page at a time
  // (a query per page would be planned, and may sort the whole log, each time).
  const std::string columns =
      !read.narrow   ? std::string("seq, indexed, payload")
      : medium       ? fmt::format("{}, indexed, payload", kNarrowLoad)
                     : fmt::format("{}, indexed, CASE WHEN indexed THEN NULL ELSE payload END", kNarrowLoad);
  if (auto declared = db_.exec(fmt::format("DECLARE cairn_load NO SCROLL CURSOR FOR SELECT {} FROM cairn_records "
                                           "WHERE session_id = $1 ORDER BY seq",
                                           columns),
                               params);
      !declared) {
    return std::unexpected(db_error(id, "cannot read the records", declared.error()));
  }
  {
    // Fetching a page takes about as long as indexing one: a second thread
    // fetches ahead (the connection is that thread's alone until the
    // pipeline ends, which it does before this returns).
    struct Page {
      std::optional<pg::Rows> rows;
      std::optional<Error> error;
    };
    ChunkPipeline<Page> pipeline([&](Page& page) {
      auto rows = db_.exec(fmt::format("FETCH {} FROM cairn_load", kPage));
      if (!rows) {
        page.error = db_error(id, "cannot read the records", rows.error());
        return false;
      }
      const bool more = rows->size() == kPage;
      page.rows = std::move(*rows);
      return more;
    });
    for (std::int64_t next = 0; std::unique_ptr<Page> page = pipeline.next();) {
      if (page->error) return std::unexpected(*page->error);
      if (auto added = add_page(id, *page->rows, next, read, index); !added) return std::unexpected(added.error());
      next += page->rows->size();
    }
  }
  if (auto closed = db_.run("CLOSE cairn_load"); !closed) {
    return std::unexpected(db_error(id, "cannot read the records", closed.error()));
  }
  index.require_checksums(read.checksums);
  // The columns for the next open. Not the open's to fail: without them the
  // session is read from its payloads as now, and a lease lost meanwhile is
  // the medium's to report at the next append.
  if (!backfill.empty()) (void)medium->backfill(backfill);
  return index;
}

Status PostgresStore::add_page(const std::string& id, const pg::Rows& rows, std::int64_t first, const PageRead& read,
                               SessionIndex& index) {
  const int indexed_column = read.narrow ? 10 : 1;
  for (int row = 0; row < rows.size(); ++row) {
    const std::int64_t i = first + row;
    const std::int64_t seq = rows.int64(row, 0);
    auto checked = [&]() -> Status {
      if (seq != i) return fail(Errc::corrupt_log, fmt::format("the record after seq {} has seq {}", i - 1, seq));
      const bool indexed = rows.text(row, indexed_column) == "t";
      const std::optional<std::string_view> line =
          rows.is_null(row, indexed_column + 1) ? std::nullopt : std::optional(rows.text(row, indexed_column + 1));
      if (read.narrow && indexed) {
        auto meta = narrow_meta(rows, row);
        if (!meta) return std::unexpected(meta.error());
        if (line) {
          if (auto damaged = payload_damage(*meta, *line, read.checksums)) return fail(Errc::corrupt_log, *damaged);
        }
        if (auto valid = check_invariants(*meta, index); !valid) return valid;
        index.add_unloaded(*meta);
        return {};
      }
      // A row read whole, or one without its index columns: its payload says.
      assert(line);
      auto meta = scan_line(*line);
      if (!meta) return std::unexpected(meta.error());
      if (meta->seq != seq) return fail(Errc::corrupt_log, fmt::format("its payload says seq {}", meta->seq));
      auto checksum = check_checksum(*line);
      if (!checksum) return std::unexpected(checksum.error());
      if (*checksum == Checksum::absent && read.checksums) {
        return fail(Errc::corrupt_log, "the record has no checksum, which its session's format requires");
      }
      if (auto valid = check_invariants(*meta, index); !valid) return valid;
      if (!indexed && read.backfill != nullptr) {
        read.backfill->emplace_back(std::to_string(seq));
        for (const auto& text : {meta->parent_id, meta->target_id}) {
          read.backfill->push_back(text ? Param(std::string(*text)) : Param());
        }
        for (const std::string_view text : {meta->name, meta->custom_type, meta->role}) {
          read.backfill->push_back(text.empty() ? Param() : Param(std::string(text)));
        }
      }
      // Narrow, the index reads its line later like the others' (it holds
      // lines for none or for all of the records it opened with).
      if (read.narrow) {
        index.add_unloaded(*meta);
      } else {
        index.add(*meta, *line);
      }
      return {};
    }();
    if (!checked) {
      return fail(Errc::corrupt_log, fmt::format("{}: seq {}: {}{}", where(id), i, checked.error().message,
                                                 "; `cairn repair` can replace what is damaged"));
    }
  }
  return {};
}

// ---- following ------------------------------------------------------------------------

// The session's creation time and its head: one primary-key lookup. A
// repair bumps the generation (it takes the session as a writer does).
Result<std::string> PostgresStore::stamp_of(const std::string& id) {
  std::lock_guard lock(mu_);
  const std::array<Param, 1> key{id};
  auto row = exec("SELECT timestamp, head_seq, generation FROM cairn_sessions WHERE id = $1", key);
  if (!row) return std::unexpected(db_error(id, "cannot read the head", row.error()));
  if (row->size() == 0) return std::unexpected(not_found(id));
  return fmt::format("{}:{}:{}", row->text(0, 0), row->int64(0, 1), row->int64(0, 2));
}

Result<std::vector<LogLine>> PostgresStore::read_session_log(const std::string& id, std::int64_t after_seq,
                                                               std::size_t limit) {
  std::lock_guard lock(mu_);
  const std::int64_t after = std::max<std::int64_t>(after_seq, -1);
  const std::array<Param, 3> params{id, std::to_string(after), std::to_string(limit)};
  auto rows = exec("SELECT seq, payload FROM cairn_records WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                   params);
  if (!rows) return std::unexpected(db_error(id, "cannot read the records", rows.error()));
  if (rows->size() == 0) {
    const std::array<Param, 1> key{id};
    auto found = exec("SELECT 1 FROM cairn_sessions WHERE id = $1", key);
    if (!found) return std::unexpected(db_error(id, "cannot read the session", found.error()));
    if (found->size() == 0) return std::unexpected(not_found(id));
  }
  std::vector<LogLine> lines;
  lines.reserve(static_cast<std::size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) {
    const std::int64_t seq = rows->int64(i, 0);
    const std::string_view line = rows->text(i, 1);
    auto checked = [&]() -> Result<RecordType> {
      if (seq != after + 1 + i) return fail(Errc::corrupt_log, fmt::format("the record after seq {} has seq {}", after + i, seq));
      auto meta = scan_line(line);
      if (!meta) return std::unexpected(meta.error());
      if (meta->seq != seq) return fail(Errc::corrupt_log, fmt::format("its payload says seq {}", meta->seq));
      if (auto checksum = check_checksum(line); !checksum) return std::unexpected(checksum.error());
      return meta->type;
    }();
    if (!checked) {
      return fail(Errc::corrupt_log, fmt::format("{}: seq {}: {}", where(id), after + 1 + i, checked.error().message));
    }
    lines.push_back(LogLine{seq, *checked, std::string(line)});
  }
  return lines;
}

// ---- claims ---------------------------------------------------------------------------

Result<std::optional<std::shared_ptr<Session>>> PostgresStore::claim_session(const ClaimOptions& options) {
  pg::Settings base{conninfo_, fmt::format("postgres store {}, session ", shown_), "", options_.lease_ttl, announcer_};
  auto medium = pg::PgMedium::claim(std::move(base), options);
  if (!medium) return std::unexpected(medium.error());
  if (!*medium) return std::optional<std::shared_ptr<Session>>();
  const std::string id = (*medium)->session_id();
  auto opened = open_with(id, std::move(*medium));
  if (!opened) {
    // A session that cannot even be opened counts as a failed claim.
    (void)end_session_claim(id, ClaimEnd::failed, opened.error().message);
    return std::unexpected(opened.error());
  }
  return std::optional<std::shared_ptr<Session>>(std::move(*opened));
}

Status PostgresStore::end_session_claim(const std::string& id, ClaimEnd end, std::string_view detail) {
  std::lock_guard guard(mu_);
  const std::array<Param, 2> params{id, std::string(detail)};
  const char* sql = nullptr;
  switch (end) {
    case ClaimEnd::finished:
      sql = "UPDATE cairn_sessions SET claims = 0, claim_error = NULL WHERE id = $1 AND $2::text IS NOT NULL";
      break;
    case ClaimEnd::waiting:
      sql = "UPDATE cairn_sessions SET claims = 0, claim_error = NULL, skip_head = head_seq "
            "WHERE id = $1 AND $2::text IS NOT NULL";
      break;
    case ClaimEnd::failed:
      sql = "UPDATE cairn_sessions SET claim_error = $2 WHERE id = $1";
      break;
  }
  if (auto ended = exec(sql, params); !ended) return std::unexpected(db_error(id, "cannot record the claim's end", ended.error()));
  return {};
}

// ---- remove -------------------------------------------------------------------------

Status PostgresStore::remove_session(const std::string& id) {
  if (!valid_session_id(id)) return std::unexpected(not_found(id));
  std::lock_guard guard(mu_);
  auto tx = pg::Transaction::begin(db_);
  if (!tx) return std::unexpected(db_error(id, "cannot remove", tx.error()));
  const std::array<Param, 1> params{id};
  // A live lease keeps the session; an expired one is nobody's.
  auto removed = db_.exec(
      "DELETE FROM cairn_sessions WHERE id = $1 AND (owner IS NULL OR lease_expires IS NULL OR lease_expires <= now()) "
      "RETURNING 1",
      params);
  if (!removed) return std::unexpected(db_error(id, "cannot remove", removed.error()));
  if (removed->size() == 0) {
    auto holder = db_.exec("SELECT owner, generation FROM cairn_sessions WHERE id = $1", params);
    if (!holder) return std::unexpected(db_error(id, "cannot remove", holder.error()));
    if (holder->size() == 0) return std::unexpected(not_found(id));
    return fail(Errc::locked, fmt::format("{} is held by {} (generation {})", where(id),
                                          pg::describe_owner(holder->text(0, 0)), holder->int64(0, 1)));
  }
  if (auto records = db_.exec("DELETE FROM cairn_records WHERE session_id = $1", params); !records) {
    return std::unexpected(db_error(id, "cannot remove", records.error()));
  }
  // What was left for it in its inbox can never be applied: said so to
  // whoever asks after it, in the same transaction.
  if (auto failed = db_.exec(fmt::format("{}session_id = $1", pg::kFailInboxItemsWhere), params); !failed) {
    return std::unexpected(db_error(id, "cannot remove", failed.error()));
  }
  if (auto committed = tx->commit(); !committed) return std::unexpected(db_error(id, "cannot remove", committed.error()));
  return {};
}

// ---- repair -------------------------------------------------------------------------

Result<RepairReport> PostgresStore::repair_session(const std::string& id) {
  if (!valid_session_id(id)) return std::unexpected(not_found(id));
  {
    std::lock_guard guard(mu_);
    const std::array<Param, 1> params{id};
    auto found = exec("SELECT 1 FROM cairn_sessions WHERE id = $1", params);
    if (!found) return std::unexpected(db_error(id, "cannot look the session up", found.error()));
    if (found->size() == 0) return std::unexpected(not_found(id));
  }
  // Repair writes: it takes the lease like any writer, at once.
  auto medium = pg::PgMedium::acquire(settings(id), OpenOptions{});
  if (!medium) return std::unexpected(medium.error());

  RepairReport report;
  report.location = where(id);
  std::lock_guard guard(mu_);
  std::optional<SessionHeader> rebuilt;
  auto header = header_to_repair(id, report, rebuilt);
  if (!header) return std::unexpected(header.error());
  const bool checksums = checksums_required(header->version);
  const std::array<Param, 1> params{id};
  auto rows = exec("SELECT seq, payload FROM cairn_records WHERE session_id = $1 ORDER BY seq", params);
  if (!rows) return std::unexpected(db_error(id, "cannot read the records", rows.error()));

  std::vector<repair::StoredRow> read;
  read.reserve(static_cast<std::size_t>(rows->size()));
  for (int i = 0; i < rows->size(); ++i) read.push_back({rows->int64(i, 0), rows->text(i, 1), std::nullopt, ""});
  auto [stored, moved] = repair::place_rows(read, checksums, report);
  repair::Plan plan = repair::plan_into(report, stored, checksums);
  if (!report.changed() && !moved) return report;

  // The original rows first, kept in cairn_repair_backups.
  const std::string taken_at = now_iso8601();
  const std::array<Param, 2> backup{id, taken_at};
  if (auto saved = exec("INSERT INTO cairn_repair_backups (session_id, taken_at, seq, payload) "
                        "SELECT session_id, $2::timestamptz, seq, payload FROM cairn_records WHERE session_id = $1",
                        backup);
      !saved) {
    return std::unexpected(db_error(id, "cannot back the records up", saved.error()));
  }
  report.backup = fmt::format("table cairn_repair_backups, session_id '{}', taken_at '{}'", id, taken_at);

  StringArena strings;
  auto records = repair::repaired_records(stored, plan, strings);
  if (!records) return std::unexpected(records.error());
  std::optional<std::string> header_json;
  if (rebuilt) header_json = encode(*rebuilt).dump(-1, ' ', false, Json::error_handler_t::replace);
  if (auto written = (*medium)->rewrite(*records, header_json); !written) return std::unexpected(written.error());
  return report;
}

}  // namespace

Result<std::unique_ptr<Store>> make_postgres_store(const std::string& uri, const StoreOptions& options) {
  const std::string shown = pg::redact(uri);
  return guarded(fmt::format("postgres store {}", shown), [&]() -> Result<std::unique_ptr<Store>> {
    auto connection = pg::Connection::connect(uri);
    if (!connection) return fail(Errc::io_error, fmt::format("postgres store {}: {}", shown, connection.error().message));
    auto version = pg::create_schema(*connection);
    if (!version) {
      return fail(Errc::io_error, fmt::format("postgres store {}: cannot set up the schema: {}", shown, version.error().message));
    }
    if (*version > pg::kSchemaVersion) {
      return fail(Errc::newer_version, fmt::format("postgres store {}: schema version {} is newer than this build's {}",
                                                   shown, *version, pg::kSchemaVersion));
    }
    return std::make_unique<PostgresStore>(uri, options, std::move(*connection));
  });
}

}  // namespace cairn
