// A session another process holds for writing — on this machine, or on
// another one sharing the store — which this server therefore cannot open,
// but can watch. Its streams get the records as the store holds them, read
// after the writer announces an append (Store::follow: within ~10 ms on
// PostgreSQL) or at the follow's poll, through the same StreamHub as an open
// session's: in seq order, each once, no gap. The writer's ephemeral events
// (text deltas, tool progress) and its run's live state stay on its machine.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "cairn/store/store.hpp"
#include "stream_hub.hpp"

namespace cairn::serve {

class FollowedSession {
  struct Key {
    explicit Key() = default;
  };

 public:
  // What it needs of the pool's store; each call takes the pool's lock.
  struct Access {
    StreamHub::Reader read;
    std::function<Result<std::shared_ptr<Session>>()> open_read_only;
  };
  // `opened`: the session opened read-only now, which says where the log is;
  // `writer`: who holds it (the store's `locked` message).
  static std::shared_ptr<FollowedSession> start(const Session& opened, std::string writer, Access access);
  FollowedSession(Key, std::int64_t head, std::string writer, Access access);
  ~FollowedSession();  // ends the follow, then stops reading
  FollowedSession(const FollowedSession&) = delete;
  FollowedSession& operator=(const FollowedSession&) = delete;

  // The store's follow, whose calls go to changed().
  void set_follow(std::unique_ptr<LogFollow> follow);
  // The session may have grown: read what is new (on the reader's thread).
  void changed();

  const std::shared_ptr<StreamHub>& hub() const { return hub_; }
  // The newest seq read and published.
  std::int64_t head() const;
  const std::string& writer() const { return writer_; }
  // Why reading stopped (the session was removed, a record is damaged).
  std::optional<Error> failure() const;
  // The snapshot frame's JSON of one ref (or of the session's refs) as the
  // store holds it now, with its cursor.
  Result<Json> snapshot(const std::optional<std::string>& ref,
                        std::optional<std::size_t> transcript_limit = std::nullopt) const;

 private:
  void read_loop(std::stop_token stop);

  const std::string writer_;
  const Access access_;
  std::shared_ptr<StreamHub> hub_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  bool changed_ = false;
  std::int64_t head_;
  std::optional<Error> failure_;
  std::unique_ptr<LogFollow> follow_;  // its calls end before the reader stops
  std::jthread reader_;                // last
};

}  // namespace cairn::serve
