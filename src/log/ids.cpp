// Ids and timestamps.
#include <chrono>
#include <ctime>
#include <random>

#include <fmt/format.h>

#include "cairn/log/ids.hpp"

namespace cairn {
namespace {

std::uint64_t random_u64() {
  // Seeded once per thread from the OS; ids need uniqueness, not secrecy.
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine();
}

}  // namespace

std::string new_entry_id() {
  // 48 random bits: short enough to read, but a million of them collide with
  // odds of about 1 in 560 (n^2 / 2^49), hence Session::new_entry_id.
  return fmt::format("{:012x}", random_u64() & 0xffffffffffffULL);
}

std::string new_session_id() {
  // UUID version 7: a millisecond timestamp first, so ids sort by creation.
  const auto ms = static_cast<std::uint64_t>(now_unix_ms());
  const std::uint64_t a = random_u64(), b = random_u64();
  const std::uint64_t high = (ms << 16) | 0x7000 | (a & 0x0fff);
  const std::uint64_t low = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", high >> 32, (high >> 16) & 0xffff, high & 0xffff,
                     low >> 48, low & 0xffffffffffffULL);
}

std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string now_iso8601() {
  const std::int64_t ms = now_unix_ms();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

}  // namespace cairn
