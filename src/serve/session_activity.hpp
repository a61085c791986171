// What a list of sessions shows beside each header, derived from each
// session's log: when it last changed, what its model calls cost (summed over
// every branch and ref), its name, the model it last chose or answered with,
// and the operations it started and has not finished. Kept per session and
// brought up to date from the records after the last seq it read, and only
// when the store says the log moved (Store::log_stamp): a page that polls a
// list of long sessions reads each record once, and a session this server
// does not have open is read without being opened for writing.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/store/session.hpp"

namespace cairn::serve {

struct SessionFacts {
  std::int64_t seq = -1;  // the newest record read
  std::string updated_at;
  double cost = 0;
  std::int64_t tokens = 0;
  std::optional<std::string> name;
  std::optional<std::string> provider, model;
  std::map<std::string, std::string> open_runs;       // run id → ref
  std::map<std::string, std::string> pending_inputs;  // input request id → run id

  // {updatedAt, cost, tokens}
  Json activity() const;
  // What the log says of the session's operations: "awaiting_input" (one
  // waits for a human's answer), "suspended" (one is open: it ran in a
  // process that ended, or runs in another now) or "idle".
  std::string_view log_status() const;
};

class SessionActivity {
 public:
  // Reads stored lines after a seq, at most a limit.
  using Reader = std::function<Result<std::vector<LogLine>>(std::int64_t after, std::size_t limit)>;

  // Session `id`'s facts, brought up to date by `read` unless `stamp` (a
  // value that moves with the log: Store::log_stamp, or an open session's
  // size) is the one it was read at. `created`, the header's timestamp,
  // tells a session removed and made again under the same id from the old.
  [[nodiscard]] Result<SessionFacts> facts(const std::string& id, const std::string& created, const std::string& stamp,
                                           const Reader& read);
  // The same for a session this server has open.
  [[nodiscard]] Result<SessionFacts> facts(const std::string& id, const Session& session);
  void forget(const std::string& id);

 private:
  struct Entry {
    std::mutex mu;  // held while reading this session's new records only
    std::string created;
    std::string stamp;
    SessionFacts facts;
  };
  std::mutex mu_;  // guards entries_ (never held while reading)
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

}  // namespace cairn::serve
