// Watching a ref or a whole session: a snapshot, then the events that follow
// it, with no gap and no duplicate (durable-harness-design.txt, section 8).
//
// The subscription is taken before the snapshot, so nothing is missed; the
// events buffered meanwhile that announce a record the snapshot already
// reflects (seq <= cursor) are dropped, so nothing is seen twice. Ephemeral
// events (message_update, tool_update) carry no seq and always pass: they
// continue the snapshot's streaming message and running tools.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cairn/harness/events.hpp"
#include "cairn/harness/results.hpp"
#include "cairn/log/record.hpp"
#include "cairn/harness/tool.hpp"

namespace cairn {

struct RunningTool {
  std::string tool_call_id;
  std::string tool_name;
  Json args;
  std::optional<ToolResult> partial_result;
};

struct RunSnapshot {
  std::string id;
  OperationKind kind = OperationKind::run;
  OperationStatus status = OperationStatus::running;
  std::string started_at;
  std::optional<SuspendedOperation> suspended;  // status suspended only
  std::optional<AssistantMessage> streaming_message;
  std::vector<RunningTool> running_tools;
  struct Retry {
    std::int64_t attempt = 0;
    std::int64_t max_attempts = 0;
    std::string next_attempt_at;
  };
  std::optional<Retry> retry;
};

struct RefSnapshot {
  std::string ref;
  // The ref's branch, oldest first, from its newest compaction (or the root).
  std::vector<TreeEntry> transcript;
  std::optional<std::string> leaf_id;
  std::optional<RunSnapshot> run;
  std::vector<AgentMessage> steer, follow_up, next_run;
  std::vector<TreeEntry> pending_writes;
  bool faulted = false;
  std::int64_t cursor = -1;  // the seq of the newest record the snapshot reflects
};

struct SessionSnapshot {
  struct Ref {
    RefStatus status;
    std::optional<SuspendedOperation> suspended;
  };
  std::vector<Ref> refs;
  bool faulted = false;
  std::int64_t cursor = -1;
};

template <class Snapshot>
class Watch {
 public:
  const Snapshot& snapshot() const { return snapshot_; }

  // Delivers the buffered events in order, then goes live. Once only.
  void start(EventListener listener) {
    std::lock_guard lock(state_->mu);
    for (const auto& event : state_->buffer) deliver(*state_, listener, event);
    state_->buffer.clear();
    state_->listener = std::move(listener);
  }
  void unsubscribe() { subscription_.reset(); }

  // Used by the harness to build one.
  struct State {
    std::mutex mu;
    std::deque<Event> buffer;
    EventListener listener;
    std::int64_t cursor = -1;
  };
  static void receive(State& state, const Event& event) {
    std::lock_guard lock(state.mu);
    if (state.listener) {
      deliver(state, state.listener, event);
    } else {
      state.buffer.push_back(event);
    }
  }
  Watch(Snapshot snapshot, std::shared_ptr<State> state, Subscription subscription)
      : snapshot_(std::move(snapshot)), state_(std::move(state)), subscription_(std::move(subscription)) {}

 private:
  static void deliver(const State& state, const EventListener& listener, const Event& event) {
    if (event.seq && *event.seq <= state.cursor) return;  // the snapshot has it
    listener(event);
  }

  Snapshot snapshot_;
  std::shared_ptr<State> state_;
  Subscription subscription_;
};

using RefWatch = Watch<RefSnapshot>;
using SessionWatch = Watch<SessionSnapshot>;

}  // namespace cairn
