#include "input.hpp"

namespace cairn::cli::tui {

InputAction classify_line(std::string_view line, bool running, bool alt_enter) {
  InputAction action;
  if (trim(line).empty()) return action;
  if (auto command = parse_slash(line)) {
    action.kind = InputAction::Kind::command;
    action.command = std::move(*command);
    return action;
  }
  action.text = unescape_slash(line);
  if (!running) {
    action.kind = InputAction::Kind::prompt;
  } else {
    action.kind = alt_enter ? InputAction::Kind::follow_up : InputAction::Kind::steer;
  }
  return action;
}

InterruptPolicy::Action InterruptPolicy::on_interrupt(bool running, bool line_empty) {
  if (running) {
    armed_ = false;
    return Action::abort;
  }
  if (armed_) {
    armed_ = false;
    return Action::exit;
  }
  armed_ = true;
  return line_empty ? Action::arm_exit : Action::clear_line;
}

std::optional<std::filesystem::path> history_path(const GetEnv& getenv) {
  if (const char* state = getenv("XDG_STATE_HOME"); state && *state) {
    return std::filesystem::path(state) / "cairn" / "history";
  }
  if (const char* home = getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".local" / "state" / "cairn" / "history";
  }
  return std::nullopt;
}

}  // namespace cairn::cli::tui
