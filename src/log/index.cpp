// SessionIndex: state, reads and queries over one session's records.
#include "log/index.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "id_table.hpp"

namespace cairn {
namespace {

// Cursors are "s<seq>": the last record a page returned.
std::string cursor_for(std::int64_t seq) { return fmt::format("s{}", seq); }

Result<std::int64_t> parse_cursor(const std::string& cursor) {
  std::int64_t seq = -1;
  if (cursor.size() < 2 || cursor[0] != 's' ||
      std::from_chars(cursor.data() + 1, cursor.data() + cursor.size(), seq).ec != std::errc{} || seq < 0) {
    return fail(Errc::invalid_argument, fmt::format("malformed cursor '{}'", cursor));
  }
  return seq;
}

Result<Record> decode_line(std::string_view line, std::int64_t seq) {
  auto record = decode_record_line(line);
  if (!record) return fail(Errc::corrupt_log, fmt::format("seq {}: stored line is not valid JSON", seq));
  if (!*record) return fail(record->error(), fmt::format("seq {}: {}", seq, record->error().message));
  return std::move(*record);
}

}  // namespace

std::string_view StringArena::store(std::string_view text) {
  if (text.empty()) return {};
  if (capacity_ - used_ < text.size()) {
    // Blocks grow with the arena, so a large session needs few of them.
    const std::size_t size = std::max<std::size_t>(text.size(), std::clamp<std::size_t>(bytes_ / 4, 4096, 1 << 22));
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    used_ = 0;
    capacity_ = size;
  }
  char* at = blocks_.back().get() + used_;
  std::memcpy(at, text.data(), text.size());
  used_ += text.size();
  bytes_ += text.size();
  return {at, text.size()};
}

RecordMeta copy_meta(const RecordMeta& meta, StringArena& strings) {
  RecordMeta kept = meta;
  auto copy = [&](std::string_view text) { return text.empty() ? text : strings.store(text); };
  kept.id = copy(meta.id);
  if (meta.parent_id) kept.parent_id = copy(*meta.parent_id);
  if (meta.target_id) kept.target_id = copy(*meta.target_id);
  kept.ref = copy(meta.ref);
  kept.run_id = copy(meta.run_id);
  kept.name = copy(meta.name);
  kept.custom_type = copy(meta.custom_type);
  kept.role = copy(meta.role);
  return kept;
}

SessionIndex::SessionIndex() : by_id_(std::make_unique<IdTable>()) {
  names_.push_back({});
  refs_.emplace("main", RefSlot{});
  ref_order_.push_back("main");
}
SessionIndex::SessionIndex(SessionIndex&&) noexcept = default;
SessionIndex& SessionIndex::operator=(SessionIndex&&) noexcept = default;
SessionIndex::~SessionIndex() = default;

void SessionIndex::add(const RecordMeta& meta, std::string_view line) { add_view(meta, strings_.store(line)); }

void SessionIndex::reserve(std::size_t records) {
  records_.reserve(records);
  by_id_->reserve(records);
}

std::uint32_t SessionIndex::intern(std::string_view name) {
  if (name.empty()) return 0;
  if (auto it = name_ids_.find(name); it != name_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.push_back(strings_.store(name));
  name_ids_.emplace(names_.back(), id);
  return id;
}

std::optional<std::uint32_t> SessionIndex::interned(std::string_view name) const {
  if (name.empty()) return 0;
  auto it = name_ids_.find(name);
  if (it == name_ids_.end()) return std::nullopt;
  return it->second;
}

std::int32_t SessionIndex::find_id(std::string_view id) const {
  // A parent, a run or a target is nearly always one of the last few records,
  // which are in cache; the table's slot, after a large file has streamed
  // through the cache, usually is not.
  const std::uint32_t h = IdTable::hash(id);
  const std::size_t n = records_.size();
  for (std::size_t back = 1; back <= kRecentIds && back <= n; ++back) {
    const IndexedRecord& record = records_[n - back];
    if (record.id_hash == h && record.id == id && !id.empty()) return static_cast<std::int32_t>(n - back);
  }
  return by_id_->find(id, h, records_);
}

void SessionIndex::prefetch_id_hash(std::uint32_t hash) const { by_id_->prefetch(hash); }
std::uint32_t SessionIndex::hash_id(std::string_view id) { return IdTable::hash(id); }

std::int32_t SessionIndex::seq_or_none(std::optional<std::string_view> id) const { return id ? find_id(*id) : -1; }

void SessionIndex::add_unloaded(const RecordMeta& meta) {
  ++unloaded_;
  add_view(meta, {});
}

void SessionIndex::add_view(const RecordMeta& meta, std::string_view line) {
  IndexedRecord record;
  record.line = line;
  record.type = meta.type;
  record.id = strings_.store(meta.id);
  record.id_hash = IdTable::hash(record.id);
  record.parent = seq_or_none(meta.parent_id);
  record.target = seq_or_none(meta.target_id);
  if (acting_type(meta) == RecordType::operation_started) {
    record.run = static_cast<std::int32_t>(records_.size());
  } else if (!meta.run_id.empty()) {
    record.run = find_id(meta.run_id);
  }
  record.ref = intern(meta.ref);
  record.detail = intern(meta.type == RecordType::message ? meta.role : meta.custom_type);
  if (is_tree_type(meta.type)) {
    if (record.parent >= 0) {
      const IndexedRecord& parent = records_[static_cast<std::size_t>(record.parent)];
      record.last_compaction = parent.last_compaction;
      record.last_model = parent.last_model;
      record.last_thinking = parent.last_thinking;
      record.last_tools = parent.last_tools;
    }
    const auto self = static_cast<std::int32_t>(records_.size());
    switch (meta.type) {
      case RecordType::compaction: record.last_compaction = self; break;
      case RecordType::model_change: record.last_model = self; break;
      case RecordType::thinking_level_change: record.last_thinking = self; break;
      case RecordType::active_tools_change: record.last_tools = self; break;
      case RecordType::message:
        if (meta.role == "assistant") record.last_model = self;
        break;
      default: break;
    }
  }
  bytes_ += static_cast<std::int64_t>(line.size());
  records_.push_back(record);
  apply_record(meta, *this);
}

std::optional<RecordType> SessionIndex::type_of_id(std::string_view id) const {
  const std::int32_t seq = find_id(id);
  if (seq < 0) return std::nullopt;
  return records_[static_cast<std::size_t>(seq)].type;
}

const LogStateView::RefSlot* SessionIndex::ref(std::string_view name) const {
  auto it = refs_.find(name);
  return it == refs_.end() ? nullptr : &it->second;
}

void SessionIndex::put_id(std::string_view, RecordType) {
  // The record being added is always the newest one; its id is in the arena.
  by_id_->insert(records_.back().id_hash, static_cast<std::int32_t>(records_.size() - 1));
}

LogStateView::RefSlot& SessionIndex::mutable_ref(std::string_view name) { return refs_.find(name)->second; }

void SessionIndex::create_ref(std::string_view name, std::optional<std::string> leaf) {
  refs_.insert_or_assign(std::string(name), RefSlot{std::move(leaf), std::nullopt});
  ref_order_.emplace_back(name);
}

void SessionIndex::erase_ref(std::string_view name) {
  if (auto it = refs_.find(name); it != refs_.end()) refs_.erase(it);
  std::erase(ref_order_, name);
}

std::optional<std::int64_t> SessionIndex::seq_of(std::string_view id) const {
  const std::int32_t seq = find_id(id);
  if (seq < 0) return std::nullopt;
  return seq;
}

std::string_view SessionIndex::custom_type_of(const IndexedRecord& record) const {
  return record.type == RecordType::custom || record.type == RecordType::custom_message ? name_of(record.detail)
                                                                                          : std::string_view();
}

Result<std::string> SessionIndex::checked(std::int64_t seq, LineSource::Stored stored) const {
  if (stored.id != at(seq).id) {
    return fail(Errc::corrupt_log, fmt::format("seq {}: the stored record changed since the session was opened: its id "
                                           "is '{}', was '{}'",
                                           seq, stored.id, at(seq).id));
  }
  // A line read back from its store now is checked as the open path checks
  // the lines it reads: a store that indexes from columns reads payloads late.
  auto checksum = check_checksum(stored.line);
  if (!checksum) return fail(Errc::corrupt_log, fmt::format("seq {}: {}", seq, checksum.error().message));
  if (*checksum == Checksum::absent && checksums_required_) {
    return fail(Errc::corrupt_log, fmt::format("seq {}: the record has no checksum, which its session's format requires", seq));
  }
  return std::move(stored.line);
}

Result<std::string> SessionIndex::stored_line(std::int64_t seq) const {
  const IndexedRecord& record = at(seq);
  if (!record.line.empty()) return std::string(record.line);
  if (!source_) return fail(Errc::corrupt_log, fmt::format("seq {}: the index has no stored line for it", seq));
  auto stored = source_->line(seq, record.type);
  if (!stored) return std::unexpected(std::move(stored.error()));
  return checked(seq, std::move(*stored));
}

Result<Record> SessionIndex::decode(std::int64_t seq) const {
  if (const std::string_view line = at(seq).line; !line.empty()) return decode_line(line, seq);
  auto line = stored_line(seq);
  if (!line) return std::unexpected(std::move(line.error()));
  return decode_line(*line, seq);
}

namespace {

Result<TreeEntry> entry_of(Result<Record> record, std::int64_t seq) {
  if (!record) return std::unexpected(record.error());
  auto* entry = std::get_if<TreeEntry>(&record->body);
  if (!entry) return fail(Errc::invalid_argument, fmt::format("seq {} is not a tree entry", seq));
  return std::move(*entry);
}

}  // namespace

Result<TreeEntry> SessionIndex::decode_entry(std::int64_t seq) const { return entry_of(decode(seq), seq); }

Result<TreeEntry> SessionIndex::decode_entry(std::int64_t seq, std::string_view line) const {
  return entry_of(decode_line(line, seq), seq);
}

Result<std::optional<TreeEntry>> SessionIndex::get_entry(std::string_view id) const {
  auto seq = seq_of(id);
  if (!seq || !is_tree_type(at(*seq).type)) return std::nullopt;
  auto entry = decode_entry(*seq);
  if (!entry) return std::unexpected(std::move(entry.error()));
  return std::move(*entry);
}

Result<std::optional<Record>> SessionIndex::get_record(std::int64_t seq) const {
  if (seq < 0 || seq >= size()) return std::nullopt;
  auto record = decode(seq);
  if (!record) return std::unexpected(std::move(record.error()));
  return std::move(*record);
}

std::vector<std::string> SessionIndex::children(std::optional<std::string_view> id) const {
  std::int32_t parent = -1;
  if (id) {
    auto seq = seq_of(*id);
    if (!seq) return {};
    parent = static_cast<std::int32_t>(*seq);
  }
  std::vector<std::string> out;
  for (const IndexedRecord& record : records_) {
    if (is_tree_type(record.type) && record.parent == parent) out.emplace_back(record.id);
  }
  return out;
}

std::optional<std::string> SessionIndex::leaf(std::string_view ref_name) const {
  const RefSlot* slot = ref(ref_name);
  if (!slot) return std::nullopt;
  return slot->leaf;
}

std::vector<RefInfo> SessionIndex::refs() const {
  std::vector<RefInfo> out;
  for (const std::string& name : ref_order_) {
    const RefSlot& slot = refs_.at(name);
    out.push_back(RefInfo{name, slot.leaf, slot.open_operation});
  }
  return out;
}

Result<Page<TreeEntry>> SessionIndex::find_entries(const EntryQuery& query) const {
  std::optional<std::int64_t> after;
  if (query.cursor) {
    auto seq = parse_cursor(*query.cursor);
    if (!seq) return std::unexpected(seq.error());
    after = *seq;
  }
  Page<TreeEntry> page;
  const bool newest = query.order == Order::newest_first;
  const std::int64_t n = size();
  std::int64_t last_seq = -1;
  for (std::int64_t seq = newest ? (after ? *after - 1 : n - 1) : (after ? *after + 1 : 0); seq >= 0 && seq < n;
       seq += newest ? -1 : 1) {
    const IndexedRecord& m = at(seq);
    if (!is_tree_type(m.type)) continue;
    if (query.type && m.type != *query.type) continue;
    if (query.custom_type && custom_type_of(m) != *query.custom_type) continue;
    if (query.limit && page.items.size() == *query.limit) {
      page.next_cursor = cursor_for(last_seq);  // resume just past the last returned entry
      break;
    }
    auto entry = decode_entry(seq);
    if (!entry) return std::unexpected(entry.error());
    page.items.push_back(std::move(*entry));
    last_seq = seq;
  }
  return page;
}

Result<Page<TreeEntry>> SessionIndex::find_entries_on_branch(const EntryQuery& query, const BranchBounds& bounds,
                                                             std::string_view ref_name) const {
  std::optional<std::int64_t> start;
  if (bounds.start) {
    start = seq_of(*bounds.start);
    if (!start || !is_tree_type(at(*start).type)) {
      return fail(Errc::not_found, fmt::format("no entry '{}'", *bounds.start));
    }
  } else {
    auto slot = ref(ref_name);
    if (!slot) return fail(Errc::unknown_ref, fmt::format("ref '{}' does not exist", ref_name));
    if (slot->leaf) start = seq_of(*slot->leaf);
  }

  // The bounded path, leaf end first.
  std::vector<std::int64_t> path;
  for (std::int64_t seq = start.value_or(-1); seq >= 0; seq = records_[static_cast<std::size_t>(seq)].parent) {
    path.push_back(seq);
    const IndexedRecord& m = at(seq);
    if (bounds.stop_at_type && m.type == *bounds.stop_at_type) break;
    if (bounds.stop_at_id && m.id == *bounds.stop_at_id) break;
  }
  if (query.order == Order::oldest_first) std::reverse(path.begin(), path.end());

  std::size_t i = 0;
  if (query.cursor) {
    auto seq = parse_cursor(*query.cursor);
    if (!seq) return std::unexpected(seq.error());
    auto it = std::find(path.begin(), path.end(), *seq);
    if (it == path.end()) return fail(Errc::invalid_argument, fmt::format("cursor '{}' is not on this branch", *query.cursor));
    i = static_cast<std::size_t>(it - path.begin()) + 1;
  }
  Page<TreeEntry> page;
  for (; i < path.size(); ++i) {
    const IndexedRecord& m = at(path[i]);
    if (query.type && m.type != *query.type) continue;
    if (query.custom_type && custom_type_of(m) != *query.custom_type) continue;
    if (query.limit && page.items.size() == *query.limit) {
      page.next_cursor = cursor_for(*seq_of(page.items.back().id));
      break;
    }
    auto entry = decode_entry(path[i]);
    if (!entry) return std::unexpected(entry.error());
    page.items.push_back(std::move(*entry));
  }
  return page;
}

Result<std::vector<LogLine>> SessionIndex::get_log(std::int64_t after_seq, std::optional<std::size_t> limit) const {
  std::vector<LogLine> out;
  if (after_seq >= size() - 1) return out;  // also spares after_seq + 1 from overflowing
  const std::int64_t begin = std::max<std::int64_t>(after_seq + 1, 0);
  std::int64_t end = size();
  if (limit) end = std::min(end, begin + static_cast<std::int64_t>(std::min<std::size_t>(*limit, size())));
  if (begin >= end) return out;
  out.reserve(static_cast<std::size_t>(end - begin));
  // Lines still in the source are read in one go, not one query each.
  if (const std::int64_t unloaded_end = std::min(end, unloaded_); begin < unloaded_end) {
    if (!source_) return fail(Errc::corrupt_log, fmt::format("seq {}: the index has no stored line for it", begin));
    auto stored = source_->lines(begin, unloaded_end);
    if (!stored) return std::unexpected(std::move(stored.error()));
    for (std::int64_t seq = begin; seq < unloaded_end; ++seq) {
      auto line = checked(seq, std::move((*stored)[static_cast<std::size_t>(seq - begin)]));
      if (!line) return std::unexpected(std::move(line.error()));
      out.push_back(LogLine{seq, at(seq).type, std::move(*line)});
    }
  }
  for (std::int64_t seq = std::max(begin, unloaded_); seq < end; ++seq) {
    out.push_back(LogLine{seq, at(seq).type, std::string(at(seq).line)});
  }
  return out;
}

Result<Page<HarnessRecord>> SessionIndex::find_harness_entries(const HarnessQuery& query) const {
  std::optional<std::int64_t> cursor;
  if (query.cursor) {
    auto seq = parse_cursor(*query.cursor);
    if (!seq) return std::unexpected(seq.error());
    cursor = *seq;
  }
  const bool newest = query.order == Order::newest_first;
  const std::int64_t n = size();
  const std::int64_t lowest = query.after_seq ? *query.after_seq + 1 : 0;
  Page<HarnessRecord> page;
  std::int64_t last_seq = -1;
  for (std::int64_t seq = newest ? (cursor ? *cursor - 1 : n - 1) : (cursor ? *cursor + 1 : lowest);
       seq >= lowest && seq < n; seq += newest ? -1 : 1) {
    const IndexedRecord& m = at(seq);
    if (!is_harness_type(m.type)) continue;
    if (query.type && m.type != *query.type) continue;
    if (query.ref && name_of(m.ref) != *query.ref) continue;
    if (query.run_id && (m.run < 0 ? std::string_view() : at(m.run).id) != *query.run_id) continue;
    if (query.limit && page.items.size() == *query.limit) {
      page.next_cursor = cursor_for(last_seq);
      break;
    }
    auto record = decode(seq);
    if (!record) return std::unexpected(record.error());
    page.items.push_back(std::get<HarnessRecord>(std::move(record->body)));
    last_seq = seq;
  }
  return page;
}

Result<SessionStats> SessionIndex::stats() const {
  SessionStats stats;
  stats.records = size();
  stats.bytes = bytes_;
  if (unloaded_ > 0) {
    auto unloaded = source_ ? source_->bytes_before(unloaded_) : fail(Errc::corrupt_log, "the index has lost its line source");
    if (!unloaded) return std::unexpected(std::move(unloaded.error()));
    stats.bytes += *unloaded;
  }
  for (const IndexedRecord& record : records_) {
    if (is_tree_type(record.type)) ++stats.tree_entries;
    else if (is_harness_type(record.type)) ++stats.harness_records;
    else ++stats.ignorable_records;
    ++stats.by_type[std::string(to_string(record.type))];
  }
  stats.refs = static_cast<std::int64_t>(refs_.size());
  for (const auto& [name, slot] : refs_) stats.open_operations += slot.open_operation ? 1 : 0;
  return stats;
}

Result<std::optional<std::string>> SessionIndex::name() const {
  for (std::int64_t seq = size() - 1; seq >= 0; --seq) {
    if (at(seq).type != RecordType::session_info) continue;
    auto entry = decode_entry(seq);
    if (!entry) return std::unexpected(std::move(entry.error()));
    return std::get<SessionInfo>(entry->body).name;
  }
  return std::nullopt;
}

Result<std::optional<std::string>> SessionIndex::label(std::string_view entry_id) const {
  for (std::int64_t seq = size() - 1; seq >= 0; --seq) {
    const IndexedRecord& m = at(seq);
    if (m.type != RecordType::label || m.target < 0 || at(m.target).id != entry_id) continue;
    auto entry = decode_entry(seq);
    if (!entry) return std::unexpected(std::move(entry.error()));
    return std::get<Label>(entry->body).label;
  }
  return std::nullopt;
}

std::vector<std::string> SessionIndex::path_to(std::optional<std::string_view> leaf_id) const {
  std::vector<std::string> path;
  if (!leaf_id) return path;
  auto start = seq_of(*leaf_id);
  for (std::int64_t seq = start.value_or(-1); seq >= 0; seq = records_[static_cast<std::size_t>(seq)].parent) {
    path.emplace_back(at(seq).id);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace cairn
