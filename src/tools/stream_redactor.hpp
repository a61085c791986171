// Redacts secrets from output that arrives in pieces (a command's reads):
// a secret split across two pieces is still caught, because the end of a
// piece that could begin a secret is held back until the next one decides.
#pragma once

#include <string>
#include <string_view>

#include "cairn/secrets.hpp"

namespace cairn::tools {

class StreamRedactor {
 public:
  explicit StreamRedactor(const Secrets& secrets) : secrets_(secrets) {}

  // The part of what has arrived so far that no secret can still reach into,
  // with every secret in it replaced by Secrets::kMark.
  [[nodiscard]] std::string feed(std::string_view piece);
  // What was held back, redacted: the output has ended.
  [[nodiscard]] std::string finish();

 private:
  const Secrets& secrets_;
  std::string pending_;  // raw bytes that may begin a secret
};

}  // namespace cairn::tools
