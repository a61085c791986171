#include "pg_lines.hpp"

#include <array>

#include <fmt/format.h>

namespace cairn::pg {

PgResult<Rows> LineReader::exec(std::string_view sql, std::span<const Param> params) {
  std::lock_guard lock(mu_);
  if (!connection_) {
    auto connected = Connection::connect(conninfo_);
    if (!connected) return std::unexpected(connected.error());
    connection_ = std::move(*connected);
  }
  auto rows = connection_->exec(sql, params);
  if (rows || !rows.error().connection_lost) return rows;
  if (auto back = connection_->reconnect(); !back) return std::unexpected(back.error());
  return connection_->exec(sql, params);
}

Result<LineSource::Stored> PgLines::line(std::int64_t seq, RecordType) const {
  const std::array<Param, 2> params{session_id_, std::to_string(seq)};
  auto rows = reader_->exec("SELECT id, payload FROM cairn_records WHERE session_id = $1 AND seq = $2::bigint", params);
  if (!rows) return fail(Errc::io_error, fmt::format("{}, seq {}: cannot read the record: {}", where_, seq, rows.error().message));
  if (rows->size() == 0) return fail(Errc::corrupt_log, fmt::format("{}, seq {}: the record is no longer in the store", where_, seq));
  return Stored{std::string(rows->text(0, 0)), std::string(rows->text(0, 1))};
}

Result<std::vector<LineSource::Stored>> PgLines::lines(std::int64_t begin, std::int64_t end) const {
  const std::array<Param, 3> params{session_id_, std::to_string(begin), std::to_string(end)};
  auto rows = reader_->exec(
      "SELECT seq, id, payload FROM cairn_records WHERE session_id = $1 AND seq >= $2::bigint AND seq < $3::bigint "
      "ORDER BY seq",
      params);
  if (!rows) return fail(Errc::io_error, fmt::format("{}: cannot read the records: {}", where_, rows.error().message));
  std::vector<Stored> out;
  out.reserve(static_cast<std::size_t>(rows->size()));
  // The primary key makes each seq one row: a range short of its length lacks one.
  for (int i = 0; i < rows->size(); ++i) {
    const std::int64_t expected = begin + i;
    if (rows->int64(i, 0) != expected) {
      return fail(Errc::corrupt_log, fmt::format("{}, seq {}: the record is no longer in the store", where_, expected));
    }
    out.push_back(Stored{std::string(rows->text(i, 1)), std::string(rows->text(i, 2))});
  }
  if (static_cast<std::int64_t>(out.size()) < end - begin) {
    return fail(Errc::corrupt_log, fmt::format("{}, seq {}: the record is no longer in the store", where_,
                                               begin + static_cast<std::int64_t>(out.size())));
  }
  return out;
}

Result<std::int64_t> PgLines::bytes_before(std::int64_t end) const {
  const std::array<Param, 2> params{session_id_, std::to_string(end)};
  auto rows = reader_->exec(
      "SELECT coalesce(sum(octet_length(payload)), 0)::bigint FROM cairn_records WHERE session_id = $1 AND seq < $2::bigint",
      params);
  if (!rows) return fail(Errc::io_error, fmt::format("{}: cannot size the records: {}", where_, rows.error().message));
  return rows->int64(0, 0);
}

}  // namespace cairn::pg
