// The connections the server holds, and which of them it lets go when there
// are too many: a cap on all of them, and a lower one on those that have not
// yet sent a request with a valid token (a client without one must not be
// able to fill the server). Over a cap, the connection idle the longest goes
// first: one that has not sent a valid request, else one kept alive between
// requests. A connection in the middle of a request or a stream is never
// dropped for another; a new one is refused when every one is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>

namespace cairn::serve {

class ConnectionTable {
 public:
  enum class State {
    pending,  // accepted; no request with a valid token yet
    idle,     // kept alive, waiting for its next request
    busy,     // a request or a stream is being served
  };
  using Id = std::uint64_t;
  // Closes a connection; called without the table's lock, from any thread.
  using Close = std::function<void()>;
  // Whether bytes have come on the connection that the server has not read
  // yet: a request on its way, which makes it no longer idle. Called under
  // the table's lock; must be quick (an ioctl).
  using HasInput = std::function<bool()>;

  ConnectionTable(std::size_t max_connections, std::size_t max_pending);

  // A new connection, pending: 0 when it must be refused (every connection
  // is busy); connections closed to make room are closed before it returns.
  Id admit(Close close, HasInput has_input = {});
  // `idle` and `pending` connections may be dropped, oldest first (but
  // one whose next request has come goes after those whose has not).
  void set_state(Id id, State state);
  // The connection is gone (its socket closed).
  void remove(Id id);
  // Descriptors are short: drops the connection idle the longest (false:
  // there is none).
  bool shed_one();
  // The server stops: drops every connection not in the middle of a request.
  void shed_all();

  std::size_t size() const;  // open, those being closed included
  std::size_t pending() const;
  std::size_t max_connections() const { return max_connections_; }
  std::size_t max_pending() const { return max_pending_; }

 private:
  struct Item {
    Id id;
    State state;
    Close close;
    HasInput has_input;
    bool closing = false;
  };
  using List = std::list<Item>;
  List& list_of(State state);
  // Moves the oldest droppable item of `from` to closing; its Close, or none.
  Close drop_oldest(List& from);

  const std::size_t max_connections_;
  const std::size_t max_pending_;
  mutable std::mutex mu_;
  List pending_, idle_, busy_, closing_;  // each oldest first
  std::unordered_map<Id, List::iterator> where_;
  Id next_ = 1;
};

}  // namespace cairn::serve
