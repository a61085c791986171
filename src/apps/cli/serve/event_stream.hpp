// The live stream of a ref or of a whole session (GET …/events): a snapshot
// (or, given a cursor, the records after it read from the log), then the
// harness's events. Every frame that carries a record has `id: <seq>` and
// the record as stored; ephemeral events (message_update, tool_update) have
// no id. The frames with an id are exactly the log's records of the ref
// after the cursor, in seq order, each once: a record no event announced is
// read from the log before the next that is announced, and an event whose
// record was already sent goes without id.
//
// The harness's listener only queues the event and wakes the stream: the
// log reading and the encoding happen on the server's thread, so a slow
// consumer never slows a run. A queue that reaches its bound ends the stream
// with a stream_overflow frame naming the cursor to reconnect with.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cairn/harness/harness.hpp"
#include "http_types.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

class EventStream : public LiveStream {
 public:
  // `ref` empty: the session's stream. `after`: the client's cursor
  // (Last-Event-ID or ?after=); without one the stream starts with a snapshot.
  static Result<std::shared_ptr<EventStream>> open(std::shared_ptr<SessionHost> host, std::optional<std::string> ref,
                                                   std::optional<std::int64_t> after, std::size_t max_queued);
  ~EventStream() override;

  void set_wakeup(std::function<void()> wakeup) override;
  Batch take() override;
  std::string final_frame() override;

  struct Inbox {
    std::mutex mu;
    std::deque<Event> events;
    bool overflowed = false;
    std::size_t max_queued = 0;
    std::function<void()> wakeup;
  };

 private:
  EventStream() = default;
  bool belongs(const Json& record) const;
  // Frames for the stored records with last_sent_ < seq < before.
  Status catch_up(std::string& out, std::int64_t before);

  std::shared_ptr<SessionHost> host_;
  std::optional<std::string> ref_;
  std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();
  std::optional<RefWatch> ref_watch_;
  std::optional<SessionWatch> session_watch_;
  std::string initial_;
  std::int64_t last_sent_ = -1;
};

}  // namespace cairn::serve
