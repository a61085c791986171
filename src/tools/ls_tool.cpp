// ls: one directory's entries, sorted, directories marked with '/', dotfiles
// included. Replay safe.
#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kDefaultLsLimit = 500;

std::string lowercased(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Tool make_ls_tool(const CodingToolsOptions& options) {
  Tool tool = coding_tool(
      "ls",
      fmt::format("List a directory's contents, sorted alphabetically, with '/' after directory names; dotfiles are "
                  "included. Output is cut at {} entries (change with limit) or {}.",
                  kDefaultLsLimit, format_size(kMaxBytes)),
      object_schema({{"path", parameter("string", "Directory to list (default: current directory)")},
                     {"limit", parameter("number", "Maximum number of entries to return (default: 500)")}}),
      "path");
  tool.replay = Replay::safe;
  tool.execute = [cwd = options.cwd](const Json& args, const ToolContext&) -> ToolResult {
    const std::string shown = string_arg(args, "path").value_or(".");
    const std::int64_t limit = integer_arg(args, "limit").value_or(kDefaultLsLimit);
    if (limit < 1) return error_result(fmt::format("ls {}: limit must be at least 1", shown));
    const fs::path dir = resolve_path(cwd, shown.empty() ? "." : shown);
    if (auto error = not_a_directory(dir, shown)) return std::move(*error);
    std::error_code ec;

    std::vector<std::pair<std::string, std::string>> entries;  // (sort key, shown name)
    fs::directory_iterator it(dir, ec);
    if (ec) return error_result(fmt::format("Cannot list {}: {}", shown, ec.message()));
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) return error_result(fmt::format("Cannot list {}: {}", shown, ec.message()));
      std::string name = to_valid_utf8(it->path().filename().string());
      std::error_code type_ec;
      if (it->is_directory(type_ec)) name += '/';  // a symlink to a directory counts as one
      entries.emplace_back(lowercased(name), std::move(name));
    }
    std::sort(entries.begin(), entries.end());
    if (entries.empty()) return ToolResult::text("(empty directory)");

    std::string out;
    std::size_t shown_count = 0;
    bool cut_by_bytes = false;
    for (const auto& [key, name] : entries) {
      if (shown_count >= static_cast<std::size_t>(limit)) break;
      if (out.size() + name.size() + 1 > kMaxBytes) {
        cut_by_bytes = true;
        break;
      }
      out += name;
      out += '\n';
      ++shown_count;
    }
    if (!out.empty()) out.pop_back();
    if (shown_count < entries.size()) {
      if (cut_by_bytes) {
        out += fmt::format("\n\n[{} limit reached: showing {} of {} entries]", format_size(kMaxBytes), shown_count, entries.size());
      } else {
        out += fmt::format("\n\n[{} entries limit reached: showing {} of {}. Use limit={} for more]", limit, shown_count,
                           entries.size(), limit * 2);
      }
    }
    ToolResult result = ToolResult::text(std::move(out));
    result.details = Json{{"path", dir.string()}, {"entries", entries.size()}, {"shown", shown_count}};
    return result;
  };
  return tool;
}

}  // namespace cairn::tools
