// The live stream of a ref or of a whole session (GET …/events): a snapshot
// (or, given a cursor, the records after it read from the log), then the
// session's events through its StreamHub. Every frame that carries a record
// has `id: <seq>` and the record as stored; ephemeral events
// (message_update, tool_update) have no id. The frames with an id are
// exactly the log's records of the ref after the cursor, in seq order, each
// once: a record no event announced is read from the log before the next
// one that is announced, and an event whose record was already sent goes
// without id.
//
// The hub only queues the event's frame and wakes the stream: the writing
// happens on the server's threads, so a slow consumer never slows a run. A
// queue that reaches its bound ends the stream with a stream_overflow frame
// naming the cursor to reconnect with.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "http_types.hpp"
#include "followed_session.hpp"
#include "session_pool.hpp"
#include "stream_hub.hpp"

namespace cairn::serve {

class EventStream : public LiveStream {
 public:
  // `ref` empty: the session's stream. `after`: the client's cursor
  // (Last-Event-ID or ?after=); without one the stream starts with a snapshot.
  // `transcript_limit`: the snapshot's transcript holds only the newest that
  // many entries (see to_json(RefSnapshot)).
  static Result<std::shared_ptr<EventStream>> open(std::shared_ptr<SessionHost> host, std::optional<std::string> ref,
                                                   std::optional<std::int64_t> after, std::size_t max_queued,
                                                   std::optional<std::size_t> transcript_limit = std::nullopt);
  // The stream of a session another process writes: a snapshot read from
  // the store (or the records after the cursor), then its records as the
  // store gets them. The run's events stay with its writer.
  // `transcript_limit` as for open().
  static Result<std::shared_ptr<EventStream>> open_followed(std::shared_ptr<FollowedSession> followed,
                                                            std::optional<std::string> ref,
                                                            std::optional<std::int64_t> after, std::size_t max_queued,
                                                            std::optional<std::size_t> transcript_limit = std::nullopt);
  ~EventStream() override;

  void set_wakeup(std::function<void()> wakeup) override;
  Batch take(bool quiet) override;
  std::string final_frame() override;

 private:
  EventStream() = default;
  // Once registered with the hub: the replay after the client's cursor up to
  // `cursor_`, or the snapshot.
  Status begin(const std::optional<std::int64_t>& after, const Json& snapshot);
  // How many records the session has, as far as this server knows.
  std::int64_t known_size() const;

  std::shared_ptr<SessionHost> host_;          // an open session's stream, or
  std::shared_ptr<FollowedSession> followed_;  // a followed one's
  std::shared_ptr<StreamHub> hub_;
  std::shared_ptr<StreamHub::Inbox> inbox_ = std::make_shared<StreamHub::Inbox>();
  std::string initial_;
  std::int64_t cursor_ = -1;     // what the snapshot (or the replay) covered: older events are dropped
  std::int64_t last_sent_ = -1;  // the newest record sent
};

}  // namespace cairn::serve
