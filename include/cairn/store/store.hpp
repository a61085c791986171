// Where sessions live. One interface, chosen by URI:
//   memory:            in this process only (tests, benchmarks)
//   jsonl:DIR          one file per session, DIR/<id>.jsonl, header + one record per line
//   sqlite:FILE        one database file, WAL
//   postgres://…       a PostgreSQL database (also postgresql://…): many machines share it
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/store/inbox.hpp"
#include "cairn/store/session.hpp"

namespace cairn {

enum class SyncPolicy {
  full,  // default: write + fdatasync (JSONL), synchronous=FULL (SQLite)
  none,  // no sync: for tests and benchmarks only; a crash may lose acknowledged records
};

struct StoreOptions {
  SyncPolicy sync = SyncPolicy::full;
  // PostgreSQL: how long a writer's lease on a session lasts without a
  // renewal (renewed every third of it). A writer paused longer may find its
  // session taken over; its generation is then stale and it appends nothing.
  std::chrono::milliseconds lease_ttl{15000};
  // PostgreSQL: announce this process's appends to the processes that
  // follow the session (Store::follow), batched every ~10 ms on a connection
  // of its own. Off, followers still see every record, at their poll.
  bool announce_appends = true;
};

struct CreateOptions {
  std::optional<std::string> id;
  std::string cwd;
  std::optional<std::string> parent_session;
  // More header fields, e.g. where an imported session came from.
  Json header_extra = Json::object();
};

struct OpenOptions {
  bool read_only = false;
  // How long to wait for another writer to let go; zero fails at once.
  std::chrono::milliseconds lock_timeout{0};
  // Take the session from a writer that cannot be reached (a stuck process,
  // another machine). Its generation becomes stale: it can append nothing more.
  bool break_lock = false;
};

struct ForkOptions {
  enum class Scope { branch, tree };
  enum class Position { before, at };
  Scope scope = Scope::branch;
  // Branch scope: the fork point; default the leaf of `ref`.
  std::optional<std::string> entry_id;
  Position position = Position::at;
  std::string ref = "main";
  std::optional<std::string> id;  // the new session's id
  std::optional<std::string> cwd;  // default: the source's
};

struct [[nodiscard]] ForkResult {
  std::shared_ptr<Session> session;
  std::int64_t copied = 0;  // records copied
  // A fork copies closed history only: the entries an operation still open
  // in the source has appended (a run mid-flight, a navigation half done)
  // describe work the new session could neither finish nor resume, since
  // the orchestration records stay with the source. One line per such
  // operation ("ref main: run 1a2b3c open since seq 12; the entries it
  // appended were not copied"); empty when everything was closed.
  std::vector<std::string> left_out;
};

// What `Store::repair` found and did. Repair removes no record that is
// intact: a damaged one is replaced by a placeholder of the same seq (record.hpp,
// DamageReport), and the session's original bytes are kept in `backup`.
struct [[nodiscard]] RepairReport {
  std::string location;  // the file (and session) repaired
  std::optional<std::string> backup;  // where the original bytes were copied; none when nothing changed
  std::int64_t records = 0;  // in the log after repair (seq 0 to records - 1)
  std::int64_t intact = 0;   // of them, kept byte for byte
  // One line per record repair changed: its seq, what was wrong, what stands there now.
  std::vector<std::string> replaced;
  // One line per other change (a torn tail cut, a header rebuilt, index columns rewritten from an intact payload).
  std::vector<std::string> fixed;
  // Operations open when a damaged record was written: they may have started a tool in the damaged region,
  // so they can be aborted and never resumed.
  std::vector<std::string> abort_only_runs;
  bool changed() const { return !replaced.empty() || !fixed.empty(); }
};

// Who holds a session for writing, as recorded in its lock.
struct LockHolder {
  std::int64_t pid = 0;
  std::string host;
  std::int64_t generation = 0;
  std::string since;
};

// Workers on a store many processes share (PostgreSQL): see Store::claim.
struct ClaimOptions {
  // A session claimed this many times without its operations finishing is
  // left alone (its last failure is kept with it) until a person sees to it.
  int max_claims = 3;
};

// How a worker's turn with a claimed session ended (Store::end_claim).
enum class ClaimEnd {
  finished,  // every operation it found ended: the claim count starts again
  waiting,   // an operation waits for a human's answer: skipped until the log grows
  failed,    // it could not finish them; `detail` says why, and the claim counts
};

// A follow of a session (Store::follow): its calls end when it is destroyed.
// It must not outlive its store.
class LogFollow {
 public:
  virtual ~LogFollow() = default;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual std::string uri() const = 0;
  virtual SyncPolicy sync_policy() const = 0;

  // Headers only; cheap. Newest first.
  virtual Result<std::vector<SessionHeader>> list() = 0;
  virtual Result<std::shared_ptr<Session>> create(const CreateOptions& options) = 0;
  // Creates the session `header` names holding `log`, in one atomic step: a
  // process killed at any instant leaves no such session or all of it. `log`
  // is the stored lines of a session already checked by its appends
  // (Session::get_log() of a session built in a memory: store), seq 0 on;
  // they are stored byte for byte, and checked again as an open checks them.
  // Returns the session open for writing. Import and fork go through here.
  virtual Result<std::shared_ptr<Session>> create_with_log(const SessionHeader& header,
                                                           const std::vector<LogLine>& log) = 0;
  virtual Result<std::shared_ptr<Session>> open(std::string_view id, const OpenOptions& options = {}) = 0;
  virtual Status remove(std::string_view id) = 0;
  // The only operation that changes a refused session: copies its bytes to a
  // backup, replaces each damaged record by a placeholder of the same seq
  // (every intact record stays, byte for byte) and says what it changed.
  virtual Result<RepairReport> repair(std::string_view id) = 0;

  // Takes one session whose operations are open (suspended or waiting for
  // input) and whose writer is gone — nobody holds its lease, or the holder's
  // lease expired — and opens it for writing, its lease now this process's.
  // Child sessions are left to their parent's run. Several workers on several
  // machines may claim at once: each session goes to one of them. Nothing to
  // claim: an empty optional. Stores that one process alone writes
  // (memory, JSONL, SQLite) have no workers: invalid_argument.
  virtual Result<std::optional<std::shared_ptr<Session>>> claim(const ClaimOptions& options);
  // Says how the turn with a session from claim() ended (call it while the
  // session is still open).
  virtual Status end_claim(std::string_view id, ClaimEnd end, std::string_view detail);

  // Following a session another process (or machine) writes: its stored
  // lines after `after_seq`, at most `limit`, as the store holds them now,
  // each checked (seq in order, checksum) as an open checks it.
  virtual Result<std::vector<LogLine>> read_log(std::string_view id, std::int64_t after_seq, std::size_t limit);
  // A value that changes whenever session `id`'s stored log grows or is
  // repaired, got without reading a record: the JSONL file's identity, size
  // and time; the newest seq in SQLite; the head and lease generation in
  // PostgreSQL. Compared for equality only: a reader that keeps what it
  // derived from a log re-reads it only when this moves. (A session removed
  // and made again under its id is told apart by its header's timestamp.)
  virtual Result<std::string> log_stamp(std::string_view id);
  // Calls `changed` whenever session `id` may have grown: when a process
  // that appends to it says so (PostgreSQL: within ~10 ms, from any machine
  // sharing the database), and at least every `poll` whatever came, so that
  // a lost announcement costs one poll, never a record. `changed` runs on a
  // thread of the store's and must be quick (wake the reader; read with
  // read_log from the cursor). The stores one process writes only poll.
  virtual Result<std::unique_ptr<LogFollow>> follow(std::string_view id, std::chrono::milliseconds poll,
                                                    std::function<void()> changed);
  // The sessions' inbox (inbox.hpp): on a store many processes share
  // (PostgreSQL), where a server leaves a request for a session another
  // process holds. Null on the stores one process writes.
  virtual Inbox* inbox() { return nullptr; }
  // A new session holding the source's branch (up to an entry, before or at
  // it) or its whole tree; its header names the source as parent. Made whole
  // or not at all (create_with_log).
  Result<ForkResult> fork(std::string_view source_id, const ForkOptions& options);
  // An id or a unique prefix of one.
  Result<std::string> resolve_id(std::string_view id_or_prefix);
};

Result<std::unique_ptr<Store>> open_store(std::string_view uri, const StoreOptions& options = {});

// Factories used by open_store; exposed for tests.
std::unique_ptr<Store> make_memory_store(const StoreOptions& options);
Result<std::unique_ptr<Store>> make_jsonl_store(const std::string& dir, const StoreOptions& options);
Result<std::unique_ptr<Store>> make_sqlite_store(const std::string& file, const StoreOptions& options);
// `uri`: a postgres:// or postgresql:// URI, or a libpq connection string.
Result<std::unique_ptr<Store>> make_postgres_store(const std::string& uri, const StoreOptions& options);

// Test seam for the memory store: after `appends` more successful appends,
// every append of that store fails with io_error (the process "died" there:
// nothing later is durable). Negative disables it.
void memory_store_fail_after(Store& store, std::int64_t appends);

}  // namespace cairn
