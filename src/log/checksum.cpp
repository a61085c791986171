#include "log/checksum.hpp"

#include <array>
#include <cstring>

#include <fmt/format.h>

namespace cairn {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78;  // CRC-32C, reflected

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    table[i] = crc;
  }
  return table;
}
constexpr auto kTable = make_table();

std::uint32_t crc32c_portable(std::uint32_t crc, const unsigned char* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) crc = kTable[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// SSE 4.2's crc32 instruction computes CRC-32C eight bytes at a time.
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc, const unsigned char* data,
                                                               std::size_t size) {
  std::uint64_t wide = crc;
  for (; size >= 8; data += 8, size -= 8) {
    std::uint64_t word;
    std::memcpy(&word, data, sizeof word);
    wide = __builtin_ia32_crc32di(wide, word);
  }
  auto narrow = static_cast<std::uint32_t>(wide);
  for (; size > 0; ++data, --size) narrow = __builtin_ia32_crc32qi(narrow, *data);
  return narrow;
}
const bool kHasSse42 = __builtin_cpu_supports("sse4.2");
#endif

constexpr std::string_view kPrefix = ",\"crc\":\"";  // then 8 hex digits and "}

// A lowercase hex digit's value, or -1.
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

struct Stored {
  std::size_t at;       // where the checksum member begins
  std::uint32_t value;  // the checksum it holds
};

// The checksum member the line ends with, if it has one.
std::optional<Stored> stored_checksum(std::string_view line) {
  if (line.size() < kChecksumSuffixSize + 1) return std::nullopt;
  const std::size_t at = line.size() - kChecksumSuffixSize;
  if (line.substr(at, kPrefix.size()) != kPrefix || line.substr(line.size() - 2) != "\"}") return std::nullopt;
  std::uint32_t value = 0;
  for (std::size_t i = at + kPrefix.size(); i < line.size() - 2; ++i) {
    const int digit = hex_value(line[i]);
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<std::uint32_t>(digit);
  }
  return Stored{at, value};
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
#if defined(__x86_64__)
  if (kHasSse42) return ~crc32c_sse42(~0u, data, bytes.size());
#endif
  return ~crc32c_portable(~0u, data, bytes.size());
}

void add_checksum(std::string& line) {
  // The caller encoded a JSON object: its last byte closes it.
  if (line.empty() || line.back() != '}') return;
  line.pop_back();
  const std::uint32_t crc = crc32c(line);
  line += kPrefix;
  line += fmt::format("{:08x}", crc);
  line += "\"}";
}

Result<Checksum> check_checksum(std::string_view line) {
  const auto stored = stored_checksum(line);
  if (!stored) return Checksum::absent;
  const std::uint32_t computed = crc32c(line.substr(0, stored->at));
  if (computed != stored->value) {
    return fail(Errc::corrupt_log, fmt::format("checksum mismatch: the record's bytes changed after they were written "
                                           "(stored {:08x}, computed {:08x})",
                                           stored->value, computed));
  }
  return Checksum::valid;
}

}  // namespace cairn
