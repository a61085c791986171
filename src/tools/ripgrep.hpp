// ripgrep for grep and find: it respects .gitignore, skips binary files and
// is fast on large trees. Both tools include hidden files and skip .git.
#pragma once

#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/tools/coding_tools.hpp"
#include "process.hpp"
#include "tool_support.hpp"

namespace cairn::tools {

struct RipgrepRun {
  ProcessOutcome outcome;
  std::string error;  // set when rg could not run or failed without output
  std::string warning;  // the first line rg complained about while still producing output
};

// Runs `rg --no-config --hidden --no-require-git --glob=!.git <args>` in
// `cwd` with `environment` (tool_environment.hpp), handing each output line
// (without its newline) to `on_line`; returning false from it stops rg.
RipgrepRun run_ripgrep(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                       std::vector<std::string> environment, std::stop_token cancel,
                       const std::function<bool(std::string_view)>& on_line);

// rg's "./path" as "path".
std::string_view strip_dot_slash(std::string_view path);

// What a search tool's body gets: the arguments (the common ones read), and
// rg to run as this call (in its environment, with its marker and cancel).
struct Search {
  const Json& args;
  SearchArguments asked;
  std::function<RipgrepRun(const std::vector<std::string>& rg_args, const std::filesystem::path& cwd,
                           const std::function<bool(std::string_view)>& on_line)>
      run;
  // The result for a run of rg that failed (said as `tool` with the pattern
  // and path), nullopt when it did not.
  std::optional<ToolResult> failed(std::string_view tool, const RipgrepRun& run) const;
};

// A tool that searches with rg (grep, find): replay safe, whatever of a
// call still runs after a crash settled by its marker, its arguments read by
// search_arguments (`default_limit`) before `body` runs.
Tool ripgrep_tool(std::string name, std::string description, Json parameters, std::int64_t default_limit,
                  const CodingToolsOptions& options, std::function<ToolResult(const Search&)> body);

}  // namespace cairn::tools
