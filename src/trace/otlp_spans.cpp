// Start and end events into finished spans (otlp_spans.hpp).
#include "trace/otlp_spans.hpp"

#include <utility>

namespace cairn::trace {

OtlpSpanAssembler::Outcome OtlpSpanAssembler::add(SpanEvent event) {
  Outcome outcome;
  switch (event.type) {
    case SpanEventType::event: return outcome;  // a point in time, not a span: OTLP has no place for it here
    case SpanEventType::start: {
      if (pending_.contains(event.span_id)) return outcome;  // ids are random: a repeat is noise
      while (pending_.size() >= max_pending_ && !by_age_.empty()) {
        pending_.erase(by_age_.begin()->second);
        by_age_.erase(by_age_.begin());
      }
      Open open;
      open.order = next_order_++;
      OtlpSpan& span = open.span;
      span.name = std::move(event.name);
      span.trace_id = std::move(event.trace_id);
      span.span_id = event.span_id;
      span.parent_span_id = std::move(event.parent_span_id);
      span.start_ns = event.timestamp_ns;
      span.attributes = event.payload.is_object() ? std::move(event.payload) : Json::object();
      span.context = std::move(event.context);
      by_age_.emplace(open.order, event.span_id);
      pending_.emplace(std::move(event.span_id), std::move(open));
      return outcome;
    }
    case SpanEventType::end:
    case SpanEventType::error: break;
  }
  auto found = pending_.find(event.span_id);
  if (found == pending_.end()) {
    outcome.dropped = true;
    return outcome;
  }
  OtlpSpan span = std::move(found->second.span);
  by_age_.erase(found->second.order);
  pending_.erase(found);
  if (event.payload.is_object()) {
    for (auto& [key, value] : event.payload.items()) span.attributes[key] = std::move(value);
  }
  span.end_ns = event.timestamp_ns;
  span.duration_s = event.duration_ms ? *event.duration_ms / 1000.0
                                      : static_cast<double>(span.end_ns - span.start_ns) / 1e9;
  if (event.type == SpanEventType::error) {
    span.error = event.error ? std::move(event.error) : std::optional<SpanError>(SpanError{"error", {}});
  }
  outcome.finished = std::move(span);
  return outcome;
}

}  // namespace cairn::trace
