// What a submitted line or a key means in the interactive mode, apart from
// the terminal: a prompt, a steering message or a follow-up (depending on
// whether a run is going and which key sent it), a slash command; what
// Ctrl+C does; where the history lives.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "slash_commands.hpp"

namespace cairn::cli::tui {

struct InputAction {
  enum class Kind { nothing, prompt, steer, follow_up, command };
  Kind kind = Kind::nothing;
  std::string text;     // prompt, steer, follow_up
  SlashCommand command;  // command
};

// `alt_enter`: the line was sent with Alt+Enter. While a run is going,
// Enter queues a steering message and Alt+Enter a follow-up; when idle both
// start a run. Slash commands are commands either way.
InputAction classify_line(std::string_view line, bool running, bool alt_enter);

// Ctrl+C: aborts a run; when idle, clears the line, and a second Ctrl+C in
// a row (no other key between) exits.
class InterruptPolicy {
 public:
  enum class Action { abort, clear_line, arm_exit, exit };
  Action on_interrupt(bool running, bool line_empty);
  void on_other_key() { armed_ = false; }
  bool armed() const { return armed_; }

 private:
  bool armed_ = false;
};

// $XDG_STATE_HOME/cairn/history, else ~/.local/state/cairn/history; nullopt
// when neither variable is set.
using GetEnv = std::function<const char*(const char*)>;
std::optional<std::filesystem::path> history_path(const GetEnv& getenv);

}  // namespace cairn::cli::tui
