// Where one session's records live durably: the interface each store
// implements beneath Session.
#pragma once

#include <cstdint>
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
  // append(), for records that apply inbox items (cairn/store/inbox.hpp): a
  // store with an inbox marks each item applied in the append's own
  // transaction. The others have no inbox and append alone.
  virtual Status append_applying(const std::vector<PreparedRecord>& records, const std::vector<std::int64_t>& inbox_items) {
    (void)inbox_items;
    return append(records);
  }
  // Where the log lives, for messages ("jsonl file /x/y.jsonl").
  virtual std::string describe() const = 0;
};

}  // namespace cairn
