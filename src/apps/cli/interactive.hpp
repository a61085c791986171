// Interactive mode: the coding agent's terminal UI, run by plain `cairn`
// (no subcommand, no -p) on a session and ref that setup_agent opened.
#pragma once

#include "agent_setup.hpp"

namespace cairn::cli {

// Runs the UI until the user leaves; returns the process's exit status.
int run_interactive(AgentSetup& setup);

}  // namespace cairn::cli
