// Observability (durable-harness-design.txt, "Observability"): spans of
// every run, step, generation, provider request, tool, checkpoint, hook,
// compaction, navigation, resume and session append, published to
// listeners as start / end / error events.
//
// Free when nobody listens: a span checks has_subscribers() once, when it
// is made, and does nothing else — no id, no clock, no payload — when the
// answer is no. Listeners run on the thread that ends the span, so they
// must be quick; the sinks (trace_sinks.hpp) only queue what they receive
// and do their I/O on their own threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "cairn/json.hpp"

namespace cairn::trace {

enum class SpanEventType { start, end, error, event };
std::string_view to_string(SpanEventType type);

struct SpanError {
  std::string name;  // a short classification (error.type): "provider_error", "tool_error"...
  std::string message;
};

// One thing that happened to a span. A start carries the span's attributes
// known when it began; its end (or error) the ones learnt since, and its
// duration. Attribute values are strings, numbers, booleans or arrays of them.
struct SpanEvent {
  SpanEventType type = SpanEventType::event;
  std::string name;            // "cairn.harness.run", ...
  std::string trace_id;        // 32 lower-case hex digits
  std::string span_id;         // 16 lower-case hex digits
  std::string parent_span_id;  // empty for a root span
  bool remote_parent = false;  // the parent is a caller's (traceparent), not ours
  std::int64_t timestamp_ns = 0;         // Unix time: the start's, or the end's
  std::optional<double> duration_ms;     // on end and error
  std::shared_ptr<const Json> context;   // the user context (run_with_context); null if none
  Json payload = Json::object();
  std::optional<SpanError> error;        // on error
};

// The design's shape: {"type", "name", "traceId", "spanId", "parentSpanId",
// "timestamp" (ms), "durationMs", "context", "payload", "error"}.
Json to_json(const SpanEvent& event);

// Called for every span event on the thread that made it, under a shared
// lock: a listener must not start spans, subscribe or unsubscribe.
using Listener = std::function<void(const SpanEvent&)>;

// A listener's registration; unsubscribes when destroyed. After the
// destructor returns the listener is never called again.
class [[nodiscard]] Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::uint64_t id) : id_(id) {}
  Subscription(Subscription&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  Subscription& operator=(Subscription&& other) noexcept;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription() { reset(); }
  void reset();
  explicit operator bool() const { return id_ != 0; }

 private:
  std::uint64_t id_ = 0;
};

Subscription subscribe(Listener listener);
bool has_subscribers() noexcept;

// Whether spans carry message text, tool arguments and results (off by
// default). Secrets are redacted from what they carry either way.
void set_capture_content(bool capture);
bool capture_content() noexcept;

// What a span started on this thread descends from: the innermost open
// span (or a caller's remote span), and the user context.
struct TraceContext {
  std::string trace_id;  // empty: no span
  std::string span_id;
  bool remote = false;
  std::shared_ptr<const Json> user;
};

// This thread's context.
TraceContext current();

// Installs `context` on this thread until destroyed, then restores the one
// before. For threads a caller starts (a worker running a tool call), for a
// caller's remote parent, and for run_with_context.
class [[nodiscard]] ContextScope {
 public:
  explicit ContextScope(TraceContext context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  TraceContext saved_;
};

// Calls `fn` with `user` as the user context of every span it starts,
// directly or through the harness's threads.
template <class Fn>
decltype(auto) run_with_context(Json user, Fn&& fn) {
  TraceContext context = current();
  context.user = std::make_shared<const Json>(std::move(user));
  ContextScope scope(std::move(context));
  return std::forward<Fn>(fn)();
}

// W3C Trace Context. parse_traceparent gives nothing for a malformed header.
std::optional<TraceContext> parse_traceparent(std::string_view header);
// "00-<trace>-<span>-01" for this thread's innermost span; empty if none.
std::string traceparent();

// A span: open from construction to destruction, the innermost one of its
// thread meanwhile. Inactive (and free) when nobody listened at its start.
class [[nodiscard]] Span {
 public:
  explicit Span(std::string_view name) : Span(name, [] { return Json::object(); }) {}
  // `payload()` (a Json object) is called only when the span is active.
  template <class Build>
    requires std::is_invocable_r_v<Json, Build>
  Span(std::string_view name, Build&& payload) {
    if (!has_subscribers()) return;
    begin(name, std::forward<Build>(payload)());
  }
  ~Span() { end(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  explicit operator bool() const { return state_ != nullptr; }
  // An attribute for the end event. Check the span first where the value
  // costs anything to build.
  void set(std::string_view key, Json value);
  // Ends the span as an error (span status ERROR, error.type `name`).
  void fail(std::string name, std::string message);
  // Ends the span now rather than at destruction.
  void end();

 private:
  struct State;
  void begin(std::string_view name, Json payload);
  // shared_ptr, not unique_ptr: its deleter is bound where State is
  // complete, so this header need not define it. Never shared.
  std::shared_ptr<State> state_;
};

}  // namespace cairn::trace
