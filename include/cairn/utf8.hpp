// Well-formed UTF-8 (RFC 3629: no overlong form, no surrogate, nothing past
// U+10FFFF), one sequence at a time: what every layer that takes text from
// outside (prompts, model output, tool output, a terminal) checks.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cairn {

// The length (1 to 4) of the well-formed sequence at the start of `bytes`;
// 0 when the bytes there are not one; -1 when `bytes` is empty or ends inside
// a sequence whose bytes so far are well-formed (more bytes may complete it).
int utf8_sequence(std::string_view bytes);

// The length of the well-formed sequence at `bytes[at]`, or 0 (a sequence
// cut short by the end of `bytes` is not one).
inline std::size_t utf8_sequence_length(std::string_view bytes, std::size_t at) {
  const int length = utf8_sequence(bytes.substr(at));
  return length > 0 ? static_cast<std::size_t>(length) : 0;
}

// The offset of the first byte that does not begin a well-formed sequence;
// nothing when all of `text` is UTF-8 (checked at SIMD speed first).
std::optional<std::size_t> invalid_utf8_at(std::string_view text);

// The largest n' <= n that does not split a UTF-8 sequence of `text`: where
// to cut it short. (n itself when no lead byte is within three bytes before.)
std::size_t utf8_floor(std::string_view text, std::size_t n);

// The code point of the well-formed sequence at `bytes[at]`, its byte count
// in `length`; a byte that begins none reads as U+FFFD of length 1, as a
// terminal shows it.
char32_t utf8_decode(std::string_view bytes, std::size_t at, std::size_t& length);

// `bytes` with every byte that begins no well-formed sequence replaced by
// U+FFFD: fit for the log, which refuses invalid UTF-8.
std::string to_valid_utf8(std::string_view bytes);

}  // namespace cairn
