// The command's trace sinks: a JSON-lines file (--trace FILE, or
// CAIRN_TRACE=FILE) and an OTLP/HTTP exporter (the OTEL_EXPORTER_OTLP_*
// variables), alive for the whole process and flushed at its end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cairn/trace_sinks.hpp"
#include "cli.hpp"

namespace cairn::cli {

struct Tracing {
  std::unique_ptr<trace::JsonLinesSink> file;
  std::unique_ptr<trace::OtlpExporter> otlp;
};

// Takes --trace FILE, --trace=FILE and --trace-content out of `args` (they
// are every command's, wherever they stand before a "--") and starts the
// sinks they and the environment ask for. --trace-content (or
// CAIRN_TRACE_CONTENT=1) puts message text, tool arguments and results in
// the spans.
Outcome<Tracing> start_tracing(std::vector<std::string>& args);

}  // namespace cairn::cli
