// Stands in for interactive mode until it is built (it replaces this file).
#include <fmt/format.h>

#include "interactive.hpp"

namespace cairn::cli {

int run_interactive(AgentSetup&) {
  fmt::print(stderr, "cairn: interactive mode is not built yet; use cairn -p PROMPT\n");
  return kUsage;
}

}  // namespace cairn::cli
