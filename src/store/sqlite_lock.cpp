#include "sqlite_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace cairn::sqlite {

namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

Result<std::optional<SessionLock>> SessionLock::try_acquire(const std::string& path) {
  // A lock file replaced (break_lock) or removed (remove) between our open and
  // our flock leaves us holding a lock on an inode nobody else will open; such
  // a lock excludes no one, so we start over with the file now at `path`.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail(Errc::io_error, fmt::format("cannot open lock file {}: {}", path, errno_text()));
    SessionLock lock(fd, path);
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      if (errno == EWOULDBLOCK) return std::optional<SessionLock>();
      return fail(Errc::io_error, fmt::format("cannot lock {}: {}", path, errno_text()));
    }
    struct stat held {};
    struct stat current {};
    if (::fstat(fd, &held) != 0) return fail(Errc::io_error, fmt::format("cannot stat lock file {}: {}", path, errno_text()));
    if (::stat(path.c_str(), &current) != 0) {
      if (errno == ENOENT) continue;
      return fail(Errc::io_error, fmt::format("cannot stat lock file {}: {}", path, errno_text()));
    }
    if (held.st_dev != current.st_dev || held.st_ino != current.st_ino) continue;
    return std::optional<SessionLock>(std::move(lock));
  }
  return fail(Errc::io_error, fmt::format("lock file {} keeps being replaced; giving up", path));
}

Result<std::optional<SessionLock>> SessionLock::break_and_acquire(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return fail(Errc::io_error, fmt::format("cannot remove lock file {}: {}", path, errno_text()));
  }
  return try_acquire(path);
}

SessionLock& SessionLock::operator=(SessionLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

SessionLock::~SessionLock() {
  if (fd_ >= 0) ::close(fd_);
}

void SessionLock::remove_file() {
  if (fd_ >= 0) (void)::unlink(path_.c_str());
}

}  // namespace cairn::sqlite
