#include "sqlite_records.hpp"

#include <fmt/format.h>

#include "chunk_pipeline.hpp"
#include "sqlite_medium.hpp"
#include "sql_store.hpp"

namespace cairn::sqlite {

namespace {

enum Table { kTree = 0, kHarness = 1, kIgnorable = 2 };

// Each scan starts with seq; the other columns differ by table. Repair reads
// the payloads too, as the last column.
constexpr std::string_view kScans[] = {
    "SELECT seq, type, id, parent_id, ref, target_id, name, custom_type, role, payload "
    "FROM session_entries WHERE session_id = ?1 ORDER BY seq",
    "SELECT seq, type, id, ref, run_id, target_id, name, custom_type, payload "
    "FROM harness_entries WHERE session_id = ?1 ORDER BY seq",
    "SELECT seq, id, payload FROM ignorable_entries WHERE session_id = ?1 ORDER BY seq",
};
// Opening reads the index columns alone, from the narrow indexes that hold
// them (named, because the planner would rather walk the table's own key).
// Ignorable records are rare and have no such index.
constexpr std::string_view kOpenScans[] = {
    "SELECT seq, type, id, parent_id, ref, target_id, name, custom_type, role "
    "FROM session_entries INDEXED BY idx_entries_open WHERE session_id = ?1 ORDER BY seq",
    "SELECT seq, type, id, ref, run_id, target_id, name, custom_type "
    "FROM harness_entries INDEXED BY idx_harness_open WHERE session_id = ?1 ORDER BY seq",
    "SELECT seq, id FROM ignorable_entries WHERE session_id = ?1 ORDER BY seq",
};
// One record's stored line, by table, and its id to check it is the record
// the index knows; then the same for a range of seqs.
constexpr std::string_view kLineReads[] = {
    "SELECT id, payload FROM session_entries WHERE session_id = ?1 AND seq = ?2",
    "SELECT id, payload FROM harness_entries WHERE session_id = ?1 AND seq = ?2",
    "SELECT id, payload FROM ignorable_entries WHERE session_id = ?1 AND seq = ?2",
};
constexpr std::string_view kRangeReads[] = {
    "SELECT seq, id, payload FROM session_entries WHERE session_id = ?1 AND seq >= ?2 AND seq < ?3",
    "SELECT seq, id, payload FROM harness_entries WHERE session_id = ?1 AND seq >= ?2 AND seq < ?3",
    "SELECT seq, id, payload FROM ignorable_entries WHERE session_id = ?1 AND seq >= ?2 AND seq < ?3",
};
constexpr std::string_view kBytesBefore =
    "SELECT (SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) FROM session_entries "
    "        WHERE session_id = ?1 AND seq < ?2) + "
    "       (SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) FROM harness_entries "
    "        WHERE session_id = ?1 AND seq < ?2) + "
    "       (SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) FROM ignorable_entries "
    "        WHERE session_id = ?1 AND seq < ?2)";

// The highest seq of a session: three primary-key lookups. In a healthy log it
// is the record count less one, which lets the index size itself once.
constexpr std::string_view kLastSeq =
    "SELECT max(coalesce((SELECT max(seq) FROM session_entries WHERE session_id = ?1), -1), "
    "coalesce((SELECT max(seq) FROM harness_entries WHERE session_id = ?1), -1), "
    "coalesce((SELECT max(seq) FROM ignorable_entries WHERE session_id = ?1), -1))";
// A damaged seq must not make the index reserve absurd amounts of memory; the
// reservation is only a hint, so larger logs just grow as they are read.
constexpr std::int64_t kMaxReservation = std::int64_t{1} << 23;

// One table's rows, in seq order. The current row's text stays valid until
// this cursor (and only this one) steps.
struct Cursor {
  Statement* rows = nullptr;
  Table table = kTree;
  bool has_row = false;
  std::int64_t seq = 0;
};

// The merge of the three cursors. Leaves every scan reset however it ends: a
// half-read statement would keep its read snapshot alive on the connection.
class Merge {
 public:
  Merge(Statement (&tables)[3], const std::string& session_id) : tables_(tables) {
    for (int table = 0; table < 3; ++table) {
      cursors_[table].rows = &tables_[table];
      cursors_[table].table = static_cast<Table>(table);
      tables_[table].reset().bind(1, std::string_view(session_id));
    }
  }
  ~Merge() {
    for (Statement& statement : tables_) statement.reset();
  }
  Merge(const Merge&) = delete;
  Merge& operator=(const Merge&) = delete;

  DbStatus start() {
    for (Cursor& cursor : cursors_) {
      if (auto stepped = advance(cursor); !stepped) return stepped;
    }
    return {};
  }
  // The cursor with the lowest seq (ties: in table order); null when done.
  Cursor* next() {
    Cursor* lowest = nullptr;
    for (Cursor& cursor : cursors_) {
      if (cursor.has_row && (lowest == nullptr || cursor.seq < lowest->seq)) lowest = &cursor;
    }
    return lowest;
  }
  static DbStatus advance(Cursor& cursor) {
    auto stepped = cursor.rows->step();
    if (!stepped) return std::unexpected(std::move(stepped.error()));
    cursor.has_row = *stepped;
    if (cursor.has_row) cursor.seq = cursor.rows->int64(0);
    return {};
  }

 private:
  Statement (&tables_)[3];
  Cursor cursors_[3];
};

std::optional<std::string_view> optional_text(const Statement& rows, int column) {
  if (rows.is_null(column)) return std::nullopt;
  return rows.text(column);
}

// The current row's index fields, from its columns; `payload`, when given,
// is set to its stored line (a kScans row). Errors say what is wrong with the
// row, not where it is.
Result<RecordMeta> meta_of_row(const Cursor& cursor, std::string_view* payload) {
  const Statement& rows = *cursor.rows;
  RecordMeta meta;
  meta.seq = cursor.seq;
  if (cursor.table == kIgnorable) {
    meta.type = RecordType::ignorable;
    meta.id = rows.text(1);
    if (payload) *payload = rows.text(2);
    return meta;
  }
  const std::string_view type_name = rows.text(1);
  const std::optional<RecordType> type = parse_record_type(type_name);
  if (!type) return fail(Errc::unknown_type, fmt::format("unknown record type '{}' (not marked ignorable)", type_name));
  if (is_tree_type(*type) != (cursor.table == kTree)) {
    return fail(Errc::corrupt_log, fmt::format("a {} record in {}", type_name, kEntryTables[cursor.table]));
  }
  meta.type = *type;
  meta.id = rows.text(2);
  if (cursor.table == kTree) {
    meta.parent_id = optional_text(rows, 3);
    meta.ref = rows.text(4);
    meta.target_id = optional_text(rows, 5);
    meta.name = rows.text(6);
    meta.custom_type = rows.text(7);
    meta.role = rows.text(8);
    if (payload) *payload = rows.text(9);
  } else {
    meta.ref = rows.text(3);
    meta.run_id = rows.text(4);
    meta.target_id = optional_text(rows, 5);
    meta.name = rows.text(6);
    meta.custom_type = rows.text(7);
    if (payload) *payload = rows.text(8);
  }
  return meta;
}

std::string seq_break(std::int64_t expected, std::int64_t found) {
  return fmt::format("{}: expected {}, found {}", found > expected ? "seq gap" : "duplicate seq", expected, found);
}

}  // namespace

DbResult<RecordReader> RecordReader::prepare(Database& db, std::string file) {
  RecordReader reader;
  reader.file_ = std::move(file);
  reader.access_ = db.access();
  for (int table = 0; table < 3; ++table) {
    auto scan = db.prepare(kScans[table]);
    if (!scan) return std::unexpected(std::move(scan.error()));
    reader.tables_[table] = std::move(*scan);
    auto open_scan = db.prepare(kOpenScans[table]);
    if (!open_scan) return std::unexpected(std::move(open_scan.error()));
    reader.open_tables_[table] = std::move(*open_scan);
  }
  auto last_seq = db.prepare(kLastSeq);
  if (!last_seq) return std::unexpected(std::move(last_seq.error()));
  reader.last_seq_ = std::move(*last_seq);
  return reader;
}

Result<SessionIndex> RecordReader::load(const std::string& session_id, bool verify_payloads, bool checksums) {
  const std::string at = where(file_, session_id);
  Merge merge(verify_payloads ? tables_ : open_tables_, session_id);
  if (auto started = merge.start(); !started) {
    return fail(error_code(started.error()), fmt::format("{}: cannot read the records: {}", at, started.error().message));
  }
  SessionIndex index;
  last_seq_.reset().bind(1, std::string_view(session_id));
  auto last = last_seq_.step();
  if (!last) return fail(error_code(last.error()), fmt::format("{}: cannot read the records: {}", at, last.error().message));
  const std::int64_t count = *last ? last_seq_.int64(0) + 1 : 0;
  last_seq_.reset();
  if (count > 0 && count <= kMaxReservation) index.reserve(static_cast<std::size_t>(count));

  // Stepping through the rows takes about as long as indexing them, so a
  // second thread reads them a chunk ahead (the connection is used by that
  // thread alone until the pipeline ends). A row's text is valid only until
  // its statement steps: the chunk copies it, and the index adopts the copy.
  // The payloads stay in the file until a query needs them.
  index.set_line_source(std::make_shared<SqliteLines>(file_, session_id, access_));
  struct Rows {
    std::vector<RecordMeta> metas;
    StringArena strings;
    std::optional<Error> error;  // the read stopped at this
  };
  constexpr std::size_t kChunkRows = 1024;
  std::int64_t expected = 0;
  auto produce = [&](Rows& rows) {
    auto copy = [&](std::string_view text) { return text.empty() ? text : rows.strings.store(text); };
    rows.metas.reserve(kChunkRows);
    while (rows.metas.size() < kChunkRows) {
      Cursor* next = merge.next();
      if (next == nullptr) return false;
      const std::int64_t seq = next->seq;
      if (seq != expected) {
        rows.error = Error{Errc::corrupt_log, fmt::format("{}: {}", at, seq_break(expected, seq))};
        return false;
      }
      std::string_view payload;
      auto meta = meta_of_row(*next, verify_payloads ? &payload : nullptr);
      if (!meta) {
        rows.error = meta.error().with_message(fmt::format("{}, seq {}: {}", at, seq, meta.error().message));
        return false;
      }
      if (verify_payloads) {
        if (auto damaged = payload_damage(*meta, payload, checksums)) {
          rows.error = Error{Errc::corrupt_log, fmt::format("{}, seq {}: {}; the session can be read but not written until "
                                                        "`cairn repair` replaces the record",
                                                        at, seq, *damaged)};
          return false;
        }
      }
      meta->id = copy(meta->id);
      if (meta->parent_id) meta->parent_id = copy(*meta->parent_id);
      if (meta->target_id) meta->target_id = copy(*meta->target_id);
      for (std::string_view* text : {&meta->ref, &meta->run_id, &meta->name, &meta->custom_type, &meta->role}) {
        *text = copy(*text);
      }
      rows.metas.push_back(*meta);
      ++expected;
      if (auto advanced = Merge::advance(*next); !advanced) {
        rows.error = Error{error_code(advanced.error()),
                           fmt::format("{}: cannot read past seq {}: {}", at, seq, advanced.error().message)};
        return false;
      }
    }
    return true;
  };
  ChunkPipeline<Rows> pipeline(produce);
  while (std::unique_ptr<Rows> rows = pipeline.next()) {
    for (std::size_t i = 0; i < rows->metas.size(); ++i) {
      // The check of a new id misses the cache on the id table: start the
      // next one's load now.
      if (i + 1 < rows->metas.size()) index.prefetch_id(rows->metas[i + 1].id);
      if (auto valid = check_invariants(rows->metas[i], index); !valid) {
        return fail(Errc::corrupt_log, fmt::format("{}, seq {}: {}", at, rows->metas[i].seq, valid.error().message));
      }
      index.add_unloaded(rows->metas[i]);
    }
    if (rows->error) return std::unexpected(*rows->error);
    index.adopt_strings(std::move(rows->strings));
  }
  return index;
}

Result<StoredRows> RecordReader::read_rows(const std::string& session_id) {
  const std::string at = where(file_, session_id);
  Merge merge(tables_, session_id);
  if (auto started = merge.start(); !started) {
    return fail(error_code(started.error()), fmt::format("{}: cannot read the records: {}", at, started.error().message));
  }
  StoredRows out;
  auto copy = [&](std::string_view text) { return text.empty() ? text : out.strings.store(text); };
  while (Cursor* next = merge.next()) {
    StoredRow row;
    row.table = next->table;
    row.seq = next->seq;
    std::string_view payload;
    if (auto meta = meta_of_row(*next, &payload)) {
      meta->id = copy(meta->id);
      if (meta->parent_id) meta->parent_id = copy(*meta->parent_id);
      if (meta->target_id) meta->target_id = copy(*meta->target_id);
      for (std::string_view* text : {&meta->ref, &meta->run_id, &meta->name, &meta->custom_type, &meta->role}) {
        *text = copy(*text);
      }
      row.columns = *meta;
    }
    row.payload = std::string(payload.empty() ? next->rows->text(next->table == kTree ? 9 : next->table == kHarness ? 8 : 2)
                                              : payload);
    out.rows.push_back(std::move(row));
    if (auto advanced = Merge::advance(*next); !advanced) {
      return fail(error_code(advanced.error()),
                  fmt::format("{}: cannot read past seq {}: {}", at, next->seq, advanced.error().message));
    }
  }
  return out;
}

}  // namespace cairn::sqlite

namespace cairn::sqlite {

struct SqliteLines::Connection {
  Database db;
  Statement lines[3];   // kLineReads
  Statement ranges[3];  // kRangeReads
  Statement bytes_before;
};

SqliteLines::SqliteLines(std::string file, std::string session_id, Database::Access access)
    : file_(std::move(file)), session_id_(std::move(session_id)), access_(access) {}
SqliteLines::~SqliteLines() = default;

DbResult<SqliteLines::Connection*> SqliteLines::connect() const {
  if (connection_) return connection_.get();
  auto db = Database::open_as(file_, access_);
  if (!db) return std::unexpected(std::move(db.error()));
  db->set_busy_timeout(kBusyTimeoutMs);
  auto connection = std::make_unique<Connection>();
  connection->db = std::move(*db);
  for (int table = 0; table < 3; ++table) {
    auto statement = connection->db.prepare(kLineReads[table]);
    if (!statement) return std::unexpected(std::move(statement.error()));
    connection->lines[table] = std::move(*statement);
    auto range = connection->db.prepare(kRangeReads[table]);
    if (!range) return std::unexpected(std::move(range.error()));
    connection->ranges[table] = std::move(*range);
  }
  auto bytes = connection->db.prepare(kBytesBefore);
  if (!bytes) return std::unexpected(std::move(bytes.error()));
  connection->bytes_before = std::move(*bytes);
  connection_ = std::move(connection);
  return connection_.get();
}

Result<LineSource::Stored> SqliteLines::line(std::int64_t seq, RecordType type) const {
  const int table = is_tree_type(type) ? kTree : is_harness_type(type) ? kHarness : kIgnorable;
  const std::string at = fmt::format("{}, seq {}", where(file_, session_id_), seq);
  std::lock_guard lock(mu_);
  auto connected = connect();
  if (!connected) {
    return fail(error_code(connected.error()),
                fmt::format("{}: cannot read the record: {}", at, connected.error().message));
  }
  Statement& read = (*connected)->lines[table];
  read.reset().bind(1, std::string_view(session_id_)).bind(2, seq);
  auto row = read.step();
  if (!row) return fail(error_code(row.error()), fmt::format("{}: cannot read the record: {}", at, row.error().message));
  if (!*row) {
    read.reset();
    return fail(Errc::corrupt_log, fmt::format("{}: the record is no longer in {}", at, kEntryTables[table]));
  }
  Stored stored{std::string(read.text(0)), std::string(read.text(1))};
  read.reset();
  return stored;
}

Result<std::vector<LineSource::Stored>> SqliteLines::lines(std::int64_t begin, std::int64_t end) const {
  const std::string at = where(file_, session_id_);
  std::vector<Stored> out(static_cast<std::size_t>(std::max<std::int64_t>(end - begin, 0)));
  std::vector<bool> found(out.size());
  std::lock_guard lock(mu_);
  auto connected = connect();
  if (!connected) {
    return fail(error_code(connected.error()),
                fmt::format("{}: cannot read the records: {}", at, connected.error().message));
  }
  // Each table holds its rows in seq order; together they fill the range.
  for (Statement& range : (*connected)->ranges) {
    range.reset().bind(1, std::string_view(session_id_)).bind(2, begin).bind(3, end);
    for (;;) {
      auto row = range.step();
      if (!row) return fail(error_code(row.error()), fmt::format("{}: cannot read the records: {}", at, row.error().message));
      if (!*row) break;
      const std::int64_t seq = range.int64(0);
      const auto slot = static_cast<std::size_t>(seq - begin);
      if (found[slot]) {
        range.reset();
        return fail(Errc::corrupt_log, fmt::format("{}: duplicate seq {}", at, seq));
      }
      found[slot] = true;
      out[slot] = Stored{std::string(range.text(1)), std::string(range.text(2))};
    }
    range.reset();
  }
  for (std::size_t slot = 0; slot < found.size(); ++slot) {
    if (!found[slot]) {
      return fail(Errc::corrupt_log,
                  fmt::format("{}, seq {}: the record is no longer in the store", at, begin + static_cast<std::int64_t>(slot)));
    }
  }
  return out;
}

Result<std::int64_t> SqliteLines::bytes_before(std::int64_t end) const {
  std::lock_guard lock(mu_);
  auto connected = connect();
  auto failed = [&](const DbError& error) {
    return fail(error_code(error), fmt::format("{}: cannot size the records: {}", where(file_, session_id_), error.message));
  };
  if (!connected) return failed(connected.error());
  Statement& sum = (*connected)->bytes_before;
  sum.reset().bind(1, std::string_view(session_id_)).bind(2, end);
  auto row = sum.step();
  if (!row) return failed(row.error());
  const std::int64_t bytes = *row ? sum.int64(0) : 0;
  sum.reset();
  return bytes;
}

}  // namespace cairn::sqlite
