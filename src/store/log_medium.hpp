// Where one session's records live durably: the interface each store
// implements beneath Session.
#pragma once

#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "log/index.hpp"

namespace cairn {

// One record prepared for the medium: its index fields and its stored line.
struct PreparedRecord {
  RecordMeta meta;
  std::string line;
};

class LogMedium {
 public:
  virtual ~LogMedium() = default;
  // Makes `records` durable under the store's sync policy: all of them or, on
  // failure, none (the medium rolls back what it wrote).
  virtual Status append(const std::vector<PreparedRecord>& records) = 0;
  // Where the log lives, for messages ("jsonl file /x/y.jsonl").
  virtual std::string describe() const = 0;
};

}  // namespace cairn
