// What the coding tools share: path resolution, the output limits and their
// notes, UTF-8 hygiene (a tool result is JSON, and JSON must be valid UTF-8),
// atomic file replacement, argument access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/tool.hpp"
#include "cairn/utf8.hpp"  // to_valid_utf8, for the text tools return

namespace cairn::tools {

// The limits every tool applies to what it returns (pi's defaults).
inline constexpr std::size_t kMaxLines = 2000;
inline constexpr std::size_t kMaxBytes = 50 * 1024;
// A longer line is cut with a marker by read; grep cuts at kMaxGrepLineChars.
inline constexpr std::size_t kMaxLineChars = 2000;
inline constexpr std::size_t kMaxGrepLineChars = 500;

// `path` as the model wrote it: absolute, relative to `cwd`, or starting
// with `~` (the user's $HOME).
std::filesystem::path resolve_path(const std::filesystem::path& cwd, const std::string& path);

// "512B", "50.0KB", "3.2MB".
std::string format_size(std::uintmax_t bytes);

// Number of code points (invalid bytes count one each).
std::size_t utf8_length(std::string_view text);
// The first `chars` code points of `text`.
std::string_view utf8_prefix(std::string_view text, std::size_t chars);

std::string base64_encode(std::string_view bytes);

Result<std::string> read_file(const std::filesystem::path& path);
// Replaces `path` with `content` through a temporary file in the same
// directory and a rename, so a reader (or a crash) sees the old file or the
// new one, never half of it. Keeps the mode of a file it replaces and writes
// through a symlink to its target.
Status write_file_atomically(const std::filesystem::path& path, std::string_view content);

// A tool's parameters as JSON Schema: an object with these properties, of
// which a call must give the `required` ones. A property is one `parameter`:
// {"type": type, "description": description}.
Json object_schema(Json properties, std::vector<std::string> required = {});
Json parameter(std::string_view type, std::string_view description);

ToolResult error_result(std::string message);
// The error a tool that searches or lists a directory answers when `dir`
// (the path argument `shown` names) is missing or not a directory; nullopt
// when it is one.
std::optional<ToolResult> not_a_directory(const std::filesystem::path& dir, std::string_view shown);

// Argument access: the harness validated the arguments against the schema,
// but a tool called directly (tests, applications) gets no such check.
std::optional<std::string> string_arg(const Json& args, const char* key);
// A count the model gave as a number (possibly 12.0), floored; `fallback`
// when absent or not a number.
std::optional<std::int64_t> integer_arg(const Json& args, const char* key);
std::optional<bool> bool_arg(const Json& args, const char* key);

// A coding tool as the model sees it, with the argument approval rules
// match: `bash(git status)` matches a bash call whose `command` is "git
// status", `edit(src/*)` an edit of a `path` under src.
Tool coding_tool(std::string name, std::string description, Json parameters, std::string approval_subject);

// What read, edit and write are alike: a tool on one file, named by its
// first parameter, `path` ("Path to the file to <verb> (relative or
// absolute)"), which a call must give and approval rules match
// (`edit(src/*)`). `parameters` are its others, `required` those of them a
// call must give too.
Tool file_tool(std::string name, std::string description, std::string_view verb, Json parameters,
               std::vector<std::string> required = {});
// A file tool's path argument as the model wrote it, or the tool's error
// result (naming `tool`) when it is missing or empty.
std::expected<std::string, ToolResult> path_argument(const Json& args, std::string_view tool);

// What grep and find are asked alike: a pattern (required), where to search
// (`shown` as the model named it, "." by default, `target` resolved against
// the working directory) and how many results at most (at least 1).
struct SearchArguments {
  std::string pattern;
  std::string shown;
  std::filesystem::path target;
  std::int64_t limit = 0;
};
// The tool's error result (naming `tool`) when an argument is missing or out of range.
std::expected<SearchArguments, ToolResult> search_arguments(const Json& args, std::string_view tool,
                                                           const std::filesystem::path& cwd, std::int64_t default_limit);

}  // namespace cairn::tools

namespace cairn::tools {

// Text that fits the limits, counted from the end (bash: the last lines
// matter) or from the start.
struct Truncation {
  std::string text;
  bool truncated = false;
  bool by_bytes = false;      // else by lines (when truncated)
  bool partial_line = false;  // the one line shown is itself cut (tail only)
  std::size_t total_lines = 0;
  std::size_t shown_lines = 0;
};
// One final newline does not start another line (and stays at the end).
Truncation truncate_tail(std::string_view text, std::size_t max_lines = kMaxLines, std::size_t max_bytes = kMaxBytes);

// Terminal output as text for the model: escape sequences (colours, cursor
// moves) and control characters other than tab and newline removed,
// carriage returns dropped, invalid UTF-8 replaced.
std::string clean_output(std::string_view bytes);

}  // namespace cairn::tools
