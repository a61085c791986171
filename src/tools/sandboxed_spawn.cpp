#include "sandboxed_spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "death_link.hpp"

namespace cairn::tools {

namespace {

// The report pipe's child end is moved above the fds the child sets up, so
// that no dup2 onto 0..3 closes it.
constexpr int kLowestReportFd = 10;

// The child's side, to exec or _exit: no allocation, no locks.
[[noreturn]] void child_main(const sandbox::PreparedSandbox& sandbox, const ChildFiles& files, const char* program,
                             char* const argv[], char* const envp[], int report) noexcept {
  const auto fail = [report](sandbox::ChildFailure failure) {
    ssize_t n;
    do n = ::write(report, &failure, sizeof failure);
    while (n < 0 && errno == EINTR);
    ::_exit(127);
  };
  sigset_t empty;
  sigemptyset(&empty);
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  sigemptyset(&defaults.sa_mask);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2, SIGALRM}) {
    ::sigaction(sig, &defaults, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  const int null = files.in >= 0 ? files.in : ::open("/dev/null", O_RDONLY);
  if (::setpgid(0, 0) != 0 || null < 0 || ::dup2(null, 0) < 0 || ::dup2(files.out, 1) < 0 || ::dup2(files.err, 2) < 0 ||
      ::dup2(files.watcher, kWatcherFd) < 0 || (files.cwd != nullptr && ::chdir(files.cwd) != 0)) {
    fail({sandbox::ChildStep::setup_process, errno});
  }
  if (files.in < 0 && null > kWatcherFd) ::close(null);
  if (sandbox::ChildFailure failed = sandbox::enter_sandbox(sandbox)) fail(failed);
  ::execve(program, argv, envp);
  fail({sandbox::ChildStep::exec, errno});
  ::_exit(127);  // not reached: fail exits
}

}  // namespace

SandboxedSpawn spawn_sandboxed(const sandbox::PreparedSandbox& sandbox, const ChildFiles& files, const char* program,
                               char* const argv[], char* const envp[]) {
  SandboxedSpawn out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.error = fmt::format("pipe: {}", std::strerror(errno));
    return out;
  }
  int report = ::fcntl(fds[1], F_DUPFD_CLOEXEC, kLowestReportFd);
  ::close(fds[1]);
  if (report < 0) {
    ::close(fds[0]);
    out.error = fmt::format("fcntl: {}", std::strerror(errno));
    return out;
  }
  const pid_t pid = ::fork();
  if (pid == 0) child_main(sandbox, files, program, argv, envp, report);
  ::close(report);
  if (pid < 0) {
    ::close(fds[0]);
    out.error = fmt::format("fork: {}", std::strerror(errno));
    return out;
  }
  sandbox::ChildFailure failure;
  ssize_t n;
  do n = ::read(fds[0], &failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  ::close(fds[0]);
  if (n == static_cast<ssize_t>(sizeof failure) && failure) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out.error = sandbox::describe_failure(sandbox, failure);
    return out;
  }
  out.pid = pid;  // end-of-file: the exec succeeded
  return out;
}

}  // namespace cairn::tools
