#include "cairn/tools/coding_tools.hpp"

#include "tools.hpp"

namespace cairn {

std::vector<Tool> make_coding_tools(const CodingToolsOptions& options) {
  std::vector<Tool> tools;
  tools.push_back(tools::make_read_tool(options));
  tools.push_back(tools::make_bash_tool(options));
  tools.push_back(tools::make_edit_tool(options));
  tools.push_back(tools::make_write_tool(options));
  tools.push_back(tools::make_grep_tool(options));
  tools.push_back(tools::make_find_tool(options));
  tools.push_back(tools::make_ls_tool(options));
  return tools;
}

std::vector<std::string> coding_tool_names() { return {"read", "bash", "edit", "write", "grep", "find", "ls"}; }

}  // namespace cairn
