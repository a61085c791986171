// Text as a terminal shows it: display width of UTF-8 (wide East Asian
// characters take two columns, combining marks none, ANSI escapes none),
// cutting to a width, wrapping, and the styles the interactive mode uses.
// Pure functions: the interactive mode's tests check their output exactly.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::cli::tui {

// Columns `text` takes; escape sequences (CSI, OSC) take none.
std::size_t display_width(std::string_view text);

// `text` cut to at most `width` columns, ending in "..." when cut. Escapes
// are kept (a cut inside a styled run closes it with a reset).
std::string truncate_to_width(std::string_view text, std::size_t width);

// Whitespace runs (newlines included) become one space.
std::string collapse_whitespace(std::string_view text);

// Lines of `text` split at '\n' (a trailing '\n' ends the last line, it does
// not start an empty one).
std::vector<std::string> split_lines(std::string_view text);

// Where to break `text` (no '\n' in it, no escapes) so that the first part
// fits `width` columns: after the last space that fits, else at the width.
// Returns text.size() when it fits whole.
std::size_t wrap_point(std::string_view text, std::size_t width);

// Styles: SGR escapes when `enabled`, the bare text otherwise.
struct Style {
  bool enabled = true;
  std::string dim(std::string_view text) const;
  std::string bold(std::string_view text) const;
  std::string red(std::string_view text) const;
  std::string green(std::string_view text) const;
  std::string cyan(std::string_view text) const;
  std::string inverse(std::string_view text) const;
};

// Removes SGR/CSI/OSC escapes.
std::string strip_escapes(std::string_view text);

}  // namespace cairn::cli::tui
