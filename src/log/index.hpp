// The in-memory index of one session's log: what the tree and the queries need
// (seq, type, id, parent, ref, run), with every record's stored line beside
// it or, for a store that can read one record cheaply, a way to read it.
// Payloads are decoded only when a query returns them, which is what makes
// opening a large session cheap.
//
// Not synchronised: Session guards it (readers shared, the one writer exclusive).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cairn/log/query.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

// The index fields of one record, as extracted from its line (or its columns,
// or its typed form). The views point into whatever it was extracted from and
// live only as long as that: the index copies what it keeps.
struct RecordMeta {
  std::int64_t seq = 0;
  RecordType type = RecordType::message;
  std::string_view id;                         // empty for ignorable records without one
  std::optional<std::string_view> parent_id;   // tree entries
  std::string_view ref = "main";               // tree entries: the ref whose leaf moved
  std::string_view run_id;                     // harness records inside an operation
  std::optional<std::string_view> target_id;   // leaf: new leaf; label: labelled entry; ref_created: anchor
  std::string_view name;                       // ref_created / ref_deleted: the ref
  std::string_view custom_type;                // custom / custom_message; placeholders: the type they had
  std::string_view role;                       // message entries: the message's role
};

// Extracts RecordMeta from one stored line with simdjson; checks the JSON is
// complete and well formed. Errors name what is wrong, not where (the caller
// knows the file and line). The views are valid until the thread's next scan.
// `padded`: at least kScanPadding readable bytes follow the line in memory
// (the open path's file buffer has them), which spares a copy per line.
inline constexpr std::size_t kScanPadding = 64;
Result<RecordMeta> scan_line(std::string_view line, bool padded = false);
// The same from an already-decoded record (the append path); views into it.
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
  virtual void put_id(std::string_view id, RecordType type) = 0;
  // The ref's slot for changing it in place; the ref exists.
  virtual RefSlot& mutable_ref(std::string_view name) = 0;
  virtual void create_ref(std::string_view name, std::optional<std::string> leaf) = 0;
  virtual void erase_ref(std::string_view name) = 0;
};

// The type whose rules a record follows and whose effect on the log's state
// it has: its own, except for placeholders (record.hpp, DamageReport): one
// that had a type which moves a leaf, opens or closes an operation, or
// creates or deletes a ref acts as that type; any other damaged_entry as a
// plain tree entry (`damaged_entry`), any other damaged record as nothing
// (`damaged`).
RecordType acting_type(const RecordMeta& record);

// Checks `record` (seq already assigned) against the log invariants given the
// state; field rules are checked by check_fields.
Status check_invariants(const RecordMeta& record, const LogStateView& state);
// Applies a record that passed check_invariants: ids, leaves, open operations.
void apply_record(const RecordMeta& record, MutableLogState& state);
// Per-type field rules on a typed record (valid enums, non-empty ids, ...).
Status check_fields(const Record& record);

// What one tree entry contributes to a ref's context (pi's projection): its
// message, a custom message, a branch summary, or nothing. Compactions are
// not projected entry by entry: they replace what precedes them.
std::optional<AgentMessage> project_entry(const TreeEntry& entry);
// The same from an entry no longer needed: its message is moved, not copied.
std::optional<AgentMessage> project_entry(TreeEntry&& entry);

// The provider's order: the tool results that follow an assistant message
// are listed in the order of its tool calls, whatever order they were
// appended in (a batch's results land as its calls end, DESIGN.md's
// durability contract). `messages` ends with a tool result just added; it is
// moved to its place among the results right after the assistant message
// (a result naming none of its calls stays after the rest), and the index
// where it now lies is returned. build_context and the harness's context
// cache both order with it, so every reader of a branch agrees.
std::size_t place_tool_result(std::vector<AgentMessage>& messages);
std::size_t place_tool_result(std::vector<LlmMessage>& messages);

// Copies of short strings (ids, names) in large blocks: one allocation per
// block instead of one per string, and views that stay valid as it grows.
class StringArena {
 public:
  std::string_view store(std::string_view text);
  std::size_t bytes() const { return bytes_; }

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t used_ = 0, capacity_ = 0, bytes_ = 0;
};

// `meta` with its strings copied into `strings`, so that it outlives the
// bytes it was scanned from.
RecordMeta copy_meta(const RecordMeta& meta, StringArena& strings);

// Where the stored lines of records indexed without them are read from. The
// SQLite store indexes a session from its narrow columns and reads a payload
// when a query needs it. Called under the session's read lock, from any
// number of threads at once.
class LineSource {
 public:
  // A record as stored: the index checks the id is the one it knows (the
  // store could have been repaired by another process since it was read).
  struct Stored {
    std::string id;  // empty for an ignorable record without one
    std::string line;
  };
  virtual ~LineSource() = default;
  // The record at `seq`, which the index knows as a `type` record.
  virtual Result<Stored> line(std::int64_t seq, RecordType type) const = 0;
  // The records at [begin, end), in seq order: every one of them, or an error.
  virtual Result<std::vector<Stored>> lines(std::int64_t begin, std::int64_t end) const = 0;
  // The total size of the stored lines of the records before `end`.
  virtual Result<std::int64_t> bytes_before(std::int64_t end) const = 0;
};

// One record in the index: its stored line and the fields the tree and the
// queries need, as seqs and interned names rather than strings.
struct IndexedRecord {
  std::string_view line;      // empty: read from the index's LineSource
  std::string_view id;        // empty for an ignorable record without one
  std::uint32_t id_hash = 0;  // of `id`: compared before the ids themselves
  std::int32_t parent = -1;   // tree entries: the parent entry's seq
  std::int32_t target = -1;   // leaf and label: the target's seq; ref_created: the anchor's
  std::int32_t run = -1;      // harness records: the seq of their operation_started
  std::uint32_t ref = 0;      // interned ref name
  std::uint32_t detail = 0;   // interned: custom / custom_message: customType; message: role
  // Tree entries: the last entry of each kind on the path from the root to
  // this one, itself included (-1: none), so a context is built without
  // walking the whole branch. "model" is a model_change or an assistant
  // message, whose model was in use.
  std::int32_t last_compaction = -1;
  std::int32_t last_model = -1;
  std::int32_t last_thinking = -1;
  std::int32_t last_tools = -1;
  RecordType type = RecordType::message;
};

class SessionIndex : public MutableLogState {
 public:
  SessionIndex();
  SessionIndex(SessionIndex&&) noexcept;
  SessionIndex& operator=(SessionIndex&&) noexcept;
  ~SessionIndex() override;

  // Adds a record that passed check_invariants (or was read from a verified
  // store). `line` is its stored JSON text, copied into the index.
  void add(const RecordMeta& meta, std::string_view line);
  void reserve(std::size_t records);
  // Adds a record whose line lies inside the buffer given to adopt_buffer (the
  // file read at open), sparing a copy per record.
  void add_view(const RecordMeta& meta, std::string_view line);
  // `owner` keeps the memory `text` lies in alive as long as the index.
  void adopt_buffer(std::string_view text, std::shared_ptr<const void> owner) {
    adopted_ = text;
    adopted_owner_ = std::move(owner);
  }
  std::string_view adopted_buffer() const { return adopted_; }
  // Keeps `strings` alive as long as the index: lines and fields given to
  // add_view may lie in it.
  void adopt_strings(StringArena strings) { adopted_strings_.push_back(std::move(strings)); }
  // Adds a record whose line stays in `source` (set_line_source), read when a
  // query needs it. Only before any record with its line.
  void add_unloaded(const RecordMeta& meta);
  void set_line_source(std::shared_ptr<const LineSource> source) { source_ = std::move(source); }
  // Lines read from the LineSource must carry a valid checksum (the session's
  // format requires one); otherwise only a checksum that is there is checked.
  void require_checksums(bool required) { checksums_required_ = required; }
  // A hint that `id` will be looked up soon: starts loading its table slot.
  void prefetch_id(std::string_view id) const { prefetch_id_hash(hash_id(id)); }
  // The same given hash_id(id), which a reading thread can compute while the
  // id is in its cache.
  void prefetch_id_hash(std::uint32_t hash) const;
  static std::uint32_t hash_id(std::string_view id);

  // LogStateView
  std::int64_t next_seq() const override { return static_cast<std::int64_t>(records_.size()); }
  std::optional<RecordType> type_of_id(std::string_view id) const override;
  const RefSlot* ref(std::string_view name) const override;
  void put_id(std::string_view id, RecordType type) override;
  RefSlot& mutable_ref(std::string_view name) override;
  void create_ref(std::string_view name, std::optional<std::string> leaf) override;
  void erase_ref(std::string_view name) override;

  // Reads. Those that decode records fail only when a stored line cannot be
  // read or decoded (a disk error under a LineSource, a damaged store).
  Result<std::optional<TreeEntry>> get_entry(std::string_view id) const;
  Result<std::optional<Record>> get_record(std::int64_t seq) const;
  std::vector<std::string> children(std::optional<std::string_view> id) const;  // nullopt: roots
  std::optional<std::string> leaf(std::string_view ref) const;
  // The seq of the record with this id.
  std::optional<std::int64_t> seq_of(std::string_view id) const;
  std::vector<RefInfo> refs() const;
  Result<Page<TreeEntry>> find_entries(const EntryQuery& query) const;
  Result<Page<TreeEntry>> find_entries_on_branch(const EntryQuery& query, const BranchBounds& bounds,
                                                 std::string_view ref = "main") const;
  Result<std::vector<LogLine>> get_log(std::int64_t after_seq, std::optional<std::size_t> limit) const;
  Result<Page<HarnessRecord>> find_harness_entries(const HarnessQuery& query) const;
  Result<SessionStats> stats() const;
  Result<std::optional<std::string>> name() const;
  Result<std::optional<std::string>> label(std::string_view entry_id) const;
  // The branch from `leaf` (nullopt: empty) to the root, root first.
  std::vector<std::string> path_to(std::optional<std::string_view> leaf) const;
  // `with_messages` false: only the settings in force (model, thinking level,
  // active tools), which the index finds without walking the branch.
  Result<SessionContext> build_context(std::optional<std::string_view> leaf, bool with_messages = true) const;
  Result<SessionContext> build_context_for_ref(std::string_view ref, bool with_messages = true) const;
  // The ref's context with its messages handed to `sink` one at a time, in
  // order, instead of held in the result (whose messages stay empty): a
  // long branch is printed or sent in memory bounded by a batch of messages.
  using ContextSink = cairn::ContextSink;
  Result<SessionContext> stream_context(std::string_view ref, const ContextSink& sink) const;

  std::int64_t size() const { return next_seq(); }
  const IndexedRecord& at(std::int64_t seq) const { return records_[static_cast<std::size_t>(seq)]; }
  // The record's stored line, read from the LineSource if the index lacks it.
  Result<std::string> stored_line(std::int64_t seq) const;
  // The text of an interned name (IndexedRecord::ref, ::detail).
  std::string_view name_of(std::uint32_t interned) const { return names_[interned]; }

 private:
  class IdTable;

  static constexpr std::size_t kRecentIds = 8;
  std::int32_t find_id(std::string_view id) const;  // -1 when absent
  std::int32_t seq_or_none(std::optional<std::string_view> id) const;
  std::uint32_t intern(std::string_view name);
  std::optional<std::uint32_t> interned(std::string_view name) const;
  Result<std::string> checked(std::int64_t seq, LineSource::Stored stored) const;
  Result<Record> decode(std::int64_t seq) const;
  Result<TreeEntry> decode_entry(std::int64_t seq) const;
  // The same from the record's line, already read.
  Result<TreeEntry> decode_entry(std::int64_t seq, std::string_view line) const;
  // The messages of the branch ending at `leaf_seq`, in order (`expect` is
  // told how many at most will come first).
  Status project_branch(std::int64_t leaf_seq, const std::function<void(std::size_t)>& expect,
                        const ContextSink& sink) const;
  // build_context's decoding: project_entry of each seq's entry (context.cpp).
  Status project_entries(const std::vector<std::int64_t>& seqs, std::span<std::optional<AgentMessage>> messages,
                         std::span<std::string> ids) const;
  std::string_view custom_type_of(const IndexedRecord& record) const;

  std::vector<IndexedRecord> records_;
  std::unique_ptr<IdTable> by_id_;
  StringArena strings_;  // ids, interned names, and lines appended after open
  std::string_view adopted_;                    // the file read at open
  std::shared_ptr<const void> adopted_owner_;
  std::vector<StringArena> adopted_strings_;
  std::shared_ptr<const LineSource> source_;
  std::int64_t unloaded_ = 0;  // records [0, unloaded_) have their lines in source_
  bool checksums_required_ = false;
  std::vector<std::string_view> names_;  // interned; names_[0] is ""
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string_view, std::uint32_t, StringHash> name_ids_;
  std::unordered_map<std::string, RefSlot, StringHash, std::equal_to<>> refs_;
  std::vector<std::string> ref_order_;
  std::int64_t bytes_ = 0;
};

}  // namespace cairn
