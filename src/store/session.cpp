// Session: validation, group commit and reads over one session's index.
//
// Group commit follows LevelDB's DBImpl::Write: every caller queues its batch;
// the caller at the front becomes the leader, takes every batch queued behind
// it, validates each against the state left by the ones before it, writes all
// accepted records with one medium append (one write, one sync), and hands each
// follower its result. Followers that arrive during the sync form the next group.
//
// Unlike LevelDB, everything about a record that does not depend on the log's
// state (field rules, encoding, the stored line) is done by the caller before
// it queues, so callers on different cores prepare in parallel and the leader
// only checks the invariants and splices in each record's seq.
#include <algorithm>
#include <chrono>
#include "cairn/store/session.hpp"
#include "cairn/store/inbox.hpp"
#include "cairn/trace.hpp"

#include <condition_variable>
#include <charconv>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "../log/staged_state.hpp"
#include "store/log_medium.hpp"

namespace cairn {

// One queued append. Shared between its caller and the leader that completes
// it, so the leader may signal it after the caller has already returned.
struct Session::Writer {
  enum State { waiting, done, leading };
  std::vector<PreparedRecord> batch;
  // The inbox item its caller applies, until a record of it has landed.
  std::shared_ptr<InboxMark> mark;
  Result<AppendResult> result = AppendResult{};

  // A condition variable rather than an atomic wait: libstdc++'s atomic wait
  // spins with sched_yield first, which with dozens of queued writers on a
  // few cores takes the CPU the leader needs.
  void signal(State to) {
    {
      std::lock_guard lock(mu_);
      state_ = to;
    }
    cv_.notify_one();
  }
  State wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return state_ != waiting; });
    return state_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = waiting;
};

namespace {

void fill_defaults(Record& record, const Session& session) {
  if (auto* entry = std::get_if<TreeEntry>(&record.body)) {
    if (entry->id.empty()) entry->id = session.new_entry_id();
    if (entry->timestamp.empty()) entry->timestamp = now_iso8601();
  } else if (auto* harness = std::get_if<HarnessRecord>(&record.body)) {
    if (harness->id.empty()) harness->id = session.new_entry_id();
    if (harness->timestamp.empty()) harness->timestamp = now_iso8601();
  }
}

// The stored line is encoded with seq 0; the leader writes the real seq over
// that digit. `seq` is the first or second key ("type" comes first), and no
// earlier text can contain `"seq":` because a JSON string escapes its quotes.
constexpr std::string_view kSeqKey = "\"seq\":";
constexpr std::size_t kMaxSeqDigits = 19;

// Everything about a record that does not depend on the log's state: defaults,
// field rules, index fields and the stored line (with seq 0).
Result<PreparedRecord> prepare(Record& record, const Session& session) {
  record.seq = 0;
  fill_defaults(record, session);
  if (auto status = check_fields(record); !status) return std::unexpected(status.error());
  RecordMeta meta = meta_of(record);
  std::string line;
  line.reserve(512);
  const auto* entry = std::get_if<TreeEntry>(&record.body);
  if (!entry || !append_entry_line(line, *entry)) {  // the common entries are written straight
    Json json = encode(record);
    if (!is_lossless(json)) return fail(Errc::invalid_record, "holds a number JSON cannot represent (NaN or infinity)");
    try {
      line = json.dump(-1, ' ', false, Json::error_handler_t::strict);
    } catch (const Json::exception&) {
      return fail(Errc::invalid_record, "holds a string that is not valid UTF-8");
    }
  }
  // Room for the seq and the checksum, so neither reallocates.
  line.reserve(line.size() + kMaxSeqDigits + kChecksumSuffixSize);
  return PreparedRecord{std::move(meta), std::move(line)};
}

void splice_seq(PreparedRecord& record) {
  const std::int64_t seq = record.meta.seq;
  const std::size_t at = record.line.find(kSeqKey) + kSeqKey.size();
  char digits[kMaxSeqDigits + 1];
  const auto end = std::to_chars(digits, digits + sizeof digits, seq).ptr;
  record.line.replace(at, 1, digits, static_cast<std::size_t>(end - digits));
}

}  // namespace

Session::Session(SessionHeader header, SessionIndex index, std::unique_ptr<LogMedium> medium, OpenReport report)
    : header_(std::move(header)), report_(std::move(report)), writable_(medium != nullptr), medium_(std::move(medium)), index_(std::make_unique<SessionIndex>(std::move(index))) {}

Session::~Session() = default;

void Session::close_writer() {
  std::unique_ptr<LogMedium> released;
  {
    std::unique_lock lock(write_mu_);
    if (!fault_) fault_ = Error{Errc::closed, fmt::format("session {} was closed", header_.id)};
    // A group under way uses the medium outside the lock; later ones see the fault.
    writers_done_.wait(lock, [&] { return writers_.empty(); });
    released = std::move(medium_);
  }
  // `released` goes here, outside the lock: its close may take a moment.
}

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
    if (!record) return fail(record.error(), fmt::format("record {} of the batch: {}", i, record.error().message));
    records.push_back(std::move(*record));
  }
  return append(std::move(records));
}

AppendStats& AppendStats::operator+=(const AppendStats& other) {
  for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += other.buckets[i];
  count += other.count;
  seconds += other.seconds;
  return *this;
}

AppendStats Session::append_stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

Result<AppendResult> Session::append(std::vector<Record> batch) {
  trace::Span span("cairn.session.append", [&] {
    Json types = Json::array();
    for (const auto& record : batch) types.push_back(to_string(type_of(record)));
    return Json{{"sessionId", header_.id}, {"entryType", batch.size() == 1 ? types[0] : Json(types)}, {"count", batch.size()}};
  });
  const auto started = std::chrono::steady_clock::now();
  auto result = append_batch(std::move(batch));
  if (span) {
    if (result) {
      span.set("seq", result->first_seq + result->count - 1);
    } else {
      span.fail(result.error().code, result.error().message);
    }
  }
  if (result && result->count > 0) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const auto bucket = std::lower_bound(AppendStats::kBounds.begin(), AppendStats::kBounds.end(), seconds) -
                        AppendStats::kBounds.begin();
    std::lock_guard lock(stats_mu_);
    ++stats_.buckets[static_cast<std::size_t>(bucket)];
    ++stats_.count;
    stats_.seconds += seconds;
  }
  return result;
}

Result<AppendResult> Session::append_batch(std::vector<Record> batch) {
  if (!writable_) return fail(Errc::read_only, fmt::format("session {} was opened for reading", header_.id));
  if (batch.empty()) return AppendResult{size(), 0};

  auto self = std::make_shared<Writer>();
  if (auto mark = InboxMark::current(); mark && !mark->landed.load()) self->mark = std::move(mark);
  self->batch.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto one = prepare(batch[i], *this);
    if (!one) {  // a rejected batch writes nothing
      const std::string where = batch.size() == 1 ? std::string() : fmt::format("record {} of the batch: ", i);
      return fail(one.error(), where + one.error().message);
    }
    self->batch.push_back(std::move(*one));
  }

  std::vector<std::shared_ptr<Writer>> group;
  std::optional<Error> fault;
  {
    std::unique_lock lock(write_mu_);
    writers_.push_back(self);
    if (writers_.front() != self) {
      lock.unlock();
      if (self->wait() == Writer::done) return std::move(self->result);
      lock.lock();  // the previous leader handed this writer the lead
    }
    // Leader: take everyone queued so far.
    group.assign(writers_.begin(), writers_.end());
    fault = fault_;
  }
  if (fault) {
    for (auto& writer : group) writer->result = std::unexpected(*fault);
  } else {
    lead_group(group);
  }

  std::shared_ptr<Writer> next;
  {
    std::lock_guard lock(write_mu_);
    writers_.erase(writers_.begin(), writers_.begin() + static_cast<std::ptrdiff_t>(group.size()));
    if (!writers_.empty()) next = writers_.front();
    if (writers_.empty()) writers_done_.notify_all();
  }
  // Signalled outside the lock, so a woken follower does not block on it; the
  // shared pointers keep each Writer alive until its signal is sent. The next
  // leader first: its write and sync then overlap this group's wake-ups.
  if (next) next->signal(Writer::leading);
  for (std::size_t w = 1; w < group.size(); ++w) group[w]->signal(Writer::done);
  return std::move(self->result);
}

// Runs without write_mu_: only the leader is here, and it is the index's only
// writer, so it may read the index without the shared lock.
void Session::lead_group(std::vector<std::shared_ptr<Writer>>& group) {
  StagedState state(*index_);
  std::vector<PreparedRecord> accepted;
  std::vector<Writer*> landed;  // writers with records in `accepted`

  for (auto& writer : group) {
    const auto mark = state.mark();
    Status status;
    for (PreparedRecord& record : writer->batch) {
      record.meta.seq = state.next_seq();
      status = check_invariants(record.meta, state);
      if (!status) break;
      apply_record(record.meta, state);
      state.advance();
    }
    if (!status) {  // a rejected batch writes nothing
      writer->result = std::unexpected(status.error());
      state.restore(mark);
      continue;
    }
    writer->result = AppendResult{mark.next_seq, static_cast<std::int64_t>(writer->batch.size())};
    for (PreparedRecord& record : writer->batch) {
      splice_seq(record);
      add_checksum(record.line);  // over the final bytes, seq included
      accepted.push_back(std::move(record));
    }
    landed.push_back(writer.get());
  }
  if (accepted.empty()) return;

  std::vector<std::int64_t> inbox_items;
  for (const Writer* writer : landed) {
    if (writer->mark) inbox_items.push_back(writer->mark->item);
  }
  if (auto status = inbox_items.empty() ? medium_->append(accepted) : medium_->append_applying(accepted, inbox_items);
      !status) {
    // Nothing of the group is durable. Appends after a failed write or sync
    // cannot be trusted (the medium's state is unknown), so the session stops
    // accepting: the caller reopens it.
    Error error = status.error().with_message(fmt::format("append to {} failed: {}", medium_->describe(), status.error().message));
    {
      std::lock_guard lock(write_mu_);
      if (!error.is(Errc::stale_writer)) fault_ = Error{Errc::faulted, error.message};
    }
    for (Writer* writer : landed) writer->result = std::unexpected(error);
    return;
  }

  for (Writer* writer : landed) {
    if (writer->mark) writer->mark->landed.store(true);
  }
  std::unique_lock index_lock(index_mu_);
  for (const PreparedRecord& record : accepted) index_->add(record.meta, record.line);
}

// ---- reads ------------------------------------------------------------------

#define CAIRN_READ(expr)                  \
  std::shared_lock lock(index_mu_);       \
  return index_->expr

Result<std::optional<TreeEntry>> Session::get_entry(std::string_view id) const { CAIRN_READ(get_entry(id)); }
Result<std::optional<Record>> Session::get_record(std::int64_t seq) const { CAIRN_READ(get_record(seq)); }
std::vector<std::string> Session::children(std::optional<std::string_view> id) const { CAIRN_READ(children(id)); }
std::optional<std::string> Session::leaf(std::string_view ref) const { CAIRN_READ(leaf(ref)); }
std::vector<RefInfo> Session::refs() const { CAIRN_READ(refs()); }
std::optional<std::int64_t> Session::seq_of(std::string_view id) const { CAIRN_READ(seq_of(id)); }
Result<Page<TreeEntry>> Session::find_entries(const EntryQuery& query) const { CAIRN_READ(find_entries(query)); }
Result<Page<TreeEntry>> Session::find_entries_on_branch(const EntryQuery& query, const BranchBounds& bounds,
                                                        std::string_view ref) const {
  CAIRN_READ(find_entries_on_branch(query, bounds, ref));
}
Result<std::vector<LogLine>> Session::get_log(std::int64_t after_seq, std::optional<std::size_t> limit) const {
  CAIRN_READ(get_log(after_seq, limit));
}
Result<Page<HarnessRecord>> Session::find_harness_entries(const HarnessQuery& query) const {
  CAIRN_READ(find_harness_entries(query));
}
Result<SessionStats> Session::stats() const { CAIRN_READ(stats()); }

std::string Session::new_entry_id() const {
  std::shared_lock lock(index_mu_);
  for (;;) {
    std::string id = cairn::new_entry_id();
    if (!index_->type_of_id(id)) return id;
  }
}
Result<std::optional<std::string>> Session::name() const { CAIRN_READ(name()); }
Result<std::optional<std::string>> Session::label(std::string_view entry_id) const { CAIRN_READ(label(entry_id)); }
std::vector<std::string> Session::path_to(std::optional<std::string_view> leaf) const { CAIRN_READ(path_to(leaf)); }
Result<SessionContext> Session::build_context(std::string_view ref) const { CAIRN_READ(build_context_for_ref(ref)); }
Result<SessionContext> Session::branch_settings(std::string_view ref) const {
  CAIRN_READ(build_context_for_ref(ref, false));
}
Result<SessionContext> Session::stream_context(std::string_view ref, const ContextSink& sink) const {
  CAIRN_READ(stream_context(ref, sink));
}
Result<SessionContext> Session::build_context_at(std::optional<std::string_view> leaf) const {
  CAIRN_READ(build_context(leaf));
}
std::int64_t Session::size() const { CAIRN_READ(size()); }

#undef CAIRN_READ

}  // namespace cairn
