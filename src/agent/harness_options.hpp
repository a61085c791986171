// The harness options of the coding agent: the models, the chosen coding
// tools (and task, and the MCP servers' tools), the system prompt, the
// approval policy, and the keys kept out of everything written.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/agent/options.hpp"
#include "cairn/error.hpp"
#include "cairn/harness/harness.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/store/store.hpp"
#include "cairn/tools/sandbox.hpp"
#include "system_prompt.hpp"

namespace cairn::agent {

class McpServers;

// The sandbox of the tools' processes the options ask for: their mode and
// network, hiding the default deny list, cairn's configuration directory
// and options.sandbox_hide.
SandboxPolicy agent_sandbox_policy(const AgentOptions& options);

struct CodingHarnessOptions {
  HarnessOptions harness;
  std::vector<ContextFile> context_files;  // what the system prompt includes
  std::vector<Tool> own_tools;             // the coding tools alone, without the MCP servers'
};

// The harness options over `session`, its tools working in `cwd`: the
// models (with `model` first), the tools of `tool_names`, the system prompt
// with the context files found from `cwd`, the approval policy, and the keys
// kept out of everything written. Errors: a bad approval setting or model
// (the message says which).
// With `mcp`, the servers' tools are added, with their approval (in ask and
// auto-edit: the user's override, else the annotations' default, after the
// settings files' rules; in never-ask only an override's deny stops a call),
// what to say of a call of a server's tool that is gone, and the secrets
// the MCP configuration holds.
// With `store` and "task" among the tool names, the task tool runs
// subagents in child sessions of `store` (make_task_tool).
Result<CodingHarnessOptions> coding_harness_options(const AgentOptions& options, const ModelRegistry& registry,
                                                    const std::optional<ConfiguredModel>& model,
                                                    const std::vector<std::string>& tool_names,
                                                    std::shared_ptr<Session> session, const std::filesystem::path& cwd,
                                                    const std::shared_ptr<McpServers>& mcp = nullptr,
                                                    const std::shared_ptr<Store>& store = nullptr);
// The same before the session is open (a subagent's, whose session the
// task tool opens itself): HarnessOptions::session is left empty.
Result<CodingHarnessOptions> coding_harness_options_for(const AgentOptions& options, const ModelRegistry& registry,
                                                        const std::optional<ConfiguredModel>& model,
                                                        const std::vector<std::string>& tool_names,
                                                        const std::string& session_id, const std::filesystem::path& cwd,
                                                        const std::shared_ptr<McpServers>& mcp,
                                                        const std::shared_ptr<Store>& store);

}  // namespace cairn::agent
