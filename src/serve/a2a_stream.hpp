// How an A2A task is waited for without holding a thread: its stream (the
// task, then its updates, read from the log as the session's hub says
// records came) and its settling (a blocking send's or a cancel's answer
// once the task has ended or waits for input).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "a2a_protocol.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

// A task's StreamResponses: `first_frame` (the task), then what `events`
// decide for the records after `read_after`; ends after the final status or
// an input request (at once when `end_after_first`).
std::shared_ptr<LiveStream> task_stream(std::shared_ptr<SessionHost> host, TaskEvents events, std::int64_t read_after,
                                        std::string first_frame, bool end_after_first);

// The task's answer once it has settled (ended, or waits for input) or a
// limit passed, fulfilling a deferred reply: the wait holds no thread, only
// a listener on the ref's events. The log, not the harness's state, says
// whether the task settled (an operation's end is in the log before its
// run_end is announced).
class Settling : public std::enable_shared_from_this<Settling> {
 public:
  using Answer = std::function<Reply(const A2aResult<TaskView>&)>;

  // `until_end`: only the task's end settles it (a cancel), not a wait for input.
  static std::shared_ptr<DeferredReply> start(std::shared_ptr<SessionHost> host, TaskView view,
                                              std::chrono::milliseconds limit, std::shared_ptr<WorkQueue> work,
                                              Answer answer, bool until_end = false);

 private:
  struct Key {
    explicit Key() = default;
  };

 public:
  // start()'s alone: Key is private.
  Settling(Key, std::shared_ptr<SessionHost> host, TaskId id, std::shared_ptr<WorkQueue> work, Answer answer,
           bool until_end);

 private:
  bool settled(const TaskView& view) const { return view.terminal() || (!until_end_ && view.interrupted()); }
  void check_soon(bool final);
  void check(bool final);  // on a worker
  void finish();

  std::shared_ptr<SessionHost> host_;
  TaskId id_;
  std::shared_ptr<WorkQueue> work_;
  Answer answer_;
  bool until_end_;
  std::shared_ptr<DeferredReply> deferred_ = std::make_shared<DeferredReply>();
  std::atomic<bool> finished_{false};
  std::mutex mu_;
  Subscription subscription_;
  std::shared_ptr<Settling> self_;  // set while it waits
};

}  // namespace cairn::serve
