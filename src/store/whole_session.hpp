// A new session made whole or not at all (import, fork). Appending to a
// freshly created session leaves, when the process dies between the two, a
// session with a header and nothing else; here the session is built in a
// memory: store first, through every check an append makes, and its header
// and stored lines then reach the real store in one atomic step
// (Store::create_with_log).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "cairn/error.hpp"
#include "cairn/store/store.hpp"

namespace cairn {

struct WholeSession {
  std::shared_ptr<Session> session;  // in `store`, open for writing
  std::int64_t records = 0;          // what `fill` appended
};

// Creates a scratch session from `options`, lets `fill` append to it (its
// error, if any, is returned as it is), then writes the scratch session's
// header and log to `store` at once.
Result<WholeSession> create_whole_session(Store& store, const CreateOptions& options,
                                          const std::function<Result<std::int64_t>(Session& scratch)>& fill);

}  // namespace cairn
