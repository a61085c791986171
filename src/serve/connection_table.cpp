#include "connection_table.hpp"

#include <algorithm>
#include <vector>

namespace cairn::serve {

ConnectionTable::ConnectionTable(std::size_t max_connections, std::size_t max_pending)
    : max_connections_(std::max<std::size_t>(max_connections, 1)),
      max_pending_(std::clamp<std::size_t>(max_pending, 1, std::max<std::size_t>(max_connections, 1))) {}

ConnectionTable::List& ConnectionTable::list_of(State state) {
  switch (state) {
    case State::pending: return pending_;
    case State::idle: return idle_;
    case State::busy: return busy_;
  }
  return busy_;
}

ConnectionTable::Close ConnectionTable::drop_oldest(List& from) {
  if (from.empty()) return {};
  // The oldest of the first few that nothing has come on since: a client
  // whose request is in the socket's buffer, not read yet because a flood
  // of new connections keeps the server busy, is not idle. (A bounded look:
  // past it, or when each has sent something, the oldest goes.)
  constexpr int kLook = 16;
  auto it = from.begin();
  int looked = 0;
  for (auto candidate = from.begin(); candidate != from.end() && looked < kLook; ++candidate, ++looked) {
    if (!candidate->has_input || !candidate->has_input()) {
      it = candidate;
      break;
    }
  }
  it->closing = true;
  Close close = it->close;
  closing_.splice(closing_.end(), from, it);
  return close;
}

ConnectionTable::Id ConnectionTable::admit(Close close, HasInput has_input) {
  std::vector<Close> closes;
  Id id = 0;
  {
    std::lock_guard lock(mu_);
    // Those being closed no longer count: their descriptors are going.
    if (pending_.size() >= max_pending_) {
      if (auto dropped = drop_oldest(pending_)) closes.push_back(std::move(dropped));
    }
    const auto open = [&] { return pending_.size() + idle_.size() + busy_.size(); };
    if (open() >= max_connections_) {
      // The one idle the longest: a client that never sent a valid request
      // before one that did.
      List& from = !pending_.empty() ? pending_ : idle_;
      if (auto dropped = drop_oldest(from)) closes.push_back(std::move(dropped));
    }
    if (open() < max_connections_) {
      id = next_++;
      pending_.push_back(Item{id, State::pending, std::move(close), std::move(has_input)});
      where_[id] = std::prev(pending_.end());
    }
  }
  for (auto& dropped : closes) dropped();
  return id;
}

void ConnectionTable::set_state(Id id, State state) {
  std::lock_guard lock(mu_);
  auto found = where_.find(id);
  if (found == where_.end() || found->second->closing) return;
  List& from = list_of(found->second->state);
  List& to = list_of(state);
  found->second->state = state;
  to.splice(to.end(), from, found->second);  // the newest of its state
}

void ConnectionTable::remove(Id id) {
  std::lock_guard lock(mu_);
  auto found = where_.find(id);
  if (found == where_.end()) return;
  List& from = found->second->closing ? closing_ : list_of(found->second->state);
  from.erase(found->second);
  where_.erase(found);
}

bool ConnectionTable::shed_one() {
  Close close;
  {
    std::lock_guard lock(mu_);
    close = drop_oldest(!pending_.empty() ? pending_ : idle_);
  }
  if (!close) return false;
  close();
  return true;
}

void ConnectionTable::shed_all() {
  while (shed_one()) {
  }
}

std::size_t ConnectionTable::size() const {
  std::lock_guard lock(mu_);
  return pending_.size() + idle_.size() + busy_.size() + closing_.size();
}

std::size_t ConnectionTable::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

}  // namespace cairn::serve
