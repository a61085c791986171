// Secrets kept out of text that arrives in pieces (a command's reads, a
// model's deltas): a secret split across two pieces is still caught, because
// the end of a piece that could begin a secret is held back until the next
// one decides. Only the held bytes and the new piece are scanned, so a long
// stream stays linear. The one way cairn redacts a stream: the bash tool's
// output and the harness's streamed deltas (harness/stream_redactor.hpp).
#pragma once

#include <string>
#include <string_view>

#include "cairn/secrets.hpp"

namespace cairn {

class SecretStream {
 public:
  explicit SecretStream(const Secrets& secrets) : secrets_(secrets) {}

  // The part of what has arrived so far that no secret can still reach into,
  // with every secret in it replaced by Secrets::kMark.
  [[nodiscard]] std::string feed(std::string_view piece);
  // What was held back, redacted: the text has ended.
  [[nodiscard]] std::string finish();
  // Whether a whole secret has been seen in it so far.
  bool revealed() const { return revealed_; }

 private:
  const Secrets& secrets_;
  std::string pending_;  // raw bytes that may begin a secret
  bool revealed_ = false;
};

}  // namespace cairn
