// Repair of one JSONL session file (repair.hpp has the rules).
//
// The file is read whole; each line is placed at the seq it holds when its
// checksum says it is intact, and damaged lines fill the seqs between intact
// ones, so that a lost or doubled newline moves nothing else. The original
// bytes are copied to a backup before anything changes; the repaired file is
// written beside the original and renamed over it, so a crash at any moment
// leaves one of the two whole.
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "file_io.hpp"
#include "jsonl_reader.hpp"
#include "repair.hpp"

namespace cairn {
namespace {

struct FileLine {
  std::string_view text;
  std::size_t number = 0;  // 1-based, the header is line 1
  bool terminated = false;
};

std::vector<FileLine> split_file_lines(std::string_view data) {
  std::vector<FileLine> lines;
  std::size_t start = 0;
  while (start < data.size()) {
    std::size_t end = data.find('\n', start);
    const bool terminated = end != std::string_view::npos;
    if (!terminated) end = data.size();
    lines.push_back(FileLine{data.substr(start, end - start), lines.size() + 1, terminated});
    start = end + 1;
  }
  return lines;
}

// The seq an intact line holds; nullopt when the line is damaged.
std::optional<std::int64_t> intact_seq(std::string_view text, bool checksums) {
  auto checksum = check_checksum(text);
  if (!checksum || (*checksum == Checksum::absent && checksums)) return std::nullopt;
  auto scanned = scan_line(text);
  if (!scanned) return std::nullopt;
  return scanned->seq;
}

// Writes `data` to a new file `path` and syncs it. Refuses to replace one.
Status write_new_file(const std::string& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(Errc::io_error, fmt::format("cannot create {}: {}", path, errno_text()));
  Status status = write_all(fd, data, 0, path);
  if (status && ::fsync(fd) != 0) status = fail(Errc::io_error, fmt::format("cannot sync {}: {}", path, errno_text()));
  ::close(fd);
  if (!status) ::unlink(path.c_str());
  return status;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

Result<RepairReport> repair_jsonl_session(const std::string& path, std::string_view id) {
  auto data = read_file(path);
  if (!data) return std::unexpected(data.error());
  const std::vector<FileLine> lines = split_file_lines(*data);
  RepairReport report;
  report.location = path;

  // The header. A newer format is not ours to change; a damaged one is rebuilt.
  std::optional<SessionHeader> header;
  std::string header_line;
  if (!lines.empty() && lines[0].terminated) {
    auto parsed = parse_jsonl_header(path, lines[0].text);
    if (!parsed && parsed.error().is(Errc::newer_version)) {
      return fail(Errc::newer_version, parsed.error().message + "; repair changes nothing in it");
    }
    if (parsed && parsed->id == id) {
      header = std::move(*parsed);
      header_line = std::string(lines[0].text);
    } else {
      report.fixed.push_back(fmt::format("{}:1: the session header was damaged ({}); rebuilt for session {}", path,
                                         parsed ? fmt::format("it names session {}", parsed->id) : parsed.error().message,
                                         id));
    }
  } else {
    report.fixed.push_back(fmt::format("{}:1: no complete session header; rebuilt for session {}", path, id));
  }

  // Record lines; a last line without its newline is a torn write that was
  // never acknowledged (as an open for writing treats it, and for the same
  // reason: see read_jsonl_session). A complete damaged last line is damage.
  std::vector<FileLine> records(lines.begin() + std::min<std::size_t>(1, lines.size()), lines.end());
  if (!records.empty() && !records.back().terminated) {
    report.fixed.push_back(fmt::format("{}:{}: cut a torn last line of {} bytes (an append that never returned)", path,
                                       records.back().number, records.back().text.size()));
    records.pop_back();
  }

  bool checksums = false;
  if (header) {
    checksums = checksums_required(header->version);
  } else {
    // The header's version is lost: the lines say whether checksums were kept.
    for (const FileLine& line : records) {
      if (auto checksum = check_checksum(line.text); checksum && *checksum == Checksum::valid) checksums = true;
    }
    header = repair::rebuilt_header(id, lines.empty() ? std::string_view() : lines[0].text);
    header->version = checksums ? kLogFormatVersion : 1;
    header_line = encode(*header).dump(-1, ' ', false, Json::error_handler_t::replace);
  }

  // Each line at its seq: intact lines where they say they belong, damaged
  // lines in the gaps between them. Gaps with no line become placeholders of
  // records that are missing; damaged lines with no gap are not records at all.
  std::vector<repair::StoredRecord> stored;
  std::vector<std::size_t> pending;  // damaged lines waiting for their gap
  auto fill_gap = [&](std::int64_t until) {
    // Slots stored.size() .. until-1 are for the pending lines, in order.
    const auto slots = static_cast<std::size_t>(std::max<std::int64_t>(0, until - static_cast<std::int64_t>(stored.size())));
    for (std::size_t k = 0; k < pending.size(); ++k) {
      const FileLine& line = records[pending[k]];
      if (k < slots) {
        stored.push_back({std::string(line.text), std::nullopt});
      } else {
        report.fixed.push_back(fmt::format("{}:{}: {} bytes between seq {} and seq {} are not a record; dropped (the "
                                           "backup keeps them)",
                                           path, line.number, line.text.size(), until - 1, until));
      }
    }
    while (static_cast<std::int64_t>(stored.size()) < until) stored.push_back({std::string(), std::nullopt});
    pending.clear();
  };
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto seq = intact_seq(records[i].text, checksums);
    const auto next = static_cast<std::int64_t>(stored.size());
    // An intact line that claims a seq already taken, or one beyond any this
    // file could hold, is out of place: it waits for a gap like a damaged one.
    if (!seq || *seq < next || *seq > next + static_cast<std::int64_t>(records.size())) {
      pending.push_back(i);
      continue;
    }
    fill_gap(*seq);
    stored.push_back({std::string(records[i].text), std::nullopt});
  }
  fill_gap(static_cast<std::int64_t>(stored.size() + pending.size()));

  repair::Plan plan = repair::plan_into(report, stored, checksums);
  if (!report.changed()) return report;

  // The original bytes first, so that nothing repair changes is lost.
  const std::string backup = repair::backup_path(path);
  if (auto saved = write_new_file(backup, *data); !saved) return std::unexpected(saved.error());
  const std::string dir = directory_of(path);
  if (auto synced = sync_directory(dir); !synced) return std::unexpected(synced.error());
  report.backup = backup;

  std::string repaired = header_line + "\n";
  std::size_t next_replacement = 0;
  for (std::size_t seq = 0; seq < stored.size(); ++seq) {
    if (next_replacement < plan.replacements.size() &&
        plan.replacements[next_replacement].seq == static_cast<std::int64_t>(seq)) {
      repaired += plan.replacements[next_replacement++].line;
    } else {
      repaired += stored[seq].bytes;
    }
    repaired += '\n';
  }
  const std::string temporary = path + ".repair-tmp";
  ::unlink(temporary.c_str());  // left by a repair that died before its rename
  if (auto written = write_new_file(temporary, repaired); !written) return std::unexpected(written.error());
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    ::unlink(temporary.c_str());
    return fail(Errc::io_error, fmt::format("cannot replace {} with its repair: {}", path, reason));
  }
  if (auto synced = sync_directory(dir); !synced) return std::unexpected(synced.error());
  return report;
}

}  // namespace cairn
