// The OTLP exporter's finished spans, and their assembly from the start and
// end events a span publishes (trace.hpp) under one span id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "cairn/json.hpp"
#include "cairn/trace.hpp"

namespace cairn::trace {

struct OtlpSpan {
  std::string name;
  std::string trace_id;
  std::string span_id;
  std::string parent_span_id;  // empty for a root span
  std::int64_t start_ns = 0;   // Unix time
  std::int64_t end_ns = 0;
  double duration_s = 0;       // measured on the steady clock, not end - start
  Json attributes = Json::object();     // the start's payload, then the end's over it
  std::shared_ptr<const Json> context;  // the user context; null if none
  std::optional<SpanError> error;
};

// Pairs each start with its end (or error). Bounded: past `max_pending`
// open spans the oldest is forgotten, so a span that never ends (or whose
// end was dropped) does not hold memory for ever.
class OtlpSpanAssembler {
 public:
  explicit OtlpSpanAssembler(std::size_t max_pending) : max_pending_(max_pending == 0 ? 1 : max_pending) {}

  struct Outcome {
    std::optional<OtlpSpan> finished;
    bool dropped = false;  // an end whose start is unknown (dropped, forgotten, or before we listened)
  };
  Outcome add(SpanEvent event);
  std::size_t pending() const { return pending_.size(); }

 private:
  struct Open {
    OtlpSpan span;
    std::uint64_t order = 0;
  };
  std::size_t max_pending_;
  std::uint64_t next_order_ = 0;
  std::unordered_map<std::string, Open> pending_;  // by span id
  std::map<std::uint64_t, std::string> by_age_;    // order -> span id, oldest first
};

}  // namespace cairn::trace
