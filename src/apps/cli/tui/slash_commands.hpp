// The interactive mode's slash commands: parsing a line, the command table
// (/help prints it), and the hint for an unknown one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::cli::tui {

struct SlashCommand {
  std::string name;  // without the slash
  std::string args;  // the rest of the line, trimmed
};

// A line starting with '/' and a name is a command; "//text" is the text
// "/text" sent as a prompt, and anything else is no command.
std::optional<SlashCommand> parse_slash(std::string_view line);
// The text a "//..." line stands for, or the line itself.
std::string unescape_slash(std::string_view line);

struct CommandInfo {
  std::string name;
  std::string usage;  // arguments, e.g. "[PROVIDER/ID]"
  std::string help;
};
const std::vector<CommandInfo>& slash_commands();
const CommandInfo* find_command(std::string_view name);

// "unknown command /fork2 (did you mean /fork?) - /help lists the commands"
std::string unknown_command_hint(std::string_view name);
std::string help_text();

// Splits "WORD rest of line" into its first word and the trimmed rest.
std::pair<std::string, std::string> split_first_word(std::string_view text);
std::string trim(std::string_view text);

}  // namespace cairn::cli::tui
