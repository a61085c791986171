#include "chosen_tools.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "cairn/tools/coding_tools.hpp"

namespace cairn::agent {

std::vector<std::string> agent_tool_names() {
  auto names = coding_tool_names();
  names.push_back("task");
  return names;
}

std::string joined(const std::vector<std::string>& words, std::string_view separator) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : std::string(separator)) + word;
  return text;
}

Result<std::vector<std::string>> chosen_tools(const AgentOptions& options) {
  const auto known = agent_tool_names();
  if (options.no_tools) {
    if (options.tools) return fail(Errc::invalid_argument, "--tools and --no-tools exclude each other");
    return std::vector<std::string>{};
  }
  if (!options.tools) return known;
  std::vector<std::string> chosen;
  std::string_view list = *options.tools;
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string name(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name.empty()) continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return fail(Errc::invalid_argument,
                  fmt::format("unknown tool '{}' in --tools (known: {})", name, joined(known, ", ")));
    }
    if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
  }
  return chosen;
}

}  // namespace cairn::agent
