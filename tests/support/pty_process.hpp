// A program run on a pseudo-terminal, as from a person's shell: its
// standard input, output and error are the terminal, so isatty() holds for
// each, and every byte it writes to the screen is read back exactly (a
// screen capture, as tmux's, would render escape sequences instead of
// showing them). The terminal's own output processing is on, as on a real
// one: "\n" reaches the screen as "\r\n".
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "support/test_support.hpp"

namespace cairn::testing {

class PtyProcess {
 public:
  PtyProcess(const std::string& program, const std::vector<std::string>& args, const std::vector<std::string>& env,
             const std::filesystem::path& cwd, unsigned short columns = 160, unsigned short rows = 50) {
    // Everything the child needs is made before fork: after it, only
    // async-signal-safe calls (the test process has threads).
    std::vector<std::string> argv_strings{program};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<std::string> env_strings = env;
    const std::vector<char*> argv = exec_strings(argv_strings), envp = exec_strings(env_strings);
    const std::string dir = cwd.string();
    winsize size{};
    size.ws_col = columns;
    size.ws_row = rows;
    pid_ = ::forkpty(&master_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      if (::chdir(dir.c_str()) != 0) _exit(126);
      ::execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    if (master_ >= 0) ::fcntl(master_, F_SETFL, ::fcntl(master_, F_GETFL) | O_NONBLOCK);
  }
  ~PtyProcess() {
    if (pid_ > 0 && status_ < 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  bool started() const { return pid_ > 0 && master_ >= 0; }
  // Everything written to the terminal so far.
  const std::string& output() const { return output_; }

  // Reads until `text` has been written at or after byte `from` of the
  // output (true), the program has closed the terminal, or the deadline
  // passes (false).
  bool wait_for(std::string_view text, std::size_t from = 0,
                std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (output_.find(text, from) == std::string::npos) {
      if (closed_ || std::chrono::steady_clock::now() > until) return false;
      read_some(100);
    }
    return true;
  }

  // Keys, as typed: "\r" is Enter, "\x04" Ctrl+D.
  void type(std::string_view keys) {
    while (!keys.empty()) {
      const ssize_t n = ::write(master_, keys.data(), keys.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return;
      keys.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // Reads to the end and waits for the exit; the exit status, or -1 when it
  // did not end by the deadline (then it is killed).
  int finish(std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + deadline;
    for (;;) {
      int status = 0;
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        status_ = -1;
        break;
      }
      read_some(20);
    }
    // What it wrote before it exited is still in the terminal.
    while (!closed_ && read_some(20)) {
    }
    return status_;
  }

 private:
  // Waits up to `ms` for output; false when none came.
  bool read_some(int ms) {
    pollfd ready{master_, POLLIN, 0};
    if (::poll(&ready, 1, ms) <= 0) return false;
    char buffer[4096];
    const ssize_t n = ::read(master_, buffer, sizeof buffer);
    if (n > 0) {
      output_.append(buffer, static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) closed_ = true;  // EIO: every writer has gone
    return false;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  int status_ = -1;
  bool closed_ = false;
  std::string output_;
};

}  // namespace cairn::testing
