// The stored lines of a PostgreSQL session opened from its index columns,
// read when a query needs them (SessionIndex's LineSource). Every session a
// store opens reads through one connection of the store's, made at the first
// read: a server with many sessions open holds one connection for their
// payloads, not one each.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "log/index.hpp"
#include "pg_conn.hpp"

namespace cairn::pg {

// One connection, one query at a time, for any number of sessions' reads.
class LineReader {
 public:
  explicit LineReader(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  // Runs `sql` (connecting first if need be, and again once if the
  // connection was lost: each is a read, safe to ask twice).
  PgResult<Rows> exec(std::string_view sql, std::span<const Param> params);

 private:
  const std::string conninfo_;
  std::mutex mu_;
  std::optional<Connection> connection_;  // under mu_
};

class PgLines final : public LineSource {
 public:
  // `where`: "postgres store URI (redacted), session ID".
  PgLines(std::shared_ptr<LineReader> reader, std::string session_id, std::string where)
      : reader_(std::move(reader)), session_id_(std::move(session_id)), where_(std::move(where)) {}
  Result<Stored> line(std::int64_t seq, RecordType type) const override;
  Result<std::vector<Stored>> lines(std::int64_t begin, std::int64_t end) const override;
  Result<std::int64_t> bytes_before(std::int64_t end) const override;

 private:
  const std::shared_ptr<LineReader> reader_;
  const std::string session_id_;
  const std::string where_;
};

}  // namespace cairn::pg
