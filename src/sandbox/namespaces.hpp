// The sandbox's private user and mount namespace: what Landlock cannot say.
// Landlock only ever allows, and its rules on a directory cover everything
// below it, so a denied path inside a readable tree (~/.ssh under /) is
// hidden by an empty read-only mount over it, and a read-only path inside
// the writable workspace (.git/hooks) by a read-only bind of itself. The
// namespace's mounts are private: nothing of them reaches the host, and they
// end with the last process inside.
#pragma once

#include <string>
#include <vector>

#include "child_failure.hpp"

namespace cairn::sandbox {

struct MountPlan {
  std::string uid_map;  // "UID UID 1\n": the same ids inside as outside
  std::string gid_map;
  std::vector<std::string> hide_dirs;
  std::vector<std::string> hide_files;
  std::vector<std::string> read_only;
};

// Resolves the paths (no symlink is followed inside the child) and keeps
// those that exist; the ids are this process's.
MountPlan plan_mounts(const std::vector<std::string>& deny, const std::vector<std::string>& read_only);

// In the child, after fork: enters the namespaces and makes the mounts.
// Async-signal-safe.
ChildFailure enter_namespaces(const MountPlan& plan) noexcept;

}  // namespace cairn::sandbox
