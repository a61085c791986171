// A follower of a session, as a watcher elsewhere runs one: woken by its
// store's follow (Store::follow), it reads the records after its cursor
// (Store::read_log).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "cairn/store/store.hpp"

namespace cairn::testing {

// What a follower does: on each change, read the records after its cursor.
class FollowReader {
 public:
  FollowReader(Store& store, std::string id) : store_(store), id_(std::move(id)) {}

  void changed() {
    {
      std::lock_guard lock(mu_);
      ++changes_;
    }
    cv_.notify_all();
  }
  // Reads after each change until it holds `count` records or `timeout`
  // passes (it reads only when told of a change); true when it holds them.
  bool wait_for(std::int64_t count, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(mu_);
    for (;;) {
      if (static_cast<std::int64_t>(lines_.size()) >= count) return true;
      if (!cv_.wait_until(lock, until, [&] { return changes_ != handled_; })) return false;
      handled_ = changes_;
      auto read = store_.read_log(id_, static_cast<std::int64_t>(lines_.size()) - 1, 1000);
      if (!read) {
        error_ = read.error().message;
        return false;
      }
      for (auto& line : *read) lines_.push_back(std::move(line));
    }
  }
  // Forgets the changes told so far: the next read waits for a new one.
  void skip_changes() {
    std::lock_guard lock(mu_);
    handled_ = changes_;
  }
  std::vector<LogLine> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::string error() {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  Store& store_;
  const std::string id_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::int64_t changes_ = 0;
  std::int64_t handled_ = 0;  // changes_ when it last read
  std::vector<LogLine> lines_;
  std::string error_;
};

}  // namespace cairn::testing
