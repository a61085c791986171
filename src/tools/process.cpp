#include "process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace cairn::tools {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::size_t kStderrCap = 64 * 1024;

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// The program itself: reaped once, by us.
struct Child {
  pid_t pid = -1;
  bool reaped = false;
  int status = 0;
  bool try_reap() {
    if (reaped) return true;
    pid_t r;
    do r = ::waitpid(pid, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == pid || (r < 0 && errno == ECHILD)) reaped = true;
    return reaped;
  }
  void reap() {
    while (!reaped) {
      const pid_t r = ::waitpid(pid, &status, 0);
      if (r == pid || (r < 0 && errno != EINTR)) reaped = true;
    }
  }
};

// Terminates the group and waits until none of it runs: SIGTERM, `grace`,
// then SIGKILL. Reaps the program on the way, or it would stay a zombie
// member of the group.
void terminate_group(pid_t pgid, Child& child, std::chrono::milliseconds grace) {
  if (::kill(-pgid, SIGTERM) != 0 && errno == ESRCH) {
    child.try_reap();
    return;
  }
  ::kill(-pgid, SIGCONT);  // a stopped process only acts on SIGTERM once continued
  const auto give_up_term = Clock::now() + grace;
  while (Clock::now() < give_up_term) {
    child.try_reap();
    if (!process_group_alive(pgid)) break;
    std::this_thread::sleep_for(10ms);
  }
  if (process_group_alive(pgid)) {
    ::kill(-pgid, SIGKILL);
    const auto give_up_kill = Clock::now() + 5s;
    while (Clock::now() < give_up_kill) {
      child.try_reap();
      if (!process_group_alive(pgid)) break;
      std::this_thread::sleep_for(5ms);
    }
  }
  child.reap();
}

}  // namespace

bool process_group_alive(pid_t pgid) {
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return false;
  // kill() also reaches zombies; /proc tells whether a member still runs.
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return true;
  bool alive = false;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream stat(fmt::format("/proc/{}/stat", entry->d_name));
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') {
      alive = true;
      break;
    }
  }
  ::closedir(proc);
  return alive;
}

ProcessOutcome run_process(const ProcessSpec& spec) {
  ProcessOutcome outcome;
  if (spec.argv.empty()) {
    outcome.error = "no program given";
    return outcome;
  }
  int out_pipe[2], err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    outcome.error = fmt::format("pipe: {}", std::strerror(errno));
    return outcome;
  }
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  Fd err_read, err_write;
  if (!spec.merge_stderr) {
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      outcome.error = fmt::format("pipe: {}", std::strerror(errno));
      return outcome;
    }
    err_read.fd = err_pipe[0];
    err_write.fd = err_pipe[1];
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, spec.merge_stderr ? out_write.fd : err_write.fd, 2);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own group, so that it and everything it starts can be signalled as
  // one; default signal dispositions and an empty mask whatever this
  // process (a server that ignores SIGPIPE, a thread that blocks signals) has.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<char*> argv;
  for (const auto& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  Child child;
  const int rc = ::posix_spawnp(&child.pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    outcome.error = fmt::format("cannot run {}: {}", spec.argv[0], std::strerror(rc));
    return outcome;
  }
  outcome.pgid = child.pid;
  out_write.reset();
  err_write.reset();

  // time_point::max() stands for "none" (an optional trips g++ 12's -Wmaybe-uninitialized).
  const bool has_deadline = spec.timeout.has_value();
  const Clock::time_point deadline = has_deadline ? Clock::now() + *spec.timeout : Clock::time_point::max();
  std::optional<ProcessOutcome::End> ended_by;  // set when we end it
  Clock::time_point drain_until = Clock::time_point::max();  // set once the group is gone
  char buffer[65536];

  const auto read_available = [&](Fd& fd, bool is_stderr) {
    const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno != EINTR && errno != EAGAIN) fd.reset();
      return;
    }
    if (n == 0) {
      fd.reset();
      return;
    }
    if (is_stderr) {
      if (outcome.stderr_output.size() < kStderrCap) {
        outcome.stderr_output.append(buffer, std::min<std::size_t>(n, kStderrCap - outcome.stderr_output.size()));
      }
    } else if (!ended_by && spec.on_output && !spec.on_output(std::string_view(buffer, n))) {
      ended_by = ProcessOutcome::End::stopped;
    }
  };

  // Until the program has exited (or been ended) and its output is read: a
  // program that closes its output early is still waited for.
  bool group_done = false;
  while (true) {
    int wait_ms = 50;
    if (has_deadline && !ended_by) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<long long>(left, 0, 50));
    }
    pollfd fds[2];
    nfds_t count = 0;
    if (out_read.fd >= 0) fds[count++] = {out_read.fd, POLLIN, 0};
    if (err_read.fd >= 0) fds[count++] = {err_read.fd, POLLIN, 0};
    if (::poll(fds, count, wait_ms) > 0) {
      for (nfds_t i = 0; i < count; ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        if (fds[i].fd == out_read.fd) read_available(out_read, false);
        else read_available(err_read, true);
      }
    }
    if (!ended_by && !group_done) {
      if (spec.cancel.stop_requested()) ended_by = ProcessOutcome::End::cancelled;
      else if (has_deadline && Clock::now() >= deadline) ended_by = ProcessOutcome::End::timed_out;
    }
    if (!group_done && (ended_by || child.try_reap())) {
      // Ended by us, or the program exited: what is left of its group (its
      // background jobs) goes too. The pipes then reach EOF unless a process
      // escaped the group (setsid) holding them; that one is not waited for.
      terminate_group(outcome.pgid, child, spec.kill_grace);
      group_done = true;
      drain_until = Clock::now() + 200ms;
    }
    const bool pipes_closed = out_read.fd < 0 && err_read.fd < 0;
    if (group_done && (pipes_closed || Clock::now() >= drain_until)) break;
    if (!group_done && spec.on_tick) spec.on_tick();
  }

  if (ended_by) {
    outcome.end = *ended_by;
  } else if (WIFEXITED(child.status)) {
    outcome.end = ProcessOutcome::End::exited;
    outcome.exit_code = WEXITSTATUS(child.status);
  } else if (WIFSIGNALED(child.status)) {
    outcome.end = ProcessOutcome::End::signaled;
    outcome.signal = WTERMSIG(child.status);
  } else {
    outcome.end = ProcessOutcome::End::exited;
    outcome.exit_code = -1;
  }
  return outcome;
}

}  // namespace cairn::tools
