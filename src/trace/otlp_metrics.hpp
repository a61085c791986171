// The metrics derived from finished spans (the OpenTelemetry GenAI
// semantic conventions, and cairn's own): explicit-bucket histograms with
// cumulative temporality, kept on the exporter's thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cairn/json.hpp"
#include "trace/otlp_spans.hpp"

namespace cairn::trace {

class OtlpHistogram {
 public:
  OtlpHistogram(std::string name, std::string unit, std::vector<double> bounds)
      : name_(std::move(name)), unit_(std::move(unit)), bounds_(std::move(bounds)) {}
  // `attributes`: a JSON object; one data point per distinct object.
  void record(const Json& attributes, double value);
  bool empty() const { return points_.empty(); }
  // The Metric message, every point from `start_ns` to `now_ns`.
  Json encode(std::int64_t start_ns, std::int64_t now_ns) const;

 private:
  struct Point {
    Json attributes;
    std::uint64_t count = 0;
    double sum = 0, min = 0, max = 0;
    std::vector<std::uint64_t> buckets;
  };
  std::string name_, unit_;
  std::vector<double> bounds_;
  std::map<std::string, Point> points_;  // by the attributes' JSON text
};

class OtlpMetrics {
 public:
  explicit OtlpMetrics(std::int64_t start_ns);
  void record(const OtlpSpan& span);
  // The ExportMetricsServiceRequest; nothing when no metric has a point.
  std::optional<Json> request(const Json& resource, std::int64_t now_ns) const;

 private:
  std::int64_t start_ns_;
  OtlpHistogram token_usage_, operation_duration_, tool_duration_, append_duration_;
};

}  // namespace cairn::trace
