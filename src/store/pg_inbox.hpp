// The PostgreSQL store's inbox (cairn/store/inbox.hpp): the cairn_inbox
// table, on a connection of its own so that a slow store call (an open that
// reads a long log) never holds a request's hand-over up.
//
// Notifications go on the channel appends are announced on (pg_notify.hpp),
// sent in the statement that makes the change rather than batched: an item
// is one request, and its sender waits for it. "inbox/SESSION" tells the
// holder an item arrived; "decided/ITEM" tells the sender its outcome is in.
// Neither payload can be a session's id ('/' is not allowed in one).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "cairn/store/inbox.hpp"
#include "pg_conn.hpp"
#include "pg_notify.hpp"

namespace cairn::pg {

// Marks open items failed (404: their session was removed) where the
// condition that follows holds.
inline constexpr std::string_view kFailInboxItemsWhere =
    "UPDATE cairn_inbox SET state = 'failed', status = 404, content_type = 'application/json', "
    "response = '{\"error\":{\"code\":\"not_found\",\"message\":\"the session was deleted before this "
    "request was applied\"}}', decided = now() WHERE state IN ('pending', 'applying') AND ";

class PgInbox final : public Inbox {
 public:
  // `listener`: the store's listener, started on first use.
  PgInbox(std::string conninfo, std::string shown, std::function<std::shared_ptr<Listener>()> listener);

  Result<std::int64_t> submit(const std::string& session_id, const Json& request) override;
  Result<std::optional<InboxItem>> item(std::int64_t id) override;
  Result<std::vector<InboxItem>> open_items(const std::string& session_id) override;
  Result<std::optional<InboxBegun>> begin(std::int64_t id) override;
  Result<bool> decide(std::int64_t id, std::int64_t generation, int status, std::string_view content_type,
                      std::string_view body) override;
  Result<bool> settle_applied(const InboxItem& item) override;
  Result<bool> withdraw(std::int64_t id) override;
  Result<std::vector<Waiting>> waiting_sessions() override;
  Result<std::int64_t> forget_older_than(std::chrono::seconds age) override;
  Result<std::unique_ptr<LogFollow>> follow_session(const std::string& session_id, std::chrono::milliseconds poll,
                                                    std::function<void()> changed) override;
  Result<std::unique_ptr<LogFollow>> follow_item(std::int64_t id, std::chrono::milliseconds poll,
                                                 std::function<void()> changed) override;

 private:
  // Runs `sql` (mu_ held), connecting first when there is no connection;
  // `retry`: once more after a lost connection, for statements that change
  // nothing when run twice.
  PgResult<Rows> exec(std::string_view sql, std::span<const Param> params, bool retry);
  Error error(std::string_view what, const PgError& cause) const;

  const std::string conninfo_;
  const std::string shown_;
  std::function<std::shared_ptr<Listener>()> listener_;
  std::mutex mu_;
  std::optional<Connection> db_;  // under mu_
};

}  // namespace cairn::pg
