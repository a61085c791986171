// Import of pi coding-agent session files. pi (badlogic/pi-mono,
// packages/coding-agent/src/core/session-manager.ts) reads a session file as
// JSON lines, drops the lines that do not parse, migrates the rest in memory
// (v1 → v2 → v3) and builds the context from the tree. This file does the same
// and hands the entries to Session::append_json, so that the context cairn
// builds from the imported session is the context pi builds from the file.
//
// Where pi is silent about a line (it skips it, or walks past it), we skip it
// too and say so in a note: the notes are the difference between the file and
// the session.
#include "cairn/store/pi_import.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <simdjson.h>

#include "cairn/log/record.hpp"
#include "whole_session.hpp"

namespace cairn {
namespace {

// pi's CURRENT_SESSION_VERSION.
constexpr std::int64_t kPiSessionVersion = 3;

// One parsed line and where it came from.
struct PiLine {
  std::size_t line_number = 0;  // 1-based, in the file
  Json json;
};

// pi's generateId: 8 hex characters (the start of a random UUID), unique in the set.
std::string generate_pi_id(std::unordered_set<std::string>& taken) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  for (;;) {
    std::string id = fmt::format("{:08x}", static_cast<std::uint32_t>(rng()));
    if (taken.insert(id).second) return id;
  }
}

bool is_type(const Json& entry, std::string_view type) {
  auto it = entry.find("type");
  return it != entry.end() && it->is_string() && it->get_ref<const std::string&>() == type;
}

std::string type_name(const Json& entry) {
  auto it = entry.find("type");
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string("(none)");
}

// The longest line a pi record may be. pi inlines images as base64, so a
// message with several is megabytes long; a line past this is not one (or is
// a file that never ends a line).
constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

struct Descriptor {
  int fd;
  ~Descriptor() { ::close(fd); }
};

// One line of the file: pi skips what does not parse (a torn last line),
// and so do we; bytes that are not text are no line pi wrote at all.
Status take_line(const std::string& path, std::size_t line_number, const std::string& text,
                 std::vector<PiLine>& lines, std::vector<std::string>& notes) {
  if (text.find('\0') != std::string::npos || !simdjson::validate_utf8(text.data(), text.size())) {
    return fail(Errc::invalid_argument,
                fmt::format("{}: line {}: not text ({}), which no pi record holds: not a pi session file", path,
                            line_number, text.find('\0') != std::string::npos ? "a NUL byte" : "bytes that are not UTF-8"));
  }
  if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) return {};  // pi skips blank lines
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    notes.push_back(fmt::format("line {}: skipped: not valid JSON (pi skips it too)", line_number));
  } else if (!json.is_object()) {
    notes.push_back(fmt::format("line {}: skipped: not a JSON object", line_number));
  } else {
    lines.push_back(PiLine{line_number, std::move(json)});
  }
  return {};
}

Result<std::vector<PiLine>> parse_lines(const std::string& path, std::vector<std::string>& notes) {
  // O_NONBLOCK: opening a FIFO would wait for a writer first. Only a regular
  // file is read at all: a device or a pipe need never end.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return fail(Errc::not_found, fmt::format("{}: no such file", path));
    return fail(Errc::io_error, fmt::format("{}: {}", path, std::strerror(errno)));
  }
  const Descriptor file{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(Errc::io_error, fmt::format("{}: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    return fail(Errc::invalid_argument,
                fmt::format("{}: not a regular file ({}); a pi session is a file of JSON lines", path, file_kind(st.st_mode)));
  }

  std::vector<PiLine> lines;
  std::string line;
  std::size_t line_number = 0;
  std::vector<char> buffer(std::size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::io_error, fmt::format("{}: read failed: {}", path, std::strerror(errno)));
    if (n == 0) break;
    std::string_view chunk(buffer.data(), static_cast<std::size_t>(n));
    while (!chunk.empty()) {
      const std::size_t newline = chunk.find('\n');
      const std::string_view piece = chunk.substr(0, newline);
      if (line.size() + piece.size() > kMaxLineBytes) {
        return fail(Errc::invalid_argument, fmt::format("{}: line {}: longer than {} MiB, which no pi record is: not a pi "
                                                    "session file",
                                                    path, line_number + 1, kMaxLineBytes >> 20));
      }
      line.append(piece);
      if (newline == std::string_view::npos) break;
      chunk.remove_prefix(newline + 1);
      if (auto taken = take_line(path, ++line_number, line, lines, notes); !taken) return std::unexpected(taken.error());
      line.clear();
    }
  }
  if (!line.empty()) {
    if (auto taken = take_line(path, ++line_number, line, lines, notes); !taken) return std::unexpected(taken.error());
  }
  return lines;
}

// pi's migrateV1ToV2: ids and parentIds in file order; a compaction's
// firstKeptEntryIndex (an index into the parsed lines, header included)
// becomes firstKeptEntryId. Ids are looked up as they are assigned, as pi
// does: an index naming a later entry finds no id yet and stays unset.
void migrate_v1_to_v2(std::vector<PiLine>& lines, std::vector<std::string>& notes) {
  std::unordered_set<std::string> taken;
  std::optional<std::string> previous;
  std::size_t assigned = 0;
  for (auto& line : lines) {
    Json& entry = line.json;
    if (is_type(entry, "session")) {
      entry["version"] = 2;
      continue;
    }
    std::string id = generate_pi_id(taken);
    entry["id"] = id;
    entry["parentId"] = previous ? Json(*previous) : Json(nullptr);
    previous = id;
    ++assigned;

    if (!is_type(entry, "compaction")) continue;
    auto index_it = entry.find("firstKeptEntryIndex");
    if (index_it == entry.end() || !index_it->is_number()) continue;
    const Json index = *index_it;
    std::optional<std::string> kept;
    if (index.is_number_integer() && index.get<std::int64_t>() >= 0 &&
        static_cast<std::size_t>(index.get<std::int64_t>()) < lines.size()) {
      const Json& target = lines[static_cast<std::size_t>(index.get<std::int64_t>())].json;
      auto target_id = target.find("id");
      if (!is_type(target, "session") && target_id != target.end() && target_id->is_string()) {
        kept = target_id->get<std::string>();
      }
    }
    if (kept) {
      entry["firstKeptEntryId"] = *kept;
      notes.push_back(fmt::format("line {}: compaction firstKeptEntryIndex {} became firstKeptEntryId {}",
                                  line.line_number, index.dump(), *kept));
    } else {
      notes.push_back(fmt::format(
          "line {}: compaction firstKeptEntryIndex {} names no earlier entry; firstKeptEntryId left unset, as pi does",
          line.line_number, index.dump()));
    }
    entry.erase("firstKeptEntryIndex");
  }
  notes.push_back(fmt::format("migrated v1 to v2: assigned ids and parentIds to {} entries", assigned));
}

// pi's migrateV2ToV3: the "hookMessage" role is now "custom".
void migrate_v2_to_v3(std::vector<PiLine>& lines, std::vector<std::string>& notes) {
  for (auto& line : lines) {
    Json& entry = line.json;
    if (is_type(entry, "session")) {
      entry["version"] = kPiSessionVersion;
      continue;
    }
    if (!is_type(entry, "message")) continue;
    auto message = entry.find("message");
    if (message == entry.end() || !message->is_object()) continue;
    auto role = message->find("role");
    if (role != message->end() && role->is_string() && role->get_ref<const std::string&>() == "hookMessage") {
      *role = "custom";
      notes.push_back(fmt::format("line {}: message role hookMessage became custom", line.line_number));
    }
  }
}

}  // namespace

Result<std::vector<Json>> read_pi_entries(const std::string& path, Json* header_out,
                                          std::vector<std::string>* notes_out) {
  std::vector<std::string> scratch;
  std::vector<std::string>& notes = notes_out ? *notes_out : scratch;

  auto parsed = parse_lines(path, notes);
  if (!parsed) return std::unexpected(parsed.error());
  std::vector<PiLine>& lines = *parsed;

  // pi's loadEntriesFromFile: the first parsed line must be the header.
  if (lines.empty() || !is_type(lines.front().json, "session") || !lines.front().json.contains("id") ||
      !lines.front().json["id"].is_string()) {
    return fail(Errc::invalid_argument,
                fmt::format("{}: not a pi session file (the first line is not a session header with an id)", path));
  }
  const Json header = lines.front().json;
  if (header_out) *header_out = header;

  std::int64_t version = 1;
  if (auto it = header.find("version"); it != header.end() && it->is_number()) {
    version = it->get<std::int64_t>();
  }
  if (version > kPiSessionVersion) {
    return fail(Errc::newer_version, fmt::format("{}: pi session format version {} is newer than the {} this build reads",
                                             path, version, kPiSessionVersion));
  }
  if (version < 2) migrate_v1_to_v2(lines, notes);
  if (version < 3) migrate_v2_to_v3(lines, notes);

  // From pi's entries to cairn's. pi walks a path through entries it then
  // ignores (unknown types) and stops where a parent is missing (a line that
  // did not parse); re-parenting past skipped entries and making orphans roots
  // keeps every path's projection what pi's is.
  std::vector<Json> entries;
  std::unordered_set<std::string> kept_ids;
  std::unordered_map<std::string, std::optional<std::string>> skipped_parent;  // skipped id → its effective parent
  std::unordered_set<std::string> later_ids;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (auto id = lines[i].json.find("id"); id != lines[i].json.end() && id->is_string()) {
      later_ids.insert(id->get<std::string>());
    }
  }

  auto effective_parent = [&](const Json& entry) -> std::optional<std::string> {
    auto it = entry.find("parentId");
    if (it == entry.end() || !it->is_string()) return std::nullopt;
    std::string parent = it->get<std::string>();
    for (;;) {
      if (kept_ids.contains(parent)) return parent;
      auto skipped = skipped_parent.find(parent);
      if (skipped == skipped_parent.end() || !skipped->second) return std::nullopt;
      parent = *skipped->second;
    }
  };

  for (std::size_t i = 1; i < lines.size(); ++i) {
    PiLine& line = lines[i];
    Json& entry = line.json;
    std::string id;
    if (auto it = entry.find("id"); it != entry.end() && it->is_string()) id = it->get<std::string>();
    later_ids.erase(id);

    if (is_type(entry, "session")) {
      notes.push_back(fmt::format("line {}: skipped: a second session header (pi ignores it)", line.line_number));
      continue;
    }
    if (!id.empty() && kept_ids.contains(id)) {
      return fail(Errc::duplicate_id, fmt::format("{}: line {}: id '{}' is used by an earlier entry", path,
                                              line.line_number, id));
    }

    // Parent: an earlier kept entry; past a skipped one to its parent; none
    // (the line that held it did not parse) makes this entry a root, where
    // pi's walk from the leaf stops too.
    auto parent_it = entry.find("parentId");
    if (parent_it != entry.end() && parent_it->is_string()) {
      const std::string parent = parent_it->get<std::string>();
      if (!kept_ids.contains(parent)) {
        if (later_ids.contains(parent)) {
          return fail(Errc::invalid_argument,
                      fmt::format("{}: line {}: parentId '{}' names a later entry; cairn needs parents first", path,
                                  line.line_number, parent));
        }
        auto resolved = effective_parent(entry);
        if (skipped_parent.contains(parent)) {
          notes.push_back(fmt::format("line {}: parentId {} (a skipped entry) became {}", line.line_number, parent,
                                      resolved ? *resolved : std::string("null")));
        } else {
          notes.push_back(fmt::format("line {}: parentId {} names no entry in the file; the entry became a root, "
                                      "where pi's walk stops too",
                                      line.line_number, parent));
        }
        *parent_it = resolved ? Json(*resolved) : Json(nullptr);
      }
    }

    // A compaction whose firstKeptEntryId is unset (a v1 index that named the
    // header or nothing) keeps no entry in pi: no path entry matches it. Its
    // own id matches none before it either, and cairn needs an id there.
    if (is_type(entry, "compaction") && !id.empty()) {
      auto kept = entry.find("firstKeptEntryId");
      if (kept == entry.end() || !kept->is_string() || kept->get_ref<const std::string&>().empty()) {
        entry["firstKeptEntryId"] = id;
        notes.push_back(fmt::format("line {}: compaction without firstKeptEntryId: set to its own id, which keeps no "
                                    "earlier entry, as pi keeps none",
                                    line.line_number));
      }
    }

    auto decoded = decode_record(entry, /*require_seq=*/false);
    if (!decoded && decoded.error().is(Errc::unknown_type)) {
      notes.push_back(fmt::format("line {}: skipped: entry type '{}' is unknown to cairn (pi ignores it in the "
                                  "context)",
                                  line.line_number, type_name(entry)));
      if (!id.empty()) skipped_parent[id] = effective_parent(entry);
      continue;
    }
    if (!decoded) {
      return fail(decoded.error(),
                  fmt::format("{}: line {}: {}", path, line.line_number, decoded.error().message));
    }
    if (!std::holds_alternative<TreeEntry>(decoded->body)) {
      return fail(Errc::invalid_record, fmt::format("{}: line {}: '{}' is not a session entry", path, line.line_number,
                                                type_name(entry)));
    }
    // A label on an entry that was skipped has nothing to mark.
    if (const auto* label = std::get_if<Label>(&std::get<TreeEntry>(decoded->body).body);
        label && !kept_ids.contains(label->target_id)) {
      notes.push_back(fmt::format("line {}: skipped: label on {}, which is not imported", line.line_number,
                                  label->target_id));
      skipped_parent[id] = effective_parent(entry);
      continue;
    }
    kept_ids.insert(id);
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<PiImportResult> import_pi_session(Store& store, const std::string& path) {
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) absolute = path;

  Json header;
  PiImportResult result;
  auto entries = read_pi_entries(absolute, &header, &result.notes);
  if (!entries) return std::unexpected(entries.error());

  result.version = header.contains("version") && header["version"].is_number() ? header["version"].get<std::int64_t>()
                                                                                : 1;
  CreateOptions options;
  if (auto cwd = header.find("cwd"); cwd != header.end() && cwd->is_string()) options.cwd = cwd->get<std::string>();
  Json imported_from = Json::object();
  imported_from["format"] = "pi";
  imported_from["id"] = header["id"];
  imported_from["path"] = absolute;
  // The session is created now; when pi created it is a fact about the source.
  if (auto created = header.find("timestamp"); created != header.end() && created->is_string()) {
    imported_from["timestamp"] = *created;
  }
  // pi's parentSession is a file path, not a cairn session id: kept as a fact
  // about the source rather than as the new session's parent.
  if (auto parent = header.find("parentSession"); parent != header.end() && !parent->is_null()) {
    imported_from["parentSession"] = *parent;
  }
  options.header_extra["importedFrom"] = std::move(imported_from);

  // The import happens whole or not at all, whenever the process dies.
  auto created = create_whole_session(store, options, [&](Session& scratch) -> Result<std::int64_t> {
    if (entries->empty()) return 0;
    auto appended = scratch.append_json(*entries);
    if (!appended) return fail(appended.error(), fmt::format("{}: {}", absolute, appended.error().message));
    return appended->count;
  });
  if (!created) return std::unexpected(created.error());
  result.session = std::move(created->session);
  result.imported = created->records;
  return result;
}

}  // namespace cairn
