// Which tools the coding agent offers: the coding tools and task, or those
// of them the options name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cairn/agent/options.hpp"
#include "cairn/error.hpp"

namespace cairn::agent {

// Every tool name AgentOptions::tools takes: the coding tools and task.
std::vector<std::string> agent_tool_names();

// The tools --tools / --no-tools leave, in the order given, each once.
// Errors (invalid_argument): an unknown name, both options at once.
Result<std::vector<std::string>> chosen_tools(const AgentOptions& options);

// The words joined with `separator`: for messages that list names.
std::string joined(const std::vector<std::string>& words, std::string_view separator);

}  // namespace cairn::agent
