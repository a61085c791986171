// The interactive mode's terminal: GNU readline in callback mode for the
// input line (editing, history), and a footer above it — the line being
// streamed and the status line — with everything else printed above the
// footer. Output never interleaves with the input: each print clears the
// input line and the footer, writes its lines, draws the footer again and
// lets readline redraw the prompt with what the user was typing.
//
// One instance at a time (readline is a process-wide state). Call it from the
// UI thread only; poll input_fd() and signal_fd() and call on_input() /
// on_signal() when they are readable.
//
// Keys besides readline's own: Enter sends the line, Alt+Enter (ESC CR) sends
// it as "alt", Ctrl+C calls on_interrupt (the terminal's ISIG is off while
// the line is edited, so Ctrl+C is a key and reaches no child process; a
// SIGINT from elsewhere does the same), Alt+T calls on_toggle_thinking,
// Ctrl+D on an empty line sends end-of-input.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace cairn::cli {

class Terminal {
 public:
  struct Handlers {
    // A submitted line, or nullopt for end-of-input; `alt`: sent with Alt+Enter.
    std::function<void(std::optional<std::string> line, bool alt)> on_line;
    std::function<void()> on_interrupt;
    std::function<void()> on_toggle_thinking;
    std::function<void()> on_other_key;  // any key but Ctrl+C
    std::function<void()> on_resize;
  };

  // `history`: the history file (read now, appended to per line); none when empty.
  Terminal(Handlers handlers, std::optional<std::filesystem::path> history);
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // Shows the footer and the prompt; input starts.
  void start(const std::string& prompt);
  // Removes the input line and the footer (the screen keeps what was printed).
  void stop();

  int input_fd() const;
  int signal_fd() const { return signal_read_; }
  void on_input();
  void on_signal();

  // Takes the footer and the input line off the screen, for output that
  // does not go through print() (another component's stderr), and back.
  void pause() { hide(); }
  void resume() { show(); }
  // Runs `fn` with the terminal as a child program expects it (an editor):
  // the footer off the screen and the line editor's terminal modes undone.
  void run_outside(const std::function<void()>& fn);

  // Prints complete lines ("\n"-terminated) above the footer.
  void print(std::string_view lines);
  // Prints `lines`, and sets the live line and the status line, in one repaint.
  void update(std::string_view lines, std::string live, std::string status);
  void set_status(std::string status);
  void set_prompt(std::string prompt);
  // The input line's text; replacing it puts the cursor at its end.
  std::string input() const;
  void set_input(const std::string& text);
  // Adds a line to the history (and the history file).
  void remember(const std::string& line);

  std::size_t width() const;
  bool color() const { return color_; }

 private:
  static void line_handler(char* line);
  static int alt_enter(int count, int key);
  static int ctrl_c(int count, int key);
  static int alt_t(int count, int key);
  static int getc_hook(FILE* stream);
  static void prep_terminal(int meta);
  static int startup_hook();

  void hide();
  void show();
  void write_out(std::string_view text);
  void handle_line(char* line);

  Handlers handlers_;
  std::optional<std::filesystem::path> history_;
  std::string prompt_;
  std::string live_;
  std::string status_;
  std::optional<std::string> pending_input_;  // put in the line when readline next starts one
  int signal_read_ = -1, signal_write_ = -1;
  bool started_ = false;
  bool prompt_shown_ = false;  // readline shows the prompt and the input line
  bool hidden_ = true;         // the footer and the input line are off the screen
  int footer_rows_ = 0;
  bool alt_ = false;
  bool color_ = false;
};

}  // namespace cairn::cli
