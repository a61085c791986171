#include "tree_view.hpp"

#include <charconv>
#include <unordered_map>

#include <fmt/format.h>

#include "cairn/overloaded.hpp"

#include "slash_commands.hpp"
#include "terminal_text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli::tui {
namespace {


std::string user_content_text(const UserContent& content) {
  return std::visit(Overloaded{[](const std::string& s) { return s; },
                               [](const std::vector<UserBlock>& blocks) {
                                 std::string text;
                                 for (const auto& block : blocks) {
                                   if (!text.empty()) text += ' ';
                                   if (const auto* t = std::get_if<TextContent>(&block)) {
                                     text += t->text;
                                   } else {
                                     text += "[image]";
                                   }
                                 }
                                 return text;
                               }},
                    content);
}

std::string message_summary(const AgentMessage& message) {
  return std::visit(
      Overloaded{
          [](const UserMessage& m) { return "user: " + user_content_text(m.content); },
          [](const AssistantMessage& m) {
            std::string text;
            for (const auto& block : m.content) {
              std::string part;
              if (const auto* t = std::get_if<TextContent>(&block)) part = t->text;
              if (const auto* call = std::get_if<ToolCall>(&block)) part = fmt::format("{}({})", call->name, call->arguments.dump());
              if (part.empty()) continue;
              if (!text.empty()) text += ' ';
              text += part;
            }
            if (m.error_message) text += (text.empty() ? "" : " ") + fmt::format("[error: {}]", *m.error_message);
            return "assistant: " + text;
          },
          [](const ToolResultMessage& m) {
            std::string text;
            for (const auto& block : m.content) {
              if (const auto* t = std::get_if<TextContent>(&block)) text += (text.empty() ? "" : " ") + t->text;
            }
            return fmt::format("{} result: {}", m.tool_name, text);
          },
          [](const CustomMessage& m) { return fmt::format("{}: {}", m.custom_type, user_content_text(m.content)); },
          [](const BranchSummaryMessage& m) { return "branch summary: " + m.summary; },
          [](const CompactionSummaryMessage& m) { return "compaction summary: " + m.summary; },
          [](const BashExecutionMessage& m) { return "$ " + m.command; },
      },
      message);
}

bool listed(const TreeEntry& entry) {
  return !std::holds_alternative<Label>(entry.body) && !std::holds_alternative<Leaf>(entry.body) &&
         !std::holds_alternative<SessionInfo>(entry.body);
}

}  // namespace

std::string entry_summary(const TreeEntry& entry) {
  return collapse_whitespace(std::visit(
      Overloaded{
          [](const MessageBody& b) { return message_summary(b.message); },
          [](const ModelChange& b) { return fmt::format("model: {}/{}", b.provider, b.model_id); },
          [](const ThinkingLevelChange& b) { return fmt::format("thinking: {}", to_string(b.thinking_level)); },
          [](const ActiveToolsChange& b) {
            std::string names;
            for (const auto& name : b.active_tool_names) names += (names.empty() ? "" : ",") + name;
            return "tools: " + names;
          },
          [](const Compaction& b) { return fmt::format("compaction ({} tokens before): {}", b.tokens_before, b.summary); },
          [](const BranchSummary& b) { return "branch summary: " + b.summary; },
          [](const Custom& b) { return "custom: " + b.custom_type; },
          [](const CustomMessageBody& b) { return fmt::format("{}: {}", b.custom_type, user_content_text(b.content)); },
          [](const Label& b) { return "label: " + b.label.value_or("(cleared)"); },
          [](const SessionInfo& b) { return "name: " + b.name.value_or("(cleared)"); },
          [](const Leaf& b) { return "leaf -> " + b.target_id.value_or("(start)"); },
          [](const DamagedEntry& b) {
            return fmt::format("damaged {} (replaced by cairn repair)", b.damage.was ? to_string(*b.damage.was) : "record");
          },
      },
      entry.body));
}

TreeView build_tree_view(const std::vector<TreeEntry>& entries,
                         const std::map<std::string, std::vector<std::string>>& refs_at,
                         const std::optional<std::string>& current_leaf, std::size_t width) {
  // Children of each listed entry among the listed ones: an unlisted entry
  // passes its children up to its nearest listed ancestor.
  std::unordered_map<std::string, std::size_t> index_of;
  std::unordered_map<std::string, std::optional<std::string>> shown_parent;  // id -> listed ancestor
  std::unordered_map<std::string, std::string> labels;
  std::vector<std::vector<std::size_t>> children(entries.size());
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const TreeEntry& entry = entries[i];
    if (const auto* label = std::get_if<Label>(&entry.body)) {
      if (label->label) {
        labels[label->target_id] = *label->label;
      } else {
        labels.erase(label->target_id);
      }
    }
    std::optional<std::string> parent;
    if (entry.parent_id) {
      auto it = shown_parent.find(*entry.parent_id);
      if (it != shown_parent.end()) parent = it->second;
      if (index_of.contains(*entry.parent_id)) parent = *entry.parent_id;
    }
    if (!listed(entry)) {
      shown_parent[entry.id] = parent;
      continue;
    }
    index_of[entry.id] = i;
    shown_parent[entry.id] = entry.id;
    if (parent && index_of.contains(*parent)) {
      children[index_of[*parent]].push_back(i);
    } else {
      roots.push_back(i);
    }
  }
  // A leaf on an unlisted entry shows on its listed ancestor.
  std::map<std::string, std::vector<std::string>> refs_shown;
  for (const auto& [id, refs] : refs_at) {
    std::optional<std::string> at = id;
    if (auto it = shown_parent.find(id); it != shown_parent.end()) at = it->second;
    if (!at) continue;
    auto& list = refs_shown[*at];
    list.insert(list.end(), refs.begin(), refs.end());
  }
  std::optional<std::string> current = current_leaf;
  if (current) {
    if (auto it = shown_parent.find(*current); it != shown_parent.end()) current = it->second;
  }

  std::size_t total = 0;
  for (const auto& entry : entries) total += listed(entry) ? 1 : 0;
  const std::size_t number_width = fmt::format("{}", std::max<std::size_t>(total, 1)).size();

  TreeView view;
  struct Frame {
    std::size_t index;
    std::string indent;
    bool branch_child;
  };
  std::vector<Frame> stack;
  for (std::size_t i = roots.size(); i-- > 0;) stack.push_back({roots[i], "", roots.size() > 1});
  while (!stack.empty()) {
    Frame frame = std::move(stack.back());
    stack.pop_back();
    const TreeEntry& entry = entries[frame.index];
    view.ids.push_back(entry.id);
    const bool is_current = current && *current == entry.id;
    // Ids, labels, ref names and summaries are the log's words: visible
    // (util/untrusted_text.hpp) before they are measured.
    std::string text = fmt::format("{:>{}} {} {}{}{} ", view.ids.size(), number_width, is_current ? '*' : ' ',
                                   frame.indent, frame.branch_child ? "+- " : "", visible_text(entry.id.substr(0, 8)));
    if (auto it = labels.find(entry.id); it != labels.end()) text += fmt::format("[{}] ", visible_text(it->second));
    std::string suffix;
    if (auto it = refs_shown.find(entry.id); it != refs_shown.end()) {
      for (const auto& ref : it->second) suffix += " <- " + visible_text(ref);
    }
    const std::size_t used = display_width(text) + display_width(suffix);
    const std::size_t room = width > used + 8 ? width - used : 8;
    text += truncate_to_width(visible_text(entry_summary(entry)), room) + suffix;
    view.lines.push_back(std::move(text));

    const auto& kids = children[frame.index];
    const bool branches = kids.size() > 1;
    std::string child_indent = frame.indent + (frame.branch_child ? "   " : "");
    for (std::size_t k = kids.size(); k-- > 0;) stack.push_back({kids[k], child_indent, branches});
  }
  return view;
}

std::expected<std::string, std::string> resolve_entry_choice(std::string_view choice, const TreeView& view,
                                                             const std::vector<std::string>& all_ids) {
  const std::string text = trim(choice);
  if (text.empty()) return std::unexpected(std::string("no entry given"));
  std::size_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error == std::errc() && end == text.data() + text.size()) {
    if (number >= 1 && number <= view.ids.size()) return view.ids[number - 1];
    // A number out of range may still be an id prefix (ids are hex-ish).
  }
  std::vector<std::string> matches;
  for (const auto& id : all_ids) {
    if (id == text) return id;
    if (id.starts_with(text)) matches.push_back(id);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) return std::unexpected(fmt::format("no entry numbered or starting with '{}'", text));
  return std::unexpected(fmt::format("'{}' starts {} entries: give more of the id", text, matches.size()));
}

}  // namespace cairn::cli::tui
