// Spans, their listeners and the per-thread trace context (trace.hpp).
#include "cairn/trace.hpp"

#include <atomic>
#include <mutex>
#include <cctype>
#include <cassert>
#include <random>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace cairn::trace {
namespace {

struct Registry {
  // Listeners are called under the shared lock, so that a Subscription's
  // destructor (which takes it exclusively) returns only once no call of
  // its listener is under way.
  std::shared_mutex mu;
  std::vector<std::pair<std::uint64_t, Listener>> listeners;
  std::uint64_t next_id = 1;
};

Registry& registry() {
  static Registry instance;  // never destroyed before a static Subscription: both are function-local or later
  return instance;
}

std::atomic<int> listener_count{0};
std::atomic<bool> content_captured{false};

thread_local TraceContext tls_context;

std::string random_hex(int words) {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   std::hash<std::thread::id>{}(std::this_thread::get_id())};
  std::string out;
  for (int i = 0; i < words; ++i) {
    std::uint64_t value = 0;
    while (value == 0) value = rng();  // an all-zero id is invalid (W3C)
    out += fmt::format("{:016x}", value);
  }
  return out;
}

std::int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void emit(const SpanEvent& event) {
  Registry& r = registry();
  std::shared_lock lock(r.mu);
  for (const auto& [id, listener] : r.listeners) {
    try {
      listener(event);
    } catch (...) {
      // A listener that throws loses its own event; the run goes on.
    }
  }
}

bool is_hex(std::string_view text, std::size_t size) {
  if (text.size() != size) return false;
  bool nonzero = false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    nonzero = nonzero || c != '0';
  }
  return nonzero;
}

}  // namespace

std::string_view to_string(SpanEventType type) {
  switch (type) {
    case SpanEventType::start: return "start";
    case SpanEventType::end: return "end";
    case SpanEventType::error: return "error";
    case SpanEventType::event: return "event";
  }
  return "event";
}

Json to_json(const SpanEvent& event) {
  Json out = {{"type", to_string(event.type)},
              {"name", event.name},
              {"traceId", event.trace_id},
              {"spanId", event.span_id},
              {"timestamp", static_cast<double>(event.timestamp_ns) / 1e6}};
  if (!event.parent_span_id.empty()) out["parentSpanId"] = event.parent_span_id;
  if (event.duration_ms) out["durationMs"] = *event.duration_ms;
  if (event.context) out["context"] = *event.context;
  if (!event.payload.empty()) out["payload"] = event.payload;
  if (event.error) out["error"] = {{"name", event.error->name}, {"message", event.error->message}};
  return out;
}

// ---- listeners ------------------------------------------------------------------

Subscription subscribe(Listener listener) {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  const std::uint64_t id = r.next_id++;
  r.listeners.emplace_back(id, std::move(listener));
  listener_count.fetch_add(1, std::memory_order_relaxed);
  return Subscription(id);
}

Subscription& Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void Subscription::reset() {
  if (id_ == 0) return;
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  std::erase_if(r.listeners, [&](const auto& entry) { return entry.first == id_; });
  listener_count.fetch_sub(1, std::memory_order_relaxed);
  id_ = 0;
}

bool has_subscribers() noexcept { return listener_count.load(std::memory_order_relaxed) > 0; }

void set_capture_content(bool capture) { content_captured.store(capture, std::memory_order_relaxed); }
bool capture_content() noexcept { return content_captured.load(std::memory_order_relaxed); }

// ---- context ----------------------------------------------------------------------

TraceContext current() { return tls_context; }

ContextScope::ContextScope(TraceContext context) : saved_(std::exchange(tls_context, std::move(context))) {}
ContextScope::~ContextScope() { tls_context = std::move(saved_); }

std::optional<TraceContext> parse_traceparent(std::string_view header) {
  // version "-" trace-id "-" parent-id "-" flags; a future version may
  // append fields after a further "-".
  if (header.size() < 55 || header[2] != '-' || header[35] != '-' || header[52] != '-') return std::nullopt;
  const std::string_view version = header.substr(0, 2);
  if (!is_hex(version, 2) && version != "00") return std::nullopt;
  if (version == "ff" || (version == "00" && header.size() != 55)) return std::nullopt;
  if (header.size() > 55 && header[55] != '-') return std::nullopt;
  const std::string_view trace_id = header.substr(3, 32), span_id = header.substr(36, 16), flags = header.substr(53, 2);
  if (!is_hex(trace_id, 32) || !is_hex(span_id, 16)) return std::nullopt;
  if (!(flags.size() == 2 && std::isxdigit(static_cast<unsigned char>(flags[0])) &&
        std::isxdigit(static_cast<unsigned char>(flags[1])))) {
    return std::nullopt;
  }
  return TraceContext{.trace_id = std::string(trace_id), .span_id = std::string(span_id), .remote = true};
}

std::string traceparent() {
  if (tls_context.span_id.empty()) return {};
  return fmt::format("00-{}-{}-01", tls_context.trace_id, tls_context.span_id);
}

// ---- spans --------------------------------------------------------------------------

struct Span::State {
  SpanEvent event;  // the start event, reused for the end
  std::chrono::steady_clock::time_point started;
  TraceContext saved;  // the thread's context before this span
  Json end_payload = Json::object();
  std::optional<SpanError> error;
#ifndef NDEBUG
  std::thread::id thread = std::this_thread::get_id();
#endif
};

void Span::begin(std::string_view name, Json payload) {
  state_ = std::make_shared<State>();
  SpanEvent& e = state_->event;
  e.type = SpanEventType::start;
  e.name = std::string(name);
  const TraceContext& parent = tls_context;
  e.trace_id = parent.trace_id.empty() ? random_hex(2) : parent.trace_id;
  e.parent_span_id = parent.span_id;
  e.remote_parent = parent.remote;
  e.span_id = random_hex(1);
  e.context = parent.user;
  e.payload = payload.is_object() ? std::move(payload) : Json::object();
  e.timestamp_ns = unix_now_ns();
  state_->started = std::chrono::steady_clock::now();
  state_->saved = std::exchange(tls_context, TraceContext{.trace_id = e.trace_id, .span_id = e.span_id, .user = e.context});
  emit(e);
}

void Span::set(std::string_view key, Json value) {
  if (state_) state_->end_payload[std::string(key)] = std::move(value);
}

void Span::fail(std::string name, std::string message) {
  if (state_) state_->error = SpanError{std::move(name), std::move(message)};
}

void Span::end() {
  if (!state_) return;
  std::shared_ptr<State> state = std::move(state_);
#ifndef NDEBUG
  assert(state->thread == std::this_thread::get_id() && "a span ends on the thread it began on");
#endif
  tls_context = std::move(state->saved);
  SpanEvent& e = state->event;
  e.type = state->error ? SpanEventType::error : SpanEventType::end;
  e.timestamp_ns = unix_now_ns();
  e.duration_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - state->started).count();
  e.payload = std::move(state->end_payload);
  if (state->error) {
    e.payload["error.type"] = state->error->name;
    e.error = std::move(state->error);
  }
  emit(e);
}

}  // namespace cairn::trace
