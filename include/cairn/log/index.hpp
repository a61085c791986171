// The in-memory index of one session's log: what the tree and the queries need
// (seq, type, id, parent, ref, run), with every record's stored line beside
// it. Payloads are decoded only when a query returns them, which is what makes
// opening a large session cheap.
//
// Not synchronised: Session guards it (readers shared, the one writer exclusive).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cairn/log/query.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

// The index fields of one record, as extracted from its line (or its columns).
struct RecordMeta {
  std::int64_t seq = 0;
  RecordType type = RecordType::message;
  std::string id;                         // empty for ignorable records without one
  std::optional<std::string> parent_id;   // tree entries
  std::string ref;                        // tree entries: the ref whose leaf moved ("main" if absent)
  std::string run_id;                     // harness records inside an operation
  std::optional<std::string> target_id;   // leaf: new leaf; label: labelled entry; ref_created: anchor
  std::string name;                       // ref_created / ref_deleted: the ref
  std::string custom_type;                // custom / custom_message
  std::string role;                       // message entries: the message's role
};

// Extracts RecordMeta from one stored line with simdjson; checks the JSON is
// complete and well formed. Errors name what is wrong, not where (the caller
// knows the file and line).
// `padded`: at least kScanPadding readable bytes follow the line in memory
// (the open path's file buffer has them), which spares a copy per line.
inline constexpr std::size_t kScanPadding = 64;
Result<RecordMeta> scan_line(std::string_view line, bool padded = false);
// The same from an already-decoded record (the append path).
RecordMeta meta_of(const Record& record);

// Validation state: what a new record is checked against. SessionIndex holds
// the committed one; a group commit stacks a StagedState over it.
class LogStateView {
 public:
  struct RefSlot {
    std::optional<std::string> leaf;
    std::optional<std::string> open_operation;
  };
  virtual ~LogStateView() = default;
  virtual std::int64_t next_seq() const = 0;
  // The type of the record with this id, if any.
  virtual std::optional<RecordType> type_of_id(std::string_view id) const = 0;
  // The ref's slot, or null when there is no such ref. Valid until the state changes.
  virtual const RefSlot* ref(std::string_view name) const = 0;
};

// A state that records can be applied to: the committed index, or a group
// commit's staging layer over it.
class MutableLogState : public LogStateView {
 public:
  virtual void put_id(const std::string& id, RecordType type) = 0;
  // The ref's slot for changing it in place; the ref exists.
  virtual RefSlot& mutable_ref(const std::string& name) = 0;
  virtual void create_ref(const std::string& name, std::optional<std::string> leaf) = 0;
  virtual void erase_ref(const std::string& name) = 0;
};

// Checks `record` (seq already assigned) against the log invariants given the
// state; field rules are checked by check_fields.
Status check_invariants(const RecordMeta& record, const LogStateView& state);
// Applies a record that passed check_invariants: ids, leaves, open operations.
void apply_record(const RecordMeta& record, MutableLogState& state);
// Per-type field rules on a typed record (valid enums, non-empty ids, ...).
Status check_fields(const Record& record);

class SessionIndex : public MutableLogState {
 public:
  SessionIndex();

  // Adds a record that passed validation (or was read from a verified store).
  // `line` is its stored JSON text.
  void add(RecordMeta meta, std::string line);
  void reserve(std::size_t records);
  // Adds a record whose line lies inside the buffer given to adopt_buffer (the
  // file read at open), sparing a copy per record.
  void add_view(RecordMeta meta, std::string_view line);
  void adopt_buffer(std::string buffer) { adopted_ = std::move(buffer); }
  std::string_view adopted_buffer() const { return adopted_; }

  // LogStateView
  std::int64_t next_seq() const override { return static_cast<std::int64_t>(records_.size()); }
  std::optional<RecordType> type_of_id(std::string_view id) const override;
  const RefSlot* ref(std::string_view name) const override;
  void put_id(const std::string& id, RecordType type) override;
  RefSlot& mutable_ref(const std::string& name) override;
  void create_ref(const std::string& name, std::optional<std::string> leaf) override;
  void erase_ref(const std::string& name) override;

  // Reads
  std::optional<TreeEntry> get_entry(std::string_view id) const;
  std::optional<Record> get_record(std::int64_t seq) const;
  std::vector<std::string> children(std::optional<std::string_view> id) const;  // nullopt: roots
  std::optional<std::string> leaf(std::string_view ref) const;
  std::vector<RefInfo> refs() const;
  Result<Page<TreeEntry>> find_entries(const EntryQuery& query) const;
  Result<Page<TreeEntry>> find_entries_on_branch(const EntryQuery& query, const BranchBounds& bounds,
                                                 std::string_view ref = "main") const;
  std::vector<LogLine> get_log(std::int64_t after_seq, std::optional<std::size_t> limit) const;
  Result<Page<HarnessRecord>> find_harness_entries(const HarnessQuery& query) const;
  SessionStats stats() const;
  std::optional<std::string> name() const;
  std::optional<std::string> label(std::string_view entry_id) const;
  // The branch from `leaf` (nullopt: empty) to the root, root first.
  std::vector<std::string> path_to(std::optional<std::string_view> leaf) const;
  Result<SessionContext> build_context(std::optional<std::string_view> leaf) const;
  Result<SessionContext> build_context_for_ref(std::string_view ref) const;

  std::int64_t size() const { return next_seq(); }
  std::string_view line(std::int64_t seq) const { return records_[static_cast<std::size_t>(seq)].line; }
  const RecordMeta& meta(std::int64_t seq) const { return records_[static_cast<std::size_t>(seq)].meta; }

 private:
  struct Slot {
    RecordMeta meta;
    std::string_view line;
    std::int32_t parent = -1;  // index of the parent entry
  };

  std::optional<std::int64_t> seq_of(std::string_view id) const;
  Result<TreeEntry> decode_entry(std::int64_t seq) const;

  std::vector<Slot> records_;
  std::deque<std::string> owned_lines_;  // lines appended after open
  std::string adopted_;                  // the file read at open
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> by_id_;
  std::unordered_map<std::string, RefSlot, StringHash, std::equal_to<>> refs_;
  std::vector<std::string> ref_order_;
  std::int64_t bytes_ = 0;
};

}  // namespace cairn
