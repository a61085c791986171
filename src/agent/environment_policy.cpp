#include "environment_policy.hpp"

#include "cairn/llm/models_file.hpp"
#include "provider_keys.hpp"
#include "tools/tool_environment.hpp"

namespace cairn::agent {

std::string_view to_string(ToolEnvironment environment) {
  return environment == ToolEnvironment::inherit ? "inherit" : "filtered";
}

std::optional<ToolEnvironment> parse_tool_environment(std::string_view text) {
  for (auto environment : {ToolEnvironment::filtered, ToolEnvironment::inherit}) {
    if (to_string(environment) == text) return environment;
  }
  return std::nullopt;
}

ToolEnvironmentPolicy tool_environment_policy(const AgentOptions& options, std::vector<std::string> key_variables) {
  ToolEnvironmentPolicy policy;
  policy.inherit = options.tool_env == ToolEnvironment::inherit ? ToolEnvironmentPolicy::Inherit::all
                                                                : ToolEnvironmentPolicy::Inherit::filtered;
  policy.exclude = std::move(key_variables);
  for (const auto& name : options.tool_env_allow) {
    if (!name.empty()) policy.allow.push_back(name);
  }
  return policy;
}

std::function<bool(std::string_view)> mcp_withheld_variables(const AgentOptions& options, const ModelRegistry& registry,
                                                             const std::optional<ConfiguredModel>& model) {
  ToolEnvironmentPolicy policy =
      tool_environment_policy(options, provider_keys(registry, model, process_environment()).variables);
  return [policy = std::move(policy)](std::string_view name) { return tools::withholds(policy, name); };
}

}  // namespace cairn::agent
