#include "util/untrusted_text.hpp"

#include <unistd.h>

#include <utility>

#include "cairn/utf8.hpp"

namespace cairn {
namespace {

// Bytes that stand for themselves: printable ASCII, tab and newline.
bool plain(unsigned char c) { return (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n'; }

void append_hex(std::string& out, const char* prefix, unsigned value, int digits) {
  out += fmt::format("{}{:0{}X}", prefix, value, digits);
}

// Appends the visible form of `text` to `out`; returns how many bytes were
// taken. With `more_follows`, a tail that ends inside a well-formed UTF-8
// character is left (the next piece may complete it); without, its bytes
// are shown as invalid.
std::size_t append_visible(std::string& out, std::string_view text, bool more_follows) {
  out.reserve(out.size() + text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    // A run of plain bytes is copied at once: most text is nothing else.
    std::size_t run = i;
    while (run < text.size() && plain(static_cast<unsigned char>(text[run]))) ++run;
    out.append(text.substr(i, run - i));
    i = run;
    if (i == text.size()) break;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20) {
      // U+2400 + c in UTF-8: E2 90 (80 + c).
      out += "\xE2\x90";
      out += static_cast<char>(0x80 + c);
      ++i;
      continue;
    }
    if (c == 0x7F) {
      out += "\xE2\x90\xA1";  // U+2421 SYMBOL FOR DELETE
      ++i;
      continue;
    }
    const int length = utf8_sequence(text.substr(i));
    if (length < 0 && more_follows) return i;
    if (length <= 0) {
      append_hex(out, "\\x", c, 2);
      ++i;
      continue;
    }
    // C1 controls are U+0080..U+009F: C2 80..C2 9F.
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (c == 0xC2 && second < 0xA0) {
      append_hex(out, "\\u", second, 4);
    } else {
      out.append(text.substr(i, static_cast<std::size_t>(length)));
    }
    i += static_cast<std::size_t>(length);
  }
  return i;
}

}  // namespace

std::string visible_text(std::string_view text) {
  std::string out;
  append_visible(out, text, /*more_follows=*/false);
  return out;
}

std::string VisibleStream::next(std::string_view piece) {
  std::string joined = std::exchange(held_, {});
  joined.append(piece);
  std::string out;
  const std::size_t taken = append_visible(out, joined, /*more_follows=*/true);
  held_ = joined.substr(taken);
  return out;
}

std::string VisibleStream::finish() { return visible_text(std::exchange(held_, {})); }

bool is_terminal(std::FILE* stream) { return ::isatty(::fileno(stream)) == 1; }

std::string text_for(std::FILE* stream, std::string_view text) {
  return is_terminal(stream) ? visible_text(text) : std::string(text);
}

void write_untrusted(std::FILE* stream, std::string_view text) {
  const std::string shown = text_for(stream, text);
  std::fwrite(shown.data(), 1, shown.size(), stream);
}

UntrustedWriter::UntrustedWriter(std::FILE* stream) : stream_(stream), terminal_(is_terminal(stream)) {}

void UntrustedWriter::write(std::string_view piece) {
  if (!terminal_) {
    std::fwrite(piece.data(), 1, piece.size(), stream_);
  } else {
    const std::string shown = visible_.next(piece);
    std::fwrite(shown.data(), 1, shown.size(), stream_);
  }
  std::fflush(stream_);
}

void UntrustedWriter::finish() {
  if (!terminal_) return;
  const std::string shown = visible_.finish();
  if (shown.empty()) return;
  std::fwrite(shown.data(), 1, shown.size(), stream_);
  std::fflush(stream_);
}

}  // namespace cairn
