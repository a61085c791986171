// ripgrep for grep and find: it respects .gitignore, skips binary files and
// is fast on large trees. Both tools include hidden files and skip .git.
#pragma once

#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "process.hpp"

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

}  // namespace cairn::tools
