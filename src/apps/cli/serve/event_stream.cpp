#include "event_stream.hpp"

#include <fmt/format.h>

#include "json_views.hpp"

namespace cairn::serve {

namespace {
constexpr std::size_t kReplayPage = 1024;
}

Result<std::shared_ptr<EventStream>> EventStream::open(std::shared_ptr<SessionHost> host,
                                                       std::optional<std::string> ref,
                                                       std::optional<std::int64_t> after, std::size_t max_queued) {
  std::shared_ptr<EventStream> stream(new EventStream());
  stream->host_ = host;
  stream->ref_ = ref;
  stream->inbox_->max_queued = max_queued;
  auto inbox = stream->inbox_;
  EventListener listener = [inbox](const Event& event) {
    std::function<void()> wakeup;
    {
      std::lock_guard lock(inbox->mu);
      if (inbox->overflowed) return;
      if (inbox->events.size() >= inbox->max_queued) {
        inbox->overflowed = true;
        inbox->events.clear();
      } else {
        inbox->events.push_back(event);
      }
      wakeup = inbox->wakeup;
    }
    if (wakeup) wakeup();
  };
  std::int64_t cursor = -1;
  Json snapshot;
  if (ref) {
    auto agent_ref = host->harness->ref(*ref);
    if (!agent_ref) return std::unexpected(Error{Errc::unknown_ref, fmt::format("no ref '{}'", *ref)});
    auto watch = agent_ref->watch();
    if (!watch) return std::unexpected(watch.error());
    cursor = watch->snapshot().cursor;
    if (!after) snapshot = to_json(watch->snapshot());
    stream->ref_watch_.emplace(std::move(*watch));
  } else {
    stream->session_watch_.emplace(host->harness->watch_session());
    cursor = stream->session_watch_->snapshot().cursor;
    if (!after) snapshot = to_json(stream->session_watch_->snapshot());
  }
  if (after) {
    // The records after the client's cursor up to the watch's: what it
    // missed; the events continue from there.
    stream->last_sent_ = std::max<std::int64_t>(*after, -1);
    if (auto replayed = stream->catch_up(stream->initial_, cursor + 1); !replayed) {
      return std::unexpected(replayed.error());
    }
    stream->last_sent_ = std::max(stream->last_sent_, cursor);
  } else {
    stream->initial_ = sse_frame(snapshot, cursor >= 0 ? std::optional(cursor) : std::nullopt);
    stream->last_sent_ = cursor;
  }
  if (stream->ref_watch_) {
    stream->ref_watch_->start(std::move(listener));
  } else {
    stream->session_watch_->start(std::move(listener));
  }
  return stream;
}

EventStream::~EventStream() {
  if (ref_watch_) ref_watch_->unsubscribe();
  if (session_watch_) session_watch_->unsubscribe();
}

void EventStream::set_wakeup(std::function<void()> wakeup) {
  bool pending = false;
  {
    std::lock_guard lock(inbox_->mu);
    inbox_->wakeup = wakeup;
    pending = !inbox_->events.empty() || inbox_->overflowed;
  }
  if (pending && wakeup) wakeup();
}

bool EventStream::belongs(const Json& record) const {
  if (!ref_) return true;
  const std::string type = record.value("type", std::string());
  if ((type == "ref_created" || type == "ref_deleted") && record.value("name", std::string()) == *ref_) return true;
  auto it = record.find("ref");
  const std::string owner = it != record.end() && it->is_string() ? it->get<std::string>() : std::string("main");
  return owner == *ref_;
}

Status EventStream::catch_up(std::string& out, std::int64_t before) {
  while (last_sent_ + 1 < before) {
    const auto want = static_cast<std::size_t>(std::min<std::int64_t>(before - last_sent_ - 1, kReplayPage));
    auto lines = host_->session->get_log(last_sent_, want);
    if (!lines) return std::unexpected(lines.error());
    if (lines->empty()) break;
    for (const LogLine& line : *lines) {
      if (line.seq >= before) break;
      Json record = Json::parse(line.json, nullptr, /*allow_exceptions=*/false);
      if (!record.is_discarded() && belongs(record)) {
        out += sse_frame(Json{{"type", "record"}, {"seq", line.seq}, {"record", std::move(record)}}, line.seq);
      }
      last_sent_ = line.seq;
    }
  }
  return {};
}

LiveStream::Batch EventStream::take() {
  Batch batch;
  batch.bytes = std::move(initial_);
  initial_.clear();
  std::deque<Event> events;
  bool overflowed = false;
  {
    std::lock_guard lock(inbox_->mu);
    events.swap(inbox_->events);
    overflowed = inbox_->overflowed;
  }
  for (const Event& event : events) {
    Json data = encode(event);
    if (!event.seq || *event.seq <= last_sent_) {
      batch.bytes += sse_frame(data);
      continue;
    }
    const std::int64_t seq = *event.seq;
    if (auto caught = catch_up(batch.bytes, seq); !caught) {
      batch.bytes += sse_frame(Json{{"type", "stream_error"}, {"error", to_json(caught.error())}});
      batch.done = true;
      return batch;
    }
    if (auto line = host_->session->get_log(seq - 1, 1); line && !line->empty() && line->front().seq == seq) {
      data["record"] = Json::parse(line->front().json, nullptr, false);
    }
    batch.bytes += sse_frame(data, seq);
    last_sent_ = seq;
  }
  if (events.empty() && !overflowed) {
    // Woken with nothing queued (a heartbeat's turn): records no event has
    // announced yet go now rather than wait for the next event.
    const std::int64_t size = host_->session->size();
    if (size - 1 > last_sent_ && !catch_up(batch.bytes, size)) batch.done = true;
  }
  if (overflowed) {
    batch.bytes += sse_frame(Json{{"type", "stream_overflow"},
                                  {"message", "this client read too slowly; reconnect with Last-Event-ID"},
                                  {"cursor", last_sent_}});
    batch.done = true;
  }
  return batch;
}

std::string EventStream::final_frame() {
  return sse_frame(Json{{"type", "server_shutdown"}, {"cursor", last_sent_}});
}

}  // namespace cairn::serve
