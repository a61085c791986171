// What the SQL stores share (sql_store.hpp).
#include "sql_store.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "guarded.hpp"
#include "log/checksum.hpp"
#include "repair.hpp"
#include "session_ids.hpp"

namespace cairn {
namespace {

SessionHeader from_columns(const SessionRow& row) {
  return SessionHeader{
      .id = row.id, .timestamp = row.timestamp, .cwd = row.cwd, .parent_session = row.parent_session};
}

Json parsed(const SessionRow& row) {
  return Json::parse(row.header.begin(), row.header.end(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

// Why a payload cannot be trusted beside its columns, or nullopt when it can:
// its checksum fails or is missing where the format needs one, or (a record
// from before checksums) it does not scan or disagrees with its columns.
std::optional<std::string> payload_damage(const RecordMeta& columns, std::string_view payload, bool checksums) {
  auto checksum = check_checksum(payload);
  if (!checksum) return checksum.error().message;
  if (*checksum == Checksum::valid) return std::nullopt;
  if (checksums) return "the record has no checksum, which its session's format requires";
  auto scanned = scan_line(payload);
  if (!scanned) return fmt::format("payload: {}", scanned.error().message);
  if (scanned->seq != columns.seq) return "the seq column disagrees with the payload";
  if (auto field = repair::disagreement(columns, *scanned)) return fmt::format("the {} column disagrees with the payload", *field);
  return std::nullopt;
}

SessionHeader listed_header(const SessionRow& row) {
  if (auto header = decode_header(parsed(row))) return std::move(*header);
  SessionHeader header = from_columns(row);
  header.version = row.version;
  return header;
}

Result<SessionHeader> opened_header(const SessionRow& row, std::string_view where) {
  const Json json = parsed(row);
  if (!json.is_object()) return fail(Errc::corrupt_log, fmt::format("{}: the header is not a JSON object", where));
  std::int64_t version = row.version;
  if (auto it = json.find("version"); it != json.end() && it->is_number_integer()) {
    version = std::max(version, it->get<std::int64_t>());
  }
  if (version > kLogFormatVersion) {
    return fail(Errc::newer_version, fmt::format("{}: the header's format version {} is newer than this build's {}",
                                                 where, version, kLogFormatVersion));
  }
  auto header = decode_header(json);
  if (!header) return fail(Errc::corrupt_log, fmt::format("{}: {}", where, header.error().message));
  if (header->id != row.id) {
    return fail(Errc::corrupt_log, fmt::format("{}: the header names session {}", where, header->id));
  }
  return header;
}

Result<std::vector<SessionHeader>> SqlStore::list() {
  return guarded(fmt::format("{}: list", name()), [&] { return list_sessions(); });
}

Result<std::shared_ptr<Session>> SqlStore::create(const CreateOptions& options) {
  return guarded(fmt::format("{}: create", name()), [&] { return create_session(options); });
}

Result<std::shared_ptr<Session>> SqlStore::create_with_log(const SessionHeader& header,
                                                           const std::vector<LogLine>& log) {
  return guarded(where(header.id), [&] { return create_session_with_log(header, log); });
}

Result<std::shared_ptr<Session>> SqlStore::open(std::string_view id, const OpenOptions& options) {
  return guarded(where(id), [&] { return open_session(std::string(id), options); });
}

Status SqlStore::remove(std::string_view id) {
  return guarded(where(id), [&] { return remove_session(std::string(id)); });
}

Result<RepairReport> SqlStore::repair(std::string_view id) {
  return guarded(where(id), [&] { return repair_session(std::string(id)); });
}

Result<std::string> SqlStore::log_stamp(std::string_view id) {
  return guarded(where(id), [&] { return stamp_of(std::string(id)); });
}

Result<SessionHeader> SqlStore::read_header(const std::string& id) {
  auto row = read_row(id);
  if (!row) return std::unexpected(row.error());
  return opened_header(*row, where(id));
}

Status SqlStore::check_openable(const std::string& id) {
  if (!valid_session_id(id)) return std::unexpected(not_found(id));
  std::lock_guard guard(mu_);
  if (auto header = read_header(id); !header) return std::unexpected(header.error());
  return {};
}

Result<SessionHeader> SqlStore::header_to_repair(const std::string& id, RepairReport& report,
                                                 std::optional<SessionHeader>& rebuilt) {
  auto row = read_row(id);
  if (!row) return std::unexpected(row.error());
  auto header = opened_header(*row, where(id));
  if (header) return header;
  if (!header.error().is(Errc::corrupt_log)) {
    return fail(header.error(), header.error().message + "; repair changes nothing in it");
  }
  report.fixed.push_back(
      fmt::format("the session header was damaged ({}); rebuilt from its columns", header.error().message));
  rebuilt = from_columns(*row);
  repair::mark_rebuilt(*rebuilt);
  return *rebuilt;
}

}  // namespace cairn
