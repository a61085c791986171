#include "interactive_terminal.hpp"

#include <fcntl.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>

// readline.h needs stdio.h first.
#include <readline/history.h>
#include <readline/readline.h>

#include <fmt/format.h>

#include "tui/terminal_text.hpp"

namespace cairn::cli {
namespace {

Terminal* g_terminal = nullptr;  // readline's callbacks are plain functions
int g_signal_write = -1;         // the signal handlers' end of the self-pipe

void on_signal_caught(int signal) {
  const int saved = errno;
  const char byte = signal == SIGWINCH ? 'w' : 'i';
  if (g_signal_write >= 0) {
    const ssize_t written = ::write(g_signal_write, &byte, 1);
    (void)written;  // a full pipe already holds a wake-up
  }
  errno = saved;
}

struct sigaction g_old_int, g_old_winch;

std::string crlf(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

}  // namespace

Terminal::Terminal(Handlers handlers, std::optional<std::filesystem::path> history)
    : handlers_(std::move(handlers)), history_(std::move(history)) {
  g_terminal = this;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    signal_read_ = fds[0];
    signal_write_ = fds[1];
    g_signal_write = signal_write_;
  }
  struct sigaction action {};
  action.sa_handler = on_signal_caught;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGWINCH, &action, &g_old_winch);

  const char* term = std::getenv("TERM");
  color_ = ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr && term && std::strcmp(term, "dumb") != 0;

  rl_readline_name = "cairn";
  rl_instream = stdin;
  rl_outstream = stdout;
  rl_catch_signals = 0;   // SIGINT and SIGWINCH come through the self-pipe
  rl_catch_sigwinch = 0;
  rl_change_environment = 0;
  rl_getc_function = getc_hook;
  rl_prep_term_function = prep_terminal;
  rl_startup_hook = startup_hook;
  rl_initialize();
  rl_bind_keyseq("\\e\\r", alt_enter);
  rl_bind_keyseq("\\e\\n", alt_enter);
  rl_bind_keyseq("\\et", alt_t);
  rl_bind_key(3, ctrl_c);  // Ctrl+C

  using_history();
  if (history_) {
    std::error_code ec;
    std::filesystem::create_directories(history_->parent_path(), ec);
    read_history(history_->c_str());
  }
}

Terminal::~Terminal() {
  stop();
  if (history_) history_truncate_file(history_->c_str(), 1000);
  rl_getc_function = rl_getc;
  rl_prep_term_function = rl_prep_terminal;
  rl_startup_hook = nullptr;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGWINCH, &g_old_winch, nullptr);
  g_signal_write = -1;
  if (signal_read_ >= 0) ::close(signal_read_);
  if (signal_write_ >= 0) ::close(signal_write_);
  g_terminal = nullptr;
}

void Terminal::prep_terminal(int meta) {
  rl_prep_terminal(meta);
  // Ctrl+C is a key while the line is edited: the run's child processes
  // (bash and what it starts) share the terminal and must not get SIGINT.
  termios settings{};
  const int fd = fileno(rl_instream ? rl_instream : stdin);
  if (::tcgetattr(fd, &settings) == 0) {
    settings.c_lflag &= ~static_cast<tcflag_t>(ISIG);
    ::tcsetattr(fd, TCSANOW, &settings);
  }
}

int Terminal::getc_hook(FILE* stream) {
  const int c = rl_getc(stream);
  if (c != 3 && c != EOF && g_terminal && g_terminal->handlers_.on_other_key) g_terminal->handlers_.on_other_key();
  return c;
}

int Terminal::startup_hook() {
  if (g_terminal && g_terminal->pending_input_) {
    rl_insert_text(g_terminal->pending_input_->c_str());
    g_terminal->pending_input_.reset();
  }
  return 0;
}

int Terminal::alt_enter(int count, int key) {
  if (g_terminal) g_terminal->alt_ = true;
  return rl_newline(count, key);
}

int Terminal::ctrl_c(int, int) {
  if (g_terminal && g_terminal->handlers_.on_interrupt) g_terminal->handlers_.on_interrupt();
  return 0;
}

int Terminal::alt_t(int, int) {
  if (g_terminal && g_terminal->handlers_.on_toggle_thinking) g_terminal->handlers_.on_toggle_thinking();
  return 0;
}

void Terminal::line_handler(char* line) {
  if (g_terminal) g_terminal->handle_line(line);
  std::free(line);
}

void Terminal::handle_line(char* line) {
  // Readline has moved below the accepted line (or, at end-of-input, stayed
  // on it). Take the line, the prompt and the footer off the screen: what
  // was sent shows as the transcript has it.
  const std::size_t columns = std::max<std::size_t>(width(), 1);
  int up = footer_rows_;
  std::string erase = "\r";
  if (line) {
    const std::size_t used = tui::display_width(prompt_) + tui::display_width(line);
    up += static_cast<int>(used / columns) + 1;
  } else if (const char* paste = rl_variable_value("enable-bracketed-paste"); paste && std::strcmp(paste, "on") == 0) {
    up += 1;  // readline ends bracketed paste mode with a newline at end-of-input
  }
  if (up > 0) erase += fmt::format("\x1b[{}A", up);
  erase += "\x1b[J";
  write_out(erase);
  footer_rows_ = 0;
  hidden_ = true;
  prompt_shown_ = false;

  const bool alt = std::exchange(alt_, false);
  if (handlers_.on_line) {
    handlers_.on_line(line ? std::optional<std::string>(line) : std::nullopt, alt);
  }
  if (!started_) return;
  // Readline shows the prompt again as soon as this returns: the footer goes first.
  show();
  prompt_shown_ = true;
}

void Terminal::start(const std::string& prompt) {
  if (started_) return;
  started_ = true;
  prompt_ = prompt;
  show();
  prompt_shown_ = true;
  rl_callback_handler_install(prompt_.c_str(), line_handler);
}

void Terminal::stop() {
  if (!started_) return;
  hide();
  started_ = false;
  prompt_shown_ = false;
  rl_callback_handler_remove();
  std::fflush(stdout);
}

int Terminal::input_fd() const { return fileno(rl_instream ? rl_instream : stdin); }

void Terminal::on_input() {
  if (started_) rl_callback_read_char();
}

void Terminal::on_signal() {
  char bytes[64];
  for (;;) {
    const ssize_t n = ::read(signal_read_, bytes, sizeof bytes);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (bytes[i] == 'i' && handlers_.on_interrupt) {
        handlers_.on_interrupt();
      } else if (bytes[i] == 'w') {
        hide();
        rl_resize_terminal();
        if (handlers_.on_resize) handlers_.on_resize();
        show();
      }
    }
  }
}

void Terminal::write_out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

void Terminal::run_outside(const std::function<void()>& fn) {
  hide();
  rl_deprep_terminal();
  fn();
  rl_prep_terminal(1);
  if (prompt_shown_) rl_forced_update_display();
  show();
}

void Terminal::hide() {
  if (hidden_) return;
  if (prompt_shown_) rl_clear_visible_line();  // the cursor ends at the input's first row
  std::string erase = "\r";
  if (footer_rows_ > 0) erase += fmt::format("\x1b[{}A", footer_rows_);
  erase += "\x1b[J";
  write_out(erase);
  footer_rows_ = 0;
  hidden_ = true;
}

void Terminal::show() {
  if (!hidden_ || !started_) return;
  const std::size_t room = width() > 1 ? width() - 1 : 1;
  std::string footer;
  int rows = 0;
  if (!live_.empty()) {
    footer += tui::truncate_to_width(live_, room) + "\r\n";
    ++rows;
  }
  // The status line, then a dim line for each running subagent.
  for (std::size_t start = 0, index = 0; start < status_.size(); ++index) {
    const auto end = std::min(status_.find('\n', start), status_.size());
    const std::string line = tui::truncate_to_width(std::string_view(status_).substr(start, end - start), room);
    footer += (index == 0 ? tui::Style{color_}.inverse(line) : tui::Style{color_}.dim(line)) + "\r\n";
    ++rows;
    start = end + 1;
  }
  write_out(footer);
  footer_rows_ = rows;
  hidden_ = false;
  if (prompt_shown_) {
    rl_on_new_line();
    rl_redisplay();
  }
}

void Terminal::print(std::string_view lines) {
  if (lines.empty()) return;
  if (!started_) {
    write_out(crlf(lines));
    return;
  }
  hide();
  write_out(crlf(lines));
  show();
}

void Terminal::update(std::string_view lines, std::string live, std::string status) {
  if (lines.empty() && live == live_ && status == status_) return;
  if (!started_) {
    live_ = std::move(live);
    status_ = std::move(status);
    write_out(crlf(lines));
    return;
  }
  hide();
  write_out(crlf(lines));
  live_ = std::move(live);
  status_ = std::move(status);
  show();
}

void Terminal::set_status(std::string status) { update({}, live_, std::move(status)); }

void Terminal::set_prompt(std::string prompt) {
  if (prompt == prompt_) return;
  prompt_ = std::move(prompt);
  if (!started_) return;
  if (!prompt_shown_) {
    rl_set_prompt(prompt_.c_str());
    return;
  }
  hide();
  rl_set_prompt(prompt_.c_str());
  show();
}

std::string Terminal::input() const {
  if (!prompt_shown_ || !rl_line_buffer) return pending_input_.value_or(std::string());
  return std::string(rl_line_buffer, static_cast<std::size_t>(rl_end));
}

void Terminal::set_input(const std::string& text) {
  if (!prompt_shown_) {
    pending_input_ = text;
    return;
  }
  rl_replace_line(text.c_str(), 0);
  rl_point = rl_end;
  if (!hidden_) rl_redisplay();
}

void Terminal::remember(const std::string& line) {
  add_history(line.c_str());
  if (!history_) return;
  std::error_code ec;
  if (!std::filesystem::exists(*history_, ec)) {
    write_history(history_->c_str());
  } else {
    append_history(1, history_->c_str());
  }
}

std::size_t Terminal::width() const {
  int rows = 0, columns = 0;
  rl_get_screen_size(&rows, &columns);
  return columns > 0 ? static_cast<std::size_t>(columns) : 80;
}

}  // namespace cairn::cli
