#include "log/secret_stream.hpp"

#include <algorithm>

namespace cairn {

namespace {

// Whether `tail` (which runs to the end of the data so far) is a proper
// prefix of a secret: more data could complete it.
bool may_begin_secret(const Secrets& secrets, std::string_view tail) {
  return std::any_of(secrets.values().begin(), secrets.values().end(),
                     [&](const std::string& secret) { return secret.size() > tail.size() && secret.starts_with(tail); });
}

}  // namespace

std::string SecretStream::feed(std::string_view piece) {
  if (secrets_.empty()) return std::string(piece);
  pending_.append(piece);
  const std::string_view data = pending_;
  std::string out;
  std::size_t at = 0;
  for (;;) {
    // The earliest secret from `at`; at one position the longest (values()
    // is longest first), so a secret that contains another goes whole.
    std::size_t found = std::string_view::npos, length = 0;
    for (const std::string& secret : secrets_.values()) {
      const std::size_t where = data.find(secret, at);
      if (where < found) {
        found = where;
        length = secret.size();
      }
    }
    if (found == std::string_view::npos) break;
    // A longer secret may start there and end in data still to come.
    if (may_begin_secret(secrets_, data.substr(found))) break;
    out.append(data.substr(at, found - at));
    out.append(Secrets::kMark);
    revealed_ = true;
    at = found + length;
  }
  // Hold back the longest tail that could begin a secret; from an earliest
  // match left pending above, that is all of it from there.
  const std::size_t longest = secrets_.values().front().size();
  std::size_t keep_from = data.size();
  for (std::size_t start = std::max(at, data.size() > longest ? data.size() - longest + 1 : 0); start < data.size(); ++start) {
    if (may_begin_secret(secrets_, data.substr(start))) {
      keep_from = start;
      break;
    }
  }
  out.append(data.substr(at, keep_from - at));
  pending_.erase(0, keep_from);
  return out;
}

std::string SecretStream::finish() {
  std::string rest = secrets_.redact(pending_);
  if (rest != pending_) revealed_ = true;
  pending_.clear();
  return rest;
}

}  // namespace cairn
