#include "event_stream.hpp"

#include <fmt/format.h>

#include "json_views.hpp"

namespace cairn::serve {

namespace {
// A batch of a replay stops after this many bytes: the next take goes on.
constexpr std::size_t kReplayBatchBytes = 1u << 20;

std::shared_ptr<const std::string> frame_of(const Json& snapshot, std::int64_t cursor) {
  return std::make_shared<const std::string>(sse_frame(snapshot, cursor >= 0 ? std::optional(cursor) : std::nullopt));
}
}  // namespace

std::shared_ptr<EventStream> EventStream::made(std::shared_ptr<StreamHub> hub, std::optional<std::string> ref,
                                               Limits limits) {
  auto stream = std::make_shared<EventStream>(Key{});
  stream->hub_ = std::move(hub);
  stream->inbox_->ref = std::move(ref);
  stream->inbox_->max_queued = limits.max_queued;
  stream->inbox_->max_bytes = limits.max_bytes;
  return stream;
}

Result<std::shared_ptr<EventStream>> EventStream::open(std::shared_ptr<SessionHost> host,
                                                       std::optional<std::string> ref,
                                                       std::optional<std::int64_t> after, Limits limits,
                                                       std::optional<std::size_t> transcript_limit) {
  std::shared_ptr<EventStream> stream = made(host->hub, ref, limits);
  stream->host_ = host;
  std::optional<AgentRef> agent_ref;
  if (ref) {
    agent_ref = host->harness->ref(*ref);
    if (!agent_ref) return std::unexpected(Error{Errc::unknown_ref, fmt::format("no ref '{}'", *ref)});
  }
  // Registered before the snapshot is taken, so that nothing after it is
  // missed; what it already reflects is dropped in take(). (The destructor
  // unregisters it.)
  stream->hub_->add(stream->inbox_);
  if (after) {
    // A replay: where the snapshot would stand is all that is needed.
    stream->cursor_ = host->session->size() - 1;
    stream->begin(after, nullptr);
    return stream;
  }
  // The session's newest seq while the ref (or every ref) runs nothing: a
  // snapshot built then holds nothing that changes without a record.
  const auto idle_at = [&]() -> std::optional<std::int64_t> {
    for (const auto& status : host->harness->refs()) {
      if ((!ref || status.name == *ref) && status.run) return std::nullopt;
    }
    return host->session->size() - 1;
  };
  const auto build = [&]() -> Result<StreamHub::Snapshot> {
    if (agent_ref) {
      auto watch = agent_ref->watch();
      if (!watch) return std::unexpected(watch.error());
      watch->unsubscribe();
      const RefSnapshot& snapshot = watch->snapshot();
      return StreamHub::Snapshot{frame_of(to_json(snapshot, transcript_limit), snapshot.cursor), snapshot.cursor,
                                 !snapshot.run};
    }
    SessionWatch watch = host->harness->watch_session();
    watch.unsubscribe();
    const SessionSnapshot& snapshot = watch.snapshot();
    return StreamHub::Snapshot{frame_of(to_json(snapshot), snapshot.cursor), snapshot.cursor, idle_at().has_value()};
  };
  const std::string key = fmt::format("{}\n{}", ref ? "ref:" + *ref : std::string("session"),
                                      transcript_limit ? static_cast<std::int64_t>(*transcript_limit) : -1);
  auto snapshot = stream->hub_->snapshot(key, idle_at, build);
  if (!snapshot) return std::unexpected(snapshot.error());
  stream->cursor_ = snapshot->cursor;
  stream->begin(std::nullopt, std::move(snapshot->frame));
  return stream;
}

Result<std::shared_ptr<EventStream>> EventStream::open_followed(std::shared_ptr<FollowedSession> followed,
                                                                std::optional<std::string> ref,
                                                                std::optional<std::int64_t> after, Limits limits,
                                                                std::optional<std::size_t> transcript_limit) {
  std::shared_ptr<EventStream> stream = made(followed->hub(), ref, limits);
  stream->followed_ = followed;
  stream->hub_->add(stream->inbox_);  // before the snapshot, as above
  auto snapshot = followed->snapshot(ref, transcript_limit);
  if (!snapshot) return std::unexpected(snapshot.error());
  stream->cursor_ = snapshot->value("cursor", std::int64_t{-1});
  stream->begin(after, after ? nullptr : frame_of(*snapshot, stream->cursor_));
  return stream;
}

void EventStream::begin(const std::optional<std::int64_t>& after, std::shared_ptr<const std::string> snapshot) {
  if (after) {
    // The records after the client's cursor up to the snapshot's: what it
    // missed, sent a page at a time; the events continue from there.
    last_sent_ = std::max<std::int64_t>(*after, -1);
    replaying_ = last_sent_ < cursor_;
    if (!replaying_) last_sent_ = std::max(last_sent_, cursor_);
  } else {
    snapshot_ = std::move(snapshot);
    last_sent_ = cursor_;
  }
}

std::int64_t EventStream::known_size() const { return host_ ? host_->session->size() : followed_->head() + 1; }

EventStream::~EventStream() { hub_->remove(inbox_.get()); }

void EventStream::set_wakeup(std::function<void()> wakeup) {
  bool pending = false;
  {
    std::lock_guard lock(inbox_->mu);
    inbox_->wakeup = wakeup;
    pending = !inbox_->frames.empty() || inbox_->overflowed || inbox_->end_frame;
  }
  if (pending && wakeup) wakeup();
}

LiveStream::Batch EventStream::take(bool quiet) {
  Batch batch;
  if (snapshot_) {
    std::shared_ptr<const std::string> snapshot = std::exchange(snapshot_, nullptr);
    const std::string_view bytes = *snapshot;
    batch.share(std::move(snapshot), bytes);
  }
  auto fail_with = [&](const Error& error) {
    batch.text() += sse_frame(Json{{"type", "stream_error"}, {"error", to_json(error)}});
    batch.done = true;
  };
  if (replaying_) {
    std::int64_t last = last_sent_;
    if (auto replayed = hub_->records(inbox_->ref, last_sent_, cursor_ + 1, batch, last, kReplayBatchBytes); !replayed) {
      fail_with(replayed.error());
      return batch;
    }
    last_sent_ = std::max(last_sent_, last);
    if (last_sent_ >= cursor_) {
      replaying_ = false;
    } else {
      // More to replay: the server takes again once this batch is written.
      // Live events wait in the queue meanwhile.
      std::lock_guard lock(inbox_->mu);
      if (inbox_->wakeup) inbox_->wakeup();
      return batch;
    }
  }
  std::deque<std::shared_ptr<const StreamHub::Frame>> frames;
  bool overflowed = false;
  std::optional<std::string> end_frame;
  {
    std::lock_guard lock(inbox_->mu);
    frames = inbox_->take_frames();
    overflowed = inbox_->overflowed;
    end_frame = inbox_->end_frame;
  }
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
    if (auto caught = hub_->records(inbox_->ref, last_sent_, seq, batch, last); !caught) {
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
      if (auto caught = hub_->records(inbox_->ref, last_sent_, size, batch, last); !caught) {
        fail_with(caught.error());
        return batch;
      }
      last_sent_ = std::max(last_sent_, last);
    }
  }
  if (end_frame) {
    batch.text() += *end_frame;
    batch.done = true;
    return batch;
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
