#include "session_pool.hpp"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "cairn/trace.hpp"
#include "followed_session.hpp"
#include "http_types.hpp"
#include "stream_hub.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::serve {

namespace {
// How often a followed session is read whatever its writer announced (a
// store one process writes announces nothing; a lost notification).
constexpr std::chrono::milliseconds kFollowPoll{1000};
// How long a session another process holds is taken to be held still: a
// holder that lets it go meanwhile delays its next open here by at most
// this (the inbox's items wait as long, then the sweep applies them).
constexpr std::chrono::milliseconds kHeldElsewhereFor{500};
constexpr std::size_t kHeldElsewhereMax = 4096;

std::int64_t now_ticks() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
}  // namespace

SessionPool::SessionPool(std::unique_ptr<Store> store, std::shared_ptr<HarnessFactory> factory,
                         std::vector<std::string> secrets, std::chrono::milliseconds idle_close)
    : store_(std::move(store)), factory_(std::move(factory)), secrets_(std::move(secrets)), idle_close_(idle_close) {
  assert(factory_);
}

SessionPool::~SessionPool() {
  std::deque<std::string> untaken;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    untaken.swap(open_queue_);
  }
  open_wanted_.notify_all();
  for (auto& opener : openers_) opener.join();
  // Openings no thread took: who waits for them learns the server stops.
  for (const auto& id : untaken) {
    std::shared_ptr<Opening> opening;
    {
      std::lock_guard lock(mu_);
      if (auto it = opening_.find(id); it != opening_.end()) opening = it->second;
    }
    if (opening) finish_open(id, opening, std::unexpected(http_error(HttpErrc::unavailable, "the server is stopping")));
  }
}

void SessionPool::touch(SessionHost& host) { host.last_used.store(now_ticks()); }

Result<std::shared_ptr<SessionHost>> SessionPool::host_for(std::shared_ptr<Session> session) {
  auto made = factory_->make(session, store_);
  if (!made) return std::unexpected(made.error());
  made->options.session = session;
  for (const auto& secret : secrets_) made->options.secrets.add(secret);
  auto created = AgentHarness::create(std::move(made->options));
  if (!created) return std::unexpected(created.error());
  auto host = std::make_shared<SessionHost>();
  host->session = std::move(session);
  host->harness = std::make_unique<AgentHarness>(std::move(created->harness));
  if (made->attach) host->attachment = made->attach(*host->harness);
  host->suspended_at_open = std::move(created->suspended);
  host->hub = std::make_shared<StreamHub>(
      [session = host->session](std::int64_t after, std::size_t limit) { return session->get_log(after, limit); });
  host->hub_subscription = host->harness->on_event([hub = host->hub](const Event& event) { hub->publish(event); });
  touch(*host);
  return host;
}

void SessionPool::set_descriptor_budget(DescriptorBudget budget) {
  std::lock_guard lock(mu_);
  budget_ = std::move(budget);
}

namespace {
// Nothing holds it but the pool (no request, stream or operation thread),
// and no operation runs on it.
bool unused(const std::shared_ptr<SessionHost>& host) {
  if (host.use_count() != 1 || host->running.load() != 0) return false;
  for (const auto& ref : host->harness->refs()) {
    if (ref.run && ref.run->status == OperationStatus::running) return false;
  }
  return true;
}
}  // namespace

SessionPool::Hosts::iterator SessionPool::take(Hosts::iterator it, Closing& into) {
  closing_.insert(it->first);
  into.ids.push_back(it->first);
  into.hosts.push_back(remove_host(it++));
  return it;
}

void SessionPool::close(Closing taken) {
  if (taken.ids.empty()) return;
  taken.hosts.clear();  // each session flushes and lets go of its file or lease
  {
    std::lock_guard lock(mu_);
    for (const auto& id : taken.ids) closing_.erase(id);
  }
  opened_.notify_all();
}

void SessionPool::wait_closed(std::unique_lock<std::mutex>& lock, const std::string& id) {
  opened_.wait(lock, [&] { return !closing_.contains(id); });
}

SessionPool::Hosts::iterator SessionPool::least_used() {
  auto oldest = hosts_.end();
  for (auto it = hosts_.begin(); it != hosts_.end(); ++it) {
    if (!unused(it->second)) continue;
    if (oldest == hosts_.end() || it->second->last_used.load() < oldest->second->last_used.load()) oldest = it;
  }
  return oldest;
}

std::shared_ptr<SessionHost> SessionPool::remove_host(Hosts::iterator it) {
  std::shared_ptr<SessionHost> host = std::move(it->second);
  closed_stats_ += host->session->append_stats();
  hosts_.erase(it);
  return host;
}

Status SessionPool::make_room() {
  while (budget_.short_for_session()) {
    const auto oldest = least_used();
    if (oldest == hosts_.end()) {
      return std::unexpected(http_error(
          HttpErrc::unavailable, fmt::format("the server has too few file descriptors left to open a session ({} in use by "
                                             "{} open sessions and the rest, of {}; raise `ulimit -n` or --max-descriptors); "
                                             "try again later",
                                             budget_.in_use(), hosts_.size(), budget_.total)));
    }
    // Closed now, under the lock, so that the count above sees its
    // descriptors come back (nothing else holds it).
    std::shared_ptr<SessionHost> taken = remove_host(oldest);
    taken->harness->close();
  }
  return {};
}

void SessionPool::shed_idle() {
  Closing taken;
  {
    std::lock_guard lock(mu_);
    const auto oldest = least_used();
    if (oldest == hosts_.end()) return;
    take(oldest, taken);
  }
  close(std::move(taken));
}

Result<SessionPool::Claim> SessionPool::claim_open(const std::string& id) {
  if (auto it = hosts_.find(id); it != hosts_.end()) {
    touch(*it->second);
    return Claim{.open = it->second};
  }
  if (auto it = held_elsewhere_.find(id); it != held_elsewhere_.end()) {
    if (std::chrono::steady_clock::now() < it->second.until) return std::unexpected(it->second.error);
    held_elsewhere_.erase(it);
  }
  if (auto it = opening_.find(id); it != opening_.end()) return Claim{.opening = it->second};
  if (auto room = make_room(); !room) return std::unexpected(room.error());
  auto opening = std::make_shared<Opening>();
  opening_[id] = opening;
  return Claim{.opening = std::move(opening), .mine = true};
}

Result<std::shared_ptr<SessionHost>> SessionPool::open_now(const std::string& id) {
  auto session = store_->open(id);
  if (!session) return std::unexpected(session.error());
  auto host = host_for(std::move(*session));
  if (host && on_open_) on_open_(id, **host);
  return host;
}

void SessionPool::finish_open(const std::string& id, const std::shared_ptr<Opening>& opening,
                              Result<std::shared_ptr<SessionHost>> result) {
  std::vector<Opened> waiters;
  {
    std::lock_guard lock(mu_);
    if (result) {
      hosts_[id] = *result;
      opens_total_.fetch_add(1);
    } else if (result.error().is(Errc::locked)) {
      // Taking the lease costs a connection of its own: the requests that
      // come meanwhile are relayed (or followed) without trying again.
      if (held_elsewhere_.size() > kHeldElsewhereMax) held_elsewhere_.clear();
      held_elsewhere_[id] = HeldElsewhere{result.error(), std::chrono::steady_clock::now() + kHeldElsewhereFor};
    }
    opening->result = result;
    waiters.swap(opening->waiters);
    opening_.erase(id);
  }
  opened_.notify_all();
  if (result && on_hosted_) on_hosted_(*result);
  // A session taken over from a holder that is gone, by a request (or by
  // its inbox's sweep) rather than by a claim: its operations go on here,
  // as the claim would have had them, after what waited in its inbox. (It
  // is now held live here, so no claim would ever take it.)
  if (result && resume_on_open_ && !is_child_session((*result)->session->header())) {
    for (AgentRef& ref : resumable(**result, "session taken over").refs) {
      run_detached(*result, [ref]() mutable { (void)ref.resume(); });
    }
  }
  for (auto& done : waiters) done(result);
}

Result<std::shared_ptr<SessionHost>> SessionPool::get(const std::string& id) {
  std::unique_lock lock(mu_);
  auto claim = claim_open(id);
  if (!claim) return std::unexpected(claim.error());
  if (claim->open) return claim->open;
  if (!claim->mine) {
    // Another request opens it: its outcome is this one's too.
    const std::shared_ptr<Opening> opening = claim->opening;
    opened_.wait(lock, [&] { return opening->result.has_value(); });
    return *opening->result;
  }
  wait_closed(lock, id);
  lock.unlock();
  auto result = open_now(id);
  finish_open(id, claim->opening, result);
  return result;
}

void SessionPool::open_async(const std::string& id, Opened done) {
  std::unique_lock lock(mu_);
  auto claim = claim_open(id);
  if (!claim || claim->open) {
    lock.unlock();
    done(claim ? Result<std::shared_ptr<SessionHost>>(claim->open) : std::unexpected(claim.error()));
    return;
  }
  claim->opening->waiters.push_back(std::move(done));
  if (!claim->mine) return;  // the opening under way will call it
  if (stopping_) {
    lock.unlock();
    finish_open(id, claim->opening, std::unexpected(http_error(HttpErrc::unavailable, "the server is stopping")));
    return;
  }
  open_queue_.push_back(id);
  // Two threads at least, so that one long log does not hold back every
  // other session's open; at most half the cores, so that opens leave the
  // rest to the requests of the sessions already open.
  const std::size_t wanted = std::clamp<std::size_t>(std::thread::hardware_concurrency() / 2, 2, 8);
  if (openers_.size() < wanted) {
    openers_.emplace_back([this] { opener_loop(); });
  }
  lock.unlock();
  open_wanted_.notify_one();
}

void SessionPool::opener_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    open_wanted_.wait(lock, [this] { return stopping_ || !open_queue_.empty(); });
    if (stopping_) return;
    const std::string id = std::move(open_queue_.front());
    open_queue_.pop_front();
    const std::shared_ptr<Opening> opening = opening_.at(id);
    wait_closed(lock, id);
    lock.unlock();
    finish_open(id, opening, open_now(id));
    lock.lock();
  }
}

Result<std::shared_ptr<FollowedSession>> SessionPool::follow(const std::string& id, const Error& locked) {
  {
    std::lock_guard lock(mu_);
    if (auto it = followed_.find(id); it != followed_.end()) {
      if (auto held = it->second.lock()) return held;
    }
    std::erase_if(followed_, [](const auto& item) { return item.second.expired(); });
    if (auto room = make_room(); !room) return std::unexpected(room.error());
  }
  // Read without the lock (the whole log, for the follow's snapshot).
  auto opened = store_->open(id, OpenOptions{.read_only = true});
  if (!opened) return std::unexpected(opened.error());
  FollowedSession::Access access{
      .read = [this, id](std::int64_t after, std::size_t limit) { return read_log(id, after, limit); },
      .open_read_only = [this, id] { return open_read_only(id); },
  };
  auto followed = FollowedSession::start(**opened, locked.message, std::move(access));
  auto follow = store_->follow(id, kFollowPoll, [raw = followed.get()] { raw->changed(); });
  if (!follow) return std::unexpected(follow.error());
  followed->set_follow(std::move(*follow));
  std::lock_guard lock(mu_);
  // Another request may have started a follow meanwhile: one per session.
  if (auto it = followed_.find(id); it != followed_.end()) {
    if (auto held = it->second.lock()) return held;
  }
  followed_[id] = followed;
  return followed;
}

Result<std::vector<LogLine>> SessionPool::read_log(const std::string& id, std::int64_t after, std::size_t limit) {
  return store_->read_log(id, after, limit);
}

std::shared_ptr<SessionHost> SessionPool::find_open(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = hosts_.find(id);
  return it == hosts_.end() ? nullptr : it->second;
}

Result<std::shared_ptr<Session>> SessionPool::open_read_only(const std::string& id) {
  return store_->open(id, OpenOptions{.read_only = true});
}

Result<std::string> SessionPool::log_stamp(const std::string& id) {
  return store_->log_stamp(id);
}

Result<std::shared_ptr<SessionHost>> SessionPool::create(const CreateOptions& options) {
  {
    std::lock_guard lock(mu_);
    if (auto room = make_room(); !room) return std::unexpected(room.error());
  }
  auto session = store_->create(options);  // refused when the id is taken, open or not
  if (!session) return std::unexpected(session.error());
  const std::string id = (*session)->id();
  auto host = host_for(std::move(*session));
  if (!host) return host;
  {
    std::lock_guard lock(mu_);
    hosts_[id] = *host;
    opens_total_.fetch_add(1);
  }
  if (on_hosted_) on_hosted_(*host);  // a request relayed to it from now on is applied here
  return host;
}

Status SessionPool::remove(const std::string& id) {
  std::unique_lock lock(mu_);
  // An open or a close under way ends first; then the session is open here, or not.
  opened_.wait(lock, [&] { return !opening_.contains(id) && !closing_.contains(id); });
  if (auto it = hosts_.find(id); it != hosts_.end()) {
    SessionHost& host = *it->second;
    for (const auto& ref : host.harness->refs()) {
      if (ref.run && ref.run->status != OperationStatus::suspended && ref.run->status != OperationStatus::awaiting_input) {
        return fail(Errc::operation_open, fmt::format("session {}: ref {} is running {}; abort it first", id, ref.name,
                                                      ref.run->id));
      }
    }
    if (host.running.load() > 0) return fail(Errc::operation_open, fmt::format("session {} is still running", id));
    // Its watchers are told and let go; its writer (the file lock or the
    // lease) is let go now, though a stream may still hold the session for
    // a moment.
    host.hub->end_all(sse_frame(Json{{"type", "session_deleted"}, {"session", id}}));
    closed_stats_ += host.session->append_stats();
    host.harness->close();
    host.session->close_writer();
    hosts_.erase(it);
  }
  return store_->remove(id);
}

Result<std::vector<SessionHeader>> SessionPool::list() {
  return store_->list();
}

Result<ForkResult> SessionPool::fork(const std::shared_ptr<SessionHost>& host, const std::string& ref,
                                     ForkOptions options) {
  auto agent_ref = host->harness->ref(ref);
  if (!agent_ref) return std::unexpected(Error{Errc::unknown_ref, fmt::format("no ref '{}'", ref)});
  return agent_ref->fork(*store_, std::move(options));
}

void SessionPool::run_detached(const std::shared_ptr<SessionHost>& host, std::function<void()> work) {
  host->running.fetch_add(1);
  // Detached: a server that stops leaves its operations to their log
  // (durable at every step, resumed at the next start) rather than wait.
  std::thread([host, work = std::move(work), context = trace::current(), mark = InboxMark::current()] {
    trace::ContextScope scope(context);  // the caller's trace, if it sent one
    InboxMark::Scope applying(mark);     // the inbox item the caller applies, if it applies one
    work();
    touch(*host);
    host->running.fetch_sub(1);
  }).detach();
}

// What these say on stderr names refs a client chose (a name may hold a C1
// control) and quotes errors: untrusted text (util/untrusted_text.hpp).
void SessionPool::resume_suspended() {
  std::vector<std::string> ids;
  {
    auto headers = store_->list();
    if (!headers) {
      print_untrusted(stderr, "cairn serve: cannot list the store's sessions: {}\n", headers.error().message);
      return;
    }
    for (const auto& header : *headers) {
      // A subagent's session is resumed by its parent's call, which waits
      // for its answer: resumed here as well, the two would race for it.
      if (is_child_session(header)) continue;
      // Read-only and cheap: only sessions with an open operation are opened for writing.
      auto session = store_->open(header.id, OpenOptions{.read_only = true});
      if (!session) continue;
      for (const RefInfo& ref : (*session)->refs()) {
        if (ref.open_operation) {
          ids.push_back(header.id);
          break;
        }
      }
    }
  }
  for (const auto& id : ids) {
    auto host = get(id);
    if (!host) {
      print_untrusted(stderr, "cairn serve: session {} not resumed: {}\n", id, host.error().message);
      continue;
    }
    for (AgentRef& ref : resumable(**host, "session").refs) {
      run_detached(*host, [ref]() mutable { (void)ref.resume(); });
    }
  }
}

SessionPool::Resumable SessionPool::resumable(const SessionHost& host, std::string_view how) {
  Resumable out;
  const std::string& id = host.session->id();
  for (const auto& operation : host.suspended_at_open) {
    if (!operation.awaiting_input.empty()) {
      print_untrusted(stderr, "cairn serve: {} {} ref {}: {} waits for {} answer(s)\n", how, id, operation.ref,
                      to_string(operation.kind), operation.awaiting_input.size());
      out.waiting = true;
      continue;
    }
    if (operation.damaged) {
      print_untrusted(stderr, "cairn serve: {} {} ref {}: {} is damaged; abort it\n", how, id, operation.ref,
                      to_string(operation.kind));
      out.damaged = fmt::format("ref {}: {} is damaged; abort it", operation.ref, to_string(operation.kind));
      continue;
    }
    if (auto ref = host.harness->ref(operation.ref)) {
      print_untrusted(stderr, "cairn serve: {} {} ref {}: resuming {} {}\n", how, id, operation.ref,
                      to_string(operation.kind), operation.id);
      out.refs.push_back(*ref);
    }
  }
  return out;
}

bool SessionPool::claim_suspended(const ClaimOptions& options) {
  for (;;) {
    std::shared_ptr<SessionHost> host;
    std::string id;
    {
      // The claim opens the session: without the lock.
      auto claimed = store_->claim(options);
      if (!claimed) {
        if (claimed.error().is(Errc::invalid_argument)) return false;
        print_untrusted(stderr, "cairn serve: {}\n", claimed.error().message);
        return true;
      }
      if (!*claimed) return true;
      id = (**claimed)->id();
      auto made = host_for(std::move(**claimed));
      if (!made) {
        print_untrusted(stderr, "cairn serve: claimed session {} not resumed: {}\n", id, made.error().message);
        (void)store_->end_claim(id, ClaimEnd::failed, made.error().message);
        continue;  // the session is let go with `made`'s error
      }
      host = *made;
      std::lock_guard lock(mu_);
      hosts_[id] = host;  // a claimed session was open nowhere: not here either
      opens_total_.fetch_add(1);
    }
    if (on_hosted_) on_hosted_(host);  // what waits in its inbox, before its operations go on
    // The claim ends when the last of its resumed operations does.
    struct Turn {
      std::mutex mu;
      int left = 0;
      ClaimEnd end = ClaimEnd::finished;
      std::string detail;
    };
    auto turn = std::make_shared<Turn>();
    auto settle = [this, id, turn](std::optional<RunResult> result) {
      std::lock_guard lock(turn->mu);
      if (result && (result->outcome == Outcome::faulted || result->outcome == Outcome::rejected)) {
        turn->end = ClaimEnd::failed;
        turn->detail = result->error ? result->error->message : "the operation could not be resumed";
      } else if (result && result->outcome == Outcome::awaiting_input && turn->end == ClaimEnd::finished) {
        turn->end = ClaimEnd::waiting;
      }
      if (--turn->left == 0) (void)store_->end_claim(id, turn->end, turn->detail);
    };
    Resumable found = resumable(*host, "claimed session");
    if (found.waiting) turn->end = ClaimEnd::waiting;
    if (found.damaged) {
      turn->end = ClaimEnd::failed;
      turn->detail = *found.damaged;
    }
    std::vector<AgentRef>& refs = found.refs;
    turn->left = static_cast<int>(refs.size()) + 1;
    for (AgentRef& ref : refs) {
      run_detached(host, [ref, settle]() mutable { settle(ref.resume()); });
    }
    settle(std::nullopt);  // the claim's own share: ends it when nothing was resumed
  }
}

void SessionPool::close_idle() {
  Closing taken;
  {
    std::lock_guard lock(mu_);
    const auto limit = now_ticks() - std::chrono::duration_cast<std::chrono::steady_clock::duration>(idle_close_).count();
    for (auto it = hosts_.begin(); it != hosts_.end();) {
      SessionHost& host = *it->second;
      // Held by nothing else (no request, stream or operation thread).
      const bool idle = it->second.use_count() == 1 && host.running.load() == 0 && host.last_used.load() < limit;
      bool busy = false;
      if (idle) {
        for (const auto& ref : host.harness->refs()) {
          if (ref.run && ref.run->status == OperationStatus::running) busy = true;
        }
      }
      it = idle && !busy ? take(it, taken) : std::next(it);
    }
  }
  close(std::move(taken));
}

AppendStats SessionPool::append_stats() const {
  std::lock_guard lock(mu_);
  AppendStats total = closed_stats_;
  for (const auto& [id, host] : hosts_) total += host->session->append_stats();
  return total;
}

std::size_t SessionPool::open_count() const {
  std::lock_guard lock(mu_);
  return hosts_.size();
}

}  // namespace cairn::serve
