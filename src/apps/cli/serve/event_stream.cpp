#include "event_stream.hpp"

#include <fmt/format.h>

#include "json_views.hpp"

namespace cairn::serve {

Result<std::shared_ptr<EventStream>> EventStream::open(std::shared_ptr<SessionHost> host,
                                                       std::optional<std::string> ref,
                                                       std::optional<std::int64_t> after, std::size_t max_queued,
                                                       std::optional<std::size_t> transcript_limit) {
  std::shared_ptr<EventStream> stream(new EventStream());
  stream->host_ = host;
  stream->hub_ = host->hub;
  stream->inbox_->ref = ref;
  stream->inbox_->max_queued = max_queued;
  std::optional<AgentRef> agent_ref;
  if (ref) {
    agent_ref = host->harness->ref(*ref);
    if (!agent_ref) return std::unexpected(Error{Errc::unknown_ref, fmt::format("no ref '{}'", *ref)});
  }
  // Registered before the snapshot is taken, so that nothing after it is
  // missed; what it already reflects is dropped in take(). (The destructor
  // unregisters it.)
  stream->hub_->add(stream->inbox_);
  Json snapshot;
  if (agent_ref) {
    auto watch = agent_ref->watch();
    if (!watch) return std::unexpected(watch.error());
    watch->unsubscribe();
    stream->cursor_ = watch->snapshot().cursor;
    if (!after) snapshot = to_json(watch->snapshot(), transcript_limit);
  } else {
    SessionWatch watch = host->harness->watch_session();
    watch.unsubscribe();
    stream->cursor_ = watch.snapshot().cursor;
    if (!after) snapshot = to_json(watch.snapshot());
  }
  if (auto begun = stream->begin(after, snapshot); !begun) return std::unexpected(begun.error());
  return stream;
}

Result<std::shared_ptr<EventStream>> EventStream::open_followed(std::shared_ptr<FollowedSession> followed,
                                                                std::optional<std::string> ref,
                                                                std::optional<std::int64_t> after,
                                                                std::size_t max_queued,
                                                                std::optional<std::size_t> transcript_limit) {
  std::shared_ptr<EventStream> stream(new EventStream());
  stream->followed_ = followed;
  stream->hub_ = followed->hub();
  stream->inbox_->ref = ref;
  stream->inbox_->max_queued = max_queued;
  stream->hub_->add(stream->inbox_);  // before the snapshot, as above
  auto snapshot = followed->snapshot(ref, transcript_limit);
  if (!snapshot) return std::unexpected(snapshot.error());
  stream->cursor_ = snapshot->value("cursor", std::int64_t{-1});
  if (auto begun = stream->begin(after, after ? Json() : *snapshot); !begun) return std::unexpected(begun.error());
  return stream;
}

Status EventStream::begin(const std::optional<std::int64_t>& after, const Json& snapshot) {
  if (after) {
    // The records after the client's cursor up to the snapshot's: what it
    // missed; the events continue from there.
    std::int64_t last = -1;
    if (auto replayed = hub_->records(inbox_->ref, std::max<std::int64_t>(*after, -1), cursor_ + 1, initial_, last);
        !replayed) {
      return replayed;
    }
    last_sent_ = std::max({last, *after, cursor_});
  } else {
    initial_ = sse_frame(snapshot, cursor_ >= 0 ? std::optional(cursor_) : std::nullopt);
    last_sent_ = cursor_;
  }
  return {};
}

std::int64_t EventStream::known_size() const { return host_ ? host_->session->size() : followed_->head() + 1; }

EventStream::~EventStream() { hub_->remove(inbox_.get()); }

void EventStream::set_wakeup(std::function<void()> wakeup) {
  bool pending = false;
  {
    std::lock_guard lock(inbox_->mu);
    inbox_->wakeup = wakeup;
    pending = !inbox_->frames.empty() || inbox_->overflowed;
  }
  if (pending && wakeup) wakeup();
}

LiveStream::Batch EventStream::take(bool quiet) {
  Batch batch;
  batch.text() = std::move(initial_);
  initial_.clear();
  std::deque<std::shared_ptr<const StreamHub::Frame>> frames;
  bool overflowed = false;
  {
    std::lock_guard lock(inbox_->mu);
    frames = inbox_->take_frames();
    overflowed = inbox_->overflowed;
  }
  auto fail_with = [&](const Error& error) {
    batch.text() += sse_frame(Json{{"type", "stream_error"}, {"error", to_json(error)}});
    batch.done = true;
  };
  for (const auto& frame : frames) {
    if (!frame->seq) {
      batch.share(frame, frame->without_id);
      continue;
    }
    const std::int64_t seq = *frame->seq;
    if (seq <= cursor_) continue;  // the snapshot (or the replay) has it
    if (seq <= last_sent_) {
      batch.share(frame, frame->without_id);  // its record went out already
      continue;
    }
    std::int64_t last = last_sent_;
    if (auto caught = hub_->records(inbox_->ref, last_sent_, seq, batch.text(), last); !caught) {
      fail_with(caught.error());
      return batch;
    }
    batch.share(frame, frame->with_id);
    last_sent_ = seq;
  }
  if (quiet && frames.empty() && !overflowed) {
    // A heartbeat's turn: records no event has announced yet go now rather
    // than wait for the next event.
    const std::int64_t size = known_size();
    if (size - 1 > last_sent_) {
      std::int64_t last = last_sent_;
      if (auto caught = hub_->records(inbox_->ref, last_sent_, size, batch.text(), last); !caught) {
        fail_with(caught.error());
        return batch;
      }
      last_sent_ = std::max(last_sent_, last);
    }
  }
  if (followed_) {
    if (auto failure = followed_->failure()) {
      fail_with(*failure);
      return batch;
    }
  }
  if (overflowed) {
    batch.text() += sse_frame(Json{{"type", "stream_overflow"},
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
