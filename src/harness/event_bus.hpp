// Delivers events to listeners in publication order, on the publishing
// thread, never under a harness lock. A listener may call back into the
// harness (steer, abort): events it causes are queued and delivered after it
// returns, by whichever thread is delivering.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cairn/harness/events.hpp"

namespace cairn {

class EventBus {
 public:
  // `ref`: only that ref's events (and harness-wide ones such as fault).
  Subscription subscribe(std::optional<std::string> ref, EventListener listener);
  void publish(Event event);
  // publish() in two halves, for an event that must be ordered before what
  // other threads publish once the caller lets go of its locks: enqueue()
  // takes its place in publication order and may be called under a harness
  // lock; deliver() (never under one) delivers it unless a thread already is.
  void enqueue(Event event);
  void deliver();
  // Whether anyone is subscribed; an event published without listeners goes
  // nowhere, so a publisher may skip building it.
  bool has_listeners() const { return listeners_->count.load(std::memory_order_acquire) > 0; }
  // Waits until every event published so far is delivered, unless this thread
  // is the one delivering (a listener calling back), which would wait on itself.
  void flush();
  // Listener failures go here (a handler_error event is published for them).
  void set_error_sink(std::function<void(const Event& failed, const std::string& what)> sink);

 private:
  struct Listener {
    std::optional<std::string> ref;
    EventListener fn;
  };
  // Held weakly by subscriptions, which may outlive the bus.
  struct Listeners {
    std::mutex mu;
    std::map<std::uint64_t, Listener> map;
    std::uint64_t next = 1;
    std::atomic<std::size_t> count = 0;  // map.size(), readable without mu
  };
  void drain(std::unique_lock<std::mutex>& lock);

  std::shared_ptr<Listeners> listeners_ = std::make_shared<Listeners>();
  std::mutex mu_;  // the queue; taken before Listeners::mu
  std::condition_variable delivered_cv_;
  std::deque<Event> queue_;
  std::uint64_t published_ = 0;
  std::uint64_t delivered_ = 0;
  bool draining_ = false;
  std::function<void(const Event&, const std::string&)> error_sink_;
};

}  // namespace cairn
