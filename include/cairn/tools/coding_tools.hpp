// The coding agent's built-in tools (pi's coding agent is the reference for
// their behaviour and parameter names): read, bash, edit, write, grep, find,
// ls. Every tool reports a failure as an error result naming the path or
// argument, and caps what it returns (2000 lines or 50 KB, with a note saying
// how to get the rest) so one call cannot flood the model's context.
//
// The processes the tools start (bash's command, rg for grep and find) never
// outlive this process: each runs in a process group that is SIGKILLed when
// this process dies, however it dies. Each carries CAIRN_TOOL_CALL=<run
// id>:<tool call id> in its environment, by which the tools' settle finds
// what an interrupted call left running after a restart.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cairn/harness/tool.hpp"
#include "cairn/tools/sandbox.hpp"
#include "cairn/secrets.hpp"

namespace cairn {

// What the tools' processes get of this process's environment. Shaped like
// Codex's shell_environment_policy as its documentation describes it: the
// whole environment minus every name containing KEY, SECRET or TOKEN. (Codex's
// code has since turned that filter off by default and strips only a few of
// its own credential variables; cairn keeps it on, because an agent holding
// provider keys would otherwise hand them to every command the model writes.)
struct ToolEnvironmentPolicy {
  enum class Inherit {
    // Every variable but those `exclude` names and those whose name contains
    // KEY, SECRET or TOKEN in any case (Codex's "*KEY*", "*SECRET*", "*TOKEN*").
    filtered,
    all,  // every variable
  };
  Inherit inherit = Inherit::filtered;
  std::vector<std::string> exclude;  // exact names removed too, e.g. the provider key variables
  std::vector<std::string> allow;    // exact names kept although `exclude` or a pattern matches them
};

struct CodingToolsOptions {
  std::filesystem::path cwd;        // relative paths resolve against it; bash runs in it
  std::filesystem::path spill_dir;  // where bash spills full output of long commands (created on demand)
  ToolEnvironmentPolicy environment;
  // Values no result, streamed update or spill file may hold (provider
  // keys): each occurrence becomes Secrets::kMark.
  Secrets secrets;
  // Told what settle could not do: the processes of an interrupted call
  // still running after it gave up (another user's, or stuck in the kernel).
  // Empty: nobody is told.
  std::function<void(const std::string& message)> report;
  // The sandbox bash's commands run under (cairn/tools/sandbox.hpp), the
  // workspace being `cwd`. A call's ToolContext::sandbox, when set, decides
  // the mode and the network in its place: the policy its run recorded.
  SandboxPolicy sandbox;
};

// read, bash, edit, write, grep, find, ls, ask_user — in that order.
std::vector<Tool> make_coding_tools(const CodingToolsOptions& options);

// ask_user: a question to the user ({"question", "choices"?}), answered
// through a durable input request (Tool::asks_user): the answer is its result.
Tool make_ask_user_tool();

// The names make_coding_tools gives, same order.
std::vector<std::string> coding_tool_names();

}  // namespace cairn
