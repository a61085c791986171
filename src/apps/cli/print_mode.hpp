// Print mode: `cairn -p PROMPT` runs one prompt to its end without a UI.
#pragma once

#include <optional>
#include <string>

#include "agent_setup.hpp"

namespace cairn::cli {

// Runs `prompt` (nullopt: read it from standard input) on the session and
// ref the options choose. Exit status: 0 the run completed; 1 it failed or
// was aborted (SIGINT / SIGTERM abort it durably); 2 usage, including a
// suspended operation on the ref that must be resumed or aborted first.
int run_print_mode(const AgentCommandOptions& options, std::optional<std::string> prompt, bool json);

}  // namespace cairn::cli
