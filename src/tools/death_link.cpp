#include "death_link.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

namespace cairn::tools {

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

DeathLink::~DeathLink() {
  close_fd(ours_);
  close_fd(theirs_);
}

std::string DeathLink::open() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return fmt::format("socketpair: {}", std::strerror(errno));
  }
  ours_ = fds[0];
  theirs_ = ::fcntl(fds[1], F_DUPFD_CLOEXEC, 10);
  ::close(fds[1]);
  if (theirs_ < 0) return fmt::format("fcntl: {}", std::strerror(errno));
  struct stat st {};
  if (::fstat(theirs_, &st) != 0) return fmt::format("fstat: {}", std::strerror(errno));
  theirs_link_ = fmt::format("socket:[{}]", st.st_ino);
  return {};
}

void DeathLink::spawned() { close_fd(theirs_); }

bool DeathLink::is_watcher(pid_t pid) const {
  char path[64], target[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(pid), kWatcherFd);
  const ssize_t n = ::readlink(path, target, sizeof target);
  return n > 0 && std::string_view(target, static_cast<std::size_t>(n)) == theirs_link_;
}

bool DeathLink::release(std::chrono::milliseconds limit) {
  if (ours_ < 0) return true;
  while (::send(ours_, "\n", 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
  // The watcher never writes: readable means its end closed, it has exited.
  pollfd gone{ours_, POLLIN, 0};
  int ready;
  do ready = ::poll(&gone, 1, static_cast<int>(limit.count()));
  while (ready < 0 && errno == EINTR);
  close_fd(ours_);
  return ready > 0;
}

}  // namespace cairn::tools
