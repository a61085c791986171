// Live watch across machines on the PostgreSQL store: who appended, told to
// whoever follows.
//
// Appends never NOTIFY inside their own transaction: a NOTIFY takes a lock
// that serialises every notifying commit of the database (16 sessions fell
// from ~12,000 to ~3,000 commits/s when we measured it). Instead each
// process's Announcer collects the sessions its writers appended to and
// sends them every ~10 ms, in one statement on a connection of its own. A
// Listener LISTENs for them and tells each follower of a session; it also
// tells every follower at its poll interval, so a notification lost (with a
// connection, or by an announcer that died between the append and the
// batch) delays a follower by one poll, never loses a record: followers read
// the records after their cursor, not what a notification says.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

#include "cairn/store/store.hpp"

namespace cairn::pg {

// The channel every cairn process of a database announces on; the payload is
// the session's id.
inline constexpr std::string_view kChannel = "cairn_log";

class Announcer {
 public:
  // This process's announcer for the database `conninfo` names: one per
  // process however many stores it opens, so that its notifying commits are
  // at most one a batch.
  static std::shared_ptr<Announcer> for_database(const std::string& conninfo);
  explicit Announcer(std::string conninfo, std::chrono::milliseconds batch = std::chrono::milliseconds(10));
  ~Announcer();  // sends what is pending, then stops
  Announcer(const Announcer&) = delete;
  Announcer& operator=(const Announcer&) = delete;

  // Session `id` grew. Quick: marks it for the next batch.
  void announce(const std::string& id);
  // Batches sent, and batches lost (no connection): for tests and benchmarks.
  std::int64_t sent() const;
  std::int64_t lost() const;

 private:
  void loop(std::stop_token stop);

  const std::string conninfo_;
  const std::chrono::milliseconds batch_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::set<std::string> pending_;
  std::int64_t sent_ = 0;
  std::int64_t lost_ = 0;
  std::jthread thread_;  // last
};

class Listener : public std::enable_shared_from_this<Listener> {
  struct Key {
    explicit Key() = default;
  };

 public:
  // Starts its thread; it connects (and reconnects) in the background.
  static std::shared_ptr<Listener> start(std::string conninfo);
  Listener(Key, std::string conninfo);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Calls `changed` (on the listener's thread, under its lock: it must be
  // quick and must not end a follow) on every announcement of session `id`,
  // after every reconnect, and at least every `poll`. Ends when the returned
  // follow is destroyed; no call comes after that.
  std::unique_ptr<LogFollow> follow(const std::string& id, std::chrono::milliseconds poll, std::function<void()> changed);

 private:
  struct Follower {
    std::string session;
    std::chrono::milliseconds poll;
    std::chrono::steady_clock::time_point next_poll;
    std::function<void()> changed;
  };
  class Handle;
  void loop(std::stop_token stop);
  void wake();
  void unfollow(std::uint64_t key);

  const std::string conninfo_;
  std::mutex mu_;
  std::map<std::uint64_t, Follower> followers_;
  std::uint64_t next_key_ = 0;
  int wake_fd_ = -1;     // an eventfd: a new follower or the stop wakes the loop
  std::jthread thread_;  // last
};

}  // namespace cairn::pg
