// When the fragments of a streamed block are reported as *_delta events.
//
// Every event hands the sink the whole partial message, which a sink may
// copy (the harness does, once per event, for its watchers' snapshot), and a
// tool call's partial arguments are parsed again for each report. Were every
// fragment its own event, a block of n bytes in pieces of k bytes would cost
// n²/2k: 35 s for a 1 MB write call in 40-byte pieces. So once the message
// is past kSmallMessage, a block's fragments are gathered and reported
// together when they amount to half of what the message held before them, or
// when the first of them has waited kMaxQuiet. The first rule makes the
// reports of a fast stream logarithmic in its size, each costing at most
// three times the bytes it reports, so the work is linear; the second keeps a
// slow stream (a model typing) live for whoever watches. A block's last
// fragments are reported when it ends (take()).
//
// The clock is only read when a fragment arrives: what a stream that then
// pauses has gathered waits for its next fragment, or for its block's end.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace cairn::wire {

class DeltaPacer {
 public:
  using Clock = std::chrono::steady_clock;
  // Below this every fragment is reported as it comes: small responses
  // stream exactly as the wire sent them.
  static constexpr std::size_t kSmallMessage = 4096;
  static constexpr Clock::duration kMaxQuiet = std::chrono::milliseconds(50);

  // Gathers `fragment` of block `index`; true when the block's gathered
  // fragments are due to be reported (take them).
  [[nodiscard]] bool add(int index, std::string_view fragment, Clock::time_point now = Clock::now());

  // The fragments of block `index` gathered since its last report, which
  // this is; empty when there are none.
  [[nodiscard]] std::string take(int index);

 private:
  struct Gathered {
    std::string text;
    Clock::time_point since;  // when the first of them arrived
  };
  std::map<int, Gathered> gathered_;  // by content index, blocks with fragments not yet reported
  std::size_t streamed_ = 0;          // bytes of every fragment of every block
};

}  // namespace cairn::wire
