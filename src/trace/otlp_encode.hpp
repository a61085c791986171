// Spans into OTLP/HTTP JSON bodies: the protobuf JSON mapping of
// ExportTraceServiceRequest (ids as hex, 64-bit integers as decimal strings,
// enums as numbers), and the pieces the metrics share with it.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "cairn/json.hpp"
#include "cairn/trace_sinks.hpp"
#include "trace/otlp_spans.hpp"

namespace cairn::trace {

// An AnyValue: strings, integers (as strings), doubles, booleans, arrays of
// them; an object becomes its JSON text. Null for a null value (no attribute).
Json otlp_any_value(const Json& value);
// A KeyValue list from a JSON object, its null members left out.
Json otlp_attributes(const Json& object);
void otlp_add_attribute(Json& attributes, std::string_view key, const Json& value);

// service.name, the embedder's attributes, and telemetry.sdk.*.
Json otlp_resource(const OtlpOptions& options);
Json otlp_scope();

// A span's kind: CLIENT for a provider request, INTERNAL otherwise.
int otlp_span_kind(std::string_view name);
Json otlp_span(const OtlpSpan& span);
Json otlp_traces_request(const Json& resource, std::span<const OtlpSpan> spans);

// The request's body; text that is not UTF-8 is replaced, never thrown on.
std::string otlp_body(const Json& request);

}  // namespace cairn::trace
