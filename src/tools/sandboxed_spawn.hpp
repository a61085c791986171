// Starts a program under a sandbox: fork, the sandbox entered in the child
// (sandbox/prepared_sandbox.hpp), then exec. posix_spawn cannot: it runs
// nothing of ours between its fork and exec, and its vfork-like child shares
// our memory, which a new user namespace refuses. The child does what
// posix_spawn's attributes did for the unsandboxed path (own process group,
// empty signal mask, default dispositions, stdin from /dev/null, the output
// pipes, the death link's fd, the working directory) with system calls only.
#pragma once

#include <sys/types.h>

#include <string>

#include "sandbox/prepared_sandbox.hpp"

namespace cairn::tools {

struct ChildFiles {
  int in = -1;       // becomes fd 0; -1: /dev/null
  int out = -1;      // becomes fd 1
  int err = -1;      // becomes fd 2
  int watcher = -1;  // becomes fd kWatcherFd
  const char* cwd = nullptr;  // null: ours
};

struct [[nodiscard]] SandboxedSpawn {
  pid_t pid = -1;
  std::string error;  // what failed before the program ran, sandbox or exec
};

// Returns once the child has exec'd or failed: a failure before exec is
// reported here (over a close-on-exec pipe), and the child reaped.
SandboxedSpawn spawn_sandboxed(const sandbox::PreparedSandbox& sandbox, const ChildFiles& files, const char* program,
                               char* const argv[], char* const envp[]);

}  // namespace cairn::tools
