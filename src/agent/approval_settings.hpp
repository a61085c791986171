// The coding agent's approval policy: a mode (--approval) and the rules of
// the user's and the project's settings files.
//
//   $XDG_CONFIG_HOME/cairn/settings.json, then <cwd>/.cairn/settings.json:
//   {"approval": {"allow": ["bash(git status)", "bash(npm run test:*)"],
//                 "ask":   ["bash(git push*)"],
//                 "deny":  ["bash(rm -rf *)"]}}
//
// Rules are tried in order, first match wins: the user's (deny, then ask,
// then allow), the project's (the same), then the mode's. Modes:
//   ask        read, grep, find and ls run; bash, edit, write and any other tool ask
//   auto-edit  the same, but edit and write of a path inside the working
//              directory run unasked
//   auto       the same as auto-edit where the sandbox bounds a call, and
//              bash runs unasked under a sandbox (read-only or
//              workspace-write): ask only for what needs more than the
//              sandbox allows — bash without a sandbox, a command that asks
//              for the network the sandbox keeps off, an edit outside the
//              workspace or into its .git/hooks or .cairn, MCP tools
//   never-ask  nothing asks (a rule's deny still refuses)
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/agent/options.hpp"
#include "cairn/error.hpp"
#include "cairn/harness/approval.hpp"

namespace cairn::agent {

// Fails with invalid_config naming the file and the rule that is wrong.
Result<ApprovalPolicy> make_approval_policy(ApprovalMode mode, const std::filesystem::path& cwd,
                                            const std::optional<std::filesystem::path>& user_config_dir);

// The rule "always" remembers for a call: the tool with its subject exactly
// (`bash(git status)`, `edit(src/a.cpp)`), `*` escaped; the tool alone when
// it has none.
std::string always_rule(std::string_view tool_name, const std::optional<std::string>& subject);

// Whether `path` (relative to `cwd`, or absolute) names something inside
// `cwd`, symlinks resolved as far as they exist.
bool inside_directory(const std::filesystem::path& cwd, std::string_view path);

}  // namespace cairn::agent
