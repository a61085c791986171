// One per open session: the fan-out of its events to the streams watching
// it. The harness's listener only queues the event (the harness delivers
// every ref's events one at a time, so its listeners must be quick); the
// hub's own thread encodes each event once into the bytes of its frame
// (with and without its record) and hands it to every stream's inbox as a
// shared pointer; a record read from the log for a
// stream's catch-up is kept for the next stream that needs it. So a thousand
// watchers cost a thousand pointer pushes per event, not a thousand
// encodings and log reads.
#pragma once

#include <cstdint>
#include <condition_variable>
#include <deque>
#include <thread>
#include <unordered_map>
#include <utility>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cairn/harness/events.hpp"
#include "cairn/store/session.hpp"
#include "http_types.hpp"

namespace cairn::serve {

class StreamHub {
 public:
  // One event, as frames.
  struct Frame {
    std::string ref;
    std::optional<std::int64_t> seq;
    std::string with_id;     // "id: <seq>" and the event with its record (events with a seq)
    std::string without_id;  // the event alone
    bool update = false;     // a message_update: the message so far, superseded by the next one
  };
  // One stream's queue, bounded in frames and in bytes (the frames are
  // shared with the other streams, but a stream that holds them keeps them
  // alive). `ref` empty: every ref's events.
  struct Inbox {
    std::optional<std::string> ref;
    std::size_t max_queued = 4096;
    std::size_t max_bytes = 8u << 20;
    std::mutex mu;
    std::deque<std::shared_ptr<const Frame>> frames;
    std::size_t queued_bytes = 0;
    // Per ref, the index in `frames` of its message_update when that is the
    // ref's newest queued frame: the next update of the ref takes its place.
    std::unordered_map<std::string, std::size_t> newest_update;
    bool overflowed = false;
    // Set: the stream ends with this frame once it has sent what is queued
    // (its session was deleted).
    std::optional<std::string> end_frame;
    std::function<void()> wakeup;

    // What is queued, emptying the queue; under `mu`.
    std::deque<std::shared_ptr<const Frame>> take_frames() {
      newest_update.clear();
      queued_bytes = 0;
      return std::exchange(frames, {});
    }
  };

  // How the hub reads the stored records after a seq (at most `limit`): an
  // open session's log, or the store's for a session another process writes.
  using Reader = std::function<Result<std::vector<LogLine>>(std::int64_t after, std::size_t limit)>;
  explicit StreamHub(Reader read);
  // How many streams, of every hub, overflowed since the process started.
  static std::int64_t overflows();
  // How many message_update frames a newer one replaced in a lagging stream's queue.
  static std::int64_t coalesced();
  ~StreamHub();  // joins its thread
  StreamHub(const StreamHub&) = delete;
  StreamHub& operator=(const StreamHub&) = delete;

  // The harness's listener: every event of the session goes through here.
  void publish(const Event& event);
  // For a session another process writes, which sends no events here: its
  // records just read from the store, in seq order, each to the streams of
  // its ref as a record frame (on the caller's thread).
  void publish_records(std::vector<LogLine> lines);
  // Wakes every stream (to see that its session's reading failed).
  void wake_all();
  // Ends every stream with `frame` (after what it has queued), and any
  // added later at once.
  void end_all(std::string frame);
  void add(const std::shared_ptr<Inbox>& inbox);
  void remove(const Inbox* inbox);

  // Adds to `batch` the frames ("type": "record", with id) of the stored
  // records with after < seq < before that belong to `ref` (every record
  // when empty), shared, not copied; `last` becomes the seq of the last
  // record looked at. Stops once the frames added reach `max_bytes` (the
  // caller goes on from `last` later).
  Status records(const std::optional<std::string>& ref, std::int64_t after, std::int64_t before,
                 LiveStream::Batch& batch, std::int64_t& last, std::size_t max_bytes = SIZE_MAX);

  // A stream's first frame, the snapshot, shared by the streams that ask for
  // the same one (ref, transcript limit) at the same cursor while nothing
  // runs: a thousand watchers of an idle session hold one copy. `idle_at`:
  // the session's newest seq when the ref (or, for the session's stream,
  // every ref) is idle — a cached frame at that cursor is reused; nullopt:
  // nothing may be reused. `build` makes the frame and says its cursor and
  // whether it may be cached (nothing ran in it). Builds one at a time per
  // session, so that many streams opening at once do not each hold a
  // snapshot under construction.
  struct Snapshot {
    std::shared_ptr<const std::string> frame;
    std::int64_t cursor = -1;
    bool reusable = false;
  };
  Result<Snapshot> snapshot(const std::string& key, const std::function<std::optional<std::int64_t>()>& idle_at,
                            const std::function<Result<Snapshot>()>& build);

 private:
  struct Stored {
    std::string ref;   // whose record it is ("main" when it names none)
    std::string name;  // ref_created / ref_deleted: the ref they name
    std::string line;
    std::string frame;
  };
  // The records from `from` on (up to `count` of them), read once.
  Result<std::vector<std::pair<std::int64_t, std::shared_ptr<const Stored>>>> stored(std::int64_t from, std::size_t count);
  static bool belongs(const Stored& record, const std::optional<std::string>& ref);
  static std::shared_ptr<const Stored> make_stored(LogLine line);
  // Queues `frame` in `inbox` (both locks held), or overflows it.
  static void enqueue(Inbox& inbox, const std::shared_ptr<const Frame>& frame);
  void fan_out(const Event& event);
  void deliver_loop();

  Reader read_;
  std::mutex inboxes_mu_;
  std::vector<std::shared_ptr<Inbox>> inboxes_;
  std::optional<std::string> end_frame_;  // under inboxes_mu_
  std::mutex cache_mu_;
  std::map<std::int64_t, std::shared_ptr<const Stored>> cache_;
  std::mutex snapshot_mu_;  // held while one is built
  std::map<std::string, std::pair<std::int64_t, std::weak_ptr<const std::string>>> snapshots_;  // key → cursor, frame
  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::deque<Event> pending_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything else is
};

}  // namespace cairn::serve
