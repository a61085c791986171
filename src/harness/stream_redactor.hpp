// Secrets kept out of a streamed response's deltas. A secret may arrive
// split over several deltas, and a reader that joins them (a terminal, a
// --json consumer) would put it back together: so each content block's
// deltas go through a SecretStream (log/secret_stream.hpp), which holds
// back the end of a delta that could be the start of a secret until the
// next delta shows whether it is one, or the block ends.
//
// Scanning the whole partial message at every chunk would make a long
// stream quadratic; the partial message is redacted whole only once a
// secret has shown up.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "cairn/secrets.hpp"
#include "log/secret_stream.hpp"

namespace cairn {

class StreamRedactor {
 public:
  explicit StreamRedactor(const Secrets& secrets) : secrets_(secrets) {}

  // Whether there is anything to redact at all.
  bool active() const { return !secrets_.empty(); }
  // The part of `delta` (streamed into content block `index`) that can be
  // published, secrets redacted; what might begin one is held.
  std::string pass(int index, std::string_view delta);
  // What is held for block `index`, released at its end.
  std::string release(int index);
  // Everything held, oldest block first, released at the stream's end.
  std::map<int, std::string> release_all();
  // A secret appeared in the stream (or was seen by note_revealed): partial
  // messages must be redacted whole from now on.
  bool revealed() const { return revealed_; }
  void note_revealed() { revealed_ = true; }

 private:
  const Secrets& secrets_;
  std::map<int, SecretStream> blocks_;  // per content block
  bool revealed_ = false;
};

}  // namespace cairn
