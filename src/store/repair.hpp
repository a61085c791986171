// What `cairn repair` does to one session's records, whatever store holds
// them: which records are damaged, and what stands in each one's place.
//
// A record is damaged when its checksum fails (or is missing where its
// format requires one), its bytes do not scan as a record, its seq is not
// its position, its fields break their type's rules, or (SQLite) its payload
// is fine but its index columns are not — the last is fixed by rewriting the
// columns, the rest by a placeholder (record.hpp, DamageReport).
//
// A placeholder must keep the log valid for the intact records after it: a
// child whose parent was damaged still needs that parent, an operation whose
// operation_started was damaged still owns its later records. So repair
// recovers what it can of the damaged record (its columns, or the fields its
// damaged bytes still show), builds candidate placeholders from that and from
// the references later records make, and takes the first candidate under
// which the records up to the next damaged one pass every invariant. An
// intact record that no candidate can satisfy (its parent's id was lost with
// the damaged bytes) is itself kept inside a placeholder, as stored.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "log/index.hpp"
#include "cairn/log/record.hpp"
#include "cairn/store/session.hpp"
#include "cairn/store/store.hpp"
#include "store/log_medium.hpp"

namespace cairn::repair {

// The first index field (seq aside) in which two readings of one record
// disagree: its columns and its payload, or its damaged bytes and the
// records that refer to it.
std::optional<std::string_view> disagreement(const RecordMeta& a, const RecordMeta& b);

// One stored record as repair reads it, at position `seq` of the log.
struct StoredRecord {
  std::string bytes;  // the line (JSONL) or payload (SQLite) as stored
  // SQLite: the row's index columns; the strings they view must outlive the plan.
  std::optional<RecordMeta> columns;
};

struct Replacement {
  std::int64_t seq = 0;
  Record record;     // the placeholder, seq set
  std::string line;  // its stored line, checksum included
  std::string report;
  RecordMeta meta() const { return meta_of(record); }
};

struct Plan {
  std::vector<Replacement> replacements;  // in seq order
  // SQLite: rows whose payload is intact but whose columns disagree with it;
  // the columns are rewritten from the payload.
  std::vector<std::int64_t> column_fixes;
  std::set<std::string> abort_only_runs;
  std::int64_t intact = 0;
  bool changes() const { return !replacements.empty() || !column_fixes.empty(); }
};

// A row of an SQL store as repair reads it: the seq its column says, its
// payload, (SQLite) its index columns, and the table it is in ("" where the
// store keeps one).
struct StoredRow {
  std::int64_t seq = 0;
  std::string_view payload;
  std::optional<RecordMeta> columns;
  std::string_view table;
};
struct PlacedRows {
  std::vector<StoredRecord> records;  // seq 0 … n-1
  bool moved = false;                 // a row was dropped, or two held one seq
};
// The rows at the seqs their columns say: a row out of any place is dropped,
// of two rows at one seq the one whose payload is intact is kept (the first
// when both or neither are), and a seq no row holds becomes a missing
// record. Each such move is said in `report` (the backup keeps every row).
PlacedRows place_rows(const std::vector<StoredRow>& rows, bool checksums, RepairReport& report);

// Plans the repair of `records` (seq 0 … n-1). `checksums`: the session's
// format requires a checksum on every record. Never fails: anything that
// cannot be read becomes a placeholder.
Plan plan(const std::vector<StoredRecord>& records, bool checksums);

// The same plan, and what it finds said in `report`: how many records and
// how many intact, each replacement and column fix, and the runs that can
// now only be aborted.
Plan plan_into(RepairReport& report, const std::vector<StoredRecord>& records, bool checksums);


// The log after repair, as a medium rewrites it (seq 0 … n-1): each planned
// replacement's placeholder, every other record as stored with its index
// fields scanned from it. The fields view into `strings`.
Result<std::vector<PreparedRecord>> repaired_records(const std::vector<StoredRecord>& records, const Plan& plan,
                                                     StringArena& strings);

// A path for a new backup of `file`: `<file><infix>.repair-20261201T160707Z.bak`,
// with a counter added when that exists already.
std::string backup_path(const std::string& file, std::string_view infix = {});

// Builds a session header for a file whose header line is damaged: the id
// its file name gives, and whatever fields the damaged bytes still show.
SessionHeader rebuilt_header(std::string_view id, std::string_view damaged_bytes);

// Notes in a header that repair rebuilt it, and when.
void mark_rebuilt(SessionHeader& header);

}  // namespace cairn::repair
