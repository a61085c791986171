// The PostgreSQL medium: a session's lease and its fenced appends.
//
// Fencing. A writer's right to append is its generation: the sessions row's
// generation when it took the lease. Each append is one statement, in one
// transaction of its own:
//
//   WITH head AS (UPDATE cairn_sessions SET head_seq = <last seq of the batch>
//                 WHERE id = S AND generation = G AND owner = O AND head_seq = <seq before the batch>
//                 RETURNING 1)
//   INSERT INTO cairn_records … SELECT … FROM head, (VALUES …)
//
// The UPDATE takes the session row's lock, so an append waits for a takeover
// that is committing (which bumps the generation under the same lock); READ
// COMMITTED then re-checks the WHERE against the row the takeover left, finds
// another generation, updates nothing, and the INSERT, which reads only
// through that UPDATE, inserts nothing. An `INSERT … SELECT … WHERE
// generation = G` alone takes no row lock: it reads the row as it was when
// the statement began and commits a stale record after a takeover has
// committed (tests/store/pg_store_test.cpp keeps that interleaving as a
// negative test). The head guard makes a retried batch (a lost
// acknowledgement) unable to land twice.
//
// Leases. Taking one bumps the generation; renewing moves its expiry; letting
// go clears the owner and keeps the generation. Expiries are compared with the
// database's clock only (now() in the statements). Locally, a writer keeps a
// deadline measured from before each renewal was sent — never later than the
// database's expiry — and renews before appending past it: no effect follows
// an append made after the lease could have passed to another writer.
#include "pg_medium.hpp"

#include "lease_holder.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cairn::pg {

namespace {

constexpr const char* kSchema = R"sql(
-- Every append updates its session's row (head_seq): room on each page keeps
-- those updates HOT (no index entry per append).
CREATE TABLE IF NOT EXISTS cairn_sessions (
  id             text PRIMARY KEY,
  version        bigint NOT NULL,
  timestamp      text NOT NULL,
  cwd            text NOT NULL,
  parent_session text,
  header         text NOT NULL,
  generation     bigint NOT NULL DEFAULT 0,
  owner          text,
  lease_expires  timestamptz,
  head_seq       bigint NOT NULL DEFAULT -1,
  -- For workers: operations started and not finished (kept by every append),
  -- whether the session is a child (its parent's run resumes it), how often
  -- it was claimed since its operations last finished, the last claim's
  -- failure, and a head at which it waits for a human (skipped until then).
  open_ops       bigint NOT NULL DEFAULT 0,
  child          boolean NOT NULL DEFAULT false,
  claims         integer NOT NULL DEFAULT 0,
  claim_error    text,
  skip_head      bigint NOT NULL DEFAULT -2
) WITH (fillfactor = 50);
CREATE INDEX IF NOT EXISTS cairn_sessions_claimable ON cairn_sessions (lease_expires) WHERE open_ops > 0 AND NOT child;
CREATE INDEX IF NOT EXISTS cairn_sessions_timestamp ON cairn_sessions (timestamp DESC, id DESC);
CREATE TABLE IF NOT EXISTS cairn_records (
  session_id text NOT NULL,
  seq        bigint NOT NULL,
  id         text,
  type       text NOT NULL,
  ref        text,
  run_id     text,
  payload    text NOT NULL,
  PRIMARY KEY (session_id, seq)
);
-- Version 2. Requests for a session another process held (cairn/store/inbox.hpp):
-- `request` is the JSON of what its sender received; an append that applies an
-- item sets state 'applied' and applied_seq in its own transaction.
CREATE TABLE IF NOT EXISTS cairn_inbox (
  id           bigserial PRIMARY KEY,
  session_id   text NOT NULL,
  created      timestamptz NOT NULL DEFAULT now(),
  request      text NOT NULL,
  state        text NOT NULL DEFAULT 'pending',
  generation   bigint NOT NULL DEFAULT 0,
  applied_seq  bigint,
  status       integer,
  content_type text,
  response     text,
  decided      timestamptz
);
CREATE INDEX IF NOT EXISTS cairn_inbox_open ON cairn_inbox (session_id, id) WHERE state IN ('pending', 'applying', 'applied');
CREATE INDEX IF NOT EXISTS cairn_inbox_decided ON cairn_inbox (decided) WHERE decided IS NOT NULL;
-- Version 3. The index fields an open reads instead of the payloads
-- (RecordMeta's), and whether the row has them (`indexed`): a row written
-- before version 3, or by a process of an older build still running, has
-- not, and gets them at its session's next writable open.
ALTER TABLE cairn_records ADD COLUMN IF NOT EXISTS parent_id text, ADD COLUMN IF NOT EXISTS target_id text,
  ADD COLUMN IF NOT EXISTS name text, ADD COLUMN IF NOT EXISTS custom_type text, ADD COLUMN IF NOT EXISTS role text,
  ADD COLUMN IF NOT EXISTS indexed boolean NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS cairn_repair_backups (
  session_id text NOT NULL,
  taken_at   timestamptz NOT NULL,
  seq        bigint NOT NULL,
  payload    text NOT NULL
);
)sql";

// Any number, the same in every cairn: serialises schema creation.
constexpr std::int64_t kSchemaLock = 0x636169726e;  // "cairn"

// How long a writer keeps reconnecting after its connection was lost (a
// restarting server, a killed backend) before it gives up and faults.
constexpr auto kRetryWindow = std::chrono::seconds(20);

Error db_error(const std::string& where, std::string_view what, const PgError& error) {
  return Error{Errc::io_error, fmt::format("{}: {}: {}", where, what, error.message)};
}

// Failures of the append path: Session::append names the session and store.
Error append_error(std::string_view what, const PgError& error) {
  return Error{Errc::io_error, fmt::format("{}: {}", what, error.message)};
}

std::string ttl_ms(std::chrono::milliseconds ttl) { return std::to_string(std::max<std::int64_t>(ttl.count(), 1)); }

Param text_or_null(std::string_view text) { return text.empty() ? Param() : Param(std::string(text)); }
Param optional_text(const std::optional<std::string_view>& text) {
  return text ? Param(std::string(*text)) : Param();
}

}  // namespace

void add_record_params(std::vector<Param>& params, const RecordMeta& meta, std::string_view line) {
  params.emplace_back(std::to_string(meta.seq));
  params.push_back(text_or_null(meta.id));
  params.emplace_back(std::string(to_string(meta.type)));
  params.push_back(text_or_null(meta.ref));
  params.push_back(text_or_null(meta.run_id));
  params.push_back(optional_text(meta.parent_id));
  params.push_back(optional_text(meta.target_id));
  params.push_back(text_or_null(meta.name));
  params.push_back(text_or_null(meta.custom_type));
  params.push_back(text_or_null(meta.role));
  params.emplace_back(std::string(line));
}

std::string record_placeholders(std::size_t first, bool arrays) {
  static constexpr std::array<std::string_view, kRecordParams> kTypes = {
      "bigint", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text"};
  std::string out;
  for (std::size_t i = 0; i < kRecordParams; ++i) {
    out += fmt::format("{}${}::{}{}", i ? ", " : "", first + i, kTypes[i], arrays ? "[]" : "");
  }
  return out;
}

void add_column_arrays(std::vector<Param>& params, std::span<const Param> rows, std::size_t columns) {
  assert(columns > 0 && rows.size() % columns == 0);
  for (std::size_t column = 0; column < columns; ++column) {
    std::string array = "{";
    for (std::size_t at = column; at < rows.size(); at += columns) {
      if (at != column) array += ',';
      const Param& value = rows[at];
      if (!value) {
        array += "NULL";
        continue;
      }
      array += '"';
      for (const char c : *value) {
        if (c == '"' || c == '\\') array += '\\';
        array += c;
      }
      array += '"';
    }
    array += '}';
    params.emplace_back(std::move(array));
  }
}

std::int64_t open_operations_delta(const std::vector<PreparedRecord>& records) {
  std::int64_t delta = 0;
  for (const PreparedRecord& record : records) {
    if (record.meta.type == RecordType::operation_started) ++delta;
    if (record.meta.type == RecordType::operation_finished) --delta;
  }
  return delta;
}

PgResult<std::int64_t> create_schema(Connection& connection) {
  auto tx = Transaction::begin(connection);
  if (!tx) return std::unexpected(tx.error());
  if (auto locked = connection.exec(fmt::format("SELECT pg_advisory_xact_lock({})", kSchemaLock)); !locked) {
    return std::unexpected(locked.error());
  }
  if (auto meta = connection.run("CREATE TABLE IF NOT EXISTS cairn_meta (key text PRIMARY KEY, value text NOT NULL)");
      !meta) {
    return std::unexpected(meta.error());
  }
  auto stored = connection.exec("SELECT value FROM cairn_meta WHERE key = 'schema_version'");
  if (!stored) return std::unexpected(stored.error());
  if (stored->size() == 1) {
    const std::string_view text = stored->text(0, 0);
    std::int64_t version = 0;
    const auto [end, parsed] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (parsed != std::errc() || end != text.data() + text.size()) {
      return std::unexpected(PgError{fmt::format("schema version '{}' is not a number", text), "", false});
    }
    // A newer schema is left as it is: the caller refuses it.
    if (version >= kSchemaVersion) return version;
  }
  if (auto created = connection.run(kSchema); !created) return std::unexpected(created.error());
  const std::array<Param, 1> version{std::to_string(kSchemaVersion)};
  if (auto set = connection.exec("INSERT INTO cairn_meta (key, value) VALUES ('schema_version', $1) "
                                 "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                                 version);
      !set) {
    return std::unexpected(set.error());
  }
  if (auto committed = tx->commit(); !committed) return std::unexpected(committed.error());
  return kSchemaVersion;
}

// ---- taking, renewing and letting go of a lease ---------------------------------

PgMedium::PgMedium(Key, Settings settings, Connection connection, std::int64_t generation, std::int64_t head,
                   Clock::time_point deadline)
    : settings_(std::move(settings)),
      generation_(generation),
      connection_(std::move(connection)),
      head_(head),
      deadline_(deadline) {
  renewer_ = std::jthread([this](std::stop_token stop) { renew_loop(stop); });
}

Result<std::unique_ptr<PgMedium>> PgMedium::acquire(Settings settings, const OpenOptions& options) {
  auto connection = Connection::connect(settings.conninfo);
  if (!connection) return std::unexpected(db_error(settings.where, "cannot take the lease", connection.error()));
  const auto start = Clock::now();
  const auto timeout = std::max(options.lock_timeout, std::chrono::milliseconds(0));
  // A holder seen to have died on this machine: its lease is taken at once,
  // from it alone (by owner and generation: another writer may be taking it
  // too), as its expiry would let it be.
  std::optional<std::pair<std::string, std::string>> gone;
  for (;;) {
    const auto sent = Clock::now();
    const std::array<Param, 6> params{settings.session_id, this_owner(), ttl_ms(settings.ttl),
                                      options.break_lock ? "true" : "false", gone ? Param(gone->first) : Param(),
                                      gone ? Param(gone->second) : Param()};
    auto taken = connection->exec(
        "UPDATE cairn_sessions SET generation = generation + 1, owner = $2, "
        "lease_expires = now() + $3::bigint * interval '1 millisecond' "
        "WHERE id = $1 AND (owner IS NULL OR lease_expires IS NULL OR lease_expires <= now() OR $4::boolean "
        "OR (owner = $5 AND generation = $6::bigint)) "
        "RETURNING generation, head_seq",
        params);
    if (!taken) return std::unexpected(db_error(settings.where, "cannot take the lease", taken.error()));
    if (taken->size() == 1) {
      const auto deadline = sent + settings.ttl;
      return std::make_unique<PgMedium>(Key{}, std::move(settings), std::move(*connection), taken->int64(0, 0),
                                        taken->int64(0, 1), deadline);
    }
    // Not taken: no such session, or a live holder.
    const std::array<Param, 1> id{settings.session_id};
    auto holder = connection->exec(
        "SELECT owner, generation, GREATEST(0, (EXTRACT(EPOCH FROM (lease_expires - now())) * 1000)::bigint) "
        "FROM cairn_sessions WHERE id = $1",
        id);
    if (!holder) return std::unexpected(db_error(settings.where, "cannot read the lease", holder.error()));
    if (holder->size() == 0) return fail(Errc::not_found, fmt::format("{}: no such session", settings.where));
    if (holder_is_gone(holder->text(0, 0))) {
      const std::pair<std::string, std::string> dead{std::string(holder->text(0, 0)), std::to_string(holder->int64(0, 1))};
      if (gone != dead) {
        gone = dead;
        continue;
      }
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (waited >= timeout) {
      std::string message = fmt::format("{} is held by {} (generation {}; its lease expires in {} ms unless renewed)",
                                        settings.where, describe_owner(holder->text(0, 0)), holder->int64(0, 1),
                                        holder->int64(0, 2));
      if (waited.count() > 0) message += fmt::format("; waited {} ms", waited.count());
      return fail(Errc::locked, std::move(message));
    }
    std::this_thread::sleep_for(std::min(std::chrono::milliseconds(10), timeout - waited));
  }
}

Result<std::unique_ptr<PgMedium>> PgMedium::claim(Settings settings, const ClaimOptions& options) {
  auto connection = Connection::connect(settings.conninfo);
  if (!connection) return std::unexpected(db_error(settings.where, "cannot claim a session", connection.error()));
  const auto sent = Clock::now();
  const std::array<Param, 3> params{this_owner(), ttl_ms(settings.ttl), std::to_string(options.max_claims)};
  // SKIP LOCKED: workers claiming at once each pass over the rows the others
  // are taking; the outer WHERE checks the lease again under the row's lock.
  auto claimed = connection->exec(
      "UPDATE cairn_sessions SET generation = generation + 1, owner = $1, "
      "lease_expires = now() + $2::bigint * interval '1 millisecond', claims = claims + 1 "
      "WHERE id = (SELECT id FROM cairn_sessions WHERE open_ops > 0 AND NOT child AND claims < $3::integer "
      "AND head_seq <> skip_head AND (owner IS NULL OR lease_expires IS NULL OR lease_expires <= now()) "
      "ORDER BY lease_expires NULLS FIRST, id LIMIT 1 FOR UPDATE SKIP LOCKED) "
      "AND (owner IS NULL OR lease_expires IS NULL OR lease_expires <= now()) "
      "RETURNING id, generation, head_seq",
      params);
  if (!claimed) return std::unexpected(db_error(settings.where, "cannot claim a session", claimed.error()));
  if (claimed->size() == 0) return std::unique_ptr<PgMedium>();
  settings.session_id = std::string(claimed->text(0, 0));
  settings.where += settings.session_id;
  const auto deadline = sent + settings.ttl;
  return std::make_unique<PgMedium>(Key{}, std::move(settings), std::move(*connection), claimed->int64(0, 1),
                                    claimed->int64(0, 2), deadline);
}

Result<std::unique_ptr<PgMedium>> PgMedium::create(Settings settings, const SessionHeader& header,
                                                   const std::string& header_json) {
  auto connection = Connection::connect(settings.conninfo);
  if (!connection) return std::unexpected(db_error(settings.where, "cannot create the session", connection.error()));
  const auto sent = Clock::now();
  const std::array<Param, 9> params{header.id,
                                    std::to_string(header.version),
                                    header.timestamp,
                                    header.cwd,
                                    header.parent_session ? Param(*header.parent_session) : Param(),
                                    header_json,
                                    this_owner(),
                                    ttl_ms(settings.ttl),
                                    is_child_session(header) ? "true" : "false"};
  auto inserted = connection->exec(
      "INSERT INTO cairn_sessions (id, version, timestamp, cwd, parent_session, header, generation, owner, "
      "lease_expires, head_seq, child) VALUES ($1, $2, $3, $4, $5, $6, 1, $7, "
      "now() + $8::bigint * interval '1 millisecond', -1, $9::boolean) ON CONFLICT (id) DO NOTHING",
      params);
  if (!inserted) return std::unexpected(db_error(settings.where, "cannot create the session", inserted.error()));
  if (inserted->affected() == 0) {
    return fail(Errc::already_exists, fmt::format("{}: a session with this id already exists", settings.where));
  }
  const auto deadline = sent + settings.ttl;
  return std::make_unique<PgMedium>(Key{}, std::move(settings), std::move(*connection), 1, -1, deadline);
}

PgMedium::~PgMedium() {
  renewer_.request_stop();
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  std::lock_guard lock(mu_);
  if (lost_ || !connection_.connected()) return;  // an expiry lets it go
  const std::array<Param, 3> params{settings_.session_id, std::to_string(generation_), this_owner()};
  (void)connection_.exec(
      "UPDATE cairn_sessions SET owner = NULL, lease_expires = NULL "
      "WHERE id = $1 AND generation = $2::bigint AND owner = $3",
      params);
}

std::int64_t PgMedium::head() const {
  std::lock_guard lock(mu_);
  return head_;
}

void PgMedium::renew_loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    wake_.wait_for(lock, stop, settings_.ttl / 3, [] { return false; });
    if (stop.stop_requested() || lost_) return;
    // A failure to reach the database is tried again at the next tick; the
    // local deadline keeps appends from going on without a renewal meanwhile.
    (void)renew_locked();
  }
}

Status PgMedium::renew_locked() {
  if (lost_) return std::unexpected(*lost_);
  const auto sent = Clock::now();
  const std::array<Param, 4> params{settings_.session_id, std::to_string(generation_), this_owner(), ttl_ms(settings_.ttl)};
  auto renewed = connection_.exec(
      "UPDATE cairn_sessions SET lease_expires = now() + $4::bigint * interval '1 millisecond' "
      "WHERE id = $1 AND generation = $2::bigint AND owner = $3 RETURNING 1",
      params);
  if (!renewed && renewed.error().connection_lost) {
    if (auto back = reconnect_locked(renewed.error()); !back) return back;
    renewed = connection_.exec(
        "UPDATE cairn_sessions SET lease_expires = now() + $4::bigint * interval '1 millisecond' "
        "WHERE id = $1 AND generation = $2::bigint AND owner = $3 RETURNING 1",
        params);
  }
  if (!renewed) return std::unexpected(append_error("cannot renew the lease", renewed.error()));
  if (renewed->size() == 0) {
    lost_ = fenced_error_locked(head_);
    return std::unexpected(*lost_);
  }
  deadline_ = sent + settings_.ttl;
  return {};
}

Status PgMedium::reconnect_locked(const PgError& cause) {
  const auto give_up = Clock::now() + kRetryWindow;
  PgError last = cause;
  prepared_.clear();  // a new connection has none of them
  for (auto pause = std::chrono::milliseconds(20);; pause = std::min(pause * 2, std::chrono::milliseconds(500))) {
    auto back = connection_.reconnect();
    if (back) return {};
    last = back.error();
    if (Clock::now() + pause >= give_up) break;
    std::this_thread::sleep_for(pause);
  }
  return std::unexpected(append_error(
                                  fmt::format("lost the connection and could not reconnect within {} s",
                                              std::chrono::duration_cast<std::chrono::seconds>(kRetryWindow).count()),
                                  last));
}

Error PgMedium::fenced_error_locked(std::int64_t expected_head) {
  const std::array<Param, 1> id{settings_.session_id};
  auto row = connection_.exec("SELECT generation, owner, head_seq FROM cairn_sessions WHERE id = $1", id);
  if (!row) {
    return Error{Errc::stale_writer, fmt::format("this writer's lease (generation {}) was taken over ({})",
                                                 generation_, row.error().message)};
  }
  if (row->size() == 0) {
    return Error{Errc::stale_writer,
                 fmt::format("the session was removed while this writer held generation {}", generation_)};
  }
  const std::int64_t generation = row->int64(0, 0);
  if (generation != generation_ || row->is_null(0, 1) || row->text(0, 1) != this_owner()) {
    const std::string owner = row->is_null(0, 1) ? std::string("nobody (released)") : describe_owner(row->text(0, 1));
    return Error{Errc::stale_writer, fmt::format("this writer's generation {} is stale: generation {} took over ({})",
                                                 generation_, generation, owner)};
  }
  return Error{Errc::io_error, fmt::format("the session's head is seq {}, this writer expected {}",
                                           row->int64(0, 2), expected_head)};
}

// ---- appending --------------------------------------------------------------------

// Batches of up to kPreparedBatches records run a statement prepared once
// per size on this connection: planning the statement cost as much as the
// commit. Larger ones (rare: a fork, an import) are planned each time, and
// pass each column as one array.
constexpr std::size_t kPreparedBatches = 64;

std::string append_statement(std::size_t count, bool applying) {
  const bool arrays = count > kPreparedBatches;
  const std::size_t after_records = 7 + (arrays ? kRecordParams : count * kRecordParams);
  std::string sql =
      "WITH head AS (UPDATE cairn_sessions SET head_seq = $4::bigint, open_ops = open_ops + $6::bigint, "
      "claims = CASE WHEN open_ops + $6::bigint = 0 THEN 0 ELSE claims END "
      "WHERE id = $1 AND generation = $2::bigint AND owner = $3 AND head_seq = $5::bigint RETURNING 1) ";
  if (applying) {
    // The inbox items these records apply (inbox.hpp), marked applied in the
    // records' own transaction, and only if the records land (FROM head).
    // applied_seq: the batch's first seq.
    sql += fmt::format(
        ", inbox AS (UPDATE cairn_inbox SET state = 'applied', applied_seq = {} FROM head "
        "WHERE cairn_inbox.id = ANY(${}::bigint[]) AND cairn_inbox.session_id = $1 AND cairn_inbox.state = 'applying' "
        "AND cairn_inbox.applied_seq IS NULL) ",
        arrays ? "($7::bigint[])[1]" : "$7::bigint", after_records);
  }
  sql += fmt::format("INSERT INTO cairn_records (session_id, indexed, {0}) SELECT $1, true, {0} FROM head, ",
                     kRecordColumns);
  if (arrays) {
    // One array per column: any number of records in one statement (a
    // statement takes at most 65,535 parameters).
    sql += fmt::format("unnest({}) AS v({})", record_placeholders(7, /*arrays=*/true), kRecordColumns);
    return sql;
  }
  sql += "(VALUES ";
  for (std::size_t i = 0; i < count; ++i) {
    sql += fmt::format("{}({})", i ? ", " : "", record_placeholders(7 + i * kRecordParams));
  }
  sql += fmt::format(") AS v({})", kRecordColumns);
  return sql;
}

// Records in the form append_statement(records.size()) takes them.
void add_append_params(std::vector<Param>& params, const std::vector<PreparedRecord>& records) {
  if (records.size() <= kPreparedBatches) {
    for (const PreparedRecord& record : records) add_record_params(params, record.meta, record.line);
    return;
  }
  std::vector<Param> rows;
  rows.reserve(records.size() * kRecordParams);
  for (const PreparedRecord& record : records) add_record_params(rows, record.meta, record.line);
  add_column_arrays(params, rows, kRecordParams);
}

const std::string& PgMedium::append_sql(std::size_t count, bool applying) {
  auto& sql = append_sql_[{count, applying}];
  if (sql.empty()) sql = append_statement(count, applying);
  return sql;
}


PgResult<Rows> PgMedium::run_append(std::size_t count, bool applying, std::span<const Param> params) {
  if (count > kPreparedBatches) return connection_.exec(append_sql(count, applying), params);
  const std::string name = fmt::format("cairn_append_{}{}", applying ? "applying_" : "", count);
  if (!prepared_.contains({count, applying})) {
    if (auto prepared = connection_.prepare(name, append_sql(count, applying)); !prepared) {
      return std::unexpected(prepared.error());
    }
    prepared_.insert({count, applying});
  }
  return connection_.exec_prepared(name, params);
}

Status PgMedium::append(const std::vector<PreparedRecord>& records) { return append_applying(records, {}); }

Status PgMedium::append_applying(const std::vector<PreparedRecord>& records, const std::vector<std::int64_t>& inbox_items) {
  if (records.empty()) return {};
  std::lock_guard lock(mu_);
  if (lost_) return std::unexpected(*lost_);
  // Past the local deadline the lease may already be another writer's:
  // renew first (which fails if it is).
  if (Clock::now() >= deadline_ - settings_.ttl / 3) {
    if (auto renewed = renew_locked(); !renewed) return renewed;
  }
  const std::int64_t expected = head_;
  const std::int64_t last = records.back().meta.seq;
  if (records.front().meta.seq != expected + 1) {
    return fail(Errc::internal_error, fmt::format("a batch starting at seq {} after head {}",
                                                  records.front().meta.seq, expected));
  }
  std::vector<Param> params;
  params.reserve(7 + records.size() * kRecordParams);
  params.emplace_back(settings_.session_id);
  params.emplace_back(std::to_string(generation_));
  params.emplace_back(this_owner());
  params.emplace_back(std::to_string(last));
  params.emplace_back(std::to_string(expected));
  params.emplace_back(std::to_string(open_operations_delta(records)));
  add_append_params(params, records);
  const bool applying = !inbox_items.empty();
  if (applying) params.emplace_back(fmt::format("{{{}}}", fmt::join(inbox_items, ",")));
  const auto give_up = Clock::now() + kRetryWindow;
  for (;;) {
    auto inserted = run_append(records.size(), applying, params);
    if (inserted) {
      if (inserted->affected() == static_cast<std::int64_t>(records.size())) {
        landed_at_locked(last);
        return still_held_locked();
      }
      Error error = fenced_error_locked(expected);
      if (error.is(Errc::stale_writer)) lost_ = error;
      return std::unexpected(std::move(error));
    }
    if (!inserted.error().connection_lost) {
      return std::unexpected(append_error(fmt::format("cannot append seq {}-{}", expected + 1, last),
                                      inserted.error()));
    }
    // The statement's outcome is unknown: reconnect, and see whether it
    // committed before the connection went (asking again if the connection
    // goes once more meanwhile).
    Landed landed = Landed::unknown;
    while (landed == Landed::unknown) {
      if (auto back = reconnect_locked(inserted.error()); !back) return back;
      auto asked = landed_locked(expected, records);
      if (!asked) {
        if (asked.error().is(Errc::stale_writer)) lost_ = asked.error();
        return std::unexpected(asked.error());
      }
      landed = *asked;
      if (landed == Landed::unknown && Clock::now() >= give_up) {
        return fail(Errc::io_error, fmt::format("cannot tell whether seq {}-{} was appended: the connection keeps "
                                                "failing ({})",
                                                expected + 1, last, inserted.error().message));
      }
    }
    if (landed == Landed::yes) {
      landed_at_locked(last);
      return still_held_locked();
    }
    if (Clock::now() >= give_up) {
      return fail(Errc::io_error, fmt::format("cannot append seq {}-{}: {}", expected + 1, last,
                                              inserted.error().message));
    }
  }
}

// The records are durable. But if the answer came after the local deadline
// (the process was paused, the network slow), the lease may have passed to
// another writer meanwhile, and the caller must not act on this append as if
// it still held the session: a renewal says whether it does.
Status PgMedium::still_held_locked() {
  if (Clock::now() < deadline_) return {};
  if (auto renewed = renew_locked(); !renewed) {
    return fail(renewed.error(), fmt::format("{} (the records appended last are durable; this writer acts on them no "
                                             "more)",
                                             renewed.error().message));
  }
  return {};
}

Result<PgMedium::Landed> PgMedium::landed_locked(std::int64_t expected_head, const std::vector<PreparedRecord>& records) {
  const std::array<Param, 2> params{settings_.session_id, std::to_string(records.back().meta.seq)};
  auto row = connection_.exec(
      "SELECT s.generation, s.owner, s.head_seq, r.payload FROM cairn_sessions s "
      "LEFT JOIN cairn_records r ON r.session_id = s.id AND r.seq = $2::bigint WHERE s.id = $1",
      params);
  if (!row) {
    if (row.error().connection_lost) return Landed::unknown;
    return fail(Errc::io_error, fmt::format("cannot tell whether seq {}-{} was appended: {}", expected_head + 1,
                                            records.back().meta.seq, row.error().message));
  }
  if (row->size() == 0 || row->int64(0, 0) != generation_ || row->is_null(0, 1) || row->text(0, 1) != this_owner()) {
    return std::unexpected(fenced_error_locked(expected_head));
  }
  const std::int64_t head = row->int64(0, 2);
  if (head == expected_head) return Landed::no;
  if (head == records.back().meta.seq && !row->is_null(0, 3) && row->text(0, 3) == records.back().line) {
    return Landed::yes;  // our own records, acknowledged now
  }
  return fail(Errc::io_error, fmt::format("after a lost connection the session's head is seq {}, not {} or {}",
                                          head, expected_head, records.back().meta.seq));
}

// ---- repair -------------------------------------------------------------------------

Status PgMedium::rewrite(const std::vector<PreparedRecord>& records, const std::optional<std::string>& header_json) {
  std::lock_guard lock(mu_);
  if (lost_) return std::unexpected(*lost_);
  auto tx = Transaction::begin(connection_);
  if (!tx) return std::unexpected(db_error(settings_.where, "cannot rewrite the session", tx.error()));
  const std::int64_t last = static_cast<std::int64_t>(records.size()) - 1;
  const std::array<Param, 6> fence{settings_.session_id, std::to_string(generation_), this_owner(), std::to_string(last),
                                   header_json ? Param(*header_json) : Param(),
                                   std::to_string(open_operations_delta(records))};
  auto held = connection_.exec(
      "UPDATE cairn_sessions SET head_seq = $4::bigint, header = COALESCE($5, header), open_ops = $6::bigint "
      "WHERE id = $1 AND generation = $2::bigint AND owner = $3 RETURNING 1",
      fence);
  if (!held) return std::unexpected(db_error(settings_.where, "cannot rewrite the session", held.error()));
  if (held->size() == 0) {
    lost_ = fenced_error_locked(head_);
    return std::unexpected(*lost_);
  }
  const std::array<Param, 1> id{settings_.session_id};
  if (auto cleared = connection_.exec("DELETE FROM cairn_records WHERE session_id = $1", id); !cleared) {
    return std::unexpected(db_error(settings_.where, "cannot rewrite the session", cleared.error()));
  }
  constexpr std::size_t kChunk = 500;
  for (std::size_t at = 0; at < records.size(); at += kChunk) {
    const std::size_t count = std::min(kChunk, records.size() - at);
    std::vector<Param> params;
    params.reserve(1 + count * kRecordParams);
    params.emplace_back(settings_.session_id);
    std::string sql = fmt::format("INSERT INTO cairn_records (session_id, indexed, {}) VALUES ", kRecordColumns);
    for (std::size_t i = 0; i < count; ++i) {
      sql += fmt::format("{}($1, true, {})", i ? ", " : "", record_placeholders(2 + i * kRecordParams));
      add_record_params(params, records[at + i].meta, records[at + i].line);
    }
    if (auto inserted = connection_.exec(sql, params); !inserted) {
      return std::unexpected(db_error(settings_.where, "cannot rewrite the session", inserted.error()));
    }
  }
  if (auto committed = tx->commit(); !committed) {
    return std::unexpected(db_error(settings_.where, "cannot rewrite the session", committed.error()));
  }
  landed_at_locked(last);
  return {};
}

Status PgMedium::backfill(std::span<const Param> rows) {
  assert(rows.size() % kNarrowColumns == 0);
  std::lock_guard lock(mu_);
  if (lost_) return std::unexpected(*lost_);
  auto tx = Transaction::begin(connection_);
  if (!tx) return std::unexpected(db_error(settings_.where, "cannot add the index columns", tx.error()));
  const std::array<Param, 3> fence{settings_.session_id, std::to_string(generation_), this_owner()};
  auto held = connection_.exec(
      "SELECT 1 FROM cairn_sessions WHERE id = $1 AND generation = $2::bigint AND owner = $3 FOR UPDATE",
      fence);
  if (!held) return std::unexpected(db_error(settings_.where, "cannot add the index columns", held.error()));
  if (held->size() == 0) {
    lost_ = fenced_error_locked(head_);
    return std::unexpected(*lost_);
  }
  // A page of rows a statement: each statement's arrays stay a few megabytes.
  constexpr std::size_t kPage = 8192 * kNarrowColumns;
  for (std::size_t at = 0; at < rows.size(); at += kPage) {
    std::vector<Param> params{settings_.session_id};
    add_column_arrays(params, rows.subspan(at, std::min(kPage, rows.size() - at)), kNarrowColumns);
    auto updated = connection_.exec(
        "UPDATE cairn_records r SET parent_id = v.parent_id, target_id = v.target_id, name = v.name, "
        "custom_type = v.custom_type, role = v.role, indexed = true "
        "FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) "
        "AS v(seq, parent_id, target_id, name, custom_type, role) WHERE r.session_id = $1 AND r.seq = v.seq",
        params);
    if (!updated) return std::unexpected(db_error(settings_.where, "cannot add the index columns", updated.error()));
  }
  if (auto committed = tx->commit(); !committed) {
    return std::unexpected(db_error(settings_.where, "cannot add the index columns", committed.error()));
  }
  return {};
}

void PgMedium::landed_at_locked(std::int64_t last) {
  head_ = last;
  if (settings_.announcer) settings_.announcer->announce(settings_.session_id);
}

}  // namespace cairn::pg
