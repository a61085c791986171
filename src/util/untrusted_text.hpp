// Text that cairn did not write itself — a model's answer and thinking, a
// tool's output, names, labels, ids, anything read from a log or given by a
// remote client — written for a terminal. A terminal acts on control
// characters: ESC[2J clears the screen, OSC 0 sets the window title, OSC 52
// writes the clipboard, OSC 8 makes a link whose target is not its text, a
// carriage return lets a line overwrite what was printed before it. So on a
// terminal each such character is shown as visible text instead:
//
//   C0 controls but \n and \t   U+2400 + the byte, a Control Picture: ESC ␛, CR ␍, BEL ␇, NUL ␀
//   DEL                         ␡ (U+2421)
//   C1 controls (U+0080-U+009F) \u0080 … \u009F (e.g. \u009B, the one-character CSI)
//   a byte that begins no well-formed UTF-8 sequence   \xNN (e.g. \xFF)
//
// Everything else, every other UTF-8 character included, stays as it is.
// A sequence such as ESC [ 3 1 m is made harmless by its ESC alone, so the
// mapping needs no parser and no state, except for a UTF-8 character split
// between two pieces of a stream (VisibleStream).
//
// Where the text does not reach a terminal (a pipe, a file) it is written
// byte for byte: scripts, --json and the log see exactly what was said.
// cairn's own colours and drawing never pass through here.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace cairn {

// `text` with every control character and every invalid byte in visible
// form (the table above). Applying it twice changes nothing more.
std::string visible_text(std::string_view text);

// visible_text for text that arrives in pieces (a streamed answer's
// deltas): the pieces' results joined are visible_text of the pieces
// joined. A piece that ends inside a UTF-8 character keeps that tail until
// the next piece completes it, or finish() shows its bytes as \xNN.
class VisibleStream {
 public:
  std::string next(std::string_view piece);
  std::string finish();

 private:
  std::string held_;
};

// Whether `stream` writes to a terminal.
bool is_terminal(std::FILE* stream);

// `text` as it should reach `stream`: visible_text on a terminal, the same
// bytes elsewhere.
std::string text_for(std::FILE* stream, std::string_view text);

// Writes text_for(stream, text).
void write_untrusted(std::FILE* stream, std::string_view text);

// fmt::print for a line that holds untrusted text and no escape of cairn's
// own: the whole line goes through write_untrusted (cairn's own words hold
// no control character, so they are unchanged).
template <class... Args>
void print_untrusted(std::FILE* stream, fmt::format_string<Args...> format, Args&&... args) {
  write_untrusted(stream, fmt::format(format, std::forward<Args>(args)...));
}

// write_untrusted for a stream of pieces, each flushed as it comes
// (VisibleStream on a terminal, every byte as it is elsewhere).
class UntrustedWriter {
 public:
  explicit UntrustedWriter(std::FILE* stream);
  void write(std::string_view piece);
  // Shows a held incomplete character; call before writing anything else
  // to the stream, and at the end.
  void finish();

 private:
  std::FILE* stream_;
  bool terminal_;
  VisibleStream visible_;
};

}  // namespace cairn
