// Runs a program in its own process group and collects its output, for the
// bash tool and the ripgrep-based tools. The whole group is the unit: on
// cancel, timeout or an early stop it is terminated (SIGTERM, then SIGKILL
// after a grace period), and when the program exits, whatever it left
// running in its group is terminated too, so no call leaves processes behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::tools {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::filesystem::path cwd;
  bool merge_stderr = true;  // stderr into the output; else kept apart (first 64 KB)
  std::optional<std::chrono::milliseconds> timeout;
  std::stop_token cancel;
  // Output bytes as they arrive (stdin is /dev/null). Returning false stops
  // the program: its group is terminated and the outcome says `stopped`.
  std::function<bool(std::string_view)> on_output;
  // Called about every 50 ms while the program runs (throttled updates).
  std::function<void()> on_tick;
  std::chrono::milliseconds kill_grace{500};
};

struct ProcessOutcome {
  enum class End { exited, signaled, timed_out, cancelled, stopped, spawn_failed };
  End end = End::spawn_failed;
  int exit_code = -1;  // End::exited
  int signal = 0;      // End::signaled
  pid_t pgid = 0;      // the group the program ran in (its pid)
  std::string error;   // End::spawn_failed
  std::string stderr_output;  // when not merged
};

ProcessOutcome run_process(const ProcessSpec& spec);

// Whether any process of group `pgid` is still running (zombies do not count:
// once killed they only wait for their parent, often init, to reap them).
bool process_group_alive(pid_t pgid);

}  // namespace cairn::tools
