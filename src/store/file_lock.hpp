// A cross-process writer lock on a file, with a generation that grows at every
// acquisition. The lock file holds the holder's description as JSON, so that a
// refused writer can name who holds the session.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "cairn/error.hpp"
#include "cairn/store/store.hpp"

namespace cairn {

class FileLock {
 public:
  // Takes the lock at `path`, waiting up to `timeout`. `what` names the locked
  // thing in errors ("session X in /dir").
  static Result<FileLock> acquire(const std::string& path, const std::string& what, std::chrono::milliseconds timeout,
                                  bool break_lock);
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  std::int64_t generation() const { return generation_; }
  // Fails with stale_writer once another writer has taken the lock over.
  Status check_current() const;
  // Who holds the lock at `path` now, if anyone wrote it.
  static std::optional<LockHolder> read_holder(const std::string& path);

 private:
  FileLock() = default;
  int fd_ = -1;
  std::string path_;
  std::string what_;
  std::int64_t generation_ = 0;
  std::uint64_t inode_ = 0;
};

std::string describe(const LockHolder& holder);

}  // namespace cairn
