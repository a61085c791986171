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
// queue that reaches its bound (in frames or in bytes) ends the stream with
// a stream_overflow frame naming the cursor to reconnect with. Nothing big
// is copied per stream: the snapshot of an idle ref is shared by the
// streams that open at its cursor, and a replay after a cursor sends the
// hub's records a page at a time, shared.
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
  struct Limits {
    std::size_t max_queued = 4096;     // events queued for a slow client
    std::size_t max_bytes = 8u << 20;  // and their bytes
  };
  static Result<std::shared_ptr<EventStream>> open(std::shared_ptr<SessionHost> host, std::optional<std::string> ref,
                                                   std::optional<std::int64_t> after, Limits limits,
                                                   std::optional<std::size_t> transcript_limit = std::nullopt);
  // The stream of a session another process writes: a snapshot read from
  // the store (or the records after the cursor), then its records as the
  // store gets them. The run's events stay with its writer.
  // `transcript_limit` as for open().
  static Result<std::shared_ptr<EventStream>> open_followed(std::shared_ptr<FollowedSession> followed,
                                                            std::optional<std::string> ref,
                                                            std::optional<std::int64_t> after, Limits limits,
                                                            std::optional<std::size_t> transcript_limit = std::nullopt);
  ~EventStream() override;

  void set_wakeup(std::function<void()> wakeup) override;
  Batch take(bool quiet) override;
  std::string final_frame() override;
  // An open session's records are in memory (its index and the hub's
  // frames); a followed one's are read from the store.
  bool slow_take() const override { return followed_ != nullptr; }

 private:
  struct Key {
    explicit Key() = default;
  };
  // A stream fed by `hub`, with its inbox's ref and limits set.
  static std::shared_ptr<EventStream> made(std::shared_ptr<StreamHub> hub, std::optional<std::string> ref, Limits limits);

 public:
  explicit EventStream(Key) {}  // made()'s alone: Key is private

 private:
  // Once registered with the hub: the replay after the client's cursor up to
  // `cursor_` is due, or the snapshot frame is.
  void begin(const std::optional<std::int64_t>& after, std::shared_ptr<const std::string> snapshot);
  // How many records the session has, as far as this server knows.
  std::int64_t known_size() const;

  std::shared_ptr<SessionHost> host_;          // an open session's stream, or
  std::shared_ptr<FollowedSession> followed_;  // a followed one's
  std::shared_ptr<StreamHub> hub_;
  std::shared_ptr<StreamHub::Inbox> inbox_ = std::make_shared<StreamHub::Inbox>();
  std::shared_ptr<const std::string> snapshot_;  // the first frame, until taken
  std::int64_t cursor_ = -1;     // what the snapshot (or the replay) covers: older events are dropped
  std::int64_t last_sent_ = -1;  // the newest record sent (or replayed so far)
  bool replaying_ = false;       // records after the client's cursor up to cursor_ are still to send
};

}  // namespace cairn::serve
