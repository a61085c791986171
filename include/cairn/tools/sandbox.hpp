// The sandbox every process a tool starts runs in (DESIGN.md, "Sandbox"):
// what a policy allows, and whether this machine can enforce it.
//
// A policy is enforced by the kernel, in the child between fork and exec,
// and inherited by everything the program starts: a private user and mount
// namespace hides the deny list (empty read-only mounts over it) and keeps
// .git/hooks and .cairn/ of the workspace read-only; Landlock allows reads
// everywhere and writes only to the writable roots; seccomp refuses sockets
// other than AF_UNIX (unless the network is allowed) and the system calls
// that would undo the rest (ptrace, new namespaces, mount, keyctl, bpf,
// loading kernel modules, io_uring). A policy this machine cannot enforce is
// refused with what is missing; nothing ever runs unconfined in its place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/log/record.hpp"

namespace cairn {

struct SandboxPolicy {
  SandboxMode mode = SandboxMode::off;
  bool network = false;  // sockets other than AF_UNIX
  // Writable besides the workspace (the program's working directory, under
  // workspace_write) and the private temporary directory.
  std::vector<std::filesystem::path> writable_roots;
  // Hidden: each existing directory appears empty, each file empty, and
  // neither can be written. Paths that do not exist are skipped.
  std::vector<std::filesystem::path> deny;
  // Relative to the workspace: kept read-only inside it, where they exist.
  std::vector<std::filesystem::path> read_only_in_workspace = {".git/hooks", ".cairn"};

  bool enabled() const { return mode != SandboxMode::off; }
  SandboxRecord record() const {
    return SandboxRecord{.mode = mode, .network = network, .network_granted = {}, .extra = {}};
  }
};

// The CLI's and settings.json's spelling: "read-only", "workspace-write", "off".
std::string_view sandbox_mode_name(SandboxMode mode);
std::optional<SandboxMode> parse_sandbox_mode_name(std::string_view text);
// "workspace-write, network off": how a tool result and a prompt name it.
std::string describe_sandbox(const SandboxRecord& policy);

// The paths a policy hides by default: ~/.ssh, ~/.gnupg, ~/.aws, and the
// like, under `home` (empty: $HOME).
std::vector<std::filesystem::path> default_sandbox_deny(std::filesystem::path home = {});

// Empty when this machine can enforce a policy of `mode` (its Landlock ABI,
// seccomp and unprivileged user namespaces, tried once in a child process
// and remembered); else what is missing, and that `--sandbox off` chooses
// no sandbox. Always empty for off.
std::string sandbox_unavailable(SandboxMode mode);

// Keeps TCP `port` (on any address) out of reach of every sandbox prepared
// from now on whose network is allowed: cairn serve names the port it
// listens on, so that a command given the network cannot reach cairn's own
// API. Needs Landlock ABI 4; a policy with the network on is refused where
// the kernel has less (a policy with it off refuses all TCP anyway).
void close_port_to_sandbox(std::uint16_t port);

// The Landlock ABI version the kernel speaks; 0 when it has none.
int landlock_abi_version();

// The directory the sandbox's programs may write as their TMPDIR: private to
// this process (mode 0700, made on first use, removed at exit).
const std::filesystem::path& sandbox_temp_dir();

}  // namespace cairn
