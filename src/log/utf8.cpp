#include "cairn/utf8.hpp"

#include <simdjson.h>

namespace cairn {

int utf8_sequence(std::string_view bytes) {
  if (bytes.empty()) return -1;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  int length;
  unsigned char low = 0x80, high = 0xBF;  // the range of the byte after the lead
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  for (int i = 1; i < length; ++i) {
    if (static_cast<std::size_t>(i) >= bytes.size()) return -1;
    const unsigned char c = byte(static_cast<std::size_t>(i));
    if (i == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) return 0;
  }
  return length;
}

std::optional<std::size_t> invalid_utf8_at(std::string_view text) {
  if (simdjson::validate_utf8(text.data(), text.size())) return std::nullopt;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::nullopt;
}

std::size_t utf8_floor(std::string_view text, std::size_t n) {
  if (n >= text.size()) return text.size();
  // Step back over continuation bytes to the start of the sequence at n.
  std::size_t k = n;
  while (k > 0 && n - k < 3 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
  return (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80 ? n : k;
}

char32_t utf8_decode(std::string_view bytes, std::size_t at, std::size_t& length) {
  length = utf8_sequence_length(bytes, at);
  if (length == 0) {
    length = 1;
    return 0xFFFD;
  }
  // Well-formed, so the lead's marker bits and each continuation's 10 are known.
  static constexpr unsigned char kLeadBits[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t code_point = static_cast<unsigned char>(bytes[at]) & kLeadBits[length];
  for (std::size_t k = 1; k < length; ++k) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(bytes[at + k]) & 0x3F);
  }
  return code_point;
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t length = utf8_sequence_length(bytes, i);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(bytes.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace cairn
