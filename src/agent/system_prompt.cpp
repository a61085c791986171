// The coding agent's system prompt. The text follows pi's coding agent: a
// model that has seen pi's prompt behaves the same here.
#include "system_prompt.hpp"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

namespace cairn::agent {
namespace {

// One line per built-in tool; a tool not listed here is described by the
// first line of its own description.
const std::map<std::string, std::string, std::less<>>& tool_lines() {
  static const std::map<std::string, std::string, std::less<>> lines = {
      {"read", "Read the contents of a file (text or image); long files are read in parts"},
      {"bash", "Run a bash command in the working directory (ls, git, make, tests, ...)"},
      {"edit", "Make a surgical edit to a file: replace exact old text with new text"},
      {"write", "Create a file or overwrite one completely"},
      {"grep", "Search file contents for a pattern (respects .gitignore)"},
      {"find", "Find files by glob pattern (respects .gitignore)"},
      {"ls", "List a directory's contents"},
      {"ask_user", "Ask the user a question and wait for the answer"},
  };
  return lines;
}

std::optional<std::string> read_text(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

std::optional<ContextFile> context_file_in(const std::filesystem::path& dir) {
  for (const char* name : {"AGENTS.md", "CLAUDE.md"}) {
    const auto path = dir / name;
    if (auto content = read_text(path)) return ContextFile{path, std::move(*content)};
  }
  return std::nullopt;
}

std::string first_line(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", &local);
  return buffer;
}

bool has(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string base_prompt(const std::vector<Tool>& tools, const std::vector<std::string>& active) {
  std::string text =
      "You are an expert coding assistant working inside cairn, a coding agent. You help users with coding "
      "tasks by reading files, executing commands, editing code and writing new files.\n";
  if (active.empty()) {
    text += "\nNo tools are available in this session: answer from the conversation alone.\n";
  } else {
    text += "\nAvailable tools:\n";
    for (const auto& name : active) {
      std::string line;
      if (auto it = tool_lines().find(name); it != tool_lines().end()) {
        line = it->second;
      } else {
        auto tool = std::find_if(tools.begin(), tools.end(), [&](const Tool& t) { return t.name == name; });
        if (tool != tools.end()) line = first_line(tool->description);
      }
      text += fmt::format("- {}{}{}\n", name, line.empty() ? "" : ": ", line);
    }
  }

  std::vector<std::string> guidelines;
  const bool explore_tools = has(active, "grep") || has(active, "find") || has(active, "ls");
  if (has(active, "bash") && !explore_tools) {
    guidelines.push_back("Use bash for file operations like ls, grep and find");
  } else if (has(active, "bash") && explore_tools) {
    guidelines.push_back("Prefer the grep, find and ls tools over bash for exploring files (faster, respects .gitignore)");
  }
  if (has(active, "read") && has(active, "edit")) {
    guidelines.push_back("Use read to examine a file before editing it, instead of cat or sed");
  }
  if (has(active, "edit")) guidelines.push_back("Use edit for precise changes (the old text must match exactly)");
  if (has(active, "write")) guidelines.push_back("Use write only for new files or complete rewrites");
  if (has(active, "edit") || has(active, "write")) {
    guidelines.push_back(
        "When summarizing your actions, write plain text directly; do not use cat or bash to show what you did");
  }
  if (!active.empty()) {
    // cairn's own: a run survives crashes, and a command cut short by one
    // is never run again on its own.
    guidelines.push_back(
        "A tool result saying a call was interrupted means the process running it stopped while it ran: it may "
        "have taken effect in part or entirely. Check its effects before running it again");
  }
  guidelines.push_back("Be concise in your responses");
  guidelines.push_back("Show file paths clearly when working with files");
  text += "\nGuidelines:\n";
  for (const auto& guideline : guidelines) text += fmt::format("- {}\n", guideline);
  return text;
}

}  // namespace

std::vector<ContextFile> find_context_files(const std::filesystem::path& cwd,
                                            const std::optional<std::filesystem::path>& global_dir) {
  std::vector<ContextFile> files;
  if (global_dir) {
    if (auto file = context_file_in(*global_dir)) files.push_back(std::move(*file));
  }
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(cwd, ec).lexically_normal();
  if (ec) dir = cwd;
  std::vector<std::filesystem::path> chain;  // cwd up to the root
  for (;;) {
    chain.push_back(dir);
    const auto parent = dir.parent_path();
    if (parent.empty() || parent == dir) break;
    dir = parent;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    auto file = context_file_in(*it);
    if (!file) continue;
    // The global directory may also lie on the way down.
    const bool seen = std::any_of(files.begin(), files.end(), [&](const ContextFile& f) { return f.path == file->path; });
    if (!seen) files.push_back(std::move(*file));
  }
  return files;
}

std::string build_system_prompt(const SystemPromptOptions& options, const std::vector<Tool>& tools,
                                const std::vector<std::string>& active_tools) {
  std::string text = options.replace ? *options.replace : base_prompt(tools, active_tools);
  if (options.append && !options.append->empty()) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "\n" + *options.append;
  }
  if (!options.context_files.empty()) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += "\n# Project Context\n\nProject-specific instructions and guidelines:\n";
    for (const auto& file : options.context_files) {
      text += fmt::format("\n## {}\n\n{}", file.path.string(), file.content);
      if (!file.content.empty() && file.content.back() != '\n') text += '\n';
    }
  }
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += fmt::format("\nCurrent date: {}\nCurrent working directory: {}\n",
                      options.date.empty() ? today() : options.date, options.cwd.string());
  return text;
}

SystemPrompt make_system_prompt(SystemPromptOptions options, const std::vector<Tool>& tools) {
  if (options.date.empty()) options.date = today();  // fixed for the process: a stable prompt caches
  std::vector<Tool> described;
  for (const auto& tool : tools) described.push_back(Tool{.name = tool.name, .description = tool.description});
  return SystemPrompt([options = std::move(options), described = std::move(described)](
                          const std::vector<std::string>& active_tools) {
    return build_system_prompt(options, described, active_tools);
  });
}

std::string prompt_text_or_file(const std::string& value) {
  if (value.empty() || value.find('\n') != std::string::npos || value.size() > 4096) return value;
  if (auto content = read_text(value)) return *content;
  return value;
}

}  // namespace cairn::agent
