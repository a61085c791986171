// pi-shaped session files for the benchmarks, as pi 1.6's SessionManager
// writes them (format version 3): a linear branch of messages — user,
// assistant with thinking and a tool call, tool result, assistant answer,
// repeated — and, in the compacting shape, a `compaction` entry in place of
// every 1,000th entry, keeping the last ten turns before it as pi's
// keepRecentTokens would.
#pragma once

#include <cstdint>
#include <string>

namespace cairn::bench {

enum class PiShape { linear, compacting };

const char* shape_name(PiShape shape);

// How many entries lie between two compactions in the compacting shape.
inline constexpr std::uint64_t kCompactionEvery = 1000;

// Writes a header and `entries` entries to `path`; exits on a write error.
void write_pi_file(const std::string& path, std::uint64_t entries, PiShape shape);

}  // namespace cairn::bench
