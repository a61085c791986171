// Tool process benchmarks. Prints what one program costs through the tools'
// process runner (its own group, the watcher, the group's end) beside a bare
// posix_spawn + waitpid of the same program, and how long after a SIGKILL of
// the process running a command nothing of the command's group still runs
// (the watcher's reaction; the acceptance bound is one second).
//
//   cairn_bench_tools [--quick]
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/tools/sandbox.hpp"
#include "tools/process.hpp"

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

extern char** environ;

namespace {

double millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Summary {
  double median = 0, p90 = 0, max = 0;
};

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.median = values[values.size() / 2];
  s.p90 = values[std::min(values.size() - 1, values.size() * 9 / 10)];
  s.max = values.back();
  return s;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

void print_row(const char* what, const Summary& s, const char* reference) {
  std::printf("  %-44s median %7.2f ms   p90 %7.2f ms   max %7.2f ms   %s\n", what, s.median, s.p90, s.max, reference);
}

// A bare spawn and reap of `true`: what any runner costs at least.
double bare_spawn() {
  char name[] = "true";
  char* argv[] = {name, nullptr};
  const auto start = Clock::now();
  pid_t pid = -1;
  if (posix_spawnp(&pid, "true", nullptr, nullptr, argv, environ) != 0) die("posix_spawnp true failed");
  ::waitpid(pid, nullptr, 0);
  return millis(Clock::now() - start);
}

double runner(const std::vector<std::string>& argv, const cairn::SandboxPolicy& sandbox = {},
              const std::string& cwd = {}) {
  cairn::tools::ProcessSpec spec;
  spec.argv = argv;
  spec.sandbox = sandbox;
  spec.cwd = cwd;
  spec.on_output = [](std::string_view) { return true; };
  const auto start = Clock::now();
  const auto outcome = cairn::tools::run_process(spec);
  if (outcome.end != cairn::tools::ProcessOutcome::End::exited) die("run_process did not run the program: " + outcome.error);
  return millis(Clock::now() - start);
}

// The child: runs a command that starts a subshell, a background job and a
// nested sh -c, and reports its group (the command's $$) on stdout.
int child_main() {
  cairn::tools::ProcessSpec spec;
  spec.argv = {"bash", "-c", "echo $$; (sleep 100) & sleep 100 & sh -c 'sleep 100; true' & sleep 100; true"};
  spec.on_output = [](std::string_view bytes) {
    if (::write(STDOUT_FILENO, bytes.data(), bytes.size()) < 0) std::_Exit(1);
    return true;
  };
  return cairn::tools::run_process(spec).end == cairn::tools::ProcessOutcome::End::exited ? 0 : 1;
}

// One round: the child runs the command until its group has all six
// processes (bash, the subshell, three sleeps and sh -c, plus the watcher),
// is SIGKILLed, and the group is watched until none of it runs.
double kill_round(const char* self) {
  int fds[2];
  if (::pipe(fds) != 0) die("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string program = self, flag = "--child";
  char* argv[] = {program.data(), flag.data(), nullptr};
  pid_t child = -1;
  if (posix_spawn(&child, self, &actions, nullptr, argv, environ) != 0) die("cannot start the child");
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  std::string line;
  char c;
  while (::read(fds[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(fds[0]);
  const pid_t pgid = static_cast<pid_t>(std::atol(line.c_str()));
  if (pgid <= 0) die("the child reported no group");
  const auto ready_by = Clock::now() + 10s;
  while (cairn::tools::live_group_members(pgid).size() < 7) {
    if (Clock::now() > ready_by) die("the command's processes did not all start");
    std::this_thread::sleep_for(1ms);
  }
  const auto killed = Clock::now();
  ::kill(child, SIGKILL);
  while (cairn::tools::process_group_alive(pgid)) {
    if (Clock::now() - killed > 5s) die(fmt::format("group {} still runs 5 s after the kill", pgid));
  }
  const double ms = millis(Clock::now() - killed);
  ::waitpid(child, nullptr, 0);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return child_main();
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int spawns = quick ? 30 : 200;
  const int kills = quick ? 5 : 30;

  std::printf("tool processes (%d runs each, %d kills)\n", spawns, kills);
  // The sandbox's rows run in a workspace of their own, hiding what the
  // coding agent hides by default.
  const std::string unavailable = cairn::sandbox_unavailable(cairn::SandboxMode::workspace_write);
  char workspace_template[] = "/tmp/cairn-bench-workspace-XXXXXX";
  const char* workspace = ::mkdtemp(workspace_template);
  if (workspace == nullptr) die("mkdtemp failed");
  const cairn::SandboxPolicy sandbox{.mode = cairn::SandboxMode::workspace_write, .deny = cairn::default_sandbox_deny()};
  // With the network allowed under cairn serve, its port stays closed: a
  // Landlock domain of every other TCP port, built per process.
  cairn::SandboxPolicy networked = sandbox;
  networked.network = true;
  cairn::close_port_to_sandbox(8080);
  std::vector<double> bare, through_runner, bash_runner, bash_sandboxed, bash_networked;
  for (int i = 0; i < spawns; ++i) {
    bare.push_back(bare_spawn());
    through_runner.push_back(runner({"true"}));
    bash_runner.push_back(runner({"bash", "-c", "true"}, {}, workspace));
    if (unavailable.empty()) {
      bash_sandboxed.push_back(runner({"bash", "-c", "true"}, sandbox, workspace));
      bash_networked.push_back(runner({"bash", "-c", "true"}, networked, workspace));
    }
  }
  ::rmdir(workspace);
  print_row("posix_spawn + waitpid of true", summarize(bare), "(reference: the least any runner costs)");
  print_row("run_process of true", summarize(through_runner), "(own group, watcher, group ended)");
  print_row("run_process of bash -c true", summarize(bash_runner), "(what a bash tool call costs at least)");
  if (unavailable.empty()) {
    const Summary off = summarize(bash_runner), on = summarize(bash_sandboxed);
    print_row("the same under the sandbox (workspace-write)", on,
              fmt::format("(+{:.2f} ms median over off; bound: 5 ms)", on.median - off.median).c_str());
    const Summary networked_on = summarize(bash_networked);
    print_row("the same, network on, cairn serve's port closed", networked_on,
              fmt::format("(+{:.2f} ms median over off; the price of --sandbox-network under serve)",
                          networked_on.median - off.median)
                  .c_str());
  } else {
    std::printf("  the same under the sandbox: not measured, %s\n", unavailable.c_str());
  }

  std::vector<double> gone;
  for (int i = 0; i < kills; ++i) gone.push_back(kill_round(argv[0]));
  print_row("SIGKILL of the runner to group gone", summarize(gone), "(bound: 1000 ms)");
  return 0;
}
