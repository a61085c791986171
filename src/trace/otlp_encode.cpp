// Spans into OTLP JSON (otlp_encode.hpp).
#include "trace/otlp_encode.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "cairn/version.hpp"

namespace cairn::trace {

Json otlp_any_value(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
    case Json::value_t::discarded: return nullptr;
    case Json::value_t::string: return {{"stringValue", value.get<std::string>()}};
    case Json::value_t::boolean: return {{"boolValue", value.get<bool>()}};
    case Json::value_t::number_integer: return {{"intValue", std::to_string(value.get<std::int64_t>())}};
    case Json::value_t::number_unsigned: {
      const std::uint64_t number = value.get<std::uint64_t>();
      if (number > static_cast<std::uint64_t>(INT64_MAX)) return {{"doubleValue", static_cast<double>(number)}};
      return {{"intValue", std::to_string(number)}};
    }
    case Json::value_t::number_float: {
      const double number = value.get<double>();
      // JSON has no spelling for NaN or infinity; the text keeps what it was.
      if (!std::isfinite(number)) return {{"stringValue", fmt::format("{}", number)}};
      return {{"doubleValue", number}};
    }
    case Json::value_t::array: {
      Json values = Json::array();
      for (const Json& item : value) {
        Json converted = item.is_array() ? Json{{"stringValue", otlp_body(item)}} : otlp_any_value(item);
        values.push_back(converted.is_null() ? Json::object() : std::move(converted));
      }
      return {{"arrayValue", {{"values", std::move(values)}}}};
    }
    case Json::value_t::object:
    case Json::value_t::binary: return {{"stringValue", otlp_body(value)}};
  }
  return nullptr;
}

void otlp_add_attribute(Json& attributes, std::string_view key, const Json& value) {
  Json converted = otlp_any_value(value);
  if (converted.is_null()) return;
  attributes.push_back({{"key", key}, {"value", std::move(converted)}});
}

Json otlp_attributes(const Json& object) {
  Json attributes = Json::array();
  if (!object.is_object()) return attributes;
  for (const auto& [key, value] : object.items()) otlp_add_attribute(attributes, key, value);
  return attributes;
}

Json otlp_resource(const OtlpOptions& options) {
  Json attributes = Json::array();
  otlp_add_attribute(attributes, "service.name", options.service_name);
  for (const auto& [key, value] : options.resource_attributes) {
    if (key != "service.name") otlp_add_attribute(attributes, key, value);
  }
  otlp_add_attribute(attributes, "telemetry.sdk.name", "cairn");
  otlp_add_attribute(attributes, "telemetry.sdk.language", "cpp");
  otlp_add_attribute(attributes, "telemetry.sdk.version", CAIRN_VERSION_STRING);
  return {{"attributes", std::move(attributes)}};
}

Json otlp_scope() { return {{"name", "cairn"}, {"version", CAIRN_VERSION_STRING}}; }

int otlp_span_kind(std::string_view name) {
  constexpr int kInternal = 1, kClient = 3;
  return name == "cairn.llm.request" ? kClient : kInternal;
}

Json otlp_span(const OtlpSpan& span) {
  Json out = {{"traceId", span.trace_id}, {"spanId", span.span_id}};
  if (!span.parent_span_id.empty()) out["parentSpanId"] = span.parent_span_id;
  out["name"] = span.name;
  out["kind"] = otlp_span_kind(span.name);
  out["startTimeUnixNano"] = std::to_string(span.start_ns);
  out["endTimeUnixNano"] = std::to_string(span.end_ns);
  Json attributes = otlp_attributes(span.attributes);
  if (span.context) {
    if (span.context->is_object()) {
      for (const auto& [key, value] : span.context->items()) {
        const bool scalar = value.is_string() || value.is_number() || value.is_boolean();
        otlp_add_attribute(attributes, "cairn.context." + key, scalar ? value : Json(otlp_body(value)));
      }
    } else if (!span.context->is_null()) {
      otlp_add_attribute(attributes, "cairn.context", otlp_body(*span.context));
    }
  }
  out["attributes"] = std::move(attributes);
  constexpr int kStatusUnset = 0, kStatusError = 2;
  if (span.error) {
    out["status"] = {{"code", kStatusError}, {"message", span.error->message}};
  } else {
    out["status"] = {{"code", kStatusUnset}};
  }
  return out;
}

Json otlp_traces_request(const Json& resource, std::span<const OtlpSpan> spans) {
  Json encoded = Json::array();
  for (const OtlpSpan& span : spans) encoded.push_back(otlp_span(span));
  Json scope_spans = Json::array({Json{{"scope", otlp_scope()}, {"spans", std::move(encoded)}}});
  return {{"resourceSpans", Json::array({Json{{"resource", resource}, {"scopeSpans", std::move(scope_spans)}}})}};
}

std::string otlp_body(const Json& request) { return request.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace cairn::trace
