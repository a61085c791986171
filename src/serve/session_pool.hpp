// The sessions `cairn serve` has open: each with its harness, opened on the
// first request that names it and closed once it has been idle a while (no
// operation running, no stream watching, no request using it). A session
// another process holds for writing is reported (locked, naming the holder),
// never opened twice.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "descriptors.hpp"
#include "cairn/harness/harness.hpp"
#include "cairn/serve/server.hpp"
#include "cairn/store/store.hpp"

namespace cairn::serve {

// One open session. Members go in reverse: the harness before the session.
class StreamHub;
class FollowedSession;

struct SessionHost {
  std::shared_ptr<Session> session;
  std::unique_ptr<AgentHarness> harness;
  std::shared_ptr<void> attachment;  // the factory's (HarnessFactory::Made::attach); before the harness goes
  std::shared_ptr<StreamHub> hub;  // the fan-out of its events to its streams
  Subscription hub_subscription;   // before the harness goes
  std::vector<SuspendedOperation> suspended_at_open;
  // Operation starts on this session one at a time, so that the run_start a
  // request waits for is its own.
  std::mutex start_mu;
  std::atomic<int> running{0};  // operation threads still going
  std::atomic<std::int64_t> last_used{0};  // steady_clock ticks
  std::unique_ptr<LogFollow> inbox_watch;  // its inbox's arrivals (a store with an inbox)
};

class SessionPool {
 public:
  // Every session's harness is made by `factory`; `secrets` (the server's
  // tokens) are kept out of what each writes.
  SessionPool(std::unique_ptr<Store> store, std::shared_ptr<HarnessFactory> factory, std::vector<std::string> secrets,
              std::chrono::milliseconds idle_close);
  ~SessionPool();  // closes what is idle; running operations are left to their log
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // The open session, opened now when it is not. The open happens outside
  // the pool's lock (other sessions are served meanwhile); a caller that
  // finds the session being opened waits for that one open.
  Result<std::shared_ptr<SessionHost>> get(const std::string& id);
  // The same without waiting: `done` gets the outcome once, on one of the
  // pool's opener threads when the session must be opened (one open however
  // many ask), else here at once. It must be quick: it hands work on.
  using Opened = std::function<void(const Result<std::shared_ptr<SessionHost>>&)>;
  void open_async(const std::string& id, Opened done);
  // Runs on the thread that opened a session, before any request that
  // waits for the open is answered: what else of the whole log a request
  // would read is read there. Set before the pool serves.
  using OnOpen = std::function<void(const std::string& id, const SessionHost& host)>;
  void set_on_open(OnOpen on_open) { on_open_ = std::move(on_open); }
  // Runs once a session opened, created or claimed here is in the pool, before the
  // requests that wait for its open are answered and before a claim
  // resumes its operations. Set before the pool serves.
  using OnHosted = std::function<void(const std::shared_ptr<SessionHost>& host)>;
  void set_on_hosted(OnHosted on_hosted) { on_hosted_ = std::move(on_hosted); }
  // The store's inbox (null: one process writes the store).
  Inbox* inbox() const { return store_->inbox(); }
  // Sessions opened (or created) by this pool since it started.
  std::int64_t opens_total() const { return opens_total_.load(); }
  // A session another process holds for writing (`locked`: the store's
  // refusal, naming the holder), followed for this server's streams: one
  // follow per session, shared by its streams, ended with the last of them.
  // The pool must outlive what it returns.
  Result<std::shared_ptr<FollowedSession>> follow(const std::string& id, const Error& locked);
  // The stored records of a session, from the store (one this server may
  // not have open).
  Result<std::vector<LogLine>> read_log(const std::string& id, std::int64_t after, std::size_t limit);
  // The session if this server has it open, else null; never opens it, and
  // does not count as a use (a list that looks does not keep it open).
  std::shared_ptr<SessionHost> find_open(const std::string& id) const;
  // The session as the store holds it now, read-only (another process may
  // be writing it).
  Result<std::shared_ptr<Session>> open_read_only(const std::string& id);
  // Store::log_stamp: a value that moves with the session's stored log.
  Result<std::string> log_stamp(const std::string& id);
  // Creates a session (and opens it here).
  Result<std::shared_ptr<SessionHost>> create(const CreateOptions& options);
  // Closes and removes a session; refused (operation_open) while an operation runs on it.
  Status remove(const std::string& id);
  // Headers, newest first (under the store's lock).
  Result<std::vector<SessionHeader>> list();
  // Runs `work` on a thread of its own that holds `host` open until it returns.
  void run_detached(const std::shared_ptr<SessionHost>& host, std::function<void()> work);
  // Resumes every suspended operation of the store's sessions that waits for
  // no answer; says on stderr what it resumed and what it left.
  void resume_suspended();
  // On a store many processes share (PostgreSQL), as `cairn worker` does:
  // claims each session whose operations are open and whose writer is gone,
  // opens it here and resumes its suspended operations. False when the store
  // has no claims (one process writes it); then there is nothing to poll.
  bool claim_suspended(const ClaimOptions& options);
  // On a store many processes share, with claims on: a session this pool
  // opens for a request has its suspended operations resumed as a claim's
  // would be (their holder is gone, or the open could not have taken it).
  // Set before the pool serves.
  void set_resume_on_open(bool resume) { resume_on_open_ = resume; }
  // Closes sessions idle for longer than the pool's idle time.
  void close_idle();
  // What the pool's sessions may hold of the process's descriptors: before
  // a session is opened, sessions nothing uses are closed (least recently
  // used first) while descriptors are short, and the open is refused
  // (`unavailable`) when that is not enough.
  void set_descriptor_budget(DescriptorBudget budget);
  // Descriptors ran out elsewhere (an accept failed): closes the session
  // nothing has used the longest, if any does nothing.
  void shed_idle();
  std::size_t open_count() const;
  // The append latencies of every session this server opened.
  AppendStats append_stats() const;
  const HarnessFactory& factory() const { return *factory_; }
  // Forks under the store's lock.
  Result<ForkResult> fork(const std::shared_ptr<SessionHost>& host, const std::string& ref, ForkOptions options);

 private:
  // An open under way: whoever asks for the session meanwhile waits for it.
  struct Opening {
    std::optional<Result<std::shared_ptr<SessionHost>>> result;  // set once, under mu_
    std::vector<Opened> waiters;                                 // under mu_
  };
  // Under `lock` (on mu_): the open session, or the opening under way, or
  // a new opening this caller must carry out (`mine`); an error when there
  // is no room for one more session.
  struct Claim {
    std::shared_ptr<SessionHost> open;
    std::shared_ptr<Opening> opening;
    bool mine = false;
  };
  Result<Claim> claim_open(const std::string& id);
  // Without the lock: the store's open and the harness's restore.
  Result<std::shared_ptr<SessionHost>> open_now(const std::string& id);
  // Records the outcome of an opening this caller carried out, wakes who
  // waits for it, and calls their `done`s (outside the lock).
  void finish_open(const std::string& id, const std::shared_ptr<Opening>& opening,
                   Result<std::shared_ptr<SessionHost>> result);
  void opener_loop();
  // The suspended operations of a session opened here that can go on (the
  // rest said on stderr, each with `how` the session came here).
  struct Resumable {
    std::vector<AgentRef> refs;
    bool waiting = false;                // one waits for a person's answer
    std::optional<std::string> damaged;  // one is damaged: why
  };
  static Resumable resumable(const SessionHost& host, std::string_view how);
  Result<std::shared_ptr<SessionHost>> host_for(std::shared_ptr<Session> session);
  static void touch(SessionHost& host);
  // Under mu_: closes unused sessions, least recently used first, until
  // one more fits in the descriptor budget; `unavailable` when it does not.
  Status make_room();
  using Hosts = std::map<std::string, std::shared_ptr<SessionHost>>;
  // Under mu_: the open session nothing has used the longest and nothing
  // uses now; end() when there is none.
  Hosts::iterator least_used();
  // Under mu_: the host out of the pool (its append counts kept).
  std::shared_ptr<SessionHost> remove_host(Hosts::iterator it);
  // A session taken out of the pool closes when its host is let go, outside
  // the lock; until then it still holds its file lock or lease, and opening
  // it again would find it locked (wait_closed waits for that). take() marks
  // it closing, under mu_; close() lets the hosts go and unmarks them,
  // without mu_.
  struct Closing {
    std::vector<std::string> ids;
    std::vector<std::shared_ptr<SessionHost>> hosts;
  };
  Hosts::iterator take(Hosts::iterator it, Closing& into);
  void close(Closing taken);
  // Under `lock` (on mu_): waits until `id` is not closing.
  void wait_closed(std::unique_lock<std::mutex>& lock, const std::string& id);

  std::shared_ptr<Store> store_;  // shared with the task tool of every session's harness
  std::shared_ptr<HarnessFactory> factory_;
  std::vector<std::string> secrets_;
  std::chrono::milliseconds idle_close_;
  // Guards the maps below. Never held across a store's open or a harness's
  // restore: those take as long as the log is long, and every request
  // needs the lock. (The store is safe to call from any thread.)
  mutable std::mutex mu_;
  Hosts hosts_;
  std::map<std::string, std::shared_ptr<Opening>> opening_;
  std::set<std::string> closing_;  // taken out, not yet closed
  // Sessions an open found another process holding, and until when that
  // answer stands (claim_open gives it without trying again).
  struct HeldElsewhere {
    Error error;
    std::chrono::steady_clock::time_point until;
  };
  std::map<std::string, HeldElsewhere> held_elsewhere_;
  std::condition_variable opened_;  // an opening ended
  // The opener threads of open_async, started with the first call.
  std::deque<std::string> open_queue_;  // ids whose opening waits for a thread; under mu_
  std::condition_variable open_wanted_;
  bool stopping_ = false;  // under mu_
  bool resume_on_open_ = false;
  std::vector<std::thread> openers_;
  std::atomic<std::int64_t> opens_total_{0};
  OnOpen on_open_;
  OnHosted on_hosted_;
  std::map<std::string, std::weak_ptr<FollowedSession>> followed_;
  AppendStats closed_stats_;  // of the sessions closed since the start; guarded by mu_
  DescriptorBudget budget_;   // guarded by mu_
};

}  // namespace cairn::serve
