#include "operation_start.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "json_views.hpp"

namespace cairn::serve {

OperationStart start_and_wait(SessionPool& pool, Metrics& metrics, const std::shared_ptr<SessionHost>& host, AgentRef ref,
                              std::vector<EventType> start_types, std::function<RunResult(AgentRef&)> operation) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    OperationStart state;
  };
  auto wait = std::make_shared<Wait>();
  std::unique_lock start_lock(host->start_mu);
  Subscription subscription = ref.on_event([wait, start_types](const Event& event) {
    if (std::find(start_types.begin(), start_types.end(), event.type) == start_types.end()) return;
    std::lock_guard lock(wait->mu);
    if (!wait->state.started) wait->state.started = event;
    wait->cv.notify_all();
  });
  pool.run_detached(host, [wait, ref, operation = std::move(operation), &metrics]() mutable {
    RunResult result = operation(ref);
    {
      std::lock_guard lock(metrics.mu);
      ++metrics.runs[std::string(to_string(result.outcome))];
    }
    if (result.final_message) {
      metrics.input_tokens += result.final_message->usage.input;
      metrics.output_tokens += result.final_message->usage.output;
      metrics.cost_microdollars += static_cast<std::int64_t>(result.final_message->usage.cost.total * 1e6);
    }
    std::lock_guard lock(wait->mu);
    wait->state.done = std::move(result);
    wait->cv.notify_all();
  });
  std::unique_lock lock(wait->mu);
  wait->cv.wait(lock, [&] { return wait->state.started || wait->state.done; });
  subscription.reset();
  return wait->state;
}

Reply started_reply(const OperationStart& start) {
  if (start.started) {
    Json body = {{"runId", start.started->run_id ? Json(*start.started->run_id) : Json(nullptr)},
                 {"event", to_string(start.started->type)}};
    body["seq"] = start.started->seq ? Json(*start.started->seq) : Json(nullptr);
    return Reply{json_response(202, body)};
  }
  const RunResult& result = *start.done;
  // Ended before it started durably: a refusal, or a compaction with
  // nothing to shed. Said as the error it is.
  if (!result.ok() && result.run_id.empty() && result.error) return Reply{error_response(*result.error)};
  return Reply{json_response(200, to_json(result))};
}

}  // namespace cairn::serve
