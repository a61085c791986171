// Agent definitions for the `task` tool (subagents.hpp). The front matter is
// the small subset of YAML such files use — `key: value` lines, and a list
// either inline (`a, b` or `[a, b]`) or as `- item` lines — read here rather
// than with a YAML library for a dozen lines.
#include "subagents.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace cairn::agent {
namespace {

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  std::string out(text.substr(first, last - first + 1));
  // A quoted scalar: its quotes are not part of it.
  if (out.size() >= 2 && (out.front() == '"' || out.front() == '\'') && out.back() == out.front()) {
    out = out.substr(1, out.size() - 2);
  }
  return out;
}

std::vector<std::string> inline_list(std::string_view value) {
  std::string text = trimmed(value);
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (auto name = trimmed(item); !name.empty()) items.push_back(std::move(name));
  }
  return items;
}

bool valid_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

}  // namespace

Result<AgentDefinition> parse_agent_definition(std::string_view text, const std::filesystem::path& file) {
  auto bad = [&](int line, std::string what) {
    return fail(Errc::invalid_config, fmt::format("{}:{}: {}", file.string(), line, what));
  };
  std::vector<std::string> lines;
  {
    std::stringstream in{std::string(text)};
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  if (lines.empty() || trimmed(lines[0]) != "---") return bad(1, "an agent definition starts with a '---' front matter line");
  std::map<std::string, std::string> fields;
  std::optional<std::vector<std::string>> tools;
  std::string list_key;  // the key whose `- item` lines follow
  std::size_t end = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string line = lines[i];
    const int number = static_cast<int>(i) + 1;
    if (trimmed(line) == "---") {
      end = i;
      break;
    }
    if (trimmed(line).empty() || trimmed(line).starts_with('#')) continue;
    if (const std::string item = trimmed(line); item.starts_with("- ")) {
      if (list_key != "tools") return bad(number, "a list item outside a list (only `tools` takes one)");
      tools->push_back(trimmed(item.substr(2)));
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) return bad(number, fmt::format("'{}' is not a 'key: value' line", trimmed(line)));
    const std::string key = trimmed(line.substr(0, colon));
    const std::string value = trimmed(line.substr(colon + 1));
    list_key.clear();
    if (key == "tools") {
      tools = inline_list(value);
      if (value.empty()) list_key = key;
    } else {
      fields[key] = value;
    }
  }
  if (end == 0) return bad(static_cast<int>(lines.size()), "the front matter has no closing '---' line");
  AgentDefinition definition;
  definition.file = file;
  definition.name = fields["name"];
  if (definition.name.empty()) definition.name = file.stem().string();
  if (!valid_name(definition.name)) {
    return bad(1, fmt::format("name '{}' may hold letters, digits, '-' and '_' only (at most 64)", definition.name));
  }
  definition.description = fields["description"];
  if (definition.description.empty()) return bad(1, "the front matter needs a description (when to use the agent)");
  if (auto model = fields.find("model"); model != fields.end() && !model->second.empty() && model->second != "inherit") {
    definition.model = model->second;
  }
  definition.tools = std::move(tools);
  std::string body;
  for (std::size_t i = end + 1; i < lines.size(); ++i) body += lines[i] + "\n";
  definition.system_prompt = trimmed(body);
  return definition;
}

const AgentDefinition* AgentDefinitions::find(std::string_view name) const {
  for (const auto& agent : agents) {
    if (agent.name == name) return &agent;
  }
  return nullptr;
}

AgentDefinitions load_agent_definitions(const std::filesystem::path& cwd,
                                        const std::optional<std::filesystem::path>& global_dir) {
  AgentDefinitions out;
  auto load_dir = [&](const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".md") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        out.warnings.push_back(fmt::format("{}: cannot be read", file.string()));
        continue;
      }
      std::stringstream text;
      text << in.rdbuf();
      auto definition = parse_agent_definition(text.str(), file);
      if (!definition) {
        out.warnings.push_back(definition.error().message);
      } else if (!out.find(definition->name)) {  // the project's came first and wins
        out.agents.push_back(std::move(*definition));
      }
    }
  };
  load_dir(cwd / ".cairn" / "agents");
  if (global_dir) load_dir(*global_dir / "agents");
  return out;
}

}  // namespace cairn::agent
