#include "prepared_sandbox.hpp"

#include <cstring>
#include <system_error>

#include <fmt/format.h>

namespace cairn::sandbox {

namespace fs = std::filesystem;

Preparation prepare_sandbox(const SandboxPolicy& policy, const fs::path& workspace) {
  Preparation out;
  out.sandbox.policy = policy;
  const int abi = landlock_abi();
  if (abi < 1) {
    out.error = "the kernel has no Landlock (it is older than 5.13, or Landlock is not in its lsm= list)";
    return out;
  }
  const SeccompProgram& seccomp = seccomp_program(policy.network);
  if (!seccomp.error.empty()) {
    out.error = seccomp.error;
    return out;
  }
  out.sandbox.seccomp = &seccomp;

  std::error_code ec;
  std::vector<std::string> writable;
  const fs::path& temp = sandbox_temp_dir();
  if (temp.empty()) {
    out.error = "the sandbox's private temporary directory could not be made";
    return out;
  }
  writable.push_back(temp.string());
  std::vector<std::string> read_only;
  if (policy.mode == SandboxMode::workspace_write && !workspace.empty()) {
    const fs::path real = fs::canonical(workspace, ec);
    if (ec) {
      out.error = fmt::format("the workspace {} cannot be resolved: {}", workspace.string(), ec.message());
      return out;
    }
    writable.push_back(real.string());
    for (const auto& inside : policy.read_only_in_workspace) {
      // One that does not exist yet is made, empty, so that it can be
      // mounted read-only: else the command could create it (.cairn/
      // settings.json with approval rules that would hold for the next
      // session). Only where its parent is a directory: a worktree's .git
      // is a file, and its hooks are elsewhere.
      const fs::path path = real / inside;
      if (!fs::exists(path, ec) && fs::is_directory(path.parent_path(), ec)) fs::create_directory(path, ec);
      read_only.push_back(path.string());
    }
  }
  for (const auto& root : policy.writable_roots) {
    const fs::path real = fs::canonical(root, ec);
    if (!ec) writable.push_back(real.string());
  }
  std::vector<std::string> deny;
  for (const auto& path : policy.deny) deny.push_back(path.string());
  out.sandbox.mounts = plan_mounts(deny, read_only);
  out.sandbox.landlock = plan_landlock(abi, writable, policy.network);
  // An allowed network still never reaches cairn's own listening ports.
  if (const auto closed = closed_ports(); policy.network && !closed.empty()) {
    if (abi < 4) {
      out.error = fmt::format("the kernel's Landlock (ABI {}) cannot keep an allowed network off cairn's own port {} "
                              "(ABI 4, Linux 6.7, can); without --sandbox-network the network is off altogether",
                              abi, closed.front());
      return out;
    }
    out.sandbox.landlock.ports_ruleset = closed_ports_ruleset(closed, out.error);
    if (out.sandbox.landlock.ports_ruleset < 0) return out;
  }
  return out;
}

ChildFailure enter_sandbox(const PreparedSandbox& sandbox) noexcept {
  if (ChildFailure failed = enter_namespaces(sandbox.mounts)) return failed;
  if (ChildFailure failed = enter_landlock(sandbox.landlock)) return failed;
  return enter_seccomp(*sandbox.seccomp);
}

namespace {

std::string_view step_name(ChildStep step) {
  switch (step) {
    case ChildStep::none: return "nothing";
    case ChildStep::setup_process: return "setting up the process (group, signals, files, working directory)";
    case ChildStep::user_namespace: return "creating a user and mount namespace (unshare)";
    case ChildStep::id_map: return "mapping the user and group ids into the namespace";
    case ChildStep::private_mounts: return "making the namespace's mounts private";
    case ChildStep::hide_path: return "hiding a denied path";
    case ChildStep::read_only_path: return "making a path of the workspace read-only";
    case ChildStep::landlock_ruleset: return "creating the Landlock ruleset";
    case ChildStep::landlock_rule: return "adding a Landlock rule";
    case ChildStep::no_new_privs: return "setting no_new_privs";
    case ChildStep::landlock_restrict: return "restricting the process with Landlock";
    case ChildStep::seccomp: return "installing the seccomp filter";
    case ChildStep::exec: return "starting the program";
  }
  return "an unknown step";
}

// The path a failure's index names, if it names one.
std::string failed_path(const PreparedSandbox& sandbox, const ChildFailure& failure) {
  if (failure.index < 0) return {};
  const auto index = static_cast<std::size_t>(failure.index);
  const auto& mounts = sandbox.mounts;
  switch (failure.step) {
    case ChildStep::hide_path:
      if (index < mounts.hide_dirs.size()) return mounts.hide_dirs[index];
      if (index - mounts.hide_dirs.size() < mounts.hide_files.size()) return mounts.hide_files[index - mounts.hide_dirs.size()];
      return {};
    case ChildStep::read_only_path: return index < mounts.read_only.size() ? mounts.read_only[index] : std::string();
    case ChildStep::landlock_rule:
      return index < sandbox.landlock.rules.size() ? sandbox.landlock.rules[index].path : std::string();
    default: return {};
  }
}

}  // namespace

std::string describe_failure(const PreparedSandbox& sandbox, const ChildFailure& failure) {
  const std::string path = failed_path(sandbox, failure);
  return fmt::format("{}{} failed: {}", step_name(failure.step), path.empty() ? "" : fmt::format(" ({})", path),
                     std::strerror(failure.error));
}

}  // namespace cairn::sandbox
