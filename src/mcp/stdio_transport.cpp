// The stdio transport: the server is a program of ours, one JSON-RPC message
// per line on its stdin and stdout (MCP's "stdio" transport). It runs in a
// process group of its own, tied to this process the way the coding tools'
// commands are (tools/death_link.hpp): when cairn dies, however it dies, the
// server and everything it started die too.
//
// Its stdin and stdout are socket pairs rather than pipes: a write to a
// server that has died must come back as an error here, not as a SIGPIPE
// that kills cairn (send() takes MSG_NOSIGNAL; write() to a pipe cannot).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "tools/death_link.hpp"
#include "sandbox/prepared_sandbox.hpp"
#include "tools/process.hpp"
#include "tools/sandboxed_spawn.hpp"
#include "transport.hpp"

extern char** environ;

namespace cairn::mcp {

namespace {

using namespace std::chrono_literals;

// A line longer than this is not a message we will hold: a server printing
// without line breaks would otherwise grow the buffer until cairn dies.
constexpr std::size_t kMaxLine = std::size_t{64} << 20;

class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~OwnedFd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

class StdioChannel final : public Transport {
 public:
  StdioChannel(StdioTransport config, std::filesystem::path stderr_log, std::function<bool(std::string_view)> withhold)
      : config_(std::move(config)), stderr_log_(std::move(stderr_log)), withhold_(std::move(withhold)) {}
  ~StdioChannel() override { close(); }

  Status open(OnMessage on_message, OnClosed on_closed) override {
    on_message_ = std::move(on_message);
    on_closed_ = std::move(on_closed);
    std::vector<std::string> environment;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string_view text(*entry);
      const auto name = text.substr(0, text.find('='));
      if (config_.env.contains(std::string(name)) || (withhold_ && withhold_(name))) continue;
      environment.emplace_back(text);
    }
    for (const auto& [name, value] : config_.env) environment.push_back(name + "=" + value);
    if (const int missing = tools::find_program(config_.command, environment, config_.cwd); missing != 0) {
      return fail(Errc::io_error, fmt::format("cannot run {}: {}", config_.command, std::strerror(missing)));
    }
    if (std::string failed = link_.open(); !failed.empty()) return fail(Errc::io_error, failed);
    int in_pair[2], out_pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0 ||
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out_pair) != 0) {
      return fail(Errc::io_error, fmt::format("socketpair: {}", std::strerror(errno)));
    }
    OwnedFd their_in(in_pair[1]), their_out(out_pair[1]);
    to_server_ = OwnedFd(in_pair[0]);
    from_server_ = OwnedFd(out_pair[0]);
    // Our reading end only reads, our writing end only writes: the server
    // sees end-of-file on stdin when we shut ours down.
    ::shutdown(to_server_.get(), SHUT_RD);
    ::shutdown(their_in.get(), SHUT_WR);
    OwnedFd log(stderr_log_.empty()
                    ? ::open("/dev/null", O_WRONLY | O_CLOEXEC)
                    : ::open(stderr_log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (log.get() < 0) {
      return fail(Errc::io_error, fmt::format("cannot open {}: {}", stderr_log_.string(), std::strerror(errno)));
    }

    std::vector<char*> argv = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                               const_cast<char*>(tools::kWatchedLaunch), const_cast<char*>("sh"),
                               config_.command.data()};
    for (auto& arg : config_.args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    if (config_.sandboxed && config_.sandbox.enabled()) {
      // Under the agent's sandbox, like bash's commands (tools/process.hpp).
      std::error_code ec;
      const std::filesystem::path workspace = config_.cwd.empty() ? std::filesystem::current_path(ec) : config_.cwd;
      sandbox::Preparation prepared = sandbox::prepare_sandbox(config_.sandbox, workspace);
      std::string refused = prepared.error;
      if (refused.empty()) {
        std::vector<std::string> entries = tools::with_private_tmpdir(environment);
        std::vector<char*> envp;
        for (auto& entry : entries) envp.push_back(entry.data());
        envp.push_back(nullptr);
        const tools::ChildFiles files{.in = their_in.get(), .out = their_out.get(), .err = log.get(),
                                      .watcher = link_.theirs(), .cwd = config_.cwd.empty() ? nullptr : config_.cwd.c_str()};
        tools::SandboxedSpawn spawned = tools::spawn_sandboxed(prepared.sandbox, files, "/bin/sh", argv.data(), envp.data());
        if (spawned.pid > 0) {
          pid_ = spawned.pid;
          link_.spawned();
          reader_ = std::thread([this] { read_loop(); });
          return {};
        }
        refused = spawned.error;
      }
      return fail(Errc::io_error, fmt::format("cannot run {} under the sandbox ({}): {}. \"sandbox\": false in its "
                                              "configuration, or `--sandbox off`, runs it without one",
                                              config_.command, describe_sandbox(config_.sandbox.record()), refused));
    }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, their_in.get(), 0);
    posix_spawn_file_actions_adddup2(&actions, their_out.get(), 1);
    posix_spawn_file_actions_adddup2(&actions, log.get(), 2);
    posix_spawn_file_actions_adddup2(&actions, link_.theirs(), tools::kWatcherFd);
    if (!config_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, config_.cwd.c_str());
    // Its own group (killed as one), default signal handling whatever
    // cairn has (serve ignores SIGPIPE; a thread may block signals).
    const tools::OwnGroupSpawnAttributes attr;
    std::vector<char*> envp;
    for (auto& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, "/bin/sh", &actions, attr.get(), argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return fail(Errc::io_error, fmt::format("cannot run {}: /bin/sh: {}", config_.command, std::strerror(rc)));
    link_.spawned();
    reader_ = std::thread([this] { read_loop(); });
    return {};
  }

  Status send(const Json& message) override {
    std::string line = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    line += '\n';
    std::lock_guard lock(write_mu_);
    if (to_server_.get() < 0) return fail(Errc::closed, "the MCP server's connection is closed");
    std::size_t sent = 0;
    while (sent < line.size()) {
      const ssize_t n = ::send(to_server_.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail(Errc::io_error, fmt::format("cannot write to the MCP server: {}", std::strerror(errno)));
      }
      sent += static_cast<std::size_t>(n);
    }
    return {};
  }

  void set_protocol_version(const std::string&) override {}

  // The spec's order: close its stdin, give it a moment to leave, then
  // SIGTERM, then SIGKILL — the whole group each time.
  void close() override {
    if (closing_.exchange(true)) {
      if (reader_.joinable()) reader_.join();
      return;
    }
    {
      std::lock_guard lock(write_mu_);
      if (to_server_.get() >= 0) ::shutdown(to_server_.get(), SHUT_WR);
    }
    if (pid_ > 0) {
      if (!wait_exit(500ms)) {
        ::kill(-pid_, SIGTERM);
        ::kill(-pid_, SIGCONT);
        if (!wait_exit(1000ms)) ::kill(-pid_, SIGKILL);
      }
      // What the server left running in its group (its watcher among them).
      if (!link_.release(500ms) || tools::process_group_alive(pid_)) ::kill(-pid_, SIGKILL);
      reap(true);
    }
    // The reader ends at end-of-file: every writer of the server's stdout is gone now.
    if (from_server_.get() >= 0) ::shutdown(from_server_.get(), SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    std::lock_guard lock(write_mu_);
    to_server_.reset();
  }

 private:
  bool wait_exit(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (reap(false)) return true;
      std::this_thread::sleep_for(5ms);
    }
    return reap(false);
  }

  // True once the server's process is reaped (its status kept).
  bool reap(bool block) {
    std::lock_guard lock(reap_mu_);
    if (reaped_) return true;
    int status = 0;
    pid_t r;
    do r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == pid_) {
      status_ = status;
      reaped_ = true;
    } else if (r < 0) {
      reaped_ = true;  // not ours to reap any more (ECHILD)
    }
    return reaped_;
  }

  void read_loop() {
    std::string buffer;
    char chunk[65536];
    bool skipping = false;  // inside a line over kMaxLine
    std::string why;
    for (;;) {
      const ssize_t n = ::recv(from_server_.get(), chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::string_view piece(chunk, static_cast<std::size_t>(n));
      while (!piece.empty()) {
        const auto newline = piece.find('\n');
        const auto part = piece.substr(0, newline);
        if (!skipping) {
          if (buffer.size() + part.size() > kMaxLine) {
            skipping = true;
            buffer.clear();
            report_garbage(fmt::format("a line over {} MB", kMaxLine >> 20));
          } else {
            buffer.append(part);
          }
        }
        if (newline == std::string_view::npos) break;
        piece.remove_prefix(newline + 1);
        if (!skipping) deliver(buffer);
        buffer.clear();
        skipping = false;
      }
    }
    if (closing_.load()) return;
    // End-of-file: the server closed its stdout, which it does by exiting.
    wait_exit(2000ms);
    bool reaped = false;
    int status = 0;
    {
      std::lock_guard lock(reap_mu_);  // close() may be reaping on another thread
      reaped = reaped_;
      status = status_;
    }
    if (reaped && WIFEXITED(status)) {
      why = fmt::format("the MCP server exited with status {}", WEXITSTATUS(status));
    } else if (reaped && WIFSIGNALED(status)) {
      why = fmt::format("the MCP server was killed by signal {}", WTERMSIG(status));
    } else {
      why = "the MCP server closed its output";
    }
    if (!stderr_log_.empty()) why += fmt::format(" (its messages are in {})", stderr_log_.string());
    if (on_closed_) on_closed_(why);
  }

  void deliver(std::string& line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) return;
    Json message = Json::parse(line, nullptr, false);
    if (!message.is_object() && !message.is_array()) {
      report_garbage(fmt::format("a line that is not JSON-RPC: {}", line.substr(0, 200)));
      return;
    }
    if (message.is_array()) {
      for (auto& each : message) {
        if (each.is_object()) on_message_(std::move(each));
      }
      return;
    }
    on_message_(std::move(message));
  }

  // A server's garbage has nobody to answer: it goes to the server's log,
  // beside what the server itself said there.
  void report_garbage(const std::string& what) {
    if (stderr_log_.empty()) return;
    OwnedFd log(::open(stderr_log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (log.get() < 0) return;
    const std::string text = fmt::format("cairn: ignored {}\n", what);
    [[maybe_unused]] const ssize_t n = ::write(log.get(), text.data(), text.size());
  }

  StdioTransport config_;
  std::filesystem::path stderr_log_;
  std::function<bool(std::string_view)> withhold_;
  OnMessage on_message_;
  OnClosed on_closed_;
  tools::DeathLink link_;
  pid_t pid_ = -1;
  std::mutex write_mu_;
  OwnedFd to_server_;
  OwnedFd from_server_;
  std::mutex reap_mu_;
  bool reaped_ = false;
  int status_ = 0;
  std::atomic<bool> closing_{false};
  std::thread reader_;
};

}  // namespace

std::unique_ptr<Transport> make_stdio_transport(const StdioTransport& config, std::filesystem::path stderr_log,
                                                std::function<bool(std::string_view)> withhold) {
  return std::make_unique<StdioChannel>(config, std::move(stderr_log), std::move(withhold));
}

}  // namespace cairn::mcp
