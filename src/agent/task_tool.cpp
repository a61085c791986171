// The coding agent's `task` tool: a subagent per call, in a child session
// (make_child_session_tool), shaped by an agent definition (subagents.hpp).
#include "task_tool.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cairn/tools/child_session.hpp"
#include "chosen_tools.hpp"
#include "directories.hpp"
#include "harness_options.hpp"
#include "subagents.hpp"
#include "system_prompt.hpp"

namespace cairn::agent {
namespace {

Json task_parameters(const AgentDefinitions& definitions) {
  Json properties = {
      {"prompt", {{"type", "string"}, {"description", "The task, with everything the subagent needs to know: it does not see this conversation"}}},
      {"description", {{"type", "string"}, {"description", "A short (3-5 word) description of the task"}}}};
  if (!definitions.agents.empty()) {
    Json names = Json::array();
    for (const auto& agent : definitions.agents) names.push_back(agent.name);
    properties["agent"] = {{"type", "string"}, {"enum", std::move(names)},
                           {"description", "The agent to run the task (default: a general-purpose one)"}};
  }
  return Json{{"type", "object"}, {"properties", std::move(properties)}, {"required", Json::array({"prompt"})}};
}

std::string task_description(const AgentDefinitions& definitions) {
  std::string text =
      "Run a self-contained task in a subagent: it works in a session of its own, with its own context, and its final "
      "answer is this call's result. Several task calls in one response run at the same time. Use it for searches "
      "and work that would fill your context, or to work on independent parts in parallel; give it everything it "
      "needs in `prompt`.";
  if (!definitions.agents.empty()) {
    text += "\n\nAgents (the `agent` argument):";
    for (const auto& agent : definitions.agents) text += fmt::format("\n- {}: {}", agent.name, agent.description);
  }
  return text;
}

}  // namespace

Tool make_task_tool(const AgentOptions& options, const ModelRegistry& registry,
                    const std::optional<ConfiguredModel>& model, const std::vector<std::string>& tool_names,
                    const std::filesystem::path& cwd, const std::shared_ptr<McpServers>& mcp,
                    const std::shared_ptr<Store>& store) {
  auto definitions = std::make_shared<const AgentDefinitions>(load_agent_definitions(cwd, global_config_dir()));
  if (options.warn) {
    for (const auto& warning : definitions->warnings) options.warn(fmt::format("agent definition skipped: {}", warning));
  }

  ChildSessionToolOptions tool;
  tool.name = "task";
  tool.description = task_description(*definitions);
  tool.parameters = task_parameters(*definitions);
  tool.store = store;
  tool.cwd = cwd.string();
  tool.configure = [options, registry, model, tool_names, cwd, mcp, store,
                    definitions](const ChildSpawn& spawn) -> Result<HarnessOptions> {
    const AgentDefinition* definition = nullptr;
    if (const auto agent = spawn.args.find("agent"); agent != spawn.args.end() && agent->is_string() &&
                                                     !agent->get<std::string>().empty()) {
      definition = definitions->find(agent->get<std::string>());
      if (!definition) {
        std::vector<std::string> names;
        for (const auto& a : definitions->agents) names.push_back(a.name);
        return fail(Errc::invalid_argument, fmt::format("there is no agent named '{}' (defined: {})", agent->get<std::string>(),
                                                        names.empty() ? std::string("none") : joined(names, ", ")));
      }
    }
    std::vector<std::string> child_tools;
    if (definition && definition->tools) {
      const auto known = agent_tool_names();
      for (const auto& name : *definition->tools) {
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          return fail(Errc::invalid_config, fmt::format("agent '{}' ({}) names tool '{}', which is not one of: {}",
                                                        definition->name, definition->file.string(), name, joined(known, ", ")));
        }
        child_tools.push_back(name);
      }
    } else {
      // A general-purpose subagent has the parent's tools, but no subagents of its own.
      std::copy_if(tool_names.begin(), tool_names.end(), std::back_inserter(child_tools),
                   [](const std::string& name) { return name != "task"; });
    }
    std::optional<ConfiguredModel> child_model = model;
    if (definition && definition->model) {
      auto found = registry.find(*definition->model);
      if (!found) {
        return fail(Errc::unknown_model, fmt::format("agent '{}' ({}): {}", definition->name, definition->file.string(),
                                                     found.error().message));
      }
      child_model = **found;
    }
    auto made = coding_harness_options_for(options, registry, child_model, child_tools, spawn.child_session, cwd,
                                           definition && definition->tools ? nullptr : mcp, store);
    if (!made) return std::unexpected(made.error());
    if (definition && !definition->system_prompt.empty()) {
      SystemPromptOptions prompt{.cwd = cwd, .replace = definition->system_prompt,
                                 .context_files = made->context_files};
      made->harness.system_prompt = make_system_prompt(std::move(prompt), made->harness.tools);
    }
    return std::move(made->harness);
  };
  return make_child_session_tool(std::move(tool));
}

}  // namespace cairn::agent
