// The coding agent's `task` tool: each call runs its prompt as a subagent
// in a child session of `store` (make_child_session_tool), as the agent
// definition its `agent` argument names says (subagents.hpp), or else with
// `tool_names` but task; the model, thinking level, approval mode and
// tool environment are the parent's unless the definition names a model.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/agent/options.hpp"
#include "cairn/harness/tool.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/store/store.hpp"

namespace cairn::agent {

class McpServers;

Tool make_task_tool(const AgentOptions& options, const ModelRegistry& registry,
                    const std::optional<ConfiguredModel>& model, const std::vector<std::string>& tool_names,
                    const std::filesystem::path& cwd, const std::shared_ptr<McpServers>& mcp,
                    const std::shared_ptr<Store>& store);

}  // namespace cairn::agent
