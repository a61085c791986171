#include "sandbox_settings.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "cairn/tools/sandbox.hpp"

namespace cairn::agent {

namespace {

Error bad_sandbox_setting(const std::filesystem::path& file, std::string_view what) {
  return Error(Errc::invalid_config, fmt::format("{}: sandbox{}", file.string(), what));
}

std::string expand_home(const std::string& path) {
  if (!path.starts_with("~/")) return path;
  const char* home = std::getenv("HOME");
  return home && *home ? (std::filesystem::path(home) / path.substr(2)).string() : path;
}

}  // namespace

Result<SandboxSettings> read_sandbox_settings(const std::filesystem::path& file) {
  SandboxSettings settings;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return settings;
  std::ifstream in(file);
  if (!in) return std::unexpected(Error(Errc::invalid_config, fmt::format("{}: cannot be read", file.string())));
  std::stringstream text;
  text << in.rdbuf();
  const Json json = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return std::unexpected(Error(Errc::invalid_config, fmt::format("{}: not a JSON object", file.string())));
  }
  const auto sandbox = json.find("sandbox");
  if (sandbox == json.end()) return settings;
  const auto mode_of = [&](const Json& value) -> Result<SandboxMode> {
    const auto mode = value.is_string() ? parse_sandbox_mode_name(value.get<std::string>()) : std::nullopt;
    if (!mode) return std::unexpected(bad_sandbox_setting(file, ": expected read-only, workspace-write or off"));
    return *mode;
  };
  if (sandbox->is_string()) {
    auto mode = mode_of(*sandbox);
    if (!mode) return std::unexpected(mode.error());
    settings.mode = *mode;
    return settings;
  }
  if (!sandbox->is_object()) return std::unexpected(bad_sandbox_setting(file, ": expected a mode or an object"));
  for (const auto& [key, value] : sandbox->items()) {
    if (key == "mode") {
      auto mode = mode_of(value);
      if (!mode) return std::unexpected(mode.error());
      settings.mode = *mode;
    } else if (key == "network") {
      if (!value.is_boolean()) return std::unexpected(bad_sandbox_setting(file, ".network: expected true or false"));
      settings.network = value.get<bool>();
    } else if (key == "hide") {
      if (!value.is_array()) return std::unexpected(bad_sandbox_setting(file, ".hide: expected an array of paths"));
      for (const auto& path : value) {
        if (!path.is_string()) return std::unexpected(bad_sandbox_setting(file, ".hide: expected an array of paths"));
        settings.hide.push_back(expand_home(path.get<std::string>()));
      }
    } else {
      return std::unexpected(bad_sandbox_setting(file, fmt::format(".{}: unknown (mode, network and hide are)", key)));
    }
  }
  return settings;
}

}  // namespace cairn::agent
