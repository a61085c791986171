// The coding agent's options: what shapes its harness (the model, the tools
// and their environment, the approval policy, the system prompt, the MCP
// servers). Plain values: the `cairn` command fills them from its flags
// (named beside each field), a program that embeds the agent sets them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"

namespace cairn::agent {

// Told of what goes wrong without stopping anything: an agent definition
// skipped, an MCP server not started yet, an MCP tool left out, a tool's
// processes that outlived it.
using Warn = std::function<void(const std::string& message)>;

// What the tools' processes get of cairn's environment: everything but the
// provider keys' variables and names containing KEY, SECRET or TOKEN
// ("filtered"), or everything ("inherit").
enum class ToolEnvironment { filtered, inherit };
std::string_view to_string(ToolEnvironment environment);
std::optional<ToolEnvironment> parse_tool_environment(std::string_view text);

// Which tool calls wait for a human's approval, spelled "ask", "auto-edit",
// "auto" and "never-ask" (src/agent/approval_settings.hpp says what each
// lets run; "auto" leans on the sandbox).
enum class ApprovalMode { ask, auto_edit, sandboxed_auto, never_ask };
std::string_view to_string(ApprovalMode mode);
std::optional<ApprovalMode> parse_approval_mode(std::string_view text);

// Empty strings and nullopt mean "not given".
struct AgentOptions {
  std::string model;                  // --model PROVIDER/ID (an ID alone when unambiguous; with --api: the endpoint's ID)
  std::optional<ThinkingLevel> thinking;  // --thinking off|minimal|low|medium|high|xhigh
  std::string api;                    // --api KIND (an ad-hoc endpoint, with --base-url and --model)
  std::string base_url;               // --base-url URL
  std::optional<std::string> api_key; // --api-key KEY
  std::string models_file;            // --models-file FILE
  std::optional<std::string> system_prompt;         // --system-prompt TEXT|FILE
  std::optional<std::string> append_system_prompt;  // --append-system-prompt TEXT|FILE
  std::optional<std::string> tools;   // --tools LIST: comma-separated coding tool names
  bool no_tools = false;              // --no-tools
  ToolEnvironment tool_env = ToolEnvironment::filtered;  // --tool-env filtered|inherit
  std::vector<std::string> tool_env_allow;  // --tool-env-allow NAME,...: let through the filter
  ApprovalMode approval = ApprovalMode::ask;  // --approval ask|auto-edit|auto|never-ask
  std::vector<std::string> mcp_configs;     // --mcp-config FILE, repeatable, after the user's and the project's
  // The sandbox of bash's and the MCP stdio servers' processes
  // (cairn/tools/sandbox.hpp): --sandbox read-only|workspace-write|off and
  // --sandbox-network. Off here, for programs that embed the agent; the
  // cairn command's default is workspace-write.
  SandboxMode sandbox = SandboxMode::off;
  bool sandbox_network = false;
  // Hidden from those processes besides ~/.ssh, ~/.gnupg and the like and
  // cairn's configuration directory: the store's files, the settings' "hide".
  std::vector<std::string> sandbox_hide;
  // Values no record, event or tool output may hold, beside the provider
  // keys (cairn serve's bearer tokens): redacted as the keys are.
  std::vector<std::string> secrets;
  // Empty: nobody is told (the cairn command prints "cairn: warning: ...").
  Warn warn;
};

}  // namespace cairn::agent
