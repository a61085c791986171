// What of cairn's environment the processes the coding agent starts get:
// its tools' processes and its stdio MCP servers alike inherit it but the
// provider key variables and, unless --tool-env inherit, names with KEY,
// SECRET or TOKEN (less those --tool-env-allow lets through).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/agent/options.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/tools/coding_tools.hpp"

namespace cairn::agent {

// The tools' policy; `key_variables` are the provider key variables
// (provider_keys.hpp).
ToolEnvironmentPolicy tool_environment_policy(const AgentOptions& options, std::vector<std::string> key_variables);

// What a stdio MCP server does not inherit: what the coding tools'
// processes do not (the key variables of `registry` and `model`).
std::function<bool(std::string_view)> mcp_withheld_variables(const AgentOptions& options, const ModelRegistry& registry,
                                                             const std::optional<ConfiguredModel>& model);

}  // namespace cairn::agent
