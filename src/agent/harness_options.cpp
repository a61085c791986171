// The coding agent's harness options, from its options and what they resolved to.
#include "harness_options.hpp"

#include <algorithm>

#include "approval_settings.hpp"
#include "cairn/llm/models_file.hpp"
#include "cairn/llm/wire_providers.hpp"
#include "cairn/tools/coding_tools.hpp"
#include "cairn/tools/sandbox.hpp"
#include "directories.hpp"
#include "environment_policy.hpp"
#include "mcp_servers.hpp"
#include "provider_keys.hpp"
#include "task_tool.hpp"

namespace cairn::agent {

SandboxPolicy agent_sandbox_policy(const AgentOptions& options) {
  SandboxPolicy policy{.mode = options.sandbox, .network = options.sandbox_network};
  policy.deny = default_sandbox_deny();
  // cairn's own configuration: settings, models (with keys), serve's tokens.
  if (const auto config = global_config_dir()) policy.deny.push_back(*config);
  for (const auto& path : options.sandbox_hide) policy.deny.emplace_back(path);
  return policy;
}

Result<CodingHarnessOptions> coding_harness_options(const AgentOptions& options, const ModelRegistry& registry,
                                                    const std::optional<ConfiguredModel>& model,
                                                    const std::vector<std::string>& tool_names,
                                                    std::shared_ptr<Session> session, const std::filesystem::path& cwd,
                                                    const std::shared_ptr<McpServers>& mcp,
                                                    const std::shared_ptr<Store>& store) {
  auto made = coding_harness_options_for(options, registry, model, tool_names, session->id(), cwd, mcp, store);
  if (made) made->harness.session = std::move(session);
  return made;
}

Result<CodingHarnessOptions> coding_harness_options_for(const AgentOptions& options, const ModelRegistry& registry,
                                                        const std::optional<ConfiguredModel>& model,
                                                        const std::vector<std::string>& tool_names,
                                                        const std::string& session_id, const std::filesystem::path& cwd,
                                                        const std::shared_ptr<McpServers>& mcp,
                                                        const std::shared_ptr<Store>& store) {
  HarnessOptions harness_options;
  harness_options.models = make_models(registry, make_wire_provider);
  if (model) {
    if (auto added = add_model(harness_options.models, *model, make_wire_provider); !added) {
      return std::unexpected(added.error());
    }
    harness_options.model = model->model;
  }
  if (options.thinking) harness_options.thinking_level = *options.thinking;
  // Keys reach neither the tools' processes nor anything cairn writes.
  ProviderKeys keys = provider_keys(registry, model, process_environment());
  for (const auto& secret : options.secrets) keys.values.add(secret);
  harness_options.secrets = keys.values;
  CodingToolsOptions tool_options{.cwd = cwd, .spill_dir = spill_dir_for(session_id)};
  tool_options.environment = tool_environment_policy(options, std::move(keys.variables));
  tool_options.secrets = std::move(keys.values);
  tool_options.report = options.warn;
  tool_options.sandbox = agent_sandbox_policy(options);
  harness_options.sandbox = tool_options.sandbox.record();
  harness_options.sandbox_check = [](const SandboxRecord& policy) { return sandbox_unavailable(policy.mode); };
  std::vector<Tool> all_tools = make_coding_tools(tool_options);
  for (auto& tool : all_tools) {
    if (std::find(tool_names.begin(), tool_names.end(), tool.name) != tool_names.end()) {
      harness_options.tools.push_back(std::move(tool));
    }
  }
  if (store && std::find(tool_names.begin(), tool_names.end(), "task") != tool_names.end()) {
    harness_options.tools.push_back(make_task_tool(options, registry, model, tool_names, cwd, mcp, store));
  }
  std::vector<Tool> own_tools = harness_options.tools;
  if (mcp) {
    for (auto& tool : mcp->usable_tools(mcp->tools())) harness_options.tools.push_back(std::move(tool));
    for (const auto& value : mcp->config().secrets.values()) harness_options.secrets.add(value);
    harness_options.describe_missing_tool = [mcp](std::string_view name) { return mcp->describe_missing(name); };
  } else {
    // No server configured: a call of an MCP tool the log names still gets
    // an error result saying so, rather than making the run unresumable.
    harness_options.describe_missing_tool = [](std::string_view name) { return mcp::describe_missing_tool(name, {}); };
  }
  SystemPromptOptions prompt_options;
  prompt_options.cwd = cwd;
  if (options.system_prompt) prompt_options.replace = prompt_text_or_file(*options.system_prompt);
  if (options.append_system_prompt) prompt_options.append = prompt_text_or_file(*options.append_system_prompt);
  prompt_options.context_files = find_context_files(cwd, global_config_dir());
  std::vector<ContextFile> context_files = prompt_options.context_files;
  harness_options.system_prompt = make_system_prompt(std::move(prompt_options), harness_options.tools);
  auto policy = make_approval_policy(options.approval, cwd, global_config_dir());
  if (!policy) return std::unexpected(policy.error());
  if (mcp) {
    // After the settings files' rules (the callback), before the mode's.
    const bool never_ask = options.approval == ApprovalMode::never_ask;
    policy->decide = [files = std::move(policy->decide), mcp, never_ask](const ApprovalCall& call) -> std::optional<ApprovalVerdict> {
      if (files) {
        if (auto verdict = files(call)) return verdict;
      }
      if (never_ask) {
        if (mcp->approval_override(call.tool_name) == ApprovalDecision::deny) return mcp->approval(call.tool_name);
        return std::nullopt;
      }
      return mcp->approval(call.tool_name);
    };
  }
  harness_options.approval = std::move(*policy);
  return CodingHarnessOptions{std::move(harness_options), std::move(context_files), std::move(own_tools)};
}

}  // namespace cairn::agent
