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
  // One stream's queue. `ref` empty: every ref's events.
  struct Inbox {
    std::optional<std::string> ref;
    std::size_t max_queued = 4096;
    std::mutex mu;
    std::deque<std::shared_ptr<const Frame>> frames;
    // Per ref, the index in `frames` of its message_update when that is the
    // ref's newest queued frame: the next update of the ref takes its place.
    std::unordered_map<std::string, std::size_t> newest_update;
    bool overflowed = false;
    std::function<void()> wakeup;

    // What is queued, emptying the queue; under `mu`.
    std::deque<std::shared_ptr<const Frame>> take_frames() {
      newest_update.clear();
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
  void add(const std::shared_ptr<Inbox>& inbox);
  void remove(const Inbox* inbox);

  // Appends to `out` the frames ("type": "record", with id) of the stored
  // records with after < seq < before that belong to `ref` (every record
  // when empty); `last` becomes the seq of the last record looked at.
  Status records(const std::optional<std::string>& ref, std::int64_t after, std::int64_t before, std::string& out,
                 std::int64_t& last);

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
  std::mutex cache_mu_;
  std::map<std::int64_t, std::shared_ptr<const Stored>> cache_;
  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::deque<Event> pending_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything else is
};

}  // namespace cairn::serve
