// What a list of sessions shows beside each header: when the session last
// changed and what its model calls cost, summed over the whole log (every
// branch, every ref). Kept per session and brought up to date from the
// records after the last seq it read, so a page that polls a long session
// reads each record once.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/store/session.hpp"

namespace cairn::serve {

class SessionActivity {
 public:
  // {updatedAt, cost, tokens}: the newest record's timestamp, and the sums
  // of the assistant messages' usage.
  [[nodiscard]] Result<Json> summary(const std::string& id, const Session& session);
  void forget(const std::string& id);

 private:
  struct Totals {
    std::int64_t seq = -1;  // the newest record read
    std::string updated_at;
    double cost = 0;
    std::int64_t tokens = 0;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Totals> totals_;
};

}  // namespace cairn::serve
