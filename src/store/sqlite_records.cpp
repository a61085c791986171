#include "sqlite_records.hpp"

#include <fmt/format.h>

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

// One table's rows, in seq order: a cursor of the merge. The current row's
// text stays valid until this cursor (and only this one) steps.
struct Cursor {
  Statement* rows = nullptr;
  Table table = kTree;
  bool has_row = false;
  std::int64_t seq = 0;

  DbStatus advance() {
    auto stepped = rows->step();
    if (!stepped) return std::unexpected(std::move(stepped.error()));
    has_row = *stepped;
    if (has_row) seq = rows->int64(0);
    return {};
  }
};

// Leaves every scan reset, however load() ends: a half-read statement would
// keep its read snapshot alive on the store's connection.
struct ResetAll {
  Statement (&tables)[3];
  ~ResetAll() {
    for (Statement& statement : tables) statement.reset();
  }
};

std::optional<std::string> optional_text(const Statement& rows, int column) {
  if (rows.is_null(column)) return std::nullopt;
  return std::string(rows.text(column));
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
  return reader;
}

Result<SessionIndex> RecordReader::load(const std::string& session_id) {
  const std::string at = where(file_, session_id);
  ResetAll reset{tables_};
  Cursor cursors[3];
  for (int table = 0; table < 3; ++table) {
    cursors[table].rows = &tables_[table];
    cursors[table].table = static_cast<Table>(table);
    tables_[table].reset().bind(1, std::string_view(session_id));
    if (auto started = cursors[table].advance(); !started) {
      return fail("io_error", fmt::format("{}: cannot read {}: {}", at, kEntryTables[table], started.error().message));
    }
  }

  SessionIndex index;
  for (std::int64_t expected = 0;; ++expected) {
    Cursor* next = nullptr;
    for (Cursor& cursor : cursors) {
      if (cursor.has_row && (next == nullptr || cursor.seq < next->seq)) next = &cursor;
    }
    if (next == nullptr) break;
    const std::int64_t seq = next->seq;
    if (seq != expected) {
      return fail("corrupt_log", fmt::format("{}: {}: expected {}, found {}", at,
                                             seq > expected ? "seq gap" : "duplicate seq", expected, seq));
    }

    const Statement& rows = *next->rows;
    RecordMeta meta;
    meta.seq = seq;
    std::string_view payload;
    if (next->table == kIgnorable) {
      meta.type = RecordType::ignorable;
      meta.id = rows.text(1);
      payload = rows.text(2);
    } else {
      const std::string_view type_name = rows.text(1);
      const std::optional<RecordType> type = parse_record_type(type_name);
      if (!type) {
        return fail("unknown_type", fmt::format("{}, seq {}: unknown record type '{}' (not marked ignorable)", at,
                                                seq, type_name));
      }
      if (is_tree_type(*type) != (next->table == kTree)) {
        return fail("corrupt_log",
                    fmt::format("{}, seq {}: a {} record in {}", at, seq, type_name, kEntryTables[next->table]));
      }
      meta.type = *type;
      meta.id = rows.text(2);
      if (next->table == kTree) {
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
    }
    if (auto valid = check_invariants(meta, index); !valid) {
      return fail("corrupt_log", fmt::format("{}, seq {}: {}", at, seq, valid.error().message));
    }
    index.add(std::move(meta), std::string(payload));

    if (auto advanced = next->advance(); !advanced) {
      return fail("io_error", fmt::format("{}: cannot read past seq {} in {}: {}", at, seq,
                                          kEntryTables[next->table], advanced.error().message));
    }
  }
  return index;
}

}  // namespace cairn::sqlite
