#include "names.hpp"

#include <fmt/format.h>

#include "cairn/utf8.hpp"
#include "http_types.hpp"

namespace cairn::serve {

Status check_name(std::string_view name, std::string_view what) {
  if (name.empty() || name.size() > kMaxNameBytes || name == "." || name == "..") {
    return fail(Errc::invalid_argument, fmt::format("bad {} id: empty, longer than {} bytes, or . or ..", what, kMaxNameBytes));
  }
  // A name is shown on terminals and pages: no control character of either
  // set (C0 and DEL, and C1: U+0080-U+009F, ESC's one-character forms), and
  // nothing that is not UTF-8.
  for (std::size_t at = 0; at < name.size();) {
    std::size_t length = 0;
    const char32_t c = utf8_decode(name, at, length);
    if (utf8_sequence_length(name, at) == 0) {
      return fail(Errc::invalid_argument, fmt::format("bad {} id: it is not UTF-8", what));
    }
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '/' || c == '\\') {
      return fail(Errc::invalid_argument, fmt::format("bad {} id: it holds a separator or control character", what));
    }
    at += length;
  }
  return {};
}

std::string percent_decode(std::string_view text, bool& ok) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  ok = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {
      ok = false;
      return out;
    }
    const int high = hex(text[i + 1]), low = hex(text[i + 2]);
    if (high < 0 || low < 0) {
      ok = false;
      return out;
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

Result<std::string> path_name(std::string_view raw, std::string_view what) {
  bool ok = false;
  std::string text = percent_decode(raw, ok);
  if (!ok) return fail(Errc::invalid_argument, fmt::format("bad percent-encoding in the {} id", what));
  if (auto checked = check_name(text, what); !checked) return std::unexpected(checked.error());
  return text;
}

}  // namespace cairn::serve
