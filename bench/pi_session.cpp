// See pi_session.hpp.
#include "pi_session.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include <fmt/format.h>

namespace cairn::bench {

namespace {

// pi's ids: 8 hex digits of a random UUID. Deterministic here.
std::string pi_id(std::uint64_t n) {
  // An odd multiplier is a bijection on 32 bits: no two entries share an id.
  return fmt::format("{:08x}", static_cast<std::uint32_t>(n + 1) * 0x9E3779B1u);
}

std::string iso(std::int64_t ms) {
  const std::int64_t s = ms / 1000;
  return fmt::format("2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z", 1 + (s / 86400) % 28, (s / 3600) % 24, (s / 60) % 60,
                     s % 60, ms % 1000);
}

std::string entry_head(const char* type, std::uint64_t n, std::int64_t ms) {
  return fmt::format(R"({{"type":"{}","id":"{}","parentId":{},"timestamp":"{}",)", type, pi_id(n),
                     n == 0 ? "null" : fmt::format("\"{}\"", pi_id(n - 1)), iso(ms));
}

// The m-th message of the repeated four-message turn, as entry n.
std::string message_line(std::uint64_t n, std::uint64_t m, std::int64_t ms) {
  const std::uint64_t turn = m / 4;
  const std::string usage =
      R"("usage":{"input":12000,"output":80,"cacheRead":11000,"cacheWrite":0,"totalTokens":23080,)"
      R"("cost":{"input":0.036,"output":0.0012,"cacheRead":0.0033,"cacheWrite":0,"total":0.0405}})";
  std::string message;
  switch (m % 4) {
    case 0:
      message = fmt::format(
          R"({{"role":"user","content":[{{"type":"text","text":"Please read src/module_{}.ts and fix the failing test in it; keep the public API as it is."}}],"timestamp":{}}})",
          turn % 97, ms);
      break;
    case 1:
      message = fmt::format(
          R"({{"role":"assistant","content":[{{"type":"thinking","thinking":"The test for module {} fails; read the source before changing anything.","thinkingSignature":"c2lnLTE="}},{{"type":"text","text":"I'll read the file first."}},{{"type":"toolCall","id":"toolu_{:06}","name":"read","arguments":{{"path":"src/module_{}.ts"}}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",{},"stopReason":"toolUse","timestamp":{}}})",
          turn % 97, turn, turn % 97, usage, ms);
      break;
    case 2:
      message = fmt::format(
          R"({{"role":"toolResult","toolCallId":"toolu_{:06}","toolName":"read","content":[{{"type":"text","text":"export function add(a: number, b: number) {{\n  return a - b;\n}}\n\nexport function sub(a: number, b: number) {{\n  return a - b;\n}}\n"}}],"isError":false,"timestamp":{}}})",
          turn, ms);
      break;
    default:
      message = fmt::format(
          R"({{"role":"assistant","content":[{{"type":"text","text":"The bug is in add(): it subtracts. I changed it to return a + b, and the test for module {} passes now."}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",{},"stopReason":"stop","timestamp":{}}})",
          turn % 97, usage, ms);
      break;
  }
  return entry_head("message", n, ms) + R"("message":)" + message + "}\n";
}

// A compaction as pi's compact() appends it: the summary of everything
// before `first_kept`, which is a user message (a valid cut point).
std::string compaction_line(std::uint64_t n, const std::string& first_kept, std::int64_t ms) {
  return entry_head("compaction", n, ms) +
         fmt::format(R"("summary":"## Goal\nFix the failing module tests one module at a time.\n\n## Progress\n)"
                     R"(Modules up to entry {} are fixed: add() subtracted; each now returns a + b and its test )"
                     R"(passes.\n\n## Next\nGo on with the next failing module.","firstKeptEntryId":"{}",)"
                     R"("tokensBefore":{}}})",
                     n, first_kept, 150000 + n % 1000)
         + "\n";
}

}  // namespace

const char* shape_name(PiShape shape) { return shape == PiShape::linear ? "linear" : "compacting"; }

void write_pi_file(const std::string& path, std::uint64_t entries, PiShape shape) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  std::fputs(
      R"({"type":"session","version":3,"id":"5f0c2a4e-1b2c-4d3e-8f9a-0b1c2d3e4f50","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/home/dev/project"})"
      "\n",
      file);
  std::uint64_t messages = 0;
  std::deque<std::string> recent_users;  // the last ten turns' user entries
  for (std::uint64_t n = 0; n < entries; ++n) {
    const std::int64_t ms = 1761955200000 + static_cast<std::int64_t>(n) * 1500;
    std::string line;
    if (shape == PiShape::compacting && (n + 1) % kCompactionEvery == 0 && !recent_users.empty()) {
      line = compaction_line(n, recent_users.front(), ms);
    } else {
      if (messages % 4 == 0) {
        recent_users.push_back(pi_id(n));
        if (recent_users.size() > 10) recent_users.pop_front();
      }
      line = message_line(n, messages++, ms);
    }
    if (std::fwrite(line.data(), 1, line.size(), file) != line.size()) {
      std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(), std::strerror(errno));
      std::exit(1);
    }
  }
  std::fclose(file);
}

}  // namespace cairn::bench
