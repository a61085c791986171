#include "cairn/tools/coding_tools.hpp"

#include <memory>
#include <utility>

#include "tools.hpp"

namespace cairn {

namespace {

void redact_result(const Secrets& secrets, ToolResult& result) {
  for (UserBlock& block : result.content) {
    if (auto* text = std::get_if<TextContent>(&block)) secrets.redact_in_place(text->text);
  }
  if (result.details) secrets.redact_in_place(*result.details);
}

// Whatever a tool returns or streams passes through here: a file the model
// reads (read, grep, an edit's diff) may hold a key as much as a command's
// output. bash redacts its stream itself, so that its spill file is clean too.
void redact_everything(std::shared_ptr<const Secrets> secrets, Tool& tool) {
  tool.execute = [secrets, execute = std::move(tool.execute)](const Json& args, const ToolContext& context) {
    ToolContext redacting = context;
    if (context.update) {
      redacting.update = [secrets, update = context.update](const ToolResult& partial) {
        ToolResult copy = partial;
        redact_result(*secrets, copy);
        update(copy);
      };
    }
    ToolResult result = execute(args, redacting);
    redact_result(*secrets, result);
    return result;
  };
}

}  // namespace

std::vector<Tool> make_coding_tools(const CodingToolsOptions& options) {
  std::vector<Tool> tools;
  tools.push_back(tools::make_read_tool(options));
  tools.push_back(tools::make_bash_tool(options));
  tools.push_back(tools::make_edit_tool(options));
  tools.push_back(tools::make_write_tool(options));
  tools.push_back(tools::make_grep_tool(options));
  tools.push_back(tools::make_find_tool(options));
  tools.push_back(tools::make_ls_tool(options));
  if (!options.secrets.empty()) {
    const auto secrets = std::make_shared<const Secrets>(options.secrets);
    for (Tool& tool : tools) redact_everything(secrets, tool);
  }
  tools.push_back(make_ask_user_tool());  // never executed: the harness asks
  return tools;
}

Tool make_ask_user_tool() {
  const Json string = {{"type", "string"}};
  return Tool{.name = "ask_user",
              .description = "Ask the user a question and wait for the answer. Use it when you need a decision or "
                             "information only the user has; offer choices when there are a few clear options. The "
                             "run pauses (durably, across restarts) until the user answers.",
              .parameters = {{"type", "object"},
                             {"properties",
                              {{"question", {{"type", "string"}, {"description", "The question, in one or two sentences"}}},
                               {"choices", {{"type", "array"}, {"items", string}, {"description", "Answers to offer (optional)"}}}}},
                             {"required", {"question"}}},
              .replay = Replay::safe,
              .asks_user = true};
}

std::vector<std::string> coding_tool_names() {
  return {"read", "bash", "edit", "write", "grep", "find", "ls", "ask_user"};
}

}  // namespace cairn
