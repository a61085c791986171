#include "tool_environment.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "tool_call_processes.hpp"

extern char** environ;

namespace cairn::tools {

namespace {

bool is_listed(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool looks_secret(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  constexpr std::array<std::string_view, 3> kWords = {"KEY", "SECRET", "TOKEN"};
  return std::any_of(kWords.begin(), kWords.end(), [&](std::string_view word) { return upper.find(word) != std::string::npos; });
}

}  // namespace

bool withholds(const ToolEnvironmentPolicy& policy, std::string_view name) {
  if (policy.inherit == ToolEnvironmentPolicy::Inherit::all || is_listed(policy.allow, name)) return false;
  return is_listed(policy.exclude, name) || looks_secret(name);
}

std::vector<std::string> tool_environment(const ToolEnvironmentPolicy& policy, const char* const* environment,
                                          std::string_view marker) {
  std::vector<std::string> out;
  for (const char* const* entry = environment; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    const std::string_view name = variable.substr(0, variable.find('='));
    // A cairn run from inside a tool: its own tools are its own calls.
    if (name == kToolCallVariable || withholds(policy, name)) continue;
    out.emplace_back(variable);
  }
  out.push_back(fmt::format("{}={}", kToolCallVariable, marker));
  return out;
}

std::vector<std::string> tool_environment(const ToolEnvironmentPolicy& policy, std::string_view marker) {
  return tool_environment(policy, environ, marker);
}

}  // namespace cairn::tools
