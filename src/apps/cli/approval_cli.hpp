// What the command line says and does about input requests: the parked
// run's questions and the commands that answer them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cairn/harness/results.hpp"

namespace cairn::cli {

// Prints to stderr what the parked run waits for and the commands that
// answer and continue it; returns kAwaitingInput.
int report_awaiting_input(const std::string& session_id, const std::string& ref,
                          const std::vector<PendingInput>& pending);

// One line naming a pending input: the tool, its call id and what it would do.
std::string describe_input(const PendingInput& input);

// Who answers, as input_resolved records it: the login name ($USER), else "user".
std::string answered_by();

// What "always" remembers a rule for: the call's command or path argument.
std::optional<std::string> input_subject(const PendingInput& input);

}  // namespace cairn::cli
