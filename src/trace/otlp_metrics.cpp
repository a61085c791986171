// Histograms of the finished spans (otlp_metrics.hpp).
#include "trace/otlp_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "trace/otlp_encode.hpp"

namespace cairn::trace {
namespace {

// A histogram keeps one point per attribute set. The sets come from model
// and tool names, so they are few; the bound only guards against a caller
// putting something unbounded there.
constexpr std::size_t kOtlpMaxPoints = 1000;

std::vector<double> otlp_duration_bounds() {
  return {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
}

// The GenAI attributes a provider request's metrics carry, where its span has them.
Json otlp_llm_attributes(const OtlpSpan& span) {
  Json attributes = Json::object();
  for (const char* key : {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model",
                          "gen_ai.response.model"}) {
    auto found = span.attributes.find(key);
    if (found != span.attributes.end() && !found->is_null()) attributes[key] = *found;
  }
  return attributes;
}

void otlp_add_error_type(Json& attributes, const OtlpSpan& span) {
  if (!span.error) return;
  attributes["error.type"] = span.error->name.empty() ? std::string("_OTHER") : span.error->name;
}

std::optional<double> otlp_count(const Json& attributes, const char* key) {
  auto found = attributes.find(key);
  if (found == attributes.end() || !found->is_number()) return std::nullopt;
  const double value = found->get<double>();
  if (!(value >= 0)) return std::nullopt;
  return value;
}

}  // namespace

void OtlpHistogram::record(const Json& attributes, double value) {
  if (!std::isfinite(value)) return;
  const std::string key = otlp_body(attributes);
  auto found = points_.find(key);
  if (found == points_.end()) {
    if (points_.size() >= kOtlpMaxPoints) return;
    Point point;
    point.attributes = attributes;
    point.min = point.max = value;
    point.buckets.assign(bounds_.size() + 1, 0);
    found = points_.emplace(key, std::move(point)).first;
  }
  Point& point = found->second;
  ++point.count;
  point.sum += value;
  point.min = std::min(point.min, value);
  point.max = std::max(point.max, value);
  // Bucket i holds (bounds[i-1], bounds[i]]: the first bound not below the value.
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++point.buckets[static_cast<std::size_t>(bucket)];
}

Json OtlpHistogram::encode(std::int64_t start_ns, std::int64_t now_ns) const {
  Json points = Json::array();
  for (const auto& [key, point] : points_) {
    Json buckets = Json::array();
    for (std::uint64_t count : point.buckets) buckets.push_back(std::to_string(count));
    points.push_back({{"attributes", otlp_attributes(point.attributes)},
                      {"startTimeUnixNano", std::to_string(start_ns)},
                      {"timeUnixNano", std::to_string(now_ns)},
                      {"count", std::to_string(point.count)},
                      {"sum", point.sum},
                      {"bucketCounts", std::move(buckets)},
                      {"explicitBounds", bounds_},
                      {"min", point.min},
                      {"max", point.max}});
  }
  constexpr int kCumulative = 2;
  return {{"name", name_},
          {"unit", unit_},
          {"histogram", {{"dataPoints", std::move(points)}, {"aggregationTemporality", kCumulative}}}};
}

OtlpMetrics::OtlpMetrics(std::int64_t start_ns)
    : start_ns_(start_ns),
      token_usage_("gen_ai.client.token.usage", "{token}",
                   {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}),
      operation_duration_("gen_ai.client.operation.duration", "s", otlp_duration_bounds()),
      tool_duration_("cairn.tool.duration", "s", otlp_duration_bounds()),
      append_duration_("cairn.session.append.duration", "s",
                       {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}) {}

void OtlpMetrics::record(const OtlpSpan& span) {
  if (span.name == "cairn.llm.request") {
    Json attributes = otlp_llm_attributes(span);
    for (const auto& [type, key] : {std::pair{"input", "gen_ai.usage.input_tokens"},
                                    std::pair{"output", "gen_ai.usage.output_tokens"}}) {
      if (auto tokens = otlp_count(span.attributes, key)) {
        Json with_type = attributes;
        with_type["gen_ai.token.type"] = type;
        token_usage_.record(with_type, *tokens);
      }
    }
    otlp_add_error_type(attributes, span);
    operation_duration_.record(attributes, span.duration_s);
  } else if (span.name == "cairn.harness.tool") {
    Json attributes = Json::object();
    auto tool = span.attributes.find("gen_ai.tool.name");
    if (tool != span.attributes.end() && !tool->is_null()) attributes["gen_ai.tool.name"] = *tool;
    otlp_add_error_type(attributes, span);
    tool_duration_.record(attributes, span.duration_s);
  } else if (span.name == "cairn.session.append") {
    append_duration_.record(Json::object(), span.duration_s);
  }
}

std::optional<Json> OtlpMetrics::request(const Json& resource, std::int64_t now_ns) const {
  Json metrics = Json::array();
  for (const OtlpHistogram* histogram : {&token_usage_, &operation_duration_, &tool_duration_, &append_duration_}) {
    if (!histogram->empty()) metrics.push_back(histogram->encode(start_ns_, now_ns));
  }
  if (metrics.empty()) return std::nullopt;
  Json scope_metrics = Json::array({Json{{"scope", otlp_scope()}, {"metrics", std::move(metrics)}}});
  Json resource_metrics = {{"resource", resource}, {"scopeMetrics", std::move(scope_metrics)}};
  return Json{{"resourceMetrics", Json::array({std::move(resource_metrics)})}};
}

}  // namespace cairn::trace
