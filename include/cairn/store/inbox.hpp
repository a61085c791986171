// A session's inbox: requests for a session that another process holds,
// kept in the store until that process applies them (PostgreSQL: one table
// every server of a fleet shares).
//
// A server that cannot open a session because a live process holds it
// submits the request here and waits for its outcome; the holder is told,
// applies the request through the same code as one of its own clients', and
// decides the item with the status and body it would have answered. The
// item's application is exactly once across a crash: the records it appends
// mark it applied in the same transaction (InboxMark), so a holder that
// takes the session over after a crash re-applies an item only when
// nothing of it landed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"

namespace cairn {

class LogFollow;

// An item's life: pending until the holder begins it; applying while its
// request runs; applied once a record it appended is durable (set by that
// append's own transaction); decided when its outcome is recorded. Withdrawn:
// its sender gave up on a request that changes nothing (a read). Failed: it
// can never be applied (its session was deleted).
enum class InboxState { pending, applying, applied, decided, withdrawn, failed };
std::string_view to_string(InboxState state);
std::optional<InboxState> parse_inbox_state(std::string_view text);

struct InboxItem {
  std::int64_t id = 0;
  std::string session_id;
  // The request as its sender received it (method, path, query, body and the
  // headers that shape its meaning; never its credentials).
  Json request = Json::object();
  InboxState state = InboxState::pending;
  std::int64_t generation = 0;           // the lease generation that began applying it (0: none yet)
  std::optional<std::int64_t> applied_seq;  // the first record it appended
  std::optional<int> status;             // decided: the HTTP status a single server would have answered
  std::string response;                  // and its body
  std::string content_type;
  std::string created;                   // RFC 3339, the database's clock
  std::string decided;                   // empty until decided (or withdrawn, failed)
};

// What Inbox::begin took: the item, now applying under the lease of this
// process at `generation`.
struct InboxBegun {
  std::int64_t generation = 0;
};

class Inbox {
 public:
  virtual ~Inbox() = default;

  // Stores the request (committed when this returns) and tells the
  // session's holder.
  virtual Result<std::int64_t> submit(const std::string& session_id, const Json& request) = 0;
  virtual Result<std::optional<InboxItem>> item(std::int64_t id) = 0;
  // The session's items not yet decided (pending, applying, applied), oldest first.
  virtual Result<std::vector<InboxItem>> open_items(const std::string& session_id) = 0;
  // Takes the item for applying, under the session's lease, which this
  // process must hold: a pending item, or one a previous holder began and
  // of which nothing landed. Nothing (an empty optional) when the item is
  // not there to take: applied, decided, withdrawn, or the lease not ours.
  virtual Result<std::optional<InboxBegun>> begin(std::int64_t id) = 0;
  // Records the outcome of an item this process began at `generation` and
  // tells its sender. False when the item is no longer this generation's
  // (a later holder took the session over and decides it).
  virtual Result<bool> decide(std::int64_t id, std::int64_t generation, int status, std::string_view content_type,
                              std::string_view body) = 0;
  // An item a previous holder applied (a record of it landed) and did not
  // decide before it stopped: decided now as applied at its seq, by this
  // process, which must hold the session's lease.
  virtual Result<bool> settle_applied(const InboxItem& item) = 0;
  // A pending item its sender no longer waits for: withdrawn unless the
  // holder has begun it (then false: its outcome will come).
  virtual Result<bool> withdraw(std::int64_t id) = 0;
  // Sessions with items not yet decided, and who holds each (empty: nobody
  // holds its lease, or the lease expired).
  struct Waiting {
    std::string session_id;
    std::string owner;
  };
  virtual Result<std::vector<Waiting>> waiting_sessions() = 0;
  // Forgets items decided, withdrawn or failed longer than `age` ago.
  virtual Result<std::int64_t> forget_older_than(std::chrono::seconds age) = 0;

  // `changed` (on a store thread; quick) when an item may have arrived for
  // the session, and at least every `poll`.
  virtual Result<std::unique_ptr<LogFollow>> follow_session(const std::string& session_id, std::chrono::milliseconds poll,
                                                            std::function<void()> changed) = 0;
  // `changed` when the item may have been decided, and at least every `poll`.
  virtual Result<std::unique_ptr<LogFollow>> follow_item(std::int64_t id, std::chrono::milliseconds poll,
                                                         std::function<void()> changed) = 0;
};

// The item a thread's appends apply, while it applies one. Every append made
// on such a thread (or a thread it hands its work to: the server carries the
// mark as it carries a trace) names the item, and the store marks the item
// applied in the append's own transaction, the first time one lands.
struct InboxMark {
  explicit InboxMark(std::int64_t item_id) : item(item_id) {}
  const std::int64_t item;
  std::atomic<bool> landed{false};  // a record of it is durable: later appends need not name it

  // The mark of the calling thread (null: none).
  static std::shared_ptr<InboxMark> current();
  // Makes `mark` the calling thread's until destroyed.
  class Scope {
   public:
    explicit Scope(std::shared_ptr<InboxMark> mark);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::shared_ptr<InboxMark> previous_;
  };
};

}  // namespace cairn
