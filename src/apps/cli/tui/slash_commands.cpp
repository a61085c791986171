#include "slash_commands.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/edit_distance.hpp"

namespace cairn::cli::tui {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string trim(std::string_view text) {
  std::size_t start = 0, end = text.size();
  while (start < end && is_space(text[start])) ++start;
  while (end > start && is_space(text[end - 1])) --end;
  return std::string(text.substr(start, end - start));
}

std::pair<std::string, std::string> split_first_word(std::string_view text) {
  const std::string trimmed = trim(text);
  std::size_t end = 0;
  while (end < trimmed.size() && !is_space(trimmed[end])) ++end;
  return {trimmed.substr(0, end), trim(std::string_view(trimmed).substr(end))};
}

std::optional<SlashCommand> parse_slash(std::string_view line) {
  std::size_t start = 0;
  while (start < line.size() && is_space(line[start])) ++start;
  line.remove_prefix(start);
  if (line.size() < 2 || line[0] != '/' || line[1] == '/' || is_space(line[1])) return std::nullopt;
  auto [name, args] = split_first_word(line.substr(1));
  return SlashCommand{std::move(name), std::move(args)};
}

std::string unescape_slash(std::string_view line) {
  const std::string trimmed = trim(line);
  if (trimmed.starts_with("//")) return trimmed.substr(1);
  return std::string(line);
}

const std::vector<CommandInfo>& slash_commands() {
  static const std::vector<CommandInfo> commands = {
      {"model", "[PROVIDER/ID]", "list the available models, or switch this branch to one"},
      {"thinking", "LEVEL", "set the thinking level: off, minimal, low, medium, high, xhigh"},
      {"thinking-show", "", "show thinking in full, or collapse it to one line again (also Alt+T)"},
      {"compact", "[INSTRUCTIONS]", "summarise the older context into a compaction entry"},
      {"tree", "", "show the session's tree, then move this ref to an entry"},
      {"fork", "", "start a new session from this branch and switch to it"},
      {"label", "ENTRY TEXT", "label an entry (an id, a prefix or a /tree number)"},
      {"name", "TEXT", "name the session"},
      {"session", "", "the session's id, store, refs, tokens and cost"},
      {"sessions", "", "list the store's sessions"},
      {"new", "", "start a new session"},
      {"resume", "[ID]", "switch to another session (a picker of this directory's sessions)"},
      {"ref", "NAME", "switch to a ref, creating it at this ref's leaf when it does not exist"},
      {"help", "", "this list"},
  };
  return commands;
}

const CommandInfo* find_command(std::string_view name) {
  for (const auto& command : slash_commands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

std::string unknown_command_hint(std::string_view name) {
  // A name the user began typing, or one a typo or two away.
  const CommandInfo* best = nullptr;
  std::size_t best_score = 3;
  for (const auto& command : slash_commands()) {
    const bool prefix = !name.empty() && command.name.starts_with(name);
    const std::size_t score = prefix ? 0 : edit_distance(name, command.name);
    if (score < best_score) {
      best = &command;
      best_score = score;
    }
  }
  if (best) return fmt::format("unknown command /{} (did you mean /{}?) - /help lists the commands", name, best->name);
  return fmt::format("unknown command /{} - /help lists the commands", name);
}

std::string help_text() {
  std::string out = "Commands:\n";
  std::size_t column = 0;
  for (const auto& command : slash_commands()) {
    column = std::max(column, command.name.size() + (command.usage.empty() ? 0 : command.usage.size() + 1));
  }
  for (const auto& command : slash_commands()) {
    const std::string head = command.usage.empty() ? command.name : command.name + " " + command.usage;
    out += fmt::format("  /{:<{}}  {}\n", head, column, command.help);
  }
  out +=
      "Keys:\n"
      "  Enter        send; while a run is going, queue a steering message (read at its next step)\n"
      "  Alt+Enter    while a run is going, queue a follow-up (read when it would stop)\n"
      "  Ctrl+C       abort the run (durably); when idle, clear the line, twice in a row to exit\n"
      "  Ctrl+D       exit (on an empty line)\n"
      "  Alt+T        show or collapse thinking (as /thinking-show)\n"
      "  Up/Down      history (kept in $XDG_STATE_HOME/cairn/history)\n"
      "  //text       send \"/text\" as a prompt\n";
  return out;
}

}  // namespace cairn::cli::tui
