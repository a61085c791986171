// A policy made ready for one program: every path resolved, every string
// and the seccomp program built in the parent, so that the child between
// fork and exec only makes system calls (a child forked from a threaded
// process may not allocate).
#pragma once

#include <filesystem>
#include <string>

#include "cairn/tools/sandbox.hpp"
#include "child_failure.hpp"
#include "landlock.hpp"
#include "namespaces.hpp"
#include "seccomp_filter.hpp"

namespace cairn::sandbox {

struct PreparedSandbox {
  SandboxPolicy policy;
  MountPlan mounts;
  LandlockPlan landlock;
  const SeccompProgram* seccomp = nullptr;
};

// Empty `error` and a plan; or what this machine lacks for the policy. The
// workspace is the program's working directory (resolved: a symlink to it
// grants the directory it points to, never the link's own place).
struct [[nodiscard]] Preparation {
  PreparedSandbox sandbox;
  std::string error;
};
Preparation prepare_sandbox(const SandboxPolicy& policy, const std::filesystem::path& workspace);

// The TCP ports close_port_to_sandbox named, sorted (sandbox.cpp).
std::vector<std::uint16_t> closed_ports();

// In the child: namespaces and mounts, Landlock, seccomp, in that order
// (each step needs what the next forbids). Async-signal-safe.
ChildFailure enter_sandbox(const PreparedSandbox& sandbox) noexcept;

// What a failure in the child means, with the path it concerned.
std::string describe_failure(const PreparedSandbox& sandbox, const ChildFailure& failure);

}  // namespace cairn::sandbox
