#include "process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "death_link.hpp"
#include "sandbox/prepared_sandbox.hpp"
#include "sandboxed_spawn.hpp"

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

// Whether a process of the group other than its watcher still runs.
bool others_alive(pid_t pgid, const DeathLink& link) {
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return false;
  const auto members = live_group_members(pgid);
  return std::any_of(members.begin(), members.end(), [&](pid_t pid) { return !link.is_watcher(pid); });
}

// Polls `done` every `step` until it holds or `limit` passes; reaps the
// program on the way, or it would stay a zombie member of the group.
template <class Done>
bool wait_for(Child& child, std::chrono::milliseconds limit, std::chrono::milliseconds step, Done done) {
  const auto give_up = Clock::now() + limit;
  for (;;) {
    child.try_reap();
    if (done()) return true;
    if (Clock::now() >= give_up) return false;
    std::this_thread::sleep_for(step);
  }
}

// Terminates the group and waits until none of it runs: SIGTERM, `grace`,
// then SIGKILL. The watcher stays through all of it (it ignores SIGTERM), so
// that this process dying meanwhile still ends what is left; only once the
// rest is gone is it released.
void terminate_group(pid_t pgid, Child& child, std::chrono::milliseconds grace, DeathLink& link) {
  child.try_reap();
  if (others_alive(pgid, link)) {
    ::kill(-pgid, SIGTERM);
    ::kill(-pgid, SIGCONT);  // a stopped process only acts on SIGTERM once continued
    if (!wait_for(child, grace, 10ms, [&] { return !others_alive(pgid, link); })) ::kill(-pgid, SIGKILL);
  }
  // The rest is gone; now the watcher. Its end of the link closes while it
  // exits, a moment before it stops running (the kernel closes a process's
  // files before it becomes a zombie), so the group is looked at once more:
  // a call returns only when none of its processes runs.
  if (!link.release(1s)) ::kill(-pgid, SIGKILL);  // a watcher that would not leave (stopped, say)
  wait_for(child, 5s, 1ms, [&] { return !process_group_alive(pgid); });
  child.reap();
}

// Readable once the program has exited, so that the output loop wakes for
// its end instead of finding it at the next tick. -1 where the kernel has no
// pidfds (before 5.3): the tick finds it.
int exit_notifier(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// /proc/PID/stat's state and process group. The line is short; what matters
// comes right after the command name, which may hold spaces and parentheses.
bool read_stat(int proc_fd, const char* pid, char& state, long& pgrp) {
  char path[64], line[512];
  std::snprintf(path, sizeof path, "%s/stat", pid);
  const int fd = ::openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, line, sizeof line - 1);
  ::close(fd);
  if (n <= 0) return false;
  line[n] = '\0';
  const char* close = std::strrchr(line, ')');
  long ppid = 0;
  return close != nullptr && std::sscanf(close + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3;
}

// What a program that could not start under its sandbox is told.
std::string sandbox_refusal(const SandboxPolicy& policy, const std::string& what) {
  return fmt::format("cannot run under the sandbox ({}): {}. `--sandbox off` runs tools without a sandbox",
                     describe_sandbox(policy.record()), what);
}

}  // namespace

std::vector<std::string> with_private_tmpdir(const std::optional<std::vector<std::string>>& environment) {
  std::vector<std::string> out;
  if (environment) {
    out = *environment;
  } else {
    for (char** entry = environ; *entry != nullptr; ++entry) out.emplace_back(*entry);
  }
  std::erase_if(out, [](const std::string& entry) { return entry.starts_with("TMPDIR="); });
  out.push_back("TMPDIR=" + sandbox_temp_dir().string());
  return out;
}

std::vector<pid_t> live_group_members(pid_t pgid) {
  std::vector<pid_t> live;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return live;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    char state = 0;
    long pgrp = 0;
    if (read_stat(::dirfd(proc), entry->d_name, state, pgrp) && pgrp == pgid && state != 'Z' && state != 'X') {
      live.push_back(static_cast<pid_t>(std::atol(entry->d_name)));
    }
  }
  ::closedir(proc);
  return live;
}

OwnGroupSpawnAttributes::OwnGroupSpawnAttributes() {
  posix_spawnattr_init(&attr_);
  posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr_, 0);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr_, &empty);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attr_, &defaults);
}

OwnGroupSpawnAttributes::~OwnGroupSpawnAttributes() { posix_spawnattr_destroy(&attr_); }

bool process_group_alive(pid_t pgid) {
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return false;
  // kill() also reaches zombies; /proc tells whether a member still runs
  // (without /proc, assume one does).
  if (::access("/proc/self/stat", R_OK) != 0) return true;
  return !live_group_members(pgid).empty();
}

int find_program(const std::string& name, const std::optional<std::vector<std::string>>& environment,
                 const std::filesystem::path& cwd) {
  const auto executable = [&](const std::filesystem::path& path) {
    const std::filesystem::path full = path.is_relative() && !cwd.empty() ? cwd / path : path;
    return ::access(full.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (name.find('/') != std::string::npos) return executable(name);
  std::string path = "/bin:/usr/bin";  // confstr(_CS_PATH), what execvp uses without PATH
  if (environment) {
    for (const auto& entry : *environment) {
      if (entry.starts_with("PATH=")) path = entry.substr(5);
    }
  } else if (const char* own = std::getenv("PATH")) {
    path = own;
  }
  int error = ENOENT;
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t colon = std::min(path.find(':', start), path.size());
    const std::string dir = path.substr(start, colon - start);
    start = colon + 1;
    if (dir.empty()) continue;
    const int found = executable(std::filesystem::path(dir) / name);
    if (found == 0) return 0;
    if (found == EACCES) error = EACCES;  // execvp reports EACCES when only such candidates exist
  }
  return error;
}

ProcessOutcome run_process(const ProcessSpec& spec) {
  ProcessOutcome outcome;
  if (spec.argv.empty()) {
    outcome.error = "no program given";
    return outcome;
  }
  // Made ready before anything is started, so that a policy this machine
  // cannot enforce starts nothing.
  std::optional<sandbox::PreparedSandbox> sandboxed;
  if (spec.sandbox.enabled()) {
    sandbox::Preparation prepared = sandbox::prepare_sandbox(spec.sandbox, spec.cwd);
    if (!prepared.error.empty()) {
      outcome.error = sandbox_refusal(spec.sandbox, prepared.error);
      return outcome;
    }
    sandboxed = std::move(prepared.sandbox);
  }
  if (const int missing = find_program(spec.argv[0], spec.environment, spec.cwd); missing != 0) {
    outcome.error = fmt::format("cannot run {}: {}", spec.argv[0], std::strerror(missing));
    return outcome;
  }
  DeathLink link;
  if (std::string failed = link.open(); !failed.empty()) {
    outcome.error = std::move(failed);
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
  posix_spawn_file_actions_adddup2(&actions, link.theirs(), kWatcherFd);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());

  const OwnGroupSpawnAttributes attr;

  std::vector<char*> argv = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(kWatchedLaunch),
                             const_cast<char*>("sh")};
  for (const auto& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // A sandboxed program's TMPDIR is the sandbox's private directory, the
  // one temporary place it may write.
  std::vector<std::string> sandbox_environment;
  if (sandboxed) sandbox_environment = with_private_tmpdir(spec.environment);
  const std::vector<std::string>* entries = sandboxed ? &sandbox_environment
                                                      : spec.environment ? &*spec.environment : nullptr;
  std::vector<char*> envp;
  if (entries) {
    for (const auto& entry : *entries) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);
  }
  Child child;
  char** const child_environment = entries ? envp.data() : environ;
  if (sandboxed) {
    posix_spawn_file_actions_destroy(&actions);
    const ChildFiles files{.out = out_write.fd, .err = spec.merge_stderr ? out_write.fd : err_write.fd,
                           .watcher = link.theirs(), .cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str()};
    SandboxedSpawn spawned = spawn_sandboxed(*sandboxed, files, "/bin/sh", argv.data(), child_environment);
    if (spawned.pid < 0) {
      outcome.error = sandbox_refusal(spec.sandbox, spawned.error);
      return outcome;
    }
    child.pid = spawned.pid;
  } else {
    const int rc = ::posix_spawn(&child.pid, "/bin/sh", &actions, attr.get(), argv.data(), child_environment);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      outcome.error = fmt::format("cannot run {}: /bin/sh: {}", spec.argv[0], std::strerror(rc));
      return outcome;
    }
  }
  outcome.pgid = child.pid;
  link.spawned();
  out_write.reset();
  err_write.reset();
  Fd exited(exit_notifier(child.pid));

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
    pollfd fds[3];
    nfds_t count = 0;
    if (out_read.fd >= 0) fds[count++] = {out_read.fd, POLLIN, 0};
    if (err_read.fd >= 0) fds[count++] = {err_read.fd, POLLIN, 0};
    if (exited.fd >= 0 && !group_done) fds[count++] = {exited.fd, POLLIN, 0};
    if (::poll(fds, count, wait_ms) > 0) {
      for (nfds_t i = 0; i < count; ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        if (fds[i].fd == out_read.fd) read_available(out_read, false);
        else if (fds[i].fd == err_read.fd) read_available(err_read, true);
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
      terminate_group(outcome.pgid, child, spec.kill_grace, link);
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
