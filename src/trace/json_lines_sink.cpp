// The JSON-lines sink (trace_sinks.hpp): the listener queues each event;
// a thread of the sink's own writes them, one line each, and flushes the
// file whenever the queue runs dry.
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cairn/trace_sinks.hpp"

namespace cairn::trace {
struct TraceFileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

namespace {

void jsonl_report_to_stderr(const std::string& message) { fmt::print(stderr, "cairn: trace: {}\n", message); }

}  // namespace

struct JsonLinesSink::Impl {
  std::filesystem::path path;
  Options options;
  std::unique_ptr<std::FILE, TraceFileCloser> file;

  std::mutex mu;
  std::condition_variable cv;        // the writer waits for events
  std::condition_variable written;   // flush() waits for the writer
  std::deque<SpanEvent> queue;
  std::uint64_t queued = 0;          // events ever queued
  std::uint64_t done = 0;            // events ever written (or given up) and flushed
  std::uint64_t dropped = 0;
  bool dropped_reported = false;
  bool failed = false;               // a write failed: reported once, the rest dropped
  bool stopping = false;
  Subscription subscription;
  std::jthread writer;

  void report(const std::string& message) { (options.report ? options.report : jsonl_report_to_stderr)(message); }

  void receive(const SpanEvent& event) {
    bool report_drop = false;
    {
      std::lock_guard lock(mu);
      if (queue.size() >= options.max_queue) {
        ++dropped;
        report_drop = !std::exchange(dropped_reported, true);
      } else {
        queue.push_back(event);
        ++queued;
      }
    }
    if (report_drop) report(fmt::format("{}: the writer fell behind; events are being dropped", path.string()));
    cv.notify_one();
  }

  void run() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and everything written
      std::deque<SpanEvent> batch;
      batch.swap(queue);
      lock.unlock();
      const bool ok = write(batch);
      lock.lock();
      if (!ok && !failed) {
        failed = true;
        const int error = errno;
        lock.unlock();
        report(fmt::format("{}: writing failed ({}); no further events are written", path.string(), std::strerror(error)));
        lock.lock();
      }
      if (!ok || failed) dropped += batch.size();
      done += batch.size();
      written.notify_all();
    }
  }

  // Writes and flushes `batch`; false when the file refused it.
  bool write(const std::deque<SpanEvent>& batch) {
    if (failed) return false;
    std::string lines;
    for (const auto& event : batch) {
      lines += to_json(event).dump(-1, ' ', false, Json::error_handler_t::replace);
      lines += '\n';
    }
    return std::fwrite(lines.data(), 1, lines.size(), file.get()) == lines.size() && std::fflush(file.get()) == 0;
  }
};

Result<std::unique_ptr<JsonLinesSink>> JsonLinesSink::open(const std::filesystem::path& path, Options options) {
  std::unique_ptr<std::FILE, TraceFileCloser> file(std::fopen(path.c_str(), "a"));
  if (!file) {
    return std::unexpected(Error(Errc::io_error, fmt::format("cannot open the trace file {}: {}", path.string(), std::strerror(errno))));
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = std::move(options);
  if (impl->options.max_queue == 0) impl->options.max_queue = 1;
  impl->file = std::move(file);
  Impl& state = *impl;
  state.writer = std::jthread([&state] { state.run(); });
  state.subscription = subscribe([&state](const SpanEvent& event) { state.receive(event); });
  return std::make_unique<JsonLinesSink>(std::move(impl));
}

JsonLinesSink::JsonLinesSink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

JsonLinesSink::~JsonLinesSink() {
  impl_->subscription.reset();  // no event arrives after this
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
  impl_->writer.join();  // writes what is queued: a local file does not hang like a collector can
  if (impl_->dropped > 0) {
    impl_->report(fmt::format("{}: {} events were not written", impl_->path.string(), impl_->dropped));
  }
}

bool JsonLinesSink::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->mu);
  const std::uint64_t target = impl_->queued;
  return impl_->written.wait_for(lock, timeout, [&] { return impl_->done >= target; });
}

std::uint64_t JsonLinesSink::dropped() const {
  std::lock_guard lock(impl_->mu);
  return impl_->dropped;
}

}  // namespace cairn::trace
