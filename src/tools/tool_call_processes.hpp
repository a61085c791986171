// The processes of one tool call, found again after the agent that started
// them died: every process a coding tool starts carries
// CAIRN_TOOL_CALL=<marker> in its environment, which its children inherit,
// the marker naming the run and the call. Tool::settle of bash, grep and find
// ends them through here before the harness records the call as interrupted.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/harness/tool.hpp"

namespace cairn::tools {

inline constexpr std::string_view kToolCallVariable = "CAIRN_TOOL_CALL";

// "<run id>:<tool call id>", each byte outside [A-Za-z0-9._-] written as %XX:
// a call id is the model's text, and an environment value holds no NUL.
std::string tool_call_marker(std::string_view run_id, std::string_view tool_call_id);

// The running processes, this one aside, whose environment holds
// CAIRN_TOOL_CALL=`marker` (as far as this user may read environments).
std::vector<pid_t> marked_processes(std::string_view marker);

// SIGKILLs every process carrying `marker`, and the process groups such
// processes lead (a member that dropped the variable goes with its group),
// until none runs or `limit` has passed. Returns what still runs then:
// empty when nothing of the call is left.
std::vector<pid_t> end_marked_processes(std::string_view marker, std::chrono::milliseconds limit);

// How long settle keeps killing before it gives up on what will not die.
inline constexpr std::chrono::milliseconds kSettleLimit{5000};

// Tool::settle for a tool whose calls start processes: ends the processes of
// the context's call. What survives kSettleLimit is told to `report` (when
// set) by pid; the call is then recorded as interrupted all the same, since
// nothing more can be done about it from here.
std::function<void(const ToolContext&)> settle_call_processes(std::function<void(const std::string&)> report);

}  // namespace cairn::tools
