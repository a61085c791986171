#include "utf8_check.hpp"

#include <cstddef>

#include <fmt/format.h>

#include "cairn/utf8.hpp"

namespace cairn::cli::tui {
std::optional<std::string> first_invalid_utf8(std::string_view text) {
  std::size_t line = 1, column = 1;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence_length(text, at);
    if (length == 0) {
      return fmt::format("byte 0x{:02X} at line {}, column {}", static_cast<unsigned char>(text[at]), line, column);
    }
    if (text[at] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    at += length;
  }
  return std::nullopt;
}

}  // namespace cairn::cli::tui
