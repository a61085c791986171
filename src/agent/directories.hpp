// Where the coding agent finds its configuration and keeps what it caches,
// the XDG base directories with their usual defaults.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace cairn::agent {

// $XDG_CONFIG_HOME/cairn (default ~/.config/cairn); nullopt without HOME.
std::optional<std::filesystem::path> global_config_dir();

// $XDG_CACHE_HOME/cairn (default ~/.cache/cairn; else under the temp dir).
std::filesystem::path cache_dir();

// Where bash spills long outputs of `session_id`:
// $XDG_CACHE_HOME/cairn/spill/<id> (default ~/.cache), else under the data dir.
std::filesystem::path spill_dir_for(const std::string& session_id);

}  // namespace cairn::agent
