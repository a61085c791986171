// An open session: its log, its index, and the one writer that appends to it.
// Sessions are opened and created by a Store (cairn/store/store.hpp); the
// index and the medium a store writes through are the library's own.
// Thread-safe: reads may run from any thread while appends go on; concurrent
// appends share one write and one sync (group commit).
#pragma once

#include <array>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/log/ids.hpp"  // ids and the clock, for the users of sessions
#include "cairn/log/query.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

// cairn's log format version, written in every session header. A reader
// refuses a session whose header is newer.
//   1  the first format
//   2  every record line ends with its checksum (cairn/log/checksum.hpp)
// Version 1 sessions are still read: their lines carry no checksum (records
// appended to them since do). From version 2 on, a line without one is damage.
inline constexpr std::int64_t kLogFormatVersion = 2;
inline bool checksums_required(std::int64_t version) { return version >= 2; }

struct SessionHeader {
  std::string id;
  std::int64_t version = kLogFormatVersion;
  std::string timestamp;
  std::string cwd;
  std::optional<std::string> parent_session;
  Json extra = Json::object();
};
Json encode(const SessionHeader& header);
Result<SessionHeader> decode_header(const Json& json);
// A subagent's session (its header's "child", which the child-session tool
// writes): its parent's run resumes it, never a server or a worker alone.
bool is_child_session(const SessionHeader& header);

// What opening found and did. A torn tail (an unacknowledged partial write) is
// cut when the session is opened for writing, and reported here.
struct OpenReport {
  bool tail_cut = false;
  std::int64_t bytes_cut = 0;
  std::int64_t last_good_seq = -1;
  std::string detail;
};

struct [[nodiscard]] AppendResult {
  std::int64_t first_seq = 0;
  std::int64_t count = 0;
};

// The library's internals (src/log/index.hpp, src/store/log_medium.hpp):
// what a store builds when it opens a session.
class SessionIndex;
class LogMedium;

// How long this session's appends took, from the call to durable (the
// successful ones, since it was opened): a histogram with the upper bounds
// below, for an operator's metrics.
struct AppendStats {
  static constexpr std::array<double, 11> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1.0};
  std::array<std::int64_t, kBounds.size() + 1> buckets{};  // the last: above every bound
  std::int64_t count = 0;
  double seconds = 0;  // their sum
  AppendStats& operator+=(const AppendStats& other);
};

class Session {
 public:
  // Called by stores. `medium` is null for a read-only session.
  Session(SessionHeader header, SessionIndex index, std::unique_ptr<LogMedium> medium, OpenReport report);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const SessionHeader& header() const { return header_; }
  const std::string& id() const { return header_.id; }
  const OpenReport& open_report() const { return report_; }
  bool read_only() const { return !writable_; }
  bool faulted() const;
  // Lets go of the log's writer (its file lock, or its lease) while the
  // session lives on for its readers: every append fails with `closed` from
  // here on. Waits for an append under way to end. A server deleting a
  // session that streams still read closes it so.
  void close_writer();

  // Validates the batch (field rules and log invariants) and makes it durable.
  // A rejected batch writes nothing. Seqs are assigned here; empty ids and
  // timestamps are filled in. Returns once the records are durable.
  Result<AppendResult> append(std::vector<Record> batch);
  Result<AppendResult> append(Record record);
  // Appends records given as JSON objects (import, fork); `seq` is replaced.
  Result<AppendResult> append_json(const std::vector<Json>& batch);

  // Reads: consistent snapshots, safe from any thread. Those that decode
  // records fail only when a stored line cannot be read or decoded.
  Result<std::optional<TreeEntry>> get_entry(std::string_view id) const;
  // A fresh entry id that no record of this session has (as pi does): for
  // ids provisioned before their entry is appended. Appends fill empty ids
  // with these.
  std::string new_entry_id() const;
  Result<std::optional<Record>> get_record(std::int64_t seq) const;
  std::vector<std::string> children(std::optional<std::string_view> id) const;
  std::optional<std::string> leaf(std::string_view ref = "main") const;
  // The seq of the record with this id, if there is one.
  std::optional<std::int64_t> seq_of(std::string_view id) const;
  std::vector<RefInfo> refs() const;
  Result<Page<TreeEntry>> find_entries(const EntryQuery& query = {}) const;
  Result<Page<TreeEntry>> find_entries_on_branch(const EntryQuery& query = {}, const BranchBounds& bounds = {},
                                                 std::string_view ref = "main") const;
  Result<std::vector<LogLine>> get_log(std::int64_t after_seq = -1, std::optional<std::size_t> limit = {}) const;
  Result<Page<HarnessRecord>> find_harness_entries(const HarnessQuery& query = {}) const;
  Result<SessionStats> stats() const;
  Result<std::optional<std::string>> name() const;
  Result<std::optional<std::string>> label(std::string_view entry_id) const;
  std::vector<std::string> path_to(std::optional<std::string_view> leaf) const;
  Result<SessionContext> build_context(std::string_view ref = "main") const;
  Result<SessionContext> build_context_at(std::optional<std::string_view> leaf) const;
  // build_context with the messages handed to `sink` one at a time, in order,
  // rather than held (for a reader that prints or sends a long context). The
  // sink runs under the session's read lock: it must not append.
  Result<SessionContext> stream_context(std::string_view ref, const ContextSink& sink) const;
  // The model, thinking level and active tools in force at the ref's leaf.
  Result<SessionContext> branch_settings(std::string_view ref = "main") const;
  std::int64_t size() const;
  AppendStats append_stats() const;

 private:
  Result<AppendResult> append_batch(std::vector<Record> batch);
  struct Writer;
  void lead_group(std::vector<std::shared_ptr<Writer>>& group);

  SessionHeader header_;
  OpenReport report_;
  const bool writable_;
  // Used by an append group's leader alone (write_mu_ is not held across a
  // write), and released by close_writer once no group is under way.
  std::unique_ptr<LogMedium> medium_;

  mutable std::shared_mutex index_mu_;
  std::unique_ptr<SessionIndex> index_;  // never null

  mutable std::mutex write_mu_;
  std::deque<std::shared_ptr<Writer>> writers_;  // the queue; its front leads
  std::condition_variable writers_done_;         // writers_ became empty
  std::optional<Error> fault_;  // guarded by write_mu_

  mutable std::mutex stats_mu_;
  AppendStats stats_;
};

}  // namespace cairn
