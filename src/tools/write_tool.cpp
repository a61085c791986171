// write: creates or replaces a whole file. Replay safe: writing the same
// content twice leaves the same file.
#include <system_error>

#include <fmt/format.h>

#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

Tool make_write_tool(const CodingToolsOptions& options) {
  Tool tool = file_tool(
      "write",
      "Write content to a file. Creates the file if it does not exist and overwrites it if it does; creates parent "
      "directories. The file is replaced atomically. Prefer edit for changing part of an existing file.",
      "write", {{"content", parameter("string", "Content to write to the file")}}, {"content"});
  tool.replay = Replay::safe;
  tool.parallel = false;  // two writes of one batch to the same file must not race
  tool.execute = [cwd = options.cwd](const Json& args, const ToolContext&) -> ToolResult {
    const auto path_arg = path_argument(args, "write");
    if (!path_arg) return path_arg.error();
    const auto content = string_arg(args, "content");
    if (!content) return error_result(fmt::format("write {}: the content argument is required", *path_arg));
    const fs::path path = resolve_path(cwd, *path_arg);
    std::error_code ec;
    if (fs::is_directory(path, ec)) return error_result(fmt::format("Cannot write {}: it is a directory", *path_arg));
    const bool existed = fs::exists(path, ec);
    if (path.has_parent_path()) {
      fs::create_directories(path.parent_path(), ec);
      if (ec) {
        return error_result(fmt::format("Cannot create the directory {} for {}: {}", path.parent_path().string(),
                                        *path_arg, ec.message()));
      }
    }
    if (auto written = write_file_atomically(path, *content); !written) {
      return error_result(fmt::format("Cannot write {}: {}", *path_arg, written.error().message));
    }
    ToolResult result = ToolResult::text(fmt::format("Wrote {} bytes to {}", content->size(), *path_arg));
    result.details = Json{{"path", path.string()}, {"bytes", content->size()}, {"created", !existed}};
    return result;
  };
  return tool;
}

}  // namespace cairn::tools
