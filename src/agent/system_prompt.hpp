// The coding agent's system prompt, pi-style: who the agent is, the active
// tools with one line each, guidelines that follow from those tools, then
// the project's context files (AGENTS.md, else CLAUDE.md, from the root down
// to the working directory), the date and the working directory.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cairn/harness/harness.hpp"
#include "cairn/harness/tool.hpp"

namespace cairn::agent {

// A file whose text the model reads as project instructions.
struct ContextFile {
  std::filesystem::path path;
  std::string content;
};

// The context files for `cwd`: `global_dir`/AGENTS.md (else CLAUDE.md) when
// given, then one per directory from the filesystem root down to `cwd`,
// AGENTS.md winning over CLAUDE.md in the same directory. Unreadable files
// are skipped.
std::vector<ContextFile> find_context_files(const std::filesystem::path& cwd,
                                            const std::optional<std::filesystem::path>& global_dir);

struct SystemPromptOptions {
  std::filesystem::path cwd;
  // --system-prompt: replaces the base text (identity, tools, guidelines);
  // context files, date and directory still follow.
  std::optional<std::string> replace;
  // --append-system-prompt: added after the base text.
  std::optional<std::string> append;
  std::vector<ContextFile> context_files;
  std::string date;  // YYYY-MM-DD; empty: today, local time
};

// The prompt for `active_tools` (names; the descriptions come from `tools`,
// the registered ones). Pure: the same inputs give the same text, so a
// provider's prompt cache holds across requests.
std::string build_system_prompt(const SystemPromptOptions& options, const std::vector<Tool>& tools,
                                const std::vector<std::string>& active_tools);

// build_system_prompt as the harness's callback of the active tools.
SystemPrompt make_system_prompt(SystemPromptOptions options, const std::vector<Tool>& tools);

// --system-prompt and --append-system-prompt take text, or the path of a
// file holding it (as pi does): the file's content when `value` names a
// readable file, else `value` itself.
std::string prompt_text_or_file(const std::string& value);

}  // namespace cairn::agent
