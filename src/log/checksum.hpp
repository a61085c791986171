// The checksum every record line cairn writes carries, so that damage inside
// a string (a flipped bit, a byte overwritten) is found on read, not only
// damage that breaks the JSON.
//
// A record line is a JSON object; cairn ends it with one more member,
// `,"crc":"xxxxxxxx"}`: eight lowercase hex digits of the CRC-32C of every
// byte of the line before that member. Keeping it last and fixed-width lets
// a reader check a line without parsing it, and leaves the rest of the line
// exactly as it was encoded. `crc` is therefore a reserved top-level key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/error.hpp"

namespace cairn {

// CRC-32C (Castagnoli), the polynomial LevelDB and iSCSI use; in hardware
// where the CPU has it.
std::uint32_t crc32c(std::string_view bytes);

inline constexpr std::string_view kChecksumKey = "crc";
// Size of `,"crc":"xxxxxxxx"}`.
inline constexpr std::size_t kChecksumSuffixSize = 18;

// Ends an encoded record line (an object, last byte '}') with its checksum.
void add_checksum(std::string& line);

enum class Checksum {
  valid,   // the line ends with a checksum, and it matches
  absent,  // the line has no checksum member (written before checksums, or not by cairn)
};
// Checks a line's checksum. A checksum that does not match is corrupt_log,
// naming both values.
Result<Checksum> check_checksum(std::string_view line);

}  // namespace cairn
