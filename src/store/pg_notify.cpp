#include "pg_notify.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "pg_conn.hpp"

namespace cairn::pg {

namespace {

using Clock = std::chrono::steady_clock;
// A process whose database went away tries again this often, not in a loop.
constexpr auto kRetry = std::chrono::seconds(1);

// A text[] literal: {"a","b"}, each element quoted, `"` and `\` escaped.
std::string array_literal(const std::set<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : item) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace

// ---- announcer -----------------------------------------------------------------

std::shared_ptr<Announcer> Announcer::for_database(const std::string& conninfo) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<Announcer>> announcers;
  std::lock_guard lock(mu);
  std::erase_if(announcers, [](const auto& item) { return item.second.expired(); });
  auto& slot = announcers[conninfo];
  auto announcer = slot.lock();
  if (!announcer) {
    announcer = std::make_shared<Announcer>(conninfo);
    slot = announcer;
  }
  return announcer;
}

Announcer::Announcer(std::string conninfo, std::chrono::milliseconds batch)
    : conninfo_(std::move(conninfo)), batch_(batch),
      thread_([this](std::stop_token stop) { loop(std::move(stop)); }) {}

Announcer::~Announcer() = default;  // the thread, stopped first, sends what is pending

void Announcer::announce(const std::string& id) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    first = pending_.empty();
    pending_.insert(id);
  }
  if (first) wake_.notify_one();
}

std::int64_t Announcer::sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

std::int64_t Announcer::lost() const {
  std::lock_guard lock(mu_);
  return lost_;
}

void Announcer::loop(std::stop_token stop) {
  std::optional<Connection> db;
  std::optional<Clock::time_point> failed_at;
  // One statement per batch, outside any writer's transaction; a batch that
  // cannot be sent is dropped (the followers' polls cover it).
  auto send = [&](const std::set<std::string>& batch) -> bool {
    if (!db || !db->connected()) {
      db.reset();
      if (failed_at && Clock::now() - *failed_at < kRetry) return false;
      auto connected = Connection::connect(conninfo_);
      if (!connected) {
        failed_at = Clock::now();
        return false;
      }
      // A notification is a hint (followers poll too): its commit need not
      // wait for the disk, and then costs the appends next to nothing.
      if (!connected->run("SET synchronous_commit = off")) {
        failed_at = Clock::now();
        return false;
      }
      db = std::move(*connected);
      failed_at.reset();
    }
    const std::array<Param, 2> params{std::string(kChannel), array_literal(batch)};
    if (auto sent = db->exec("SELECT pg_notify($1, s) FROM unnest($2::text[]) AS s", params); !sent) {
      if (sent.error().connection_lost) db.reset();
      return false;
    }
    return true;
  };
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, stop, [&] { return !pending_.empty(); });
    // The batch window: what other writers append meanwhile goes with it.
    if (!stop.stop_requested()) wake_.wait_for(lock, stop, batch_, [] { return false; });
    if (pending_.empty()) return;  // stopped with nothing to send
    std::set<std::string> batch;
    batch.swap(pending_);
    lock.unlock();
    const bool ok = send(batch);
    lock.lock();
    ++(ok ? sent_ : lost_);
    if (stop.stop_requested() && pending_.empty()) return;
  }
}

// ---- listener ------------------------------------------------------------------

class Listener::Handle final : public LogFollow {
 public:
  Handle(std::shared_ptr<Listener> listener, std::uint64_t key) : listener_(std::move(listener)), key_(key) {}
  ~Handle() override { listener_->unfollow(key_); }

 private:
  std::shared_ptr<Listener> listener_;
  std::uint64_t key_;
};

std::shared_ptr<Listener> Listener::start(std::string conninfo) {
  auto listener = std::make_shared<Listener>(Key(), std::move(conninfo));
  listener->thread_ = std::jthread([raw = listener.get()](std::stop_token stop) { raw->loop(std::move(stop)); });
  return listener;
}

Listener::Listener(Key, std::string conninfo)
    : conninfo_(std::move(conninfo)), wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Listener::~Listener() {
  if (thread_.joinable()) {
    thread_.request_stop();
    wake();
    thread_.join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Listener::wake() {
  const std::uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
}

std::unique_ptr<LogFollow> Listener::follow(const std::string& id, std::chrono::milliseconds poll,
                                            std::function<void()> changed) {
  std::uint64_t key = 0;
  {
    std::lock_guard lock(mu_);
    key = next_key_++;
    followers_.emplace(key, Follower{id, poll, Clock::now() + poll, std::move(changed)});
  }
  wake();  // its poll may come before the loop's current wait ends
  return std::make_unique<Handle>(shared_from_this(), key);
}

void Listener::unfollow(std::uint64_t key) {
  std::lock_guard lock(mu_);
  followers_.erase(key);
}

void Listener::loop(std::stop_token stop) {
  std::optional<Connection> db;
  Clock::time_point retry_at{};
  while (!stop.stop_requested()) {
    const auto now = Clock::now();
    if (!db && now >= retry_at) {
      auto connected = Connection::connect(conninfo_);
      if (connected && connected->run(fmt::format("LISTEN {}", kChannel))) {
        db = std::move(*connected);
        // Whatever was announced while we were not listening is unknown:
        // every follower looks.
        std::lock_guard lock(mu_);
        for (auto& [key, follower] : followers_) follower.changed();
      } else {
        retry_at = now + kRetry;
      }
    }
    // The polls that are due, and how long until the next one.
    auto next = now + std::chrono::seconds(1);
    {
      std::lock_guard lock(mu_);
      for (auto& [key, follower] : followers_) {
        if (follower.next_poll <= now) {
          follower.changed();
          follower.next_poll = now + follower.poll;
        }
        next = std::min(next, follower.next_poll);
      }
    }
    if (!db) next = std::min(next, retry_at);
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    std::array<pollfd, 2> fds{pollfd{wake_fd_, POLLIN, 0}, pollfd{db ? db->socket() : -1, POLLIN, 0}};
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<std::int64_t>(wait, 0, 1000)));
    if (ready <= 0) continue;
    if (fds[0].revents & POLLIN) {
      std::uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof count);
    }
    if (db && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      if (!db->consume_input()) {
        db.reset();  // reconnect at once; the reconnect tells every follower
        continue;
      }
      std::set<std::string> announced;
      while (auto payload = db->next_notification()) announced.insert(std::move(*payload));
      if (announced.empty()) continue;
      std::lock_guard lock(mu_);
      for (auto& [key, follower] : followers_) {
        if (announced.contains(follower.session)) follower.changed();
      }
    }
  }
}

}  // namespace cairn::pg
