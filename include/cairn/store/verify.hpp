// Checks one session's log against the invariants of DESIGN.md that the log
// alone can show, reading it without changing it (`cairn verify`). The checks
// recompute everything from the stored lines; they do not trust the index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/store/session.hpp"
#include "cairn/store/store.hpp"

namespace cairn {

struct VerifyCheck {
  std::string name;  // "5 every tool call has exactly one result before the next assistant message"
  std::vector<std::string> failures;
  std::vector<std::string> notes;  // facts that are not failures
  bool ok() const { return failures.empty(); }
};

struct [[nodiscard]] VerifyReport {
  std::vector<VerifyCheck> checks;
  std::int64_t records = 0;
  bool ok() const {
    for (const VerifyCheck& check : checks) {
      if (!check.ok()) return false;
    }
    return true;
  }
};

// Fails only when the log cannot be read at all (a damaged store).
Result<VerifyReport> verify(const Session& session);

// Check 21, which needs the store beside the log: every subagent session a
// finished operation of `session` started (named in its tool_started) has no
// open operation. Reads each child read-only; fails only when `session`'s
// own log cannot be read.
Result<VerifyCheck> verify_children(Store& store, const Session& session);

}  // namespace cairn
