// One factory per coding tool; make_coding_tools puts them in order. Each
// tool works inside CodingToolsOptions::cwd and says so in its description.
#pragma once

#include "cairn/tools/coding_tools.hpp"

namespace cairn::tools {

// Reads a text file (a window of lines) or an image.
Tool make_read_tool(const CodingToolsOptions& options);
// Runs a shell command in its own process group, output capped and kept whole on disk.
Tool make_bash_tool(const CodingToolsOptions& options);
// Replaces exact texts in one file: several edits, applied all or none.
Tool make_edit_tool(const CodingToolsOptions& options);
// Writes a whole file, creating its directories.
Tool make_write_tool(const CodingToolsOptions& options);
// Searches file contents (ripgrep).
Tool make_grep_tool(const CodingToolsOptions& options);
// Finds files by glob (ripgrep's file list).
Tool make_find_tool(const CodingToolsOptions& options);
// Lists a directory.
Tool make_ls_tool(const CodingToolsOptions& options);

}  // namespace cairn::tools
