#include "event_bus.hpp"

#include <thread>
#include <vector>

namespace cairn {
namespace {
thread_local const EventBus* delivering_bus = nullptr;
}

Json encode(const Event& event) {
  Json json = {{"type", event.type}, {"ref", event.ref}};
  if (event.run_id) json["runId"] = *event.run_id;
  if (event.seq) json["seq"] = *event.seq;
  if (event.message) json["message"] = encode(*event.message);
  for (const auto& [key, value] : event.data.items()) json[key] = value;
  return json;
}

Subscription EventBus::subscribe(std::optional<std::string> ref, EventListener listener) {
  std::lock_guard lock(listeners_->mu);
  const std::uint64_t id = listeners_->next++;
  listeners_->map.emplace(id, Listener{std::move(ref), std::move(listener)});
  listeners_->count.store(listeners_->map.size(), std::memory_order_release);
  return Subscription([weak = std::weak_ptr<Listeners>(listeners_), id] {
    if (auto listeners = weak.lock()) {
      std::lock_guard lock(listeners->mu);
      listeners->map.erase(id);
      listeners->count.store(listeners->map.size(), std::memory_order_release);
    }
  });
}

void EventBus::set_error_sink(std::function<void(const Event&, const std::string&)> sink) {
  std::lock_guard lock(mu_);
  error_sink_ = std::move(sink);
}

void EventBus::publish(Event event) {
  std::unique_lock lock(mu_);
  queue_.push_back(std::move(event));
  ++published_;
  if (!draining_) drain(lock);
}

void EventBus::drain(std::unique_lock<std::mutex>& lock) {
  draining_ = true;
  delivering_bus = this;
  while (!queue_.empty()) {
    Event event = std::move(queue_.front());
    queue_.pop_front();
    std::vector<EventListener> targets;
    {
      std::lock_guard listeners_lock(listeners_->mu);
      for (const auto& [id, listener] : listeners_->map) {
        // Harness-wide events (no ref) reach every listener.
        if (!listener.ref || event.ref.empty() || *listener.ref == event.ref) targets.push_back(listener.fn);
      }
    }
    auto sink = error_sink_;
    lock.unlock();
    for (const auto& target : targets) {
      try {
        target(event);
      } catch (const std::exception& e) {
        if (sink && event.type != "handler_error") sink(event, e.what());
      } catch (...) {
        if (sink && event.type != "handler_error") sink(event, "unknown exception");
      }
    }
    lock.lock();
    ++delivered_;
  }
  delivering_bus = nullptr;
  draining_ = false;
  delivered_cv_.notify_all();
}

void EventBus::flush() {
  std::unique_lock lock(mu_);
  if (delivering_bus == this) return;
  const std::uint64_t target = published_;
  delivered_cv_.wait(lock, [&] { return delivered_ >= target || (!draining_ && queue_.empty()); });
}

}  // namespace cairn
