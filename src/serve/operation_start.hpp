// How a request starts an operation (prompt, resume, compact, navigate, an
// A2A message) and answers once it has started durably.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "api.hpp"

namespace cairn::serve {

// Runs an operation on a thread of its own and returns once it has started
// durably (`started`: the first event of `start_types`, e.g. run_start with
// the seq of its operation_started) or ended before that (`done`: a
// rejection, say). Starts on one session go one at a time, so that the
// event waited for is this operation's.
struct OperationStart {
  std::optional<Event> started;
  std::optional<RunResult> done;
};
OperationStart start_and_wait(SessionPool& pool, Metrics& metrics, const std::shared_ptr<SessionHost>& host, AgentRef ref,
                              std::vector<EventType> start_types, std::function<RunResult(AgentRef&)> operation);

// The answer to a start: 202 {runId, event, seq} once started; the error
// of one refused before it started; else 200 and the result.
Reply started_reply(const OperationStart& start);

}  // namespace cairn::serve
