// Choosing a session to resume: `cairn -r` without an id (before the
// interactive mode starts) and the mode's /resume share what a session is
// shown as.
#pragma once

#include <string>

#include "cairn/store/store.hpp"
#include "cli.hpp"

namespace cairn::cli {

// What a session is about, in one line: its name, else its first prompt.
std::string session_gist(Store& store, const std::string& id);

// Lists this directory's sessions, newest first, numbered, on stderr and
// reads the choice (a number or an id) from standard input. Reports its own
// errors; kUsage when nothing was chosen.
Outcome<std::string> pick_session(Store& store);

}  // namespace cairn::cli
