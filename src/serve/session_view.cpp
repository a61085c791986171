#include "session_view.hpp"

#include <fmt/format.h>

#include "followed_session.hpp"

namespace cairn::serve {

namespace {

Error past_newest(std::int64_t after, std::int64_t newest) {
  // A cursor of another session, or of a log that was cut: nothing would
  // ever follow it.
  return Error{Errc::invalid_argument,
               fmt::format("Last-Event-ID {} is past the session's newest record (seq {})", after, newest)};
}

}  // namespace

SessionView::SessionView(std::shared_ptr<SessionHost> host) : host_(std::move(host)), id_(host_->session->header().id) {}

SessionView::SessionView(SessionPool& pool, std::string id, Error held)
    : pool_(&pool), id_(std::move(id)), held_(std::move(held)) {}

Result<std::vector<LogLine>> SessionView::read_log(std::int64_t after, std::size_t limit) const {
  if (host_) return host_->session->get_log(after, limit);
  return pool_->read_log(id_, after, limit);
}

std::optional<std::int64_t> SessionView::newest() const {
  if (host_) return host_->session->size() - 1;
  return std::nullopt;
}

Result<std::shared_ptr<Session>> SessionView::readable() const {
  if (host_) return host_->session;
  return pool_->open_read_only(id_);
}

Result<std::shared_ptr<EventStream>> SessionView::stream(std::optional<std::string> ref, std::optional<std::int64_t> after,
                                                         EventStream::Limits limits,
                                                         std::optional<std::size_t> transcript_limit) const {
  if (host_) {
    const std::int64_t newest = host_->session->size() - 1;
    if (after && *after > newest) return fail(past_newest(*after, newest));
    return EventStream::open(host_, std::move(ref), after, limits, transcript_limit);
  }
  auto followed = pool_->follow(id_, *held_);
  if (!followed) return std::unexpected(followed.error());
  if (after && *after > (*followed)->head()) {
    // Past the newest record the follow has seen: asked of the store again
    // (the follow may lag) before it is refused.
    auto at = pool_->read_log(id_, *after - 1, 1);
    if (!at) return std::unexpected(at.error());
    if (at->empty() || at->front().seq != *after) return fail(past_newest(*after, (*followed)->head()));
  }
  return EventStream::open_followed(std::move(*followed), std::move(ref), after, limits, transcript_limit);
}

}  // namespace cairn::serve
