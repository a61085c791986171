// The PostgreSQL store's writer: a lease on one session's row, renewed in the
// background, and the fenced append (pg_medium.cpp says how the statement is
// shaped, and why).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "cairn/store/store.hpp"
#include "pg_conn.hpp"
#include "pg_notify.hpp"
#include "store/log_medium.hpp"

namespace cairn::pg {

// The schema this build writes and reads (cairn_meta.schema_version): 2
// added the inbox (cairn_inbox), 3 the index columns an open reads instead
// of the payloads (cairn_records.parent_id …, indexed); an
// older database gains them on open.
inline constexpr std::int64_t kSchemaVersion = 3;

// Creates the tables if missing and returns the database's schema version;
// a newer one is left as it is. Safe against other processes doing the same.
PgResult<std::int64_t> create_schema(Connection& connection);

// The columns of a record's row that its writers fill, in this order: the
// index fields of RecordMeta, then the stored line.
inline constexpr std::string_view kRecordColumns =
    "seq, id, type, ref, run_id, parent_id, target_id, name, custom_type, role, payload";
inline constexpr std::size_t kRecordParams = 11;
// A record's parameters, in kRecordColumns' order.
void add_record_params(std::vector<Param>& params, const RecordMeta& meta, std::string_view line);
// "$first::bigint, $…::text, …": one record's placeholders, typed (arrays:
// "$first::bigint[], …", a column each).
std::string record_placeholders(std::size_t first, bool arrays = false);

// `rows` (a row every `columns` params) as one PostgreSQL array literal per
// column, for `unnest($n::type[], …)`: any number of rows in a fixed number
// of parameters.
void add_column_arrays(std::vector<Param>& params, std::span<const Param> rows, std::size_t columns);

// Operations a batch opens less those it finishes (the open_ops column).
std::int64_t open_operations_delta(const std::vector<PreparedRecord>& records);

// The fenced append of `count` records (pg_medium.cpp says why it is shaped
// so). Its parameters: $1 session id, $2 generation, $3 owner, $4 the
// batch's last seq, $5 the head it expects, $6 open operations added; then
// kRecordParams per record (kRecordColumns).
// With `applying`, one more parameter: the ids of the inbox items the
// records apply (an array), marked applied in the same transaction.
std::string append_statement(std::size_t count, bool applying = false);

// The store's settings a medium needs.
struct Settings {
  std::string conninfo;  // with the password, for libpq only
  std::string where;     // "postgres store URI (redacted), session ID"
  std::string session_id;
  std::chrono::milliseconds ttl{15000};
  // Told of every append that landed (null: the store announces nothing).
  std::shared_ptr<Announcer> announcer;
};

class PgMedium final : public LogMedium {
  struct Key {
    explicit Key() = default;
  };

 public:
  // Connects and takes the session's lease: at once when it is free or its
  // holder's expired, after waiting up to `options.lock_timeout` for it, or
  // from a live holder with `options.break_lock`. Each take bumps the
  // generation, so every earlier holder is stale from that commit on.
  static Result<std::unique_ptr<PgMedium>> acquire(Settings settings, const OpenOptions& options);
  // Connects and takes the lease of a claimable session (Store::claim); a
  // null medium when there is none. `settings.where` is completed with the
  // session's id, and `settings.session_id` set to it.
  static Result<std::unique_ptr<PgMedium>> claim(Settings settings, const ClaimOptions& options);
  const std::string& session_id() const { return settings_.session_id; }
  // Connects and inserts the session's row, held by this process at
  // generation 1; already_exists when the id is taken.
  static Result<std::unique_ptr<PgMedium>> create(Settings settings, const SessionHeader& header,
                                                  const std::string& header_json);
  // Stops renewing and lets the lease go (without bumping the generation).
  ~PgMedium() override;

  Status append(const std::vector<PreparedRecord>& records) override;
  Status append_applying(const std::vector<PreparedRecord>& records, const std::vector<std::int64_t>& inbox_items) override;
  std::string describe() const override { return settings_.where; }

  std::int64_t generation() const { return generation_; }
  // The seq of the last record in the session when the lease was taken.
  std::int64_t head() const;
  // For repair, holding the lease: replaces the session's records by
  // `records` (seq 0 … n-1), and its header when one is given, in one
  // transaction fenced like an append.
  Status rewrite(const std::vector<PreparedRecord>& records, const std::optional<std::string>& header_json);
  // Holding the lease, for rows written without their index columns
  // (before schema 3, or by an older build): fills them from `rows`
  // (kNarrowColumns each, read from the payloads at this open) and marks
  // the rows indexed, in one transaction fenced like an append.
  static constexpr std::size_t kNarrowColumns = 6;  // seq, parent_id, target_id, name, custom_type, role
  Status backfill(std::span<const Param> rows);

  using Clock = std::chrono::steady_clock;
  // `deadline`: the local lease deadline, measured from before the statement
  // that took the lease was sent.
  PgMedium(Key, Settings settings, Connection connection, std::int64_t generation, std::int64_t head,
           Clock::time_point deadline);

 private:
  void renew_loop(std::stop_token stop);
  // Renews the lease (mu_ held). Fenced: a lease taken over fails with
  // stale_writer and marks this medium lost.
  Status renew_locked();
  // Reconnects after a lost connection (mu_ held), trying until kRetryWindow.
  Status reconnect_locked(const PgError& cause);
  // After a successful append: whether the lease was still ours when it
  // returned (renews past the local deadline).
  Status still_held_locked();
  // Why appending failed with zero rows: the generation that took over, or a
  // head that moved under us.
  Error fenced_error_locked(std::int64_t expected_head);
  // After a lost connection during an append: whether that append committed
  // (its last record is there, byte for byte), did not, or cannot be told
  // yet (the connection went again); an error when another writer took over.
  enum class Landed { yes, no, unknown };
  Result<Landed> landed_locked(std::int64_t expected_head, const std::vector<PreparedRecord>& records);
  const std::string& append_sql(std::size_t count, bool applying);
  // Records up to seq `last` are in the database (mu_ held): the new head,
  // announced to the session's followers.
  void landed_at_locked(std::int64_t last);
  // Runs the append statement for `count` records (mu_ held).
  PgResult<Rows> run_append(std::size_t count, bool applying, std::span<const Param> params);

  const Settings settings_;
  const std::int64_t generation_;
  mutable std::mutex mu_;  // the connection, head_, deadline_, lost_
  Connection connection_;
  std::int64_t head_;
  Clock::time_point deadline_;   // the local lease deadline: no append after it without a renewal
  std::optional<Error> lost_;    // the lease was taken over: every append fails with it
  std::map<std::pair<std::size_t, bool>, std::string> append_sql_;  // by batch size, applying
  std::set<std::pair<std::size_t, bool>> prepared_;  // the statements prepared on the connection
  std::condition_variable_any wake_;
  std::jthread renewer_;  // last: stopped (joined) first
};

}  // namespace cairn::pg
