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

  // Writes and sends what is queued: the file's within a few seconds, the
  // exporter's within its flush timeout.
  void flush() const;
};

// The process's sinks, for a command that leaves with _exit (serve, whose
// detached runs are left to their log) and so skips their destructors.
class ActiveTracing {
 public:
  explicit ActiveTracing(const Tracing& tracing);
  ~ActiveTracing();
  ActiveTracing(const ActiveTracing&) = delete;
  ActiveTracing& operator=(const ActiveTracing&) = delete;
};
// Flushes the active sinks, if any.
void flush_active_tracing();

// Takes --trace FILE, --trace=FILE and --trace-content out of `args` (they
// are every command's, wherever they stand before a "--") and starts the
// sinks they and the environment ask for. --trace-content (or
// CAIRN_TRACE_CONTENT=1) puts message text, tool arguments and results in
// the spans.
Outcome<Tracing> start_tracing(std::vector<std::string>& args);

}  // namespace cairn::cli
