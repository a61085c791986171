// The link that ends a tool's process group when this process dies (see
// process.hpp): a socket pair whose one end this process holds and whose
// other end becomes fd 3 of the group's watcher, a subshell that /bin/sh
// forks before it execs the program.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace cairn::tools {

// The shell text run as `sh -c kWatchedLaunch sh PROGRAM ARGS...`: forks the
// watcher, then execs the program in its own place (same pid, so the program
// leads the group and its exit status is ours to reap). The watcher's output
// goes to /dev/null, or it would keep the program's output pipe open. `read`
// gets a line when the call ends normally, end-of-file when this process
// died; only the latter kills, and `kill -9 0` takes the watcher's own group.
inline constexpr const char* kWatchedLaunch =
    "(trap '' HUP INT QUIT TERM; read _ <&3 || kill -9 0) </dev/null >/dev/null 2>&1 & exec \"$@\" 3<&-";
inline constexpr int kWatcherFd = 3;

// A socket pair rather than a pipe: a release that finds the watcher gone
// must not raise SIGPIPE here, and send() takes MSG_NOSIGNAL.
class DeathLink {
 public:
  DeathLink() = default;
  DeathLink(const DeathLink&) = delete;
  DeathLink& operator=(const DeathLink&) = delete;
  ~DeathLink();

  // Empty on success, else what failed.
  [[nodiscard]] std::string open();
  // The end the child gets as fd kWatcherFd: above 3, so that dup2 onto 3
  // moves it, which is what clears its close-on-exec flag in the child.
  int theirs() const { return theirs_; }
  // Once the child holds its end: only the watcher may keep one open.
  void spawned();

  // Whether `pid` is the watcher: the process whose fd 3 is our pair's other end.
  bool is_watcher(pid_t pid) const;

  // Tells the watcher to leave without killing and waits until it has (its
  // end closes) or `limit` passes; then lets go of ours. True when it left.
  bool release(std::chrono::milliseconds limit);

 private:
  int ours_ = -1;
  int theirs_ = -1;
  std::string theirs_link_;  // "socket:[INODE]", as /proc/PID/fd/3 of the watcher reads
};

}  // namespace cairn::tools
