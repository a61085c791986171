#include "sqlite_records.hpp"

#include <fmt/format.h>

#include "chunk_pipeline.hpp"
#include "sqlite_medium.hpp"

namespace cairn::sqlite {

namespace {

enum Table { kTree = 0, kHarness = 1, kIgnorable = 2 };

// Each scan starts with seq; the other columns differ by table.
constexpr std::string_view kScans[] = {
    "SELECT seq, type, id, parent_id, ref, target_id, name, custom_type, role, payload "
    "FROM session_entries WHERE session_id = ?1 ORDER BY seq",
    "SELECT seq, type, id, ref, run_id, target_id, name, custom_type, payload "
    "FROM harness_entries WHERE session_id = ?1 ORDER BY seq",
    "SELECT seq, id, payload FROM ignorable_entries WHERE session_id = ?1 ORDER BY seq",
};

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

// The current row's index fields, from its columns; `payload` is set to its
// stored line. Errors say what is wrong with the row, not where it is.
Result<RecordMeta> meta_of_row(const Cursor& cursor, std::string_view& payload) {
  const Statement& rows = *cursor.rows;
  RecordMeta meta;
  meta.seq = cursor.seq;
  if (cursor.table == kIgnorable) {
    meta.type = RecordType::ignorable;
    meta.id = rows.text(1);
    payload = rows.text(2);
    return meta;
  }
  const std::string_view type_name = rows.text(1);
  const std::optional<RecordType> type = parse_record_type(type_name);
  if (!type) return fail("unknown_type", fmt::format("unknown record type '{}' (not marked ignorable)", type_name));
  if (is_tree_type(*type) != (cursor.table == kTree)) {
    return fail("corrupt_log", fmt::format("a {} record in {}", type_name, kEntryTables[cursor.table]));
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
    payload = rows.text(9);
  } else {
    meta.ref = rows.text(3);
    meta.run_id = rows.text(4);
    meta.target_id = optional_text(rows, 5);
    meta.name = rows.text(6);
    meta.custom_type = rows.text(7);
    payload = rows.text(8);
  }
  return meta;
}

// The first index field in which the columns and the payload disagree.
std::optional<std::string_view> disagreement(const RecordMeta& columns, const RecordMeta& payload) {
  if (columns.seq != payload.seq) return "seq";
  if (columns.type != payload.type) return "type";
  if (columns.id != payload.id) return "id";
  if (columns.parent_id != payload.parent_id) return "parent_id";
  if (columns.ref != payload.ref) return "ref";
  if (columns.run_id != payload.run_id) return "run_id";
  if (columns.target_id != payload.target_id) return "target_id";
  if (columns.name != payload.name) return "name";
  if (columns.custom_type != payload.custom_type) return "custom_type";
  if (columns.role != payload.role) return "role";
  return std::nullopt;
}

std::string seq_break(std::int64_t expected, std::int64_t found) {
  return fmt::format("{}: expected {}, found {}", found > expected ? "seq gap" : "duplicate seq", expected, found);
}

}  // namespace

DbResult<RecordReader> RecordReader::prepare(Database& db, std::string file) {
  RecordReader reader;
  reader.file_ = std::move(file);
  for (int table = 0; table < 3; ++table) {
    auto statement = db.prepare(kScans[table]);
    if (!statement) return std::unexpected(std::move(statement.error()));
    reader.tables_[table] = std::move(*statement);
  }
  auto last_seq = db.prepare(kLastSeq);
  if (!last_seq) return std::unexpected(std::move(last_seq.error()));
  reader.last_seq_ = std::move(*last_seq);
  return reader;
}

Result<SessionIndex> RecordReader::load(const std::string& session_id) {
  const std::string at = where(file_, session_id);
  Merge merge(tables_, session_id);
  if (auto started = merge.start(); !started) {
    return fail("io_error", fmt::format("{}: cannot read the records: {}", at, started.error().message));
  }
  SessionIndex index;
  last_seq_.reset().bind(1, std::string_view(session_id));
  auto last = last_seq_.step();
  if (!last) return fail("io_error", fmt::format("{}: cannot read the records: {}", at, last.error().message));
  const std::int64_t count = *last ? last_seq_.int64(0) + 1 : 0;
  last_seq_.reset();
  if (count > 0 && count <= kMaxReservation) index.reserve(static_cast<std::size_t>(count));

  // Stepping through the rows takes about as long as indexing them, so a
  // second thread reads them a chunk ahead (the connection is used by that
  // thread alone until the pipeline ends). A row's text is valid only until
  // its statement steps: the chunk copies it, and the index adopts the copy.
  struct Rows {
    std::vector<RecordMeta> metas;
    std::vector<std::string_view> lines;
    StringArena strings;
    std::optional<Error> error;  // the read stopped at this
  };
  constexpr std::size_t kChunkRows = 256;
  std::int64_t expected = 0;
  auto produce = [&](Rows& rows) {
    auto copy = [&](std::string_view text) { return text.empty() ? text : rows.strings.store(text); };
    rows.metas.reserve(kChunkRows);
    rows.lines.reserve(kChunkRows);
    while (rows.metas.size() < kChunkRows) {
      Cursor* next = merge.next();
      if (next == nullptr) return false;
      const std::int64_t seq = next->seq;
      if (seq != expected) {
        rows.error = Error{"corrupt_log", fmt::format("{}: {}", at, seq_break(expected, seq))};
        return false;
      }
      std::string_view payload;
      auto meta = meta_of_row(*next, payload);
      if (!meta) {
        rows.error = Error{meta.error().code, fmt::format("{}, seq {}: {}", at, seq, meta.error().message)};
        return false;
      }
      meta->id = copy(meta->id);
      if (meta->parent_id) meta->parent_id = copy(*meta->parent_id);
      if (meta->target_id) meta->target_id = copy(*meta->target_id);
      for (std::string_view* text : {&meta->ref, &meta->run_id, &meta->name, &meta->custom_type, &meta->role}) {
        *text = copy(*text);
      }
      rows.metas.push_back(*meta);
      rows.lines.push_back(copy(payload));
      ++expected;
      if (auto advanced = Merge::advance(*next); !advanced) {
        rows.error = Error{"io_error", fmt::format("{}: cannot read past seq {}: {}", at, seq, advanced.error().message)};
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
        return fail("corrupt_log", fmt::format("{}, seq {}: {}", at, rows->metas[i].seq, valid.error().message));
      }
      index.add_view(rows->metas[i], rows->lines[i]);
    }
    if (rows->error) return std::unexpected(*rows->error);
    index.adopt_strings(std::move(rows->strings));
  }
  return index;
}

Result<Salvage> RecordReader::salvage(const std::string& session_id) {
  const std::string at = where(file_, session_id);
  Merge merge(tables_, session_id);
  if (auto started = merge.start(); !started) {
    return fail("io_error", fmt::format("{}: cannot read the records: {}", at, started.error().message));
  }
  Salvage salvage;
  SessionIndex index;
  std::optional<std::int64_t> first_damaged;
  while (Cursor* next = merge.next()) {
    const std::int64_t seq = next->seq;
    std::string_view payload;
    std::string reason;
    if (first_damaged) {
      reason = fmt::format("after the damaged record at seq {}", *first_damaged);
      (void)meta_of_row(*next, payload);
    } else if (seq != salvage.kept) {
      reason = seq_break(salvage.kept, seq);
      (void)meta_of_row(*next, payload);
    } else if (auto meta = meta_of_row(*next, payload); !meta) {
      reason = meta.error().message;
    } else if (auto scanned = scan_line(payload); !scanned) {
      reason = fmt::format("payload: {}", scanned.error().message);
    } else if (auto field = disagreement(*meta, *scanned)) {
      reason = fmt::format("the {} column disagrees with the payload", *field);
    } else if (auto valid = check_invariants(*meta, index); !valid) {
      reason = valid.error().message;
    } else {
      index.add(*meta, payload);
      ++salvage.kept;
    }
    if (!reason.empty()) {
      if (!first_damaged) first_damaged = seq;
      salvage.damaged.push_back(
          DamagedRow{next->table, seq, static_cast<std::int64_t>(payload.size()), std::move(reason)});
    }
    if (auto advanced = Merge::advance(*next); !advanced) {
      return fail("io_error", fmt::format("{}: cannot read past seq {}: {}", at, seq, advanced.error().message));
    }
  }
  return salvage;
}

}  // namespace cairn::sqlite
