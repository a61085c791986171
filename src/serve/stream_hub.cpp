#include "stream_hub.hpp"

#include <atomic>

#include <fmt/format.h>

#include "cairn/log/ids.hpp"

namespace cairn::serve {

namespace {
std::atomic<std::int64_t> overflow_count{0};
std::atomic<std::int64_t> coalesced_count{0};
constexpr std::size_t kCacheRecords = 16384;
constexpr std::size_t kReadAhead = 256;

std::string dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }
}  // namespace

bool StreamHub::belongs(const Stored& record, const std::optional<std::string>& ref) {
  return !ref || record.ref == *ref || record.name == *ref;
}

Result<std::vector<std::pair<std::int64_t, std::shared_ptr<const StreamHub::Stored>>>> StreamHub::stored(
    std::int64_t from, std::size_t count) {
  std::vector<std::pair<std::int64_t, std::shared_ptr<const Stored>>> out;
  {
    std::lock_guard lock(cache_mu_);
    for (auto it = cache_.find(from); it != cache_.end() && out.size() < count && it->first == from + static_cast<std::int64_t>(out.size()); ++it) {
      out.emplace_back(it->first, it->second);
    }
  }
  if (out.size() == count) return out;
  const std::int64_t next = from + static_cast<std::int64_t>(out.size());
  // A page ahead for a catch-up; the one record an event announces alone.
  auto lines = read_(next - 1, count == 1 ? 1 : std::max(count - out.size(), kReadAhead));
  if (!lines) return std::unexpected(lines.error());
  std::lock_guard lock(cache_mu_);
  for (LogLine& line : *lines) {
    const std::int64_t seq = line.seq;
    auto record = make_stored(std::move(line));
    cache_[seq] = record;
    if (out.size() < count && seq == from + static_cast<std::int64_t>(out.size())) out.emplace_back(seq, record);
  }
  while (cache_.size() > kCacheRecords) cache_.erase(cache_.begin());
  return out;
}

std::shared_ptr<const StreamHub::Stored> StreamHub::make_stored(LogLine line) {
  auto record = std::make_shared<Stored>();
  const Json json = Json::parse(line.json, nullptr, false);
  record->ref = "main";
  if (json.is_object()) {
    if (auto it = json.find("ref"); it != json.end() && it->is_string()) record->ref = it->get<std::string>();
    const std::string type = json.value("type", "");
    if (type == "ref_created" || type == "ref_deleted") record->name = json.value("name", "");
  }
  record->frame = fmt::format("id: {}\ndata: {{\"type\":\"record\",\"seq\":{},\"record\":{}}}\n\n", line.seq, line.seq, line.json);
  record->line = std::move(line.json);
  return record;
}

Status StreamHub::records(const std::optional<std::string>& ref, std::int64_t after, std::int64_t before,
                          LiveStream::Batch& batch, std::int64_t& last, std::size_t max_bytes) {
  last = after;
  std::size_t added = 0;
  while (last + 1 < before && added < max_bytes) {
    auto page = stored(last + 1, static_cast<std::size_t>(std::min<std::int64_t>(before - last - 1, kReadAhead)));
    if (!page) return std::unexpected(page.error());
    if (page->empty()) break;
    for (const auto& [seq, record] : *page) {
      if (belongs(*record, ref)) {
        batch.share(record, record->frame);
        added += record->frame.size();
      }
      last = seq;
      if (added >= max_bytes) break;
    }
  }
  return {};
}

Result<StreamHub::Snapshot> StreamHub::snapshot(const std::string& key,
                                                const std::function<std::optional<std::int64_t>()>& idle_at,
                                                const std::function<Result<Snapshot>()>& build) {
  std::lock_guard lock(snapshot_mu_);
  if (const auto cursor = idle_at()) {
    if (auto it = snapshots_.find(key); it != snapshots_.end() && it->second.first == *cursor) {
      if (auto frame = it->second.second.lock()) return Snapshot{std::move(frame), *cursor, true};
    }
  }
  auto built = build();
  if (!built) return built;
  std::erase_if(snapshots_, [](const auto& item) { return item.second.second.expired(); });
  if (built->reusable) snapshots_[key] = {built->cursor, built->frame};
  return built;
}

std::int64_t StreamHub::overflows() { return overflow_count.load(std::memory_order_relaxed); }
std::int64_t StreamHub::coalesced() { return coalesced_count.load(std::memory_order_relaxed); }

StreamHub::StreamHub(Reader read) : read_(std::move(read)), thread_([this] { deliver_loop(); }) {}

StreamHub::~StreamHub() {
  {
    std::lock_guard lock(pending_mu_);
    stopping_ = true;
  }
  pending_cv_.notify_all();
  thread_.join();
}

void StreamHub::publish(const Event& event) {
  {
    std::lock_guard lock(inboxes_mu_);
    if (inboxes_.empty()) return;  // nobody watches: nothing is queued
  }
  {
    std::lock_guard lock(pending_mu_);
    pending_.push_back(event);
  }
  pending_cv_.notify_one();
}

void StreamHub::deliver_loop() {
  std::unique_lock lock(pending_mu_);
  for (;;) {
    pending_cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (stopping_) return;
    std::deque<Event> events;
    events.swap(pending_);
    lock.unlock();
    for (const Event& event : events) fan_out(event);
    lock.lock();
  }
}

void StreamHub::fan_out(const Event& event) {
  auto frame = std::make_shared<Frame>();
  frame->ref = event.ref;
  frame->seq = event.seq;
  frame->update = event.type == EventType::message_update;
  const std::string json = dump(encode(event));
  frame->without_id = "data: " + json + "\n\n";
  if (event.seq) {
    auto record = stored(*event.seq, 1);
    if (record && !record->empty() && json.size() > 1 && json.back() == '}') {
      // publishedAt: when the durable record was announced, for a client's
      // measure of how far behind it reads.
      frame->with_id = fmt::format("id: {}\ndata: {},\"publishedAt\":\"{}\",\"record\":{}}}\n\n", *event.seq,
                                   std::string_view(json).substr(0, json.size() - 1), now_iso8601(),
                                   record->front().second->line);
    } else {
      frame->with_id = fmt::format("id: {}\n{}", *event.seq, frame->without_id);
    }
  }
  std::shared_ptr<const Frame> shared = std::move(frame);
  std::lock_guard lock(inboxes_mu_);
  for (const auto& inbox : inboxes_) {
    // A ref's stream gets its ref's events and the session's own (a fault).
    if (inbox->ref && !shared->ref.empty() && shared->ref != *inbox->ref) continue;
    std::lock_guard inbox_lock(inbox->mu);
    enqueue(*inbox, shared);
  }
}

namespace {
// What a queued frame may cost: the larger of its two forms.
std::size_t bytes_of(const StreamHub::Frame& frame) { return std::max(frame.with_id.size(), frame.without_id.size()); }
}  // namespace

void StreamHub::enqueue(Inbox& inbox, const std::shared_ptr<const Frame>& frame) {
  if (inbox.overflowed) return;
  // Only a stream that had nothing queued needs waking: one with frames
  // waiting takes this one with them.
  bool wake = inbox.frames.empty();
  if (frame->update) {
    // A client that has not yet taken the ref's previous update gets
    // only this one: each carries the whole message so far, and a stream
    // that lags behind a busy session would otherwise fall further behind.
    if (auto it = inbox.newest_update.find(frame->ref); it != inbox.newest_update.end()) {
      inbox.queued_bytes -= bytes_of(*inbox.frames[it->second]);
      inbox.queued_bytes += bytes_of(*frame);
      inbox.frames[it->second] = frame;
      coalesced_count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  // Past either bound the stream ends (with the cursor to come back with);
  // one frame alone is always taken, however large.
  const bool full = inbox.frames.size() >= inbox.max_queued ||
                    (!inbox.frames.empty() && inbox.queued_bytes + bytes_of(*frame) > inbox.max_bytes);
  if (full) {
    inbox.overflowed = true;
    inbox.frames.clear();
    inbox.newest_update.clear();
    inbox.queued_bytes = 0;
    overflow_count.fetch_add(1, std::memory_order_relaxed);
    wake = true;
  } else {
    inbox.queued_bytes += bytes_of(*frame);
    inbox.frames.push_back(frame);
    if (frame->update) {
      inbox.newest_update[frame->ref] = inbox.frames.size() - 1;
    } else if (!inbox.newest_update.empty()) {
      inbox.newest_update.erase(frame->ref);
    }
  }
  // Called under the inbox's lock (as set_wakeup replaces it), not copied
  // out: a wakeup only posts to the stream's executor and takes none of our locks.
  if (wake && inbox.wakeup) inbox.wakeup();
}

void StreamHub::publish_records(std::vector<LogLine> lines) {
  std::vector<std::pair<std::shared_ptr<const Stored>, std::shared_ptr<const Frame>>> frames;
  frames.reserve(lines.size());
  {
    std::lock_guard lock(cache_mu_);
    for (LogLine& line : lines) {
      const std::int64_t seq = line.seq;
      auto record = make_stored(std::move(line));
      cache_[seq] = record;
      auto frame = std::make_shared<Frame>();
      frame->ref = record->ref;
      frame->seq = seq;
      frame->with_id = record->frame;  // without_id stays empty: the record is all it says
      frames.emplace_back(std::move(record), std::move(frame));
    }
    while (cache_.size() > kCacheRecords) cache_.erase(cache_.begin());
  }
  std::lock_guard lock(inboxes_mu_);
  for (const auto& inbox : inboxes_) {
    std::lock_guard inbox_lock(inbox->mu);
    for (const auto& [record, frame] : frames) {
      if (belongs(*record, inbox->ref)) enqueue(*inbox, frame);
    }
  }
}

void StreamHub::wake_all() {
  std::lock_guard lock(inboxes_mu_);
  for (const auto& inbox : inboxes_) {
    std::lock_guard inbox_lock(inbox->mu);
    if (inbox->wakeup) inbox->wakeup();
  }
}

void StreamHub::end_all(std::string frame) {
  std::lock_guard lock(inboxes_mu_);
  end_frame_ = frame;
  for (const auto& inbox : inboxes_) {
    std::lock_guard inbox_lock(inbox->mu);
    inbox->end_frame = frame;
    if (inbox->wakeup) inbox->wakeup();
  }
}

void StreamHub::add(const std::shared_ptr<Inbox>& inbox) {
  std::lock_guard lock(inboxes_mu_);
  if (end_frame_) {
    std::lock_guard inbox_lock(inbox->mu);
    inbox->end_frame = end_frame_;
  }
  inboxes_.push_back(inbox);
}

void StreamHub::remove(const Inbox* inbox) {
  std::lock_guard lock(inboxes_mu_);
  std::erase_if(inboxes_, [&](const std::shared_ptr<Inbox>& held) { return held.get() == inbox; });
}

}  // namespace cairn::serve
