// The cross-process writer lock of one SQLite session: flock(2) on
// `<FILE>.<session id>.lock`. The lock only says who may write; the fencing
// generation and the holder's description live in the sessions row, so that a
// writer whose lock was broken finds out inside its own append transaction.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "cairn/error.hpp"

namespace cairn::sqlite {

class SessionLock {
 public:
  // Takes the lock if nobody holds it: nullopt when someone does.
  static Result<std::optional<SessionLock>> try_acquire(const std::string& path);
  // Takes the lock from whoever holds it: the lock file is replaced by a new
  // one (a new inode), which the old holder's flock no longer excludes.
  static Result<std::optional<SessionLock>> break_and_acquire(const std::string& path);

  SessionLock(SessionLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}
  SessionLock& operator=(SessionLock&& other) noexcept;
  SessionLock(const SessionLock&) = delete;
  SessionLock& operator=(const SessionLock&) = delete;
  ~SessionLock();  // releases the lock

  // Deletes the lock file while holding it (the session is gone). Anyone who
  // opened the old file and locks it later sees it was unlinked and retries.
  void remove_file();
  const std::string& path() const { return path_; }

 private:
  SessionLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace cairn::sqlite
