// Runs a program in its own process group and collects its output, for the
// bash tool and the ripgrep-based tools. The whole group is the unit: on
// cancel, timeout or an early stop it is terminated (SIGTERM, then SIGKILL
// after a grace period), and when the program exits, whatever it left
// running in its group is terminated too, so no call leaves processes behind.
//
// Nor does the group outlive this process. Each group holds a watcher: a
// subshell forked by /bin/sh before it execs the program, which blocks reading
// one end of a socket pair whose other end only this process holds. The
// kernel closes that end when this process dies, however it dies (SIGKILL
// included); the watcher then reads end-of-file and SIGKILLs its own group —
// the program, its children, its background jobs — within milliseconds. A
// normal end writes a line instead, and the watcher leaves quietly. It ignores
// SIGTERM, SIGINT, SIGHUP and SIGQUIT, so that a command's own `kill 0` (the
// `trap 'kill 0' EXIT` idiom) does not remove it. What leaves the group
// (setsid, setpgid) is out of its reach; the marker in the environment
// (tool_call_processes.hpp) still finds it. The program inherits the watcher
// as a child it did not start; bash and rg, the programs run here, ignore
// such a child (a program that waited for every child would wait for it).
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/tools/sandbox.hpp"

namespace cairn::tools {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in the program's PATH
  std::filesystem::path cwd;
  // The program's environment, NAME=VALUE entries; nullopt: this process's.
  std::optional<std::vector<std::string>> environment;
  bool merge_stderr = true;  // stderr into the output; else kept apart (first 64 KB)
  std::optional<std::chrono::milliseconds> timeout;
  std::stop_token cancel;
  // Output bytes as they arrive (stdin is /dev/null). Returning false stops
  // the program: its group is terminated and the outcome says `stopped`.
  std::function<bool(std::string_view)> on_output;
  // Called about every 50 ms while the program runs (throttled updates).
  std::function<void()> on_tick;
  std::chrono::milliseconds kill_grace{500};
  // The sandbox the program and everything it starts run under (sandbox.hpp);
  // the workspace is `cwd`. A policy this machine cannot enforce, or a
  // failure while entering it, is a spawn failure: never an unconfined run.
  SandboxPolicy sandbox;
};

struct [[nodiscard]] ProcessOutcome {
  enum class End { exited, signaled, timed_out, cancelled, stopped, spawn_failed };
  End end = End::spawn_failed;
  int exit_code = -1;  // End::exited
  int signal = 0;      // End::signaled
  pid_t pgid = 0;      // the group the program ran in (its pid)
  std::string error;   // End::spawn_failed
  std::string stderr_output;  // when not merged
};

ProcessOutcome run_process(const ProcessSpec& spec);

// What PATH lookup (in `environment`'s PATH, else ours) would find for
// `name`, so that a missing program is a spawn failure as with posix_spawnp,
// not a shell's "not found" on exit 127. 0 when found, else the errno.
int find_program(const std::string& name, const std::optional<std::vector<std::string>>& environment,
                 const std::filesystem::path& cwd);

// posix_spawn attributes for a program in a process group of its own (so it
// and everything it starts can be signalled as one), with an empty signal
// mask and default dispositions whatever this process has (a server that
// ignores SIGPIPE, a thread that blocks signals).
class OwnGroupSpawnAttributes {
 public:
  OwnGroupSpawnAttributes();
  ~OwnGroupSpawnAttributes();
  OwnGroupSpawnAttributes(const OwnGroupSpawnAttributes&) = delete;
  OwnGroupSpawnAttributes& operator=(const OwnGroupSpawnAttributes&) = delete;
  const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

// `environment` (else this process's) with TMPDIR set to the sandbox's
// private directory (sandbox_temp_dir), the one temporary place a sandboxed
// program may write.
std::vector<std::string> with_private_tmpdir(const std::optional<std::vector<std::string>>& environment);

// Whether any process of group `pgid` is still running (zombies do not count:
// once killed they only wait for their parent, often init, to reap them).
bool process_group_alive(pid_t pgid);

// The processes of group `pgid` that still run (zombies left out).
std::vector<pid_t> live_group_members(pid_t pgid);

}  // namespace cairn::tools
