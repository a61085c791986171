#include "terminal_text.hpp"

#include <fmt/format.h>

#include "cairn/utf8.hpp"

namespace cairn::cli::tui {
namespace {

// The length of the escape sequence starting at text[i] (text[i] == ESC).
std::size_t escape_length(std::string_view text, std::size_t i) {
  if (i + 1 >= text.size()) return 1;
  const char kind = text[i + 1];
  if (kind == '[') {  // CSI: parameters, then a final byte in @..~
    std::size_t j = i + 2;
    while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;
    return std::min(text.size(), j + 1) - i;
  }
  if (kind == ']') {  // OSC: up to BEL or ESC backslash
    std::size_t j = i + 2;
    while (j < text.size()) {
      if (text[j] == '\a') return j + 1 - i;
      if (text[j] == '\x1b' && j + 1 < text.size() && text[j + 1] == '\\') return j + 2 - i;
      ++j;
    }
    return text.size() - i;
  }
  return 2;
}

int code_point_width(char32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return 0;
  if ((cp >= 0x300 && cp <= 0x36F) || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x20D0 && cp <= 0x20FF) ||
      (cp >= 0xFE00 && cp <= 0xFE0F)) {
    return 0;
  }
  if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
      (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
      (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) || (cp >= 0x1F900 && cp <= 0x1F9FF) ||
      (cp >= 0x20000 && cp <= 0x3FFFD)) {
    return 2;
  }
  return 1;
}

std::string sgr(std::string_view code, std::string_view text, bool enabled) {
  if (!enabled) return std::string(text);
  return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\x1b') {
      i += escape_length(text, i);
      continue;
    }
    std::size_t length = 1;
    width += static_cast<std::size_t>(code_point_width(utf8_decode(text, i, length)));
    i += length;
  }
  return width;
}

std::string truncate_to_width(std::string_view text, std::size_t width) {
  if (display_width(text) <= width) return std::string(text);
  const std::size_t budget = width >= 3 ? width - 3 : 0;
  std::string out;
  bool styled = false;
  std::size_t used = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\x1b') {
      const std::size_t n = escape_length(text, i);
      out.append(text.substr(i, n));
      styled = true;
      i += n;
      continue;
    }
    std::size_t length = 1;
    const auto w = static_cast<std::size_t>(code_point_width(utf8_decode(text, i, length)));
    if (used + w > budget) break;
    out.append(text.substr(i, length));
    used += w;
    i += length;
  }
  out += std::string(std::min<std::size_t>(3, width), '.');
  if (styled) out += "\x1b[0m";
  return out;
}

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.emplace_back(text.substr(start));
      break;
    }
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::size_t wrap_point(std::string_view text, std::size_t width) {
  if (width == 0) width = 1;
  std::size_t used = 0;
  std::size_t last_space = std::string_view::npos;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = 1;
    const auto w = static_cast<std::size_t>(code_point_width(utf8_decode(text, i, length)));
    if (used + w > width) {
      // Break after the last space that fits, unless that leaves nothing.
      if (last_space != std::string_view::npos && last_space > 0) return last_space + 1;
      return i == 0 ? length : i;
    }
    if (text[i] == ' ') last_space = i;
    used += w;
    i += length;
  }
  return text.size();
}

std::string Style::dim(std::string_view text) const { return sgr("2", text, enabled); }
std::string Style::bold(std::string_view text) const { return sgr("1", text, enabled); }
std::string Style::red(std::string_view text) const { return sgr("31", text, enabled); }
std::string Style::green(std::string_view text) const { return sgr("32", text, enabled); }
std::string Style::cyan(std::string_view text) const { return sgr("36", text, enabled); }
std::string Style::inverse(std::string_view text) const { return sgr("7", text, enabled); }

std::string strip_escapes(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\x1b') {
      i += escape_length(text, i);
      continue;
    }
    out += text[i++];
  }
  return out;
}

}  // namespace cairn::cli::tui
