// One factory per coding tool; make_coding_tools puts them in order.
#pragma once

#include "cairn/tools/coding_tools.hpp"

namespace cairn::tools {

Tool make_read_tool(const CodingToolsOptions& options);
Tool make_bash_tool(const CodingToolsOptions& options);
Tool make_edit_tool(const CodingToolsOptions& options);
Tool make_write_tool(const CodingToolsOptions& options);
Tool make_grep_tool(const CodingToolsOptions& options);
Tool make_find_tool(const CodingToolsOptions& options);
Tool make_ls_tool(const CodingToolsOptions& options);

}  // namespace cairn::tools
