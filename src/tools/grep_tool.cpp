// grep: searches file contents with ripgrep (respects .gitignore). Replay safe.
#include <algorithm>
#include <system_error>

#include <fmt/format.h>

#include "ripgrep.hpp"
#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kDefaultGrepLimit = 100;
constexpr std::int64_t kMaxContext = 50;

// rg --json carries text as {"text": ...}, or {"bytes": base64} when it is not UTF-8.
std::string json_text(const Json& field) {
  if (field.is_object() && field.contains("text") && field["text"].is_string()) return field["text"].get<std::string>();
  return "<non-UTF-8 data>";
}

}  // namespace

Tool make_grep_tool(const CodingToolsOptions& options) {
  const std::string description = fmt::format(
      "Search file contents for a pattern (a regular expression, or a literal string with literal=true) with "
      "ripgrep. Respects .gitignore; hidden files are searched, .git is not. Matches come back as path:line: text "
      "(context lines as path-line- text), paths relative to the searched directory. Output is cut at {} matches "
      "(change with limit) or {}; match lines longer than {} characters are cut.",
      kDefaultGrepLimit, format_size(kMaxBytes), kMaxGrepLineChars);
  Json parameters = object_schema(
      {{"pattern", parameter("string", "Search pattern (regex or literal string)")},
       {"path", parameter("string", "Directory or file to search (default: current directory)")},
       {"glob", parameter("string", "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'")},
       {"ignoreCase", parameter("boolean", "Case-insensitive search (default: false)")},
       {"literal", parameter("boolean", "Treat pattern as a literal string instead of a regex (default: false)")},
       {"context", parameter("number", "Number of lines to show before and after each match (default: 0)")},
       {"limit", parameter("number", "Maximum number of matches to return (default: 100)")}},
      {"pattern"});
  return ripgrep_tool("grep", description, std::move(parameters), kDefaultGrepLimit, options, [](const Search& search) {
    const Json& args = search.args;
    const auto& [pattern, shown, target, limit] = search.asked;
    const std::int64_t context_lines = std::clamp<std::int64_t>(integer_arg(args, "context").value_or(0), 0, kMaxContext);
    std::error_code ec;
    const auto status = fs::status(target, ec);
    if (!fs::exists(status)) return error_result(fmt::format("Path not found: {}", shown));
    const bool is_dir = fs::is_directory(status);

    std::vector<std::string> rg_args = {"--json"};
    if (bool_arg(args, "ignoreCase").value_or(false)) rg_args.push_back("--ignore-case");
    if (bool_arg(args, "literal").value_or(false)) rg_args.push_back("--fixed-strings");
    if (context_lines > 0) rg_args.push_back(fmt::format("--context={}", context_lines));
    if (auto glob = string_arg(args, "glob"); glob && !glob->empty()) rg_args.push_back("--glob=" + *glob);
    rg_args.push_back("--regexp=" + pattern);
    rg_args.push_back("--");
    // A directory is searched from inside, so paths come out relative to it.
    rg_args.push_back(is_dir ? "." : target.filename().string());
    const fs::path run_dir = is_dir ? target : target.parent_path();

    std::string out;
    std::int64_t matches = 0;
    bool more_matches = false, cut_by_bytes = false, lines_cut = false;
    const auto on_line = [&](std::string_view line) {
      Json message;
      try {
        message = Json::parse(line);
      } catch (const Json::exception&) {
        return true;
      }
      const std::string type = message.value("type", "");
      if (type != "match" && type != "context") return true;
      if (type == "match" && ++matches > limit) {
        more_matches = true;
        return false;
      }
      const Json& data = message["data"];
      std::string text = json_text(data["lines"]);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      if (utf8_length(text) > kMaxGrepLineChars) {
        text = std::string(utf8_prefix(text, kMaxGrepLineChars)) + "... [truncated]";
        lines_cut = true;
      }
      const std::string path(strip_dot_slash(json_text(data["path"])));
      const auto number = data.value("line_number", Json()).is_number() ? data["line_number"].get<std::int64_t>() : 0;
      const char sep = type == "match" ? ':' : '-';
      std::string entry = fmt::format("{}{}{}{} {}\n", path, sep, number, sep, text);
      if (out.size() + entry.size() > kMaxBytes) {
        cut_by_bytes = true;
        return false;
      }
      out += entry;
      return true;
    };
    const RipgrepRun run = search.run(rg_args, run_dir, on_line);
    if (auto failed = search.failed("grep", run)) return std::move(*failed);
    if (matches == 0) return ToolResult::text("No matches found");
    if (!out.empty()) out.pop_back();
    const std::int64_t shown_matches = std::min(matches, limit);
    std::vector<std::string> notes;
    if (more_matches) {
      notes.push_back(fmt::format("{} matches limit reached. Use limit={} for more, or refine pattern", limit, limit * 2));
    }
    if (cut_by_bytes) notes.push_back(fmt::format("{} limit reached", format_size(kMaxBytes)));
    if (lines_cut) notes.push_back(fmt::format("Some lines truncated to {} chars. Use read to see full lines", kMaxGrepLineChars));
    if (!run.warning.empty()) notes.push_back("rg: " + run.warning);
    for (const auto& note : notes) out += "\n\n[" + note + "]";
    ToolResult result = ToolResult::text(std::move(out));
    result.details = Json{{"matches", shown_matches}, {"limitReached", more_matches}, {"truncated", cut_by_bytes}};
    return result;
  });
}

}  // namespace cairn::tools
