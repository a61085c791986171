// The sandbox's attack suite (issue 46's acceptance): a scene in a temporary
// directory (a git workspace, a directory outside it with a victim file, a
// fake HOME with an SSH key and cairn's token file, a TCP listener on
// 127.0.0.1, a ptrace program) and the bash commands that try to get out of
// it. Each attack must fail under every sandbox mode and succeed under off;
// each legitimate action must succeed under workspace-write. Shared by the
// bash tool's test and the `cairn -p` test, which run the same commands.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace cairn::testing {

struct SandboxAttack {
  std::string name;
  std::string command;
  // A file the attack makes where it must not: its existence (within a few
  // seconds, for a background process) is the proof it got out. Empty: the
  // command's exit status alone says.
  std::filesystem::path proof;
  bool background = false;  // the proof may come after the command ended
};

class SandboxScene {
 public:
  // Under `root` (the workspace is root/work, HOME root/home); cairn's
  // configuration directory is `config`/cairn (XDG_CONFIG_HOME).
  SandboxScene(std::filesystem::path root, std::filesystem::path config)
      : root_(std::move(root)), config_(std::move(config)) {
    namespace fs = std::filesystem;
    fs::create_directories(workspace());
    fs::create_directories(outside());
    fs::create_directories(home() / ".ssh");
    fs::create_directories(config_ / "cairn");
    std::ofstream(home() / ".ssh/id_ed25519") << "PRIVATE-KEY-MATERIAL\n";
    std::ofstream(token_file()) << "serve-token-SECRET\n";
    std::ofstream(outside() / "victim") << "victim\n";
    const std::string init = fmt::format(
        "cd '{}' && git init -q . && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m init",
        workspace().string());
    git_ok_ = std::system(init.c_str()) == 0 && fs::is_directory(workspace() / ".git/hooks");
    // The ptrace program, built here (outside any sandbox): attaches to the
    // pid it is given (a sibling: a process of the test, outside the
    // sandbox), or forks a child and attaches to that; exit 0 when the
    // kernel let it.
    std::ofstream(outside() / "ptracer.c") << R"(#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  pid_t target = argc > 1 ? (pid_t)atoi(argv[1]) : fork();
  if (target == 0) { for (;;) pause(); }
  long rc = ptrace(PTRACE_ATTACH, target, 0, 0);
  int err = errno;
  if (argc == 1) { kill(target, SIGKILL); waitpid(target, 0, 0); }
  if (rc != 0) { fprintf(stderr, "ptrace: %s\n", strerror(err)); return 1; }
  return 0;  /* exiting detaches a sibling */
}
)";
    const std::string build = fmt::format("cc -o '{0}/ptracer' '{0}/ptracer.c'", outside().string());
    ptracer_ok_ = std::system(build.c_str()) == 0;
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ >= 0 && ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::listen(listener_, 64) == 0 && ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
    // The sibling to trace: not the command's descendant. Yama (when the
    // kernel has it) forbids that to everyone from scope 1 on, sandbox or
    // not, so there the attack proves nothing and is left out.
    if (ptrace_scope() == 0) {
      char sleep_arg0[] = "sleep";
      char sleep_arg1[] = "300";
      char* const argv[] = {sleep_arg0, sleep_arg1, nullptr};
      if (::posix_spawnp(&sibling_, "sleep", nullptr, nullptr, argv, environ) != 0) sibling_ = -1;
    }
  }
  ~SandboxScene() {
    if (listener_ >= 0) ::close(listener_);
    if (sibling_ > 0) {
      ::kill(sibling_, SIGKILL);
      ::waitpid(sibling_, nullptr, 0);
    }
  }
  // /proc/sys/kernel/yama/ptrace_scope; 0 without Yama.
  static int ptrace_scope() {
    std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
    int scope = 0;
    return in >> scope ? scope : 0;
  }
  SandboxScene(const SandboxScene&) = delete;
  SandboxScene& operator=(const SandboxScene&) = delete;

  // Whether the scene could be built (git, a C compiler, a listening port,
  // the sibling where Yama lets it be traced).
  bool ready() const { return git_ok_ && ptracer_ok_ && port_ != 0 && (sibling_ > 0 || ptrace_scope() != 0); }

  std::filesystem::path root() const { return root_; }
  std::filesystem::path workspace() const { return root_ / "work"; }
  std::filesystem::path outside() const { return root_ / "outside"; }
  std::filesystem::path home() const { return root_ / "home"; }
  std::filesystem::path cairn_config() const { return config_ / "cairn"; }
  std::filesystem::path token_file() const { return cairn_config() / "serve-tokens"; }

  std::vector<SandboxAttack> attacks() const {
    const std::string out = outside().string();
    std::vector<SandboxAttack> list{
        {"absolute path", fmt::format("echo x > {}/abs", out), outside() / "abs"},
        {"dot-dot", "echo x > ../outside/dotdot", outside() / "dotdot"},
        {"planted symlink", fmt::format("ln -sfn {} planted && echo x > planted/symlinked", out), outside() / "symlinked"},
        {"hard link", fmt::format("ln {}/victim hardlink && echo pwned >> hardlink", out), {}},
        {"/proc/self/root", fmt::format("echo x > /proc/self/root{}/procroot", out), outside() / "procroot"},
        {"/proc/self/cwd", fmt::format("cd {} && echo x > /proc/self/cwd/proccwd", out), outside() / "proccwd"},
        {"ssh key", fmt::format("grep PRIVATE-KEY {}/.ssh/id_ed25519", home().string()), {}},
        {"token file", fmt::format("grep serve-token {}", token_file().string()), {}},
        {"tcp to 127.0.0.1", fmt::format("exec 3<>/dev/tcp/127.0.0.1/{} && echo connected", port_), {}},
        {"udp socket", fmt::format("exec 3<>/dev/udp/127.0.0.1/{} && echo opened", port_), {}},
        {"unshare -U", "unshare -U true", {}},
        {"ptrace", fmt::format("{}/ptracer", out), {}},
        {".git/hooks", "echo 'exit 0' > .git/hooks/pre-commit", workspace() / ".git/hooks/pre-commit"},
        {"background process",
         // The pause lets setsid leave the command's group before the command
         // ends and its group is ended.
         fmt::format("setsid sh -c 'sleep 0.5; echo x > {}/background' </dev/null >/dev/null 2>&1 & sleep 0.2", out),
         outside() / "background", true},
    };
    if (sibling_ > 0) list.push_back({"ptrace a sibling", fmt::format("{}/ptracer {}", out, sibling_), {}});
    return list;
  }

  std::vector<SandboxAttack> legitimate() const {
    return {
        {"build and run C",
         "printf '#include <stdio.h>\\nint main(void){puts(\"ran\");return 0;}\\n' > hello.c && cc -o hello hello.c && "
         "./hello",
         {}},
        {"git commit", "git add hello.c && git -c user.email=t@t -c user.name=t commit -q -m hello && git log --oneline",
         {}},
        {"system headers", "grep -c include /usr/include/stdio.h", {}},
        {"TMPDIR", "echo x > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\" > /dev/null", {}},
    };
  }

  // Whether `attack` got out, given whether its command succeeded.
  static bool escaped(const SandboxAttack& attack, bool command_succeeded) {
    if (attack.proof.empty()) return command_succeeded;
    for (int i = 0; i < 30; ++i) {
      if (std::filesystem::exists(attack.proof)) return true;
      if (!attack.background) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

 private:
  std::filesystem::path root_;
  std::filesystem::path config_;
  bool git_ok_ = false;
  bool ptracer_ok_ = false;
  int listener_ = -1;
  int port_ = 0;
  pid_t sibling_ = -1;
};

}  // namespace cairn::testing
