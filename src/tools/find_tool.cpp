// find: files by glob with ripgrep (respects .gitignore). Replay safe.
#include <system_error>

#include <fmt/format.h>

#include "ripgrep.hpp"
#include "tool_call_processes.hpp"
#include "tool_environment.hpp"
#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

namespace {
constexpr std::int64_t kDefaultFindLimit = 1000;
}

Tool make_find_tool(const CodingToolsOptions& options) {
  Tool tool;
  tool.name = "find";
  tool.description = fmt::format(
      "Find files by glob pattern, e.g. '*.ts' (any depth), 'src/**/*.spec.ts' or '**/CMakeLists.txt'. Returns "
      "file paths relative to the searched directory, sorted. Respects .gitignore; hidden files are included, .git "
      "is not; directories are not listed (use ls). Output is cut at {} results (change with limit) or {}.",
      kDefaultFindLimit, format_size(kMaxBytes));
  tool.parameters = {
      {"type", "object"},
      {"properties",
       {{"pattern", {{"type", "string"}, {"description", "Glob pattern to match files, e.g. '*.ts', '**/*.json', 'src/**/*.spec.ts'"}}},
        {"path", {{"type", "string"}, {"description", "Directory to search in (default: current directory)"}}},
        {"limit", {{"type", "number"}, {"description", "Maximum number of results (default: 1000)"}}}}},
      {"required", {"pattern"}}};
  tool.replay = Replay::safe;
  tool.settle = settle_call_processes(options.report);
  tool.execute = [cwd = options.cwd, policy = options.environment](const Json& args, const ToolContext& context) -> ToolResult {
    const auto pattern = string_arg(args, "pattern");
    if (!pattern || pattern->empty()) return error_result("find: the pattern argument is required");
    const std::string shown = string_arg(args, "path").value_or(".");
    const std::int64_t limit = integer_arg(args, "limit").value_or(kDefaultFindLimit);
    if (limit < 1) return error_result("find: limit must be at least 1");
    const fs::path dir = resolve_path(cwd, shown.empty() ? "." : shown);
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
    auto environment = tool_environment(policy, tool_call_marker(context.run_id, context.tool_call_id));
    const RipgrepRun run = run_ripgrep({"--files", "--sort=path", "--glob=" + *pattern, "--", "."}, dir,
                                       std::move(environment), context.cancel, on_line);
    if (!run.error.empty()) {
      if (run.error == "aborted") return error_result("find: aborted");
      return error_result(fmt::format("find {} in {}: {}", *pattern, shown, run.error));
    }
    if (found == 0) return ToolResult::text(fmt::format("No files found matching pattern {}", *pattern));
    if (!out.empty()) out.pop_back();
    if (more) out += fmt::format("\n\n[{} results limit reached. Use limit={} for more, or refine pattern]", limit, limit * 2);
    if (cut_by_bytes) out += fmt::format("\n\n[{} limit reached]", format_size(kMaxBytes));
    if (!run.warning.empty()) out += "\n\n[rg: " + run.warning + "]";
    ToolResult result = ToolResult::text(std::move(out));
    result.details = Json{{"path", dir.string()}, {"limitReached", more}, {"truncated", cut_by_bytes}};
    return result;
  };
  return tool;
}

}  // namespace cairn::tools
