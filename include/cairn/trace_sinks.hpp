// Where spans go (trace.hpp): a JSON-lines file, and an OTLP/HTTP exporter
// with the metrics derived from the spans. Each subscribes itself while it
// lives, queues what it receives (bounded: past the bound events are
// dropped and counted, never waited for) and writes or sends on its own
// thread, so that a slow disk or a dead collector never slows a run.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/trace.hpp"

namespace cairn::trace {

// What a sink reports about itself once (spans dropped, a collector that
// refused them): to standard error unless the embedder says otherwise.
using Report = std::function<void(const std::string& message)>;

// One to_json(event) per line, appended to a file.
class JsonLinesSink {
 public:
  struct Options {
    std::size_t max_queue = 65536;  // events waiting to be written
    Report report;                  // default: standard error
  };
  // Opens (creating, else appending to) `path`; an error names it.
  static Result<std::unique_ptr<JsonLinesSink>> open(const std::filesystem::path& path, Options options);
  static Result<std::unique_ptr<JsonLinesSink>> open(const std::filesystem::path& path) { return open(path, Options{}); }
  // Writes what is queued, then closes the file.
  ~JsonLinesSink();
  JsonLinesSink(const JsonLinesSink&) = delete;
  JsonLinesSink& operator=(const JsonLinesSink&) = delete;

  // Waits until everything queued before the call is written (and the file
  // flushed), or `timeout` passed; true when it all was.
  bool flush(std::chrono::milliseconds timeout);
  std::uint64_t dropped() const;

  struct Impl;
  explicit JsonLinesSink(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// OTLP over HTTP, JSON encoding (the protobuf JSON mapping), to
// <endpoint>/v1/traces and <endpoint>/v1/metrics.
struct OtlpOptions {
  std::string traces_url;   // the full URL spans are POSTed to
  std::string metrics_url;  // the same for metrics; empty: no metrics
  // Often credentials: never printed. `headers` go with both signals; the
  // per-signal ones are added to them (and win over a header of the same name).
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::pair<std::string, std::string>> traces_headers;
  std::vector<std::pair<std::string, std::string>> metrics_headers;
  std::string service_name = "cairn";
  std::vector<std::pair<std::string, std::string>> resource_attributes;
  std::size_t max_queue = 2048;   // finished spans waiting to be sent
  std::size_t max_batch = 512;    // spans per request
  std::chrono::milliseconds schedule_delay{1000};    // a partial batch waits at most this long
  std::chrono::milliseconds export_timeout{10000};   // one request, connect to last byte
  std::chrono::milliseconds flush_timeout{5000};     // what the destructor waits, at most
  // What it waits when the collector is down (its last request reached no
  // collector: refused, unreachable, unanswered), at most.
  std::chrono::milliseconds down_flush_timeout{500};
  std::chrono::milliseconds metrics_interval{10000}; // between metric exports
  // Per batch, on 429, 502, 503, 504 or no answer. A refused connection
  // is not tried again for that batch: nothing listens there, and waiting
  // would only hold up the process (the next batch tries again).
  int max_attempts = 5;
  // The wait before the first retry, doubling for each further one (with
  // jitter, at most 30 s); a Retry-After of the collector's wins.
  std::chrono::milliseconds retry_backoff{1000};
  Report report;         // default: standard error

  // From the OpenTelemetry variables: OTEL_EXPORTER_OTLP_ENDPOINT (base:
  // /v1/traces and /v1/metrics are appended), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  // and _METRICS_ENDPOINT (used as they are), OTEL_EXPORTER_OTLP_HEADERS and
  // the per-signal _HEADERS ("k=v,k2=v2", values percent-decoded),
  // OTEL_EXPORTER_OTLP_TIMEOUT (ms), OTEL_SERVICE_NAME,
  // OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER
  // ("none" turns one off), OTEL_EXPORTER_OTLP_PROTOCOL (only
  // "http/json" is spoken; another value is an error naming it).
  // Nothing when no endpoint is set; an error names the variable at fault.
  static Result<std::optional<OtlpOptions>> from_environment();
};

class OtlpExporter {
 public:
  explicit OtlpExporter(OtlpOptions options);
  // Sends what is queued, waiting at most flush_timeout (down_flush_timeout
  // when the collector is down), then stops.
  ~OtlpExporter();
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  // Sends everything finished before the call (spans and metrics), waiting
  // at most `timeout`; true when it was all accepted.
  bool flush(std::chrono::milliseconds timeout);

  struct Stats {
    std::uint64_t exported = 0;  // spans a collector accepted
    std::uint64_t dropped = 0;   // spans lost: queue full, or a batch given up
    std::uint64_t failed_requests = 0;
  };
  Stats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::trace
