// Session: validation, group commit and reads over one session's index.
//
// Group commit follows LevelDB's DBImpl::Write: every caller queues its batch;
// the caller at the front becomes the leader, takes every batch queued behind
// it, validates each against the state left by the ones before it, writes all
// accepted records with one medium append (one write, one sync), and hands each
// follower its result. Followers that arrive during the sync form the next group.
#include "cairn/store/session.hpp"

#include <condition_variable>
#include <unordered_map>

#include <fmt/format.h>

namespace cairn {

struct Session::Writer {
  std::vector<Record>* batch = nullptr;
  bool done = false;
  Result<AppendResult> result = AppendResult{};
  std::condition_variable cv;
};

namespace {

// The state a group's earlier batches leave behind, layered over the index.
class StagedState final : public MutableLogState {
 public:
  explicit StagedState(const LogStateView& base) : base_(base), next_seq_(base.next_seq()) {}

  std::int64_t next_seq() const override { return next_seq_; }
  std::optional<RecordType> type_of_id(std::string_view id) const override {
    if (auto it = ids_.find(std::string(id)); it != ids_.end()) return it->second;
    return base_.type_of_id(id);
  }
  const RefSlot* ref(std::string_view name) const override {
    if (auto it = refs_.find(std::string(name)); it != refs_.end()) return it->second ? &*it->second : nullptr;
    return base_.ref(name);
  }
  void put_id(const std::string& id, RecordType type) override { ids_[id] = type; }
  // Copy on write: the first change to a ref copies the base's slot here.
  RefSlot& mutable_ref(const std::string& name) override {
    auto it = refs_.find(name);
    if (it == refs_.end()) it = refs_.emplace(name, *base_.ref(name)).first;
    return *it->second;
  }
  void create_ref(const std::string& name, std::optional<std::string> leaf) override {
    refs_[name] = RefSlot{std::move(leaf), std::nullopt};
  }
  void erase_ref(const std::string& name) override { refs_[name] = std::nullopt; }
  void advance() { ++next_seq_; }

  // A checkpoint to roll back to when a later record of the same batch fails.
  struct Mark {
    std::unordered_map<std::string, RecordType> ids;
    std::unordered_map<std::string, std::optional<RefSlot>> refs;
    std::int64_t next_seq;
  };
  Mark mark() const { return Mark{ids_, refs_, next_seq_}; }
  void restore(Mark mark) {
    ids_ = std::move(mark.ids);
    refs_ = std::move(mark.refs);
    next_seq_ = mark.next_seq;
  }

 private:
  const LogStateView& base_;
  std::int64_t next_seq_;
  std::unordered_map<std::string, RecordType> ids_;
  std::unordered_map<std::string, std::optional<RefSlot>> refs_;
};

void fill_defaults(Record& record) {
  if (auto* entry = std::get_if<TreeEntry>(&record.body)) {
    if (entry->id.empty()) entry->id = new_entry_id();
    if (entry->timestamp.empty()) entry->timestamp = now_iso8601();
  } else if (auto* harness = std::get_if<HarnessRecord>(&record.body)) {
    if (harness->id.empty()) harness->id = new_entry_id();
    if (harness->timestamp.empty()) harness->timestamp = now_iso8601();
  }
}

// Validates one record and prepares its stored line. `state` is advanced.
Result<PreparedRecord> prepare(Record& record, StagedState& state) {
  record.seq = state.next_seq();
  fill_defaults(record);
  if (auto status = check_fields(record); !status) {
    return fail(status.error().code, fmt::format("seq {}: {}", record.seq, status.error().message));
  }
  RecordMeta meta = meta_of(record);
  if (auto status = check_invariants(meta, state); !status) return std::unexpected(status.error());
  Json json = encode(record);
  if (!is_lossless(json)) {
    return fail("invalid_record", fmt::format("seq {}: holds a number JSON cannot represent (NaN or infinity)", record.seq));
  }
  std::string line;
  try {
    line = json.dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::exception&) {
    return fail("invalid_record", fmt::format("seq {}: holds a string that is not valid UTF-8", record.seq));
  }
  apply_record(meta, state);
  state.advance();
  return PreparedRecord{std::move(meta), std::move(line)};
}

}  // namespace

Session::Session(SessionHeader header, SessionIndex index, std::unique_ptr<LogMedium> medium, OpenReport report)
    : header_(std::move(header)), report_(std::move(report)), medium_(std::move(medium)), index_(std::move(index)) {}

Session::~Session() = default;

bool Session::faulted() const {
  std::lock_guard lock(write_mu_);
  return fault_.has_value();
}

Result<AppendResult> Session::append(Record record) {
  std::vector<Record> batch;
  batch.push_back(std::move(record));
  return append(std::move(batch));
}

Result<AppendResult> Session::append_json(const std::vector<Json>& batch) {
  std::vector<Record> records;
  records.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto record = decode_record(batch[i], /*require_seq=*/false);
    if (!record) return fail(record.error().code, fmt::format("record {} of the batch: {}", i, record.error().message));
    records.push_back(std::move(*record));
  }
  return append(std::move(records));
}

Result<AppendResult> Session::append(std::vector<Record> batch) {
  if (!medium_) return fail("read_only", fmt::format("session {} was opened for reading", header_.id));
  if (batch.empty()) return AppendResult{size(), 0};

  Writer self;
  self.batch = &batch;
  std::unique_lock lock(write_mu_);
  writers_.push_back(&self);
  self.cv.wait(lock, [&] { return self.done || writers_.front() == &self; });
  if (self.done) return std::move(self.result);

  // Leader: take everyone queued so far.
  std::vector<Writer*> group(writers_.begin(), writers_.end());
  if (fault_) {
    for (Writer* writer : group) writer->result = std::unexpected(*fault_);
  } else {
    lock.unlock();
    lead_group(group);
    lock.lock();
  }
  for (Writer* writer : group) {
    writers_.pop_front();
    if (writer != &self) {
      writer->done = true;
      writer->cv.notify_one();
    }
  }
  if (!writers_.empty()) writers_.front()->cv.notify_one();
  return std::move(self.result);
}

// Runs without write_mu_: only the leader is here, and it is the index's only
// writer, so it may read the index without the shared lock.
void Session::lead_group(std::vector<Writer*>& group) {
  StagedState state(index_);
  std::vector<PreparedRecord> prepared;
  std::vector<std::pair<std::size_t, std::size_t>> spans(group.size());  // per writer: [begin, end) in prepared

  for (std::size_t w = 0; w < group.size(); ++w) {
    Writer* writer = group[w];
    auto mark = state.mark();
    const std::size_t begin = prepared.size();
    bool ok = true;
    for (Record& record : *writer->batch) {
      auto one = prepare(record, state);
      if (!one) {
        writer->result = std::unexpected(one.error());
        ok = false;
        break;
      }
      prepared.push_back(std::move(*one));
    }
    if (!ok) {  // a rejected batch writes nothing
      prepared.resize(begin);
      state.restore(std::move(mark));
      spans[w] = {begin, begin};
      continue;
    }
    spans[w] = {begin, prepared.size()};
    writer->result = AppendResult{begin == prepared.size() ? state.next_seq() : prepared[begin].meta.seq,
                                  static_cast<std::int64_t>(prepared.size() - begin)};
  }
  if (prepared.empty()) return;

  if (auto status = medium_->append(prepared); !status) {
    // Nothing of the group is durable. Appends after a failed write or sync
    // cannot be trusted (the medium's state is unknown), so the session stops
    // accepting: the caller reopens it.
    Error error{status.error().code, fmt::format("append to {} failed: {}", medium_->describe(), status.error().message)};
    {
      std::lock_guard lock(write_mu_);
      if (error.code != "stale_writer") fault_ = Error{"faulted", error.message};
    }
    for (std::size_t w = 0; w < group.size(); ++w) {
      if (spans[w].first != spans[w].second) group[w]->result = std::unexpected(error);
    }
    return;
  }

  std::unique_lock index_lock(index_mu_);
  for (PreparedRecord& record : prepared) index_.add(std::move(record.meta), std::move(record.line));
}

// ---- reads ------------------------------------------------------------------

#define CAIRN_READ(expr)                  \
  std::shared_lock lock(index_mu_);       \
  return index_.expr

std::optional<TreeEntry> Session::get_entry(std::string_view id) const { CAIRN_READ(get_entry(id)); }
std::optional<Record> Session::get_record(std::int64_t seq) const { CAIRN_READ(get_record(seq)); }
std::vector<std::string> Session::children(std::optional<std::string_view> id) const { CAIRN_READ(children(id)); }
std::optional<std::string> Session::leaf(std::string_view ref) const { CAIRN_READ(leaf(ref)); }
std::vector<RefInfo> Session::refs() const { CAIRN_READ(refs()); }
Result<Page<TreeEntry>> Session::find_entries(const EntryQuery& query) const { CAIRN_READ(find_entries(query)); }
Result<Page<TreeEntry>> Session::find_entries_on_branch(const EntryQuery& query, const BranchBounds& bounds,
                                                        std::string_view ref) const {
  CAIRN_READ(find_entries_on_branch(query, bounds, ref));
}
std::vector<LogLine> Session::get_log(std::int64_t after_seq, std::optional<std::size_t> limit) const {
  CAIRN_READ(get_log(after_seq, limit));
}
Result<Page<HarnessRecord>> Session::find_harness_entries(const HarnessQuery& query) const {
  CAIRN_READ(find_harness_entries(query));
}
SessionStats Session::stats() const { CAIRN_READ(stats()); }
std::optional<std::string> Session::name() const { CAIRN_READ(name()); }
std::optional<std::string> Session::label(std::string_view entry_id) const { CAIRN_READ(label(entry_id)); }
std::vector<std::string> Session::path_to(std::optional<std::string_view> leaf) const { CAIRN_READ(path_to(leaf)); }
Result<SessionContext> Session::build_context(std::string_view ref) const { CAIRN_READ(build_context_for_ref(ref)); }
Result<SessionContext> Session::build_context_at(std::optional<std::string_view> leaf) const {
  CAIRN_READ(build_context(leaf));
}
std::int64_t Session::size() const { CAIRN_READ(size()); }

#undef CAIRN_READ

}  // namespace cairn
