// The sandbox's part of the user's settings.json ($XDG_CONFIG_HOME/cairn):
//
//   "sandbox": "read-only" | "workspace-write" | "off"
//   "sandbox": {"mode": "workspace-write", "network": false, "hide": ["~/secrets"]}
//
// Read from the user's file only, never the project's .cairn/settings.json:
// a repository must not be able to turn the sandbox off for whoever opens it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/log/record.hpp"

namespace cairn::agent {

struct SandboxSettings {
  std::optional<SandboxMode> mode;
  std::optional<bool> network;
  std::vector<std::string> hide;  // "~/" expanded to $HOME
};

// Nothing set when the file or its "sandbox" is absent; invalid_config,
// naming the file and the key, when it is malformed.
Result<SandboxSettings> read_sandbox_settings(const std::filesystem::path& file);

}  // namespace cairn::agent
