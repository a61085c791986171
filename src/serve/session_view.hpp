// The session a route reads, open here or followed: one handler per route
// whether this server writes the session or another process does (then it
// is read from the store, as the store holds it now, and its streams follow
// the records the store gets).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "event_stream.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

class SessionView {
 public:
  // Open here.
  explicit SessionView(std::shared_ptr<SessionHost> host);
  // Held by another process (`held`: the locked error that says by whom).
  SessionView(SessionPool& pool, std::string id, Error held);

  const std::string& id() const { return id_; }
  // Open here: the host; else null.
  const std::shared_ptr<SessionHost>& host() const { return host_; }

  // Records after seq `after`, at most `limit`.
  Result<std::vector<LogLine>> read_log(std::int64_t after, std::size_t limit) const;
  // The newest seq, when this server knows it without asking the store.
  std::optional<std::int64_t> newest() const;
  // The session's entries to read: the open one, or the store's log read now.
  Result<std::shared_ptr<Session>> readable() const;
  // A stream of the session's events (of `ref`'s alone, with a snapshot of
  // it, when given) after `after`; refused when `after` is past the
  // session's newest record.
  Result<std::shared_ptr<EventStream>> stream(std::optional<std::string> ref, std::optional<std::int64_t> after,
                                              EventStream::Limits limits, std::optional<std::size_t> transcript_limit) const;

 private:
  std::shared_ptr<SessionHost> host_;
  SessionPool* pool_ = nullptr;  // followed: where it is read from
  std::string id_;
  std::optional<Error> held_;
};

}  // namespace cairn::serve
