// The environment of a process a coding tool starts: this process's, as the
// policy filters it, plus the call's marker (tool_call_processes.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cairn/tools/coding_tools.hpp"

namespace cairn::tools {

// Whether the policy keeps the variable `name` from the tools' processes.
bool withholds(const ToolEnvironmentPolicy& policy, std::string_view name);

// `environment` (NAME=VALUE entries, null-terminated like environ) as the
// policy passes it, with CAIRN_TOOL_CALL=`marker` in place of any it held.
std::vector<std::string> tool_environment(const ToolEnvironmentPolicy& policy, const char* const* environment,
                                          std::string_view marker);

// The same for this process's environment.
std::vector<std::string> tool_environment(const ToolEnvironmentPolicy& policy, std::string_view marker);

}  // namespace cairn::tools
