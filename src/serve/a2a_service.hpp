// The A2A operations both bindings share: a message sent (a run started, a
// task steered or answered), a task read, listed, cancelled or streamed.
// The protocol is described in a2a_protocol.hpp.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "a2a_protocol.hpp"
#include "api.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

// A blocking send waits this long for its task to settle at most.
inline constexpr auto kBlockingSendLimit = std::chrono::hours(24);

class A2aService {
 public:
  A2aService(SessionPool& pool, Metrics& metrics, std::shared_ptr<WorkQueue> work)
      : pool_(pool), metrics_(metrics), work_(std::move(work)) {}

  struct Sent {
    std::shared_ptr<SessionHost> host;
    TaskView view;
  };
  // SendMessage's params (or the REST body): a run started, or the task it
  // names steered or answered.
  A2aResult<Sent> send(const Fields& params);
  // The task `id` names, and the session it is in.
  A2aResult<std::pair<std::shared_ptr<SessionHost>, TaskView>> task(std::string_view id);
  A2aResult<Json> list(const ListParams& params);
  // Aborts the task; the reply once it has ended (durably: its
  // operation_finished is in the log), or after a while.
  A2aResult<std::shared_ptr<DeferredReply>> cancel(std::string_view id, std::function<Reply(const A2aResult<TaskView>&)> answer);
  // The stream of a task: `from_start` replays its records from its start
  // (a streaming send); else from `cursor` (Last-Event-ID), or live from now.
  A2aResult<std::shared_ptr<LiveStream>> stream(std::shared_ptr<SessionHost> target, TaskView view, bool from_start,
                                                std::optional<std::int64_t> cursor, std::optional<Json> rpc_id);
  // A blocking send's reply: `answer` of the task once it has settled.
  std::shared_ptr<DeferredReply> settle(Sent sent, std::function<Reply(const A2aResult<TaskView>&)> answer);

 private:
  A2aResult<std::shared_ptr<SessionHost>> host(const std::string& session);
  A2aResult<TaskView> read(const SessionHost& target, const TaskId& id, std::optional<std::int64_t> until = std::nullopt);
  A2aResult<Sent> continue_task(const std::string& task_id, const std::optional<std::pair<std::string, std::string>>& context,
                                const MessageParts& parts);

  SessionPool& pool_;
  Metrics& metrics_;
  std::shared_ptr<WorkQueue> work_;
};

}  // namespace cairn::serve
