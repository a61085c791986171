#include "directories.hpp"

#include <cstdlib>

namespace cairn::agent {
namespace {

// An unset and an empty variable both mean the default.
std::optional<std::string> variable(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

}  // namespace

std::optional<std::filesystem::path> global_config_dir() {
  if (auto xdg = variable("XDG_CONFIG_HOME")) return std::filesystem::path(*xdg) / "cairn";
  if (auto home = variable("HOME")) return std::filesystem::path(*home) / ".config" / "cairn";
  return std::nullopt;
}

std::filesystem::path cache_dir() {
  if (auto xdg = variable("XDG_CACHE_HOME")) return std::filesystem::path(*xdg) / "cairn";
  if (auto home = variable("HOME")) return std::filesystem::path(*home) / ".cache" / "cairn";
  return std::filesystem::temp_directory_path() / "cairn";
}

std::filesystem::path spill_dir_for(const std::string& session_id) {
  std::filesystem::path base;
  if (auto xdg = variable("XDG_CACHE_HOME")) {
    base = *xdg;
  } else if (auto home = variable("HOME")) {
    base = std::filesystem::path(*home) / ".cache";
  } else if (auto data = variable("XDG_DATA_HOME")) {
    base = *data;
  } else {
    base = std::filesystem::temp_directory_path();
  }
  return base / "cairn" / "spill" / session_id;
}

}  // namespace cairn::agent
