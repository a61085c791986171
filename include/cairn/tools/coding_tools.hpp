// The coding agent's built-in tools (pi's coding agent is the reference for
// their behaviour and parameter names): read, bash, edit, write, grep, find,
// ls. Every tool reports a failure as an error result naming the path or
// argument, and caps what it returns (2000 lines or 50 KB, with a note saying
// how to get the rest) so one call cannot flood the model's context.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cairn/harness/tool.hpp"

namespace cairn {

struct CodingToolsOptions {
  std::filesystem::path cwd;        // relative paths resolve against it; bash runs in it
  std::filesystem::path spill_dir;  // where bash spills full output of long commands (created on demand)
};

// read, bash, edit, write, grep, find, ls — in that order.
std::vector<Tool> make_coding_tools(const CodingToolsOptions& options);

// The names make_coding_tools gives, same order.
std::vector<std::string> coding_tool_names();

}  // namespace cairn
