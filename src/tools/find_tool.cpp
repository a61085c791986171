// find: files by glob with ripgrep (respects .gitignore). Replay safe.
#include <system_error>

#include <fmt/format.h>

#include "ripgrep.hpp"
#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

namespace {
constexpr std::int64_t kDefaultFindLimit = 1000;
}

Tool make_find_tool(const CodingToolsOptions& options) {
  const std::string description = fmt::format(
      "Find files by glob pattern, e.g. '*.ts' (any depth), 'src/**/*.spec.ts' or '**/CMakeLists.txt'. Returns "
      "file paths relative to the searched directory, sorted. Respects .gitignore; hidden files are included, .git "
      "is not; directories are not listed (use ls). Output is cut at {} results (change with limit) or {}.",
      kDefaultFindLimit, format_size(kMaxBytes));
  Json parameters = object_schema(
      {{"pattern", parameter("string", "Glob pattern to match files, e.g. '*.ts', '**/*.json', 'src/**/*.spec.ts'")},
       {"path", parameter("string", "Directory to search in (default: current directory)")},
       {"limit", parameter("number", "Maximum number of results (default: 1000)")}},
      {"pattern"});
  return ripgrep_tool("find", description, std::move(parameters), kDefaultFindLimit, options, [](const Search& search) {
    const auto& [pattern, shown, dir, limit] = search.asked;
    if (auto error = not_a_directory(dir, shown)) return std::move(*error);

    std::string out;
    std::int64_t found = 0;
    bool more = false, cut_by_bytes = false;
    const auto on_line = [&](std::string_view line) {
      if (line.empty()) return true;
      if (++found > limit) {
        more = true;
        return false;
      }
      const std::string entry = to_valid_utf8(strip_dot_slash(line)) + "\n";
      if (out.size() + entry.size() > kMaxBytes) {
        cut_by_bytes = true;
        return false;
      }
      out += entry;
      return true;
    };
    const RipgrepRun run = search.run({"--files", "--sort=path", "--glob=" + pattern, "--", "."}, dir, on_line);
    if (auto failed = search.failed("find", run)) return std::move(*failed);
    if (found == 0) return ToolResult::text(fmt::format("No files found matching pattern {}", pattern));
    if (!out.empty()) out.pop_back();
    if (more) out += fmt::format("\n\n[{} results limit reached. Use limit={} for more, or refine pattern]", limit, limit * 2);
    if (cut_by_bytes) out += fmt::format("\n\n[{} limit reached]", format_size(kMaxBytes));
    if (!run.warning.empty()) out += "\n\n[rg: " + run.warning + "]";
    ToolResult result = ToolResult::text(std::move(out));
    result.details = Json{{"path", dir.string()}, {"limitReached", more}, {"truncated", cut_by_bytes}};
    return result;
  });
}

}  // namespace cairn::tools
