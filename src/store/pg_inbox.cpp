#include "pg_inbox.hpp"

#include <array>
#include <cassert>

#include <fmt/format.h>

#include "lease_holder.hpp"

namespace cairn::pg {

namespace {

// The columns item_of reads, in order.
constexpr const char* kItemColumns =
    "id, session_id, request, state, generation, applied_seq, status, content_type, response, "
    "to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "COALESCE(to_char(decided AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), '')";

// The lease this process holds on the item's session, live: what begin and
// settle_applied require ($2 is this process's owner).
constexpr const char* kHeldByMe =
    "s.id = i.session_id AND s.owner = $2 AND s.lease_expires IS NOT NULL AND s.lease_expires > now()";

Result<InboxItem> item_of(const Rows& rows, int row) {
  InboxItem item;
  item.id = rows.int64(row, 0);
  item.session_id = std::string(rows.text(row, 1));
  item.request = Json::parse(rows.text(row, 2), nullptr, false);
  if (item.request.is_discarded()) {
    return fail(Errc::corrupt_log, fmt::format("inbox item {}: its request is not JSON", item.id));
  }
  auto state = parse_inbox_state(rows.text(row, 3));
  if (!state) return fail(Errc::corrupt_log, fmt::format("inbox item {}: unknown state '{}'", item.id, rows.text(row, 3)));
  item.state = *state;
  item.generation = rows.int64(row, 4);
  if (!rows.is_null(row, 5)) item.applied_seq = rows.int64(row, 5);
  if (!rows.is_null(row, 6)) item.status = static_cast<int>(rows.int64(row, 6));
  item.content_type = rows.optional_text(row, 7).value_or("");
  item.response = rows.optional_text(row, 8).value_or("");
  item.created = std::string(rows.text(row, 9));
  item.decided = std::string(rows.text(row, 10));
  return item;
}

std::string session_key(std::string_view session_id) { return fmt::format("inbox/{}", session_id); }
std::string item_key(std::int64_t id) { return fmt::format("decided/{}", id); }

}  // namespace

PgInbox::PgInbox(std::string conninfo, std::string shown, std::function<std::shared_ptr<Listener>()> listener)
    : conninfo_(std::move(conninfo)), shown_(std::move(shown)), listener_(std::move(listener)) {}

Error PgInbox::error(std::string_view what, const PgError& cause) const {
  return Error{Errc::io_error, fmt::format("postgres store {}: inbox: {}: {}", shown_, what, cause.message)};
}

PgResult<Rows> PgInbox::exec(std::string_view sql, std::span<const Param> params, bool retry) {
  if (!db_) {
    auto connected = Connection::connect(conninfo_);
    if (!connected) return std::unexpected(connected.error());
    db_ = std::move(*connected);
  }
  auto rows = db_->exec(sql, params);
  if (rows || !rows.error().connection_lost) return rows;
  // The connection went: the next call connects again. A statement that
  // would change something a second time is not retried (its outcome is
  // unknown; the caller says so).
  if (!retry) {
    db_.reset();
    return rows;
  }
  if (auto back = db_->reconnect(); !back) {
    db_.reset();
    return std::unexpected(back.error());
  }
  return db_->exec(sql, params);
}

Result<std::int64_t> PgInbox::submit(const std::string& session_id, const Json& request) {
  const std::array<Param, 3> params{session_id, request.dump(), session_key(session_id)};
  std::lock_guard lock(mu_);
  // The holder is told at the commit (pg_notify is transactional).
  auto rows = exec(
      "WITH i AS (INSERT INTO cairn_inbox (session_id, request) VALUES ($1, $2) RETURNING id) "
      "SELECT id, pg_notify('cairn_log', $3) FROM i",
      params, false);
  if (!rows) return std::unexpected(error(fmt::format("cannot leave a request for session {}", session_id), rows.error()));
  return rows->int64(0, 0);
}

Result<std::optional<InboxItem>> PgInbox::item(std::int64_t id) {
  const std::array<Param, 1> params{std::to_string(id)};
  std::lock_guard lock(mu_);
  auto rows = exec(fmt::format("SELECT {} FROM cairn_inbox WHERE id = $1::bigint", kItemColumns), params, true);
  if (!rows) return std::unexpected(error(fmt::format("cannot read item {}", id), rows.error()));
  if (rows->size() == 0) return std::optional<InboxItem>();
  auto found = item_of(*rows, 0);
  if (!found) return std::unexpected(found.error());
  return std::optional<InboxItem>(std::move(*found));
}

Result<std::vector<InboxItem>> PgInbox::open_items(const std::string& session_id) {
  const std::array<Param, 1> params{session_id};
  std::lock_guard lock(mu_);
  auto rows = exec(fmt::format("SELECT {} FROM cairn_inbox WHERE session_id = $1 AND state IN ('pending', 'applying', "
                               "'applied') ORDER BY id",
                               kItemColumns),
                   params, true);
  if (!rows) return std::unexpected(error(fmt::format("cannot read the items of session {}", session_id), rows.error()));
  std::vector<InboxItem> items;
  for (int row = 0; row < rows->size(); ++row) {
    auto one = item_of(*rows, row);
    if (!one) return std::unexpected(one.error());
    items.push_back(std::move(*one));
  }
  return items;
}

Result<std::optional<InboxBegun>> PgInbox::begin(std::int64_t id) {
  const std::array<Param, 2> params{std::to_string(id), this_owner()};
  std::lock_guard lock(mu_);
  // An item another holder began and of which nothing landed ('applying')
  // is begun again: that holder's lease is gone (this process holds it
  // now), so nothing it does appends any more. In this process, the
  // applier keeps one application of an item at a time.
  auto rows = exec(fmt::format("UPDATE cairn_inbox i SET state = 'applying', generation = s.generation "
                               "FROM cairn_sessions s WHERE i.id = $1::bigint AND i.state IN ('pending', 'applying') "
                               "AND {} RETURNING s.generation",
                               kHeldByMe),
                   params, false);
  if (!rows) return std::unexpected(error(fmt::format("cannot begin item {}", id), rows.error()));
  if (rows->size() == 0) return std::optional<InboxBegun>();
  return std::optional<InboxBegun>(InboxBegun{.generation = rows->int64(0, 0)});
}

Result<bool> PgInbox::decide(std::int64_t id, std::int64_t generation, int status, std::string_view content_type,
                             std::string_view body) {
  const std::array<Param, 6> params{std::to_string(id), std::to_string(generation), std::to_string(status),
                                    std::string(content_type), std::string(body), item_key(id)};
  std::lock_guard lock(mu_);
  auto rows = exec(
      "UPDATE cairn_inbox SET state = 'decided', status = $3::integer, content_type = $4, response = $5, "
      "decided = now() WHERE id = $1::bigint AND generation = $2::bigint AND state IN ('applying', 'applied') "
      "RETURNING pg_notify('cairn_log', $6)",
      params, true);
  if (!rows) return std::unexpected(error(fmt::format("cannot decide item {}", id), rows.error()));
  return rows->size() == 1;
}

Result<bool> PgInbox::settle_applied(const InboxItem& item) {
  assert(item.applied_seq);
  const std::string body =
      Json{{"applied", true},
           {"seq", *item.applied_seq},
           {"note", "applied by the process that held the session before it stopped; its answer went with it"}}
          .dump();
  const std::array<Param, 4> params{std::to_string(item.id), this_owner(), body, item_key(item.id)};
  std::lock_guard lock(mu_);
  auto rows = exec(fmt::format("UPDATE cairn_inbox i SET state = 'decided', status = 202, content_type = "
                               "'application/json', response = $3, decided = now(), generation = s.generation "
                               "FROM cairn_sessions s WHERE i.id = $1::bigint AND i.state = 'applied' AND {} "
                               "RETURNING pg_notify('cairn_log', $4)",
                               kHeldByMe),
                   params, true);
  if (!rows) return std::unexpected(error(fmt::format("cannot settle item {}", item.id), rows.error()));
  return rows->size() == 1;
}

Result<bool> PgInbox::withdraw(std::int64_t id) {
  const std::array<Param, 1> params{std::to_string(id)};
  std::lock_guard lock(mu_);
  auto rows = exec("UPDATE cairn_inbox SET state = 'withdrawn', decided = now() WHERE id = $1::bigint AND state = "
                   "'pending' RETURNING 1",
                   params, true);
  if (!rows) return std::unexpected(error(fmt::format("cannot withdraw item {}", id), rows.error()));
  return rows->size() == 1;
}

Result<std::vector<Inbox::Waiting>> PgInbox::waiting_sessions() {
  std::lock_guard lock(mu_);
  // Items of a session that is gone can never be applied: reported so.
  auto orphans = exec(fmt::format("{}NOT EXISTS (SELECT 1 FROM cairn_sessions s WHERE s.id = cairn_inbox.session_id)",
                                  kFailInboxItemsWhere),
                      {}, true);
  if (!orphans) return std::unexpected(error("cannot report the items of removed sessions", orphans.error()));
  auto rows = exec(
      "SELECT DISTINCT i.session_id, CASE WHEN s.owner IS NULL OR s.lease_expires IS NULL OR s.lease_expires <= now() "
      "THEN '' ELSE s.owner END FROM cairn_inbox i JOIN cairn_sessions s ON s.id = i.session_id "
      "WHERE i.state IN ('pending', 'applying', 'applied')",
      {}, true);
  if (!rows) return std::unexpected(error("cannot list the sessions with items", rows.error()));
  std::vector<Waiting> waiting;
  for (int row = 0; row < rows->size(); ++row) {
    waiting.push_back(Waiting{.session_id = std::string(rows->text(row, 0)), .owner = std::string(rows->text(row, 1))});
  }
  return waiting;
}

Result<std::int64_t> PgInbox::forget_older_than(std::chrono::seconds age) {
  const std::array<Param, 1> params{std::to_string(age.count())};
  std::lock_guard lock(mu_);
  auto rows = exec("DELETE FROM cairn_inbox WHERE decided IS NOT NULL AND decided < now() - $1::bigint * interval '1 "
                   "second' AND state IN ('decided', 'withdrawn', 'failed')",
                   params, true);
  if (!rows) return std::unexpected(error("cannot forget old items", rows.error()));
  return rows->affected();
}

Result<std::unique_ptr<LogFollow>> PgInbox::follow_session(const std::string& session_id, std::chrono::milliseconds poll,
                                                           std::function<void()> changed) {
  if (poll <= std::chrono::milliseconds::zero()) return fail(Errc::invalid_argument, "a follow's poll must be positive");
  return listener_()->follow(session_key(session_id), poll, std::move(changed));
}

Result<std::unique_ptr<LogFollow>> PgInbox::follow_item(std::int64_t id, std::chrono::milliseconds poll,
                                                        std::function<void()> changed) {
  if (poll <= std::chrono::milliseconds::zero()) return fail(Errc::invalid_argument, "a follow's poll must be positive");
  return listener_()->follow(item_key(id), poll, std::move(changed));
}

}  // namespace cairn::pg
