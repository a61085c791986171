// The public face of the sandbox (cairn/tools/sandbox.hpp): names, the
// default deny list, the private temporary directory, and the one-time
// check that this machine can enforce a policy at all.
#include "cairn/tools/sandbox.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <system_error>

#include <fmt/format.h>

#include "prepared_sandbox.hpp"

namespace cairn {

namespace fs = std::filesystem;

std::string_view sandbox_mode_name(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::off: return "off";
    case SandboxMode::read_only: return "read-only";
    case SandboxMode::workspace_write: return "workspace-write";
  }
  return "unknown";
}

std::optional<SandboxMode> parse_sandbox_mode_name(std::string_view text) {
  for (SandboxMode mode : {SandboxMode::off, SandboxMode::read_only, SandboxMode::workspace_write}) {
    if (text == sandbox_mode_name(mode)) return mode;
  }
  return std::nullopt;
}

std::string describe_sandbox(const SandboxRecord& policy) {
  if (policy.mode == SandboxMode::off) return "off";
  return fmt::format("{}, network {}", sandbox_mode_name(policy.mode),
                     policy.network_granted.value_or(false) ? "on for this call" : policy.network ? "on" : "off");
}

std::vector<fs::path> default_sandbox_deny(fs::path home) {
  if (home.empty()) {
    const char* env = std::getenv("HOME");
    if (env == nullptr || *env == '\0') return {};
    home = env;
  }
  return {home / ".ssh", home / ".gnupg", home / ".aws", home / ".azure", home / ".config/gcloud",
          home / ".kube", home / ".docker", home / ".netrc", home / ".git-credentials", home / ".password-store"};
}

int landlock_abi_version() { return sandbox::landlock_abi(); }

namespace {

// Made on first use, removed when the process exits normally.
class PrivateTemp {
 public:
  PrivateTemp() {
    std::error_code ec;
    const fs::path base = fs::temp_directory_path(ec);
    std::string pattern = ((ec ? fs::path("/tmp") : base) / "cairn-sandbox-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~PrivateTemp() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  PrivateTemp(const PrivateTemp&) = delete;
  PrivateTemp& operator=(const PrivateTemp&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs the whole setup of a policy in a child that exits instead of exec:
// the surest answer to "would it work here". Empty when it did.
std::string try_sandbox(SandboxMode mode) {
  const fs::path& temp = sandbox_temp_dir();
  if (temp.empty()) return "its private temporary directory cannot be made";
  std::error_code ec;
  const fs::path probe = temp / ".probe";
  fs::create_directories(probe / "workspace/.cairn", ec);
  fs::create_directories(probe / "hidden", ec);
  std::ofstream(probe / "hidden-file") << "x";
  SandboxPolicy policy{.mode = mode, .deny = {probe / "hidden", probe / "hidden-file"}};
  sandbox::Preparation prepared = sandbox::prepare_sandbox(policy, probe / "workspace");
  if (!prepared.error.empty()) return prepared.error;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return fmt::format("pipe: {}", std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return fmt::format("fork: {}", std::strerror(errno));
  }
  if (pid == 0) {
    const sandbox::ChildFailure failed = sandbox::enter_sandbox(prepared.sandbox);
    if (failed) (void)!::write(pipe_fds[1], &failed, sizeof failed);
    ::_exit(failed ? 1 : 0);
  }
  ::close(pipe_fds[1]);
  sandbox::ChildFailure failed;
  ssize_t n;
  do n = ::read(pipe_fds[0], &failed, sizeof failed);
  while (n < 0 && errno == EINTR);
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  fs::remove_all(probe, ec);
  if (n == static_cast<ssize_t>(sizeof failed) && failed) return sandbox::describe_failure(prepared.sandbox, failed);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "the sandbox's trial process died";
  return {};
}

}  // namespace

const fs::path& sandbox_temp_dir() {
  static const PrivateTemp temp;
  return temp.path();
}

std::string sandbox_unavailable(SandboxMode mode) {
  if (mode == SandboxMode::off) return {};
  static std::mutex mu;
  static std::optional<std::string> known[3];  // by mode: read-only and workspace-write differ in their mounts
  std::lock_guard lock(mu);
  auto& answer = known[static_cast<std::size_t>(mode)];
  if (!answer) {
    const std::string missing = try_sandbox(mode);
    answer = missing.empty() ? std::string()
                             : fmt::format("this machine cannot enforce the sandbox: {}. A sandbox needs Landlock, "
                                           "seccomp and unprivileged user namespaces; `--sandbox off` runs tools "
                                           "without one",
                                           missing);
  }
  return *answer;
}

namespace {
std::mutex closed_mu;
std::vector<std::uint16_t> closed;
}  // namespace

void close_port_to_sandbox(std::uint16_t port) {
  std::lock_guard lock(closed_mu);
  if (std::find(closed.begin(), closed.end(), port) != closed.end()) return;
  closed.push_back(port);
  std::sort(closed.begin(), closed.end());
}

namespace sandbox {
std::vector<std::uint16_t> closed_ports() {
  std::lock_guard lock(closed_mu);
  return closed;
}
}  // namespace sandbox

}  // namespace cairn
