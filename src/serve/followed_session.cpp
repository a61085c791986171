#include "followed_session.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cairn/harness/watch.hpp"
#include "json_views.hpp"

namespace cairn::serve {

namespace {
// Records read from the store in one go.
constexpr std::size_t kReadPage = 1000;
}  // namespace

std::shared_ptr<FollowedSession> FollowedSession::start(const Session& opened, std::string writer, Access access) {
  return std::make_shared<FollowedSession>(Key(), opened.size() - 1, std::move(writer), std::move(access));
}

FollowedSession::FollowedSession(Key, std::int64_t head, std::string writer, Access access)
    : writer_(std::move(writer)), access_(std::move(access)), hub_(std::make_shared<StreamHub>(access_.read)),
      head_(head), reader_([this](std::stop_token stop) { read_loop(std::move(stop)); }) {}

FollowedSession::~FollowedSession() {
  std::unique_ptr<LogFollow> follow;
  {
    std::lock_guard lock(mu_);
    follow = std::move(follow_);
  }
  follow.reset();  // no call to changed() after this
  reader_.request_stop();
  reader_.join();
}

void FollowedSession::set_follow(std::unique_ptr<LogFollow> follow) {
  std::lock_guard lock(mu_);
  follow_ = std::move(follow);
}

void FollowedSession::changed() {
  {
    std::lock_guard lock(mu_);
    changed_ = true;
  }
  wake_.notify_one();
}

std::int64_t FollowedSession::head() const {
  std::lock_guard lock(mu_);
  return head_;
}

std::optional<Error> FollowedSession::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void FollowedSession::read_loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, stop, [&] { return changed_ && !failure_; });
    if (stop.stop_requested()) return;
    changed_ = false;
    std::int64_t head = head_;
    lock.unlock();
    std::optional<Error> failed;
    for (;;) {
      auto lines = access_.read(head, kReadPage);
      if (!lines) {
        // A database that is away comes back (the next poll reads again);
        // a session removed or damaged does not: its streams end saying so.
        if (lines.error().is(Errc::not_found) || lines.error().is(Errc::corrupt_log)) failed = lines.error();
        break;
      }
      if (lines->empty()) break;
      const bool full = lines->size() == kReadPage;
      head = lines->back().seq;
      {
        std::lock_guard published(mu_);
        head_ = head;
      }
      hub_->publish_records(std::move(*lines));
      if (!full) break;
    }
    lock.lock();
    if (failed) {
      failure_ = std::move(failed);
      lock.unlock();
      hub_->wake_all();
      lock.lock();
    }
  }
}

Result<Json> FollowedSession::snapshot(const std::optional<std::string>& ref,
                                       std::optional<std::size_t> transcript_limit) const {
  auto opened = access_.open_read_only();
  if (!opened) return std::unexpected(opened.error());
  const Session& session = **opened;
  Json out;
  if (ref) {
    const auto refs = session.refs();
    if (std::none_of(refs.begin(), refs.end(), [&](const RefInfo& info) { return info.name == *ref; })) {
      return fail(Errc::unknown_ref, fmt::format("no ref '{}'", *ref));
    }
    RefSnapshot snapshot{.ref = *ref};
    auto transcript = session.find_entries_on_branch(
        EntryQuery{.order = Order::oldest_first}, BranchBounds{.stop_at_type = RecordType::compaction}, *ref);
    if (!transcript) return std::unexpected(transcript.error());
    snapshot.transcript = std::move(transcript->items);
    snapshot.leaf_id = session.leaf(*ref);
    snapshot.cursor = session.size() - 1;
    out = to_json(snapshot, transcript_limit);
    for (const auto& info : refs) {
      if (info.name == *ref) out["openOperation"] = info.open_operation ? Json(*info.open_operation) : Json(nullptr);
    }
  } else {
    Json refs = Json::array();
    for (const auto& info : session.refs()) {
      refs.push_back({{"name", info.name},
                      {"leafId", info.leaf_id ? Json(*info.leaf_id) : Json(nullptr)},
                      {"openOperation", info.open_operation ? Json(*info.open_operation) : Json(nullptr)}});
    }
    out = {{"type", "snapshot"}, {"cursor", session.size() - 1}, {"refs", std::move(refs)}, {"faulted", false}};
  }
  // The run's live state (its streaming message, running tools, queues) is
  // the writer's to know: here the records say what happened.
  out["writer"] = writer_;
  return out;
}

}  // namespace cairn::serve
