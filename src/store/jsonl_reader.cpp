// The JSONL session reader.
//
// A crash can leave the last line incomplete (no newline) or damaged (bytes
// that do not parse, e.g. zeros after a power loss). That line was never
// acknowledged: its append had not returned. It is left out and reported. A
// line that fails anywhere before the last one is different: an acknowledged
// record is damaged, and nothing may be guessed about it or the records after
// it, so the session is refused until `cairn repair` removes them.
#include "jsonl_reader.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "chunk_pipeline.hpp"
#include "file_io.hpp"

namespace cairn {
namespace {

struct Line {
  std::string_view text;
  long long offset = 0;
  bool terminated = false;
  bool in_mapping = false;  // lies in the mapped head, which the index may point into
};

Result<SessionHeader> parse_header(const std::string& path, std::string_view line) {
  Json json = Json::parse(line, nullptr, false);
  if (json.is_discarded()) return fail(Errc::corrupt_log, fmt::format("{}:1: the session header is not valid JSON", path));
  auto header = decode_header(json);
  if (!header) return fail(Errc::corrupt_log, fmt::format("{}:1: {}", path, header.error().message));
  if (header->version > kLogFormatVersion) {
    return fail(Errc::newer_version, fmt::format("{}:1: session format version {} is newer than this cairn reads ({}); "
                                             "if it is a pi session file, import it with `cairn import pi`",
                                             path, header->version, kLogFormatVersion));
  }
  return header;
}

// Loading a new id's slot in the id table misses the cache (the file has just
// streamed through it), so the next line's id is looked up while this one is
// parsed. cairn writes `"id":"..."` near the start of every record; if this
// quick look finds something else, only the hint is wasted.
void prefetch_id_of(std::string_view line, const SessionIndex& index) {
  // Plain loops: this runs once per line, and library searches cost more in
  // call overhead than these few bytes take to look at.
  constexpr char key[] = {'"', 'i', 'd', '"', ':', '"'};
  const std::size_t limit = std::min<std::size_t>(line.size(), 96);
  for (std::size_t at = 0; at + sizeof key <= limit; ++at) {
    if (line[at] != '"' || std::memcmp(line.data() + at, key, sizeof key) != 0) continue;
    const std::size_t start = at + sizeof key;
    for (std::size_t end = start; end < limit; ++end) {
      if (line[end] == '"') {
        index.prefetch_id(line.substr(start, end - start));
        return;
      }
    }
    return;
  }
}

// The file's lines in order: the mapped head's, each found just before it is
// scanned (one pass over the file, the line still in cache), then the copied
// tail's.
class LineCursor {
 public:
  LineCursor(std::string_view head, std::string_view tail) : head_(head), tail_(tail) {}

  bool next(Line& line) {
    const bool in_head = at_ < head_.size();
    const std::string_view text = in_head ? head_ : tail_;
    const std::size_t from = in_head ? at_ : at_ - head_.size();
    if (from >= text.size()) return false;
    const std::size_t newline = text.find('\n', from);
    const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
    // Ask for the bytes a few lines ahead: the hardware prefetcher stops at
    // each 4 KiB page, and the mapped file is not in cache.
    if (in_head) {
      for (std::size_t ahead = from + kPrefetchDistance; ahead < end + kPrefetchDistance + 1 && ahead < head_.size();
           ahead += 64) {
        __builtin_prefetch(head_.data() + ahead);
      }
    }
    line = Line{text.substr(from, end - from), static_cast<long long>(at_), newline != std::string_view::npos, in_head};
    at_ += end - from + (newline == std::string_view::npos ? 0 : 1);
    return true;
  }
  // Continues with the tail (the head's lines were read elsewhere).
  void skip_head() { at_ = std::max(at_, head_.size()); }
  // Nothing follows the line last returned.
  bool done() const { return at_ >= head_.size() + tail_.size(); }
  // The text from the start of the next line (empty at the end, or when the
  // next line lies in the tail).
  std::string_view rest() const { return at_ < head_.size() ? head_.substr(at_) : std::string_view(); }

 private:
  static constexpr std::size_t kPrefetchDistance = 4096;
  std::string_view head_, tail_;
  std::size_t at_ = 0;  // offset in the file of the next line
};

// A line's scan: its index fields (views into the chunk's strings) or why it
// is bad.
struct ScannedLine {
  Line line;
  RecordMeta meta;
  std::uint32_t id_hash = 0;  // SessionIndex::hash_id(meta.id)
  std::optional<Error> error;
};

// Scans one record line and checks its checksum (`checksums`: the session's
// format requires one on every line).
Result<RecordMeta> scan_record(std::string_view text, bool padded, bool checksums) {
  auto scanned = scan_line(text, padded);
  if (!scanned && scanned.error().message == "no seq") {
    return fail(Errc::corrupt_log, "record has no seq (a pi session file? use `cairn import pi`)");
  }
  if (!scanned) return scanned;
  auto checksum = check_checksum(text);
  if (!checksum) return std::unexpected(checksum.error());
  if (*checksum == Checksum::absent && checksums) {
    return fail(Errc::corrupt_log, "the record has no checksum, which its session's format requires");
  }
  return scanned;
}

// Parsing a large file's lines takes about as long as indexing them, and the
// index must be built in order on one thread; so a second thread parses the
// mapped head a chunk ahead of the indexing thread. Each chunk owns copies of
// its lines' index fields (the parser's own buffer is reused line by line).
class ScanPipeline {
 public:
  ScanPipeline(std::string_view head, bool checksums)
      : head_(head), checksums_(checksums), cursor_(head, {}), pipeline_([this](Chunk& chunk) { return produce(chunk); }) {}

  // The next head line (after the header), or false at the end of the head.
  bool next(ScannedLine*& out) {
    while (!current_ || at_ == current_->lines.size()) {
      current_ = pipeline_.next();
      at_ = 0;
      if (!current_) return false;
    }
    out = &current_->lines[at_++];
    return true;
  }
  // The line `ahead` lines after the one `next` returned last, if it is in
  // the same chunk.
  const ScannedLine* peek(std::size_t ahead) const {
    return current_ && at_ + ahead - 1 < current_->lines.size() ? &current_->lines[at_ + ahead - 1] : nullptr;
  }

 private:
  static constexpr std::size_t kChunkLines = 1024;
  struct Chunk {
    std::vector<ScannedLine> lines;
    StringArena strings;
  };

  // On the pipeline's thread.
  bool produce(Chunk& chunk) {
    Line line;
    if (!started_) {
      cursor_.next(line);  // the header, read by the caller
      started_ = true;
    }
    chunk.lines.reserve(kChunkLines);
    while (chunk.lines.size() < kChunkLines) {
      if (!cursor_.next(line)) return false;
      ScannedLine& scanned = chunk.lines.emplace_back();
      scanned.line = line;
      const bool padded = line.offset + static_cast<long long>(line.text.size() + kScanPadding) <=
                          static_cast<long long>(head_.size());
      auto meta = scan_record(line.text, padded, checksums_);
      if (!meta) {
        scanned.error = meta.error();
        return false;  // the reader stops here
      }
      scanned.meta = copy_meta(*meta, chunk.strings);
      scanned.id_hash = SessionIndex::hash_id(scanned.meta.id);
    }
    return true;
  }


  std::string_view head_;
  bool checksums_;
  LineCursor cursor_;    // the producer's
  bool started_ = false;  // the producer's
  std::unique_ptr<Chunk> current_;  // the consumer's
  std::size_t at_ = 0;
  ChunkPipeline<Chunk> pipeline_;  // last: its thread uses the members above
};

// How many records ahead of the one being indexed the id table's slot for
// its id is prefetched.
constexpr std::size_t kPrefetchAhead = 4;

// From this size up, the head is parsed on a second thread (ScanPipeline).
constexpr std::size_t kPipelineBytes = 256 << 10;

// About how many lines `text` holds, from the first 64 KiB of it: enough to
// reserve the index once. Reserving more than is used costs only address space.
std::size_t estimate_lines(std::string_view text) {
  const std::string_view sample = text.substr(0, 1 << 16);
  const auto newlines = static_cast<std::size_t>(std::count(sample.begin(), sample.end(), '\n'));
  if (newlines == 0) return 16;
  return text.size() / std::max<std::size_t>(sample.size() / newlines, 1) * 9 / 8;
}

}  // namespace

Result<JsonlContents> read_jsonl_session(const std::string& path) {
  auto mapped = map_log_file(path);
  if (!mapped) return std::unexpected(mapped.error());

  JsonlContents contents;
  const std::string_view head = mapped->head;
  contents.index.adopt_buffer(head, mapped->file);
  LineCursor lines(head, mapped->tail);
  const long long file_size = static_cast<long long>(head.size() + mapped->tail.size());
  Line line;
  if (!lines.next(line) || !line.terminated) {
    return fail(Errc::corrupt_log, fmt::format("{}: no complete session header", path));
  }
  auto header = parse_header(path, line.text);
  if (!header) return std::unexpected(header.error());
  contents.header = std::move(*header);
  const bool checksums = checksums_required(contents.header.version);
  contents.index.reserve(estimate_lines(head) + 2);
  contents.good_length = static_cast<long long>(line.text.size()) + 1;

  // One record line, scanned; `last`: nothing follows it in the file.
  enum class Step { next, stop };
  std::size_t number = 1;  // of the line, counting the header as 1
  auto take = [&](const Line& line, const Result<RecordMeta>& scanned, bool last) -> Result<Step> {
    ++number;
    Status status = !scanned ? Status(std::unexpected(scanned.error())) : check_invariants(*scanned, contents.index);
    if (!status) {
      const std::string where = fmt::format("{}:{}: seq {}", path, number, contents.index.next_seq());
      // Only a last line without its newline can be a torn write: an append
      // writes its line and newline at once, and a JSON line holds no raw
      // newline, so a write cut short ends before its '\n' (and a power loss
      // that zeroes the end of the file zeroes that '\n' too). A complete line
      // that is damaged may be an acknowledged record — a tool_started whose
      // tool ran — and cutting it would let that tool run again: it is damage
      // wherever it is, for `cairn repair` to replace by a placeholder.
      if (last && !line.terminated) {
        contents.report.tail_cut = true;
        contents.report.bytes_cut = file_size - line.offset;
        contents.report.last_good_seq = contents.index.next_seq() - 1;
        contents.report.detail = fmt::format("{}: torn tail: {}", where, status.error().message);
        return Step::stop;
      }
      if (status.error().is(Errc::unknown_type)) {
        return fail(Errc::unknown_type, fmt::format("{}: {}", where, status.error().message));
      }
      return fail(Errc::corrupt_log, fmt::format("{}: {}; the session is refused until `cairn repair` replaces the "
                                             "record (it keeps a backup and every intact record)",
                                             where, status.error().message));
    }
    if (line.in_mapping) {
      contents.index.add_view(*scanned, line.text);
    } else {
      contents.index.add(*scanned, line.text);
    }
    contents.good_length = line.offset + static_cast<long long>(line.text.size()) + 1;
    return Step::next;
  };

  if (head.size() >= kPipelineBytes) {
    // The head never holds the file's last line (see MappedLog), so none of
    // its lines can be a torn tail.
    ScanPipeline pipeline(head, checksums);
    ScannedLine* scanned = nullptr;
    while (pipeline.next(scanned)) {
      if (const ScannedLine* after = pipeline.peek(kPrefetchAhead); after && !after->error) {
        contents.index.prefetch_id_hash(after->id_hash);
      }
      const Result<RecordMeta> meta =
          scanned->error ? Result<RecordMeta>(std::unexpected(*scanned->error)) : Result<RecordMeta>(scanned->meta);
      if (auto step = take(scanned->line, meta, /*last=*/false); !step) return std::unexpected(step.error());
    }
    lines.skip_head();
  }
  while (lines.next(line)) {
    if (line.in_mapping) prefetch_id_of(lines.rest(), contents.index);
    // simdjson reads up to kScanPadding bytes past a line, which must stay
    // inside the head; the few lines near its end are scanned from a copy.
    const bool padded = line.in_mapping && line.offset + static_cast<long long>(line.text.size() + kScanPadding) <=
                                               static_cast<long long>(head.size());
    const Result<RecordMeta> meta =
        line.terminated ? scan_record(line.text, padded, checksums) : fail(Errc::corrupt_log, "incomplete line (no newline)");
    auto step = take(line, meta, lines.done());
    if (!step) return std::unexpected(step.error());
    if (*step == Step::stop) break;
  }
  contents.report.last_good_seq = contents.index.next_seq() - 1;
  return contents;
}

Result<SessionHeader> parse_jsonl_header(const std::string& path, std::string_view line) {
  return parse_header(path, line);
}

}  // namespace cairn
