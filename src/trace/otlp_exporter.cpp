// The OTLP/HTTP exporter (trace_sinks.hpp). The listener only queues: the
// harness's threads must never wait on a collector. Everything else —
// pairing starts with ends, batching, HTTP with retries, the metrics —
// happens on the exporter's own thread. The destructor gives that thread
// flush_timeout to send what is left (down_flush_timeout when the last
// request reached no collector), then stops it, cutting any request under
// way: a collector that hangs, or is not there, never holds up the
// process's exit for long.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/llm/http.hpp"
#include "cairn/trace_sinks.hpp"
#include "trace/otlp_encode.hpp"
#include "trace/otlp_metrics.hpp"
#include "trace/otlp_spans.hpp"

namespace cairn::trace {
namespace {

using OtlpClock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kOtlpMaxBackoff{30000};
// An open span is forgotten past this many times max_queue open spans.
constexpr std::size_t kOtlpPendingPerQueued = 4;

std::int64_t otlp_unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The URL as a message may show it: no user part, query or fragment, which
// may hold credentials.
std::string otlp_shown_url(std::string_view url) {
  url = url.substr(0, url.find_first_of("?#"));
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const std::size_t host = scheme + 3;
  const std::string_view authority = url.substr(host, url.find('/', host) - host);
  const std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, host)) + std::string(url.substr(host + at + 1));
}

bool otlp_same_name(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) ==
                                                              std::tolower(static_cast<unsigned char>(y)); });
}

// Content-Type, then the common headers, then the signal's over them.
HttpHeaders otlp_request_headers(const std::vector<std::pair<std::string, std::string>>& common,
                                 const std::vector<std::pair<std::string, std::string>>& signal) {
  HttpHeaders headers{{"Content-Type", "application/json"}};
  auto set = [&headers](const std::pair<std::string, std::string>& header) {
    auto same = std::ranges::find_if(headers, [&](const auto& h) { return otlp_same_name(h.first, header.first); });
    if (same != headers.end()) {
      same->second = header.second;
    } else {
      headers.push_back(header);
    }
  };
  for (const auto& header : common) set(header);
  for (const auto& header : signal) set(header);
  return headers;
}

// Retry-After in seconds (a date is not honoured: the backoff applies).
std::optional<std::chrono::milliseconds> otlp_retry_after(const HttpHeaders& headers) {
  auto value = find_header(headers, "retry-after");
  if (!value || value->empty() || value->size() > 6) return std::nullopt;
  long seconds = 0;
  for (char c : *value) {
    if (c < '0' || c > '9') return std::nullopt;
    seconds = seconds * 10 + (c - '0');
  }
  return std::chrono::seconds(seconds);
}

bool otlp_retryable_status(int status) { return status == 429 || status == 502 || status == 503 || status == 504; }

void otlp_report_to_stderr(const std::string& message) { fmt::print(stderr, "cairn: trace export: {}\n", message); }

OtlpOptions otlp_sanitized(OtlpOptions options) {
  options.max_queue = std::max<std::size_t>(options.max_queue, 1);
  options.max_batch = std::max<std::size_t>(options.max_batch, 1);
  options.max_attempts = std::max(options.max_attempts, 1);
  options.export_timeout = std::max(options.export_timeout, std::chrono::milliseconds(1));
  options.metrics_interval = std::max(options.metrics_interval, std::chrono::milliseconds(1));
  if (!options.report) options.report = otlp_report_to_stderr;
  return options;
}

// How much of a collector's answer is read: a partial success is short.
constexpr std::size_t kOtlpMaxAnswer = 64 * 1024;

struct OtlpSendOutcome {
  bool accepted = false;
  bool cancelled = false;  // the exporter is stopping: not worth a report
  std::string failure;     // "HTTP 400", "connect_failed (…)"
  std::string answer;      // the body of an accepting answer (its start)
};

// What an accepting answer's partialSuccess says was refused all the same:
// `field` is "rejectedSpans" or "rejectedDataPoints", an int64 (so, in the
// JSON mapping, usually a string).
std::uint64_t otlp_rejected(const std::string& answer, const char* field) {
  const Json parsed = Json::parse(answer, nullptr, false);
  if (!parsed.is_object()) return 0;
  auto partial = parsed.find("partialSuccess");
  if (partial == parsed.end() || !partial->is_object()) return 0;
  auto rejected = partial->find(field);
  if (rejected == partial->end()) return 0;
  if (rejected->is_number_unsigned() || (rejected->is_number_integer() && rejected->get<std::int64_t>() > 0)) {
    return rejected->get<std::uint64_t>();
  }
  if (rejected->is_string()) {
    std::uint64_t count = 0;
    for (char c : rejected->get<std::string>()) {
      if (c < '0' || c > '9' || count > UINT64_MAX / 10) return 0;
      count = count * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return count;
  }
  return 0;
}

}  // namespace

struct OtlpExporter::Impl {
  explicit Impl(OtlpOptions given)
      : options(otlp_sanitized(std::move(given))),
        resource(otlp_resource(options)),
        traces_headers(otlp_request_headers(options.headers, options.traces_headers)),
        metrics_headers(otlp_request_headers(options.headers, options.metrics_headers)),
        traces_shown(otlp_shown_url(options.traces_url)),
        metrics_shown(otlp_shown_url(options.metrics_url)),
        assembler(options.max_queue * kOtlpPendingPerQueued),
        jitter(std::random_device{}()) {
    if (!options.metrics_url.empty()) metrics.emplace(otlp_unix_now_ns());
  }

  void listen(const SpanEvent& event);
  void run(std::stop_token stop);
  void work(std::stop_token stop);
  bool flush_until(OtlpClock::time_point deadline);
  bool export_spans(std::span<const OtlpSpan> spans, std::stop_token stop);
  bool export_metrics(std::stop_token stop);
  OtlpSendOutcome send(const std::string& url, const HttpHeaders& headers, std::string body, std::stop_token stop);
  void report_once(const std::string& message);
  void count_dropped(std::uint64_t spans);

  const OtlpOptions options;
  const Json resource;
  const HttpHeaders traces_headers, metrics_headers;
  const std::string traces_shown, metrics_shown;
  HttpClient http;

  // Whether the last request reached no collector (refused, unreachable,
  // no answer): then the destructor waits down_flush_timeout at most.
  std::atomic<bool> collector_down{false};

  // The worker's alone.
  OtlpSpanAssembler assembler;
  std::optional<OtlpMetrics> metrics;
  std::vector<OtlpSpan> ready;  // finished, not yet sent
  std::mt19937_64 jitter;

  // Shared between the listener, the worker and flush(): under mu.
  mutable std::mutex mu;
  std::condition_variable_any worker_wake;
  std::condition_variable flushed;
  std::deque<SpanEvent> queue;
  std::size_t ends_queued = 0;  // ends and errors in `queue`
  std::uint64_t flush_requested = 0, flush_done = 0;
  bool flush_ok = true;          // the outcome of flush number flush_done
  bool queue_overflowed = false; // the worker has a drop to report
  bool reported = false;         // the one report was made
  Stats stats;

  std::jthread worker;
  Subscription subscription;
};

void OtlpExporter::Impl::listen(const SpanEvent& event) {
  if (event.type == SpanEventType::event) return;
  const bool ends = event.type != SpanEventType::start;
  SpanEvent copy = event;  // built outside the lock, so the lock is held for a push only
  bool wake = false;
  {
    std::lock_guard lock(mu);
    if (queue.size() >= options.max_queue) {
      // A lost start is counted when its end finds no start; a lost end here.
      if (ends) ++stats.dropped;
      queue_overflowed = true;
      return;
    }
    queue.push_back(std::move(copy));
    if (ends && ++ends_queued == options.max_batch) wake = true;
  }
  if (wake) worker_wake.notify_one();
}

void OtlpExporter::Impl::count_dropped(std::uint64_t spans) {
  if (spans == 0) return;
  std::lock_guard lock(mu);
  stats.dropped += spans;
}

void OtlpExporter::Impl::report_once(const std::string& message) {
  {
    std::lock_guard lock(mu);
    if (std::exchange(reported, true)) return;
  }
  options.report(message);
}

void OtlpExporter::Impl::run(std::stop_token stop) {
  try {
    work(stop);
  } catch (const std::exception& e) {
    // Nothing is exported any more; flushes time out, events pile up to the bound and are dropped.
    report_once(fmt::format("the exporter stopped: {}", e.what()));
  }
}

void OtlpExporter::Impl::work(std::stop_token stop) {
  auto next_metrics = OtlpClock::now() + options.metrics_interval;
  // When the oldest ready span must go; max() while none is ready.
  constexpr auto kNoBatch = OtlpClock::time_point::max();
  OtlpClock::time_point batch_due = kNoBatch;
  for (;;) {
    std::deque<SpanEvent> events;
    std::uint64_t flush_number = 0;
    bool overflowed = false;
    {
      std::unique_lock lock(mu);
      auto wake_at = OtlpClock::now() + std::chrono::hours(1);
      wake_at = std::min(wake_at, batch_due);
      if (metrics) wake_at = std::min(wake_at, next_metrics);
      worker_wake.wait_until(lock, stop, wake_at, [&] {
        return ends_queued + ready.size() >= options.max_batch || flush_requested > flush_done;
      });
      events.swap(queue);
      ends_queued = 0;
      if (flush_requested > flush_done) flush_number = flush_requested;
      overflowed = std::exchange(queue_overflowed, false);
    }
    if (stop.stop_requested()) {
      // Stopping: the flush had its time. What is left is lost.
      std::uint64_t lost = ready.size();
      for (const SpanEvent& event : events) lost += event.type != SpanEventType::start ? 1 : 0;
      count_dropped(lost);
      ready.clear();
      return;
    }
    if (overflowed) {
      report_once(fmt::format("dropping spans: more than {} events are waiting to be sent to {}", options.max_queue,
                              traces_shown));
    }

    std::uint64_t unmatched = 0;
    for (SpanEvent& event : events) {
      auto outcome = assembler.add(std::move(event));
      unmatched += outcome.dropped ? 1 : 0;
      if (outcome.finished) {
        if (metrics) metrics->record(*outcome.finished);
        ready.push_back(std::move(*outcome.finished));
      }
    }
    count_dropped(unmatched);
    events.clear();

    const auto now = OtlpClock::now();
    if (!ready.empty() && batch_due == kNoBatch) batch_due = now + options.schedule_delay;
    const bool send_all = flush_number != 0 || now >= batch_due;
    bool ok = true;
    std::size_t sent = 0;
    while (ready.size() - sent >= options.max_batch || (send_all && sent < ready.size())) {
      const std::size_t count = std::min(options.max_batch, ready.size() - sent);
      ok = export_spans(std::span<const OtlpSpan>(ready).subspan(sent, count), stop) && ok;
      sent += count;
    }
    ready.erase(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(sent));
    if (ready.empty()) batch_due = kNoBatch;

    if (metrics && (flush_number != 0 || OtlpClock::now() >= next_metrics)) {
      ok = export_metrics(stop) && ok;
      next_metrics = OtlpClock::now() + options.metrics_interval;
    }
    if (flush_number != 0) {
      std::lock_guard lock(mu);
      flush_done = flush_number;
      flush_ok = ok;
      flushed.notify_all();
    }
  }
}

bool OtlpExporter::Impl::export_spans(std::span<const OtlpSpan> spans, std::stop_token stop) {
  OtlpSendOutcome outcome =
      send(options.traces_url, traces_headers, otlp_body(otlp_traces_request(resource, spans)), stop);
  const std::uint64_t rejected =
      outcome.accepted ? std::min<std::uint64_t>(otlp_rejected(outcome.answer, "rejectedSpans"), spans.size())
                       : spans.size();
  {
    std::lock_guard lock(mu);
    stats.exported += spans.size() - rejected;
    stats.dropped += rejected;
  }
  if (!outcome.accepted && !outcome.cancelled) {
    report_once(fmt::format("gave up sending {} spans to {}: {}", spans.size(), traces_shown, outcome.failure));
  } else if (outcome.accepted && rejected != 0) {
    // Not the collector's errorMessage: it may quote what the spans hold.
    report_once(fmt::format("{} refused {} of {} spans (a partial success)", traces_shown, rejected, spans.size()));
  }
  return rejected == 0;
}

bool OtlpExporter::Impl::export_metrics(std::stop_token stop) {
  std::optional<Json> request = metrics->request(resource, otlp_unix_now_ns());
  if (!request) return true;
  OtlpSendOutcome outcome = send(options.metrics_url, metrics_headers, otlp_body(*request), stop);
  if (!outcome.accepted && !outcome.cancelled) {
    report_once(fmt::format("gave up sending metrics to {}: {}", metrics_shown, outcome.failure));
  }
  const std::uint64_t rejected = outcome.accepted ? otlp_rejected(outcome.answer, "rejectedDataPoints") : 0;
  if (rejected != 0) report_once(fmt::format("{} refused {} metric data points", metrics_shown, rejected));
  return outcome.accepted && rejected == 0;
}

OtlpSendOutcome OtlpExporter::Impl::send(const std::string& url, const HttpHeaders& headers, std::string body,
                                         std::stop_token stop) {
  HttpRequest request;
  request.method = "POST";
  request.url = url;
  request.headers = headers;
  request.body = std::move(body);
  request.connect_timeout = options.export_timeout;
  request.idle_timeout = options.export_timeout;

  std::chrono::milliseconds backoff = std::max(options.retry_backoff, std::chrono::milliseconds(0));
  for (int attempt = 1;; ++attempt) {
    // One request may take export_timeout from connect to last byte; the
    // exporter's stop cuts it at once.
    std::stop_source cut;
    std::stop_callback cut_on_stop(stop, [&cut] { cut.request_stop(); });
    const auto request_deadline = OtlpClock::now() + options.export_timeout;
    auto check_deadline = [&] {
      if (OtlpClock::now() >= request_deadline) cut.request_stop();
    };
    std::string answer;
    HttpResult result = http.stream(
        request, [&](int, const HttpHeaders&) { check_deadline(); },
        [&](std::string_view chunk) {
          check_deadline();
          answer.append(chunk.substr(0, kOtlpMaxAnswer - std::min(answer.size(), kOtlpMaxAnswer)));
        },
        cut.get_token());
    if (stop.stop_requested()) return {.accepted = false, .cancelled = true, .failure = "stopped"};
    collector_down.store(result.status == 0);
    if (result.status >= 200 && result.status < 300) return {.accepted = true, .answer = std::move(answer)};

    {
      std::lock_guard lock(mu);
      ++stats.failed_requests;
    }
    std::string failure;
    if (result.status != 0) {
      failure = fmt::format("HTTP {}", result.status);
    } else if (result.failure == HttpFailure::cancelled) {
      failure = fmt::format("no answer within {} ms", options.export_timeout.count());
    } else {
      failure = fmt::format("{} ({})", to_string(result.failure), result.message);
    }
    // A refused connection is not retried: nothing listens there (the
    // common case of a variable set in a shell with no collector running).
    const bool refused = result.status == 0 && result.failure == HttpFailure::connect_failed;
    const bool retryable = !refused && (result.status == 0 || otlp_retryable_status(result.status));
    if (!retryable || attempt >= options.max_attempts) {
      return {.accepted = false, .cancelled = false, .failure = std::move(failure)};
    }

    // Half to all of the backoff, so that exporters that failed together
    // do not come back together.
    auto wait = std::chrono::milliseconds(std::uniform_int_distribution<std::int64_t>(
        backoff.count() / 2, std::max<std::int64_t>(backoff.count(), backoff.count() / 2))(jitter));
    if (auto after = otlp_retry_after(result.headers)) wait = std::min(*after, kOtlpMaxBackoff);
    backoff = std::min(backoff * 2, kOtlpMaxBackoff);
    std::unique_lock lock(mu);
    worker_wake.wait_for(lock, stop, wait, [] { return false; });
    if (stop.stop_requested()) return {.accepted = false, .cancelled = true, .failure = "stopped"};
  }
}

bool OtlpExporter::Impl::flush_until(OtlpClock::time_point deadline) {
  std::unique_lock lock(mu);
  const std::uint64_t number = ++flush_requested;
  worker_wake.notify_all();
  if (!flushed.wait_until(lock, deadline, [&] { return flush_done >= number; })) return false;
  return flush_ok;
}

OtlpExporter::OtlpExporter(OtlpOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl* impl = impl_.get();
  impl->worker = std::jthread([impl](std::stop_token stop) { impl->run(std::move(stop)); });
  impl->subscription = subscribe([impl](const SpanEvent& event) { impl->listen(event); });
}

OtlpExporter::~OtlpExporter() {
  Impl& impl = *impl_;
  // No event arrives after this; a listener call under way has returned.
  impl.subscription.reset();
  const auto budget = impl.collector_down.load() ? std::min(impl.options.flush_timeout, impl.options.down_flush_timeout)
                                                 : impl.options.flush_timeout;
  (void)impl.flush_until(OtlpClock::now() + budget);  // what was not sent is counted as dropped
  impl.worker.request_stop();
  impl.worker.join();
  const Stats totals = stats();
  if (totals.dropped != 0) {
    impl.options.report(fmt::format("{} spans were dropped in all (sent {}, to {})", totals.dropped, totals.exported,
                                    impl.traces_shown));
  }
}

bool OtlpExporter::flush(std::chrono::milliseconds timeout) { return impl_->flush_until(OtlpClock::now() + timeout); }

OtlpExporter::Stats OtlpExporter::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

}  // namespace cairn::trace
