#include "event_bus.hpp"

#include <ostream>
#include <thread>
#include <vector>

namespace cairn {
namespace {
thread_local const EventBus* delivering_bus = nullptr;
}

std::string_view to_string(EventType type) {
  switch (type) {
    case EventType::run_start: return "run_start";
    case EventType::run_resume: return "run_resume";
    case EventType::run_cancel: return "run_cancel";
    case EventType::run_end: return "run_end";
    case EventType::fault: return "fault";
    case EventType::handler_error: return "handler_error";
    case EventType::step_start: return "step_start";
    case EventType::step_end: return "step_end";
    case EventType::retry_scheduled: return "retry_scheduled";
    case EventType::retry_start: return "retry_start";
    case EventType::retry_end: return "retry_end";
    case EventType::message_start: return "message_start";
    case EventType::message_update: return "message_update";
    case EventType::message_end: return "message_end";
    case EventType::tool_start: return "tool_start";
    case EventType::tool_update: return "tool_update";
    case EventType::tool_end: return "tool_end";
    case EventType::entry_added: return "entry_added";
    case EventType::write_pending: return "write_pending";
    case EventType::queue_update: return "queue_update";
    case EventType::config_update: return "config_update";
    case EventType::compaction_start: return "compaction_start";
    case EventType::compaction_end: return "compaction_end";
    case EventType::navigation_start: return "navigation_start";
    case EventType::navigation_end: return "navigation_end";
    case EventType::ref_created: return "ref_created";
    case EventType::ref_deleted: return "ref_deleted";
    case EventType::input_requested: return "input_requested";
    case EventType::input_resolved: return "input_resolved";
    case EventType::context_usage: return "context_usage";
    case EventType::child_session_event: return "child_session_event";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& out, EventType type) { return out << to_string(type); }

Json encode(const Event& event) {
  Json json = {{"type", to_string(event.type)}, {"ref", event.ref}};
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

void EventBus::enqueue(Event event) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(event));
  ++published_;
}

void EventBus::deliver() {
  std::unique_lock lock(mu_);
  if (!draining_ && !queue_.empty()) drain(lock);
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
        if (sink && event.type != EventType::handler_error) sink(event, e.what());
      } catch (...) {
        if (sink && event.type != EventType::handler_error) sink(event, "unknown exception");
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
