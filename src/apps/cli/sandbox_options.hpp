// The sandbox of the cairn command's tools: --sandbox and --sandbox-network,
// else the user's settings.json, else workspace-write with the network off;
// the store's own files hidden besides the default deny list; and the check,
// before anything starts, that this machine can enforce it.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cairn/agent/options.hpp"
#include "cli.hpp"

namespace cairn::cli {

struct SandboxFlags {
  std::optional<SandboxMode> mode;  // --sandbox MODE
  bool network = false;             // --sandbox-network
};

// Registers --sandbox and --sandbox-network on `app`.
void add_sandbox_options(CLI::App* app, SandboxFlags& flags);

// Sets `shape`'s sandbox from the flags, the settings and the store URI;
// reports (one line) and returns the exit status when the settings are
// malformed, or when `tools_run` and the machine cannot enforce the chosen
// policy (abort, which runs nothing, works anywhere).
Outcome<void> resolve_sandbox(agent::AgentOptions& shape, const SandboxFlags& flags, const std::string& store,
                              bool tools_run);

}  // namespace cairn::cli
