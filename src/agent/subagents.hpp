// Subagents for the `task` tool: agent definitions in the shape Claude Code
// users already write — a Markdown file whose front matter names the agent
// and whose body is its system prompt:
//
//   ---
//   name: reviewer
//   description: Reviews a diff for bugs; use it after every edit
//   tools: read, grep, find        (optional; default: the parent's tools but task)
//   model: anthropic/claude-x      (optional; default or "inherit": the parent's)
//   ---
//   You review code. ...
//
// from .cairn/agents/*.md of the working directory and
// $XDG_CONFIG_HOME/cairn/agents/*.md (a project's definition wins over a
// global one of the same name).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"

namespace cairn::agent {

struct AgentDefinition {
  std::string name;
  std::string description;
  std::optional<std::vector<std::string>> tools;
  std::optional<std::string> model;  // nullopt: the parent's
  std::string system_prompt;         // the body; empty: the coding agent's own prompt
  std::filesystem::path file;
};

// One definition file's text; the error names the file, the line and what
// is wrong with it.
Result<AgentDefinition> parse_agent_definition(std::string_view text, const std::filesystem::path& file);

struct AgentDefinitions {
  std::vector<AgentDefinition> agents;  // by name
  std::vector<std::string> warnings;    // files that were skipped, and why
  const AgentDefinition* find(std::string_view name) const;
};

// The definitions for `cwd`: the project's, then the global ones it does not
// override. A file that cannot be read or parsed is skipped with a warning.
AgentDefinitions load_agent_definitions(const std::filesystem::path& cwd,
                                        const std::optional<std::filesystem::path>& global_dir);

}  // namespace cairn::agent
