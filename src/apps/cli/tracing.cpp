#include "tracing.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

bool truthy(const char* value) {
  if (value == nullptr) return false;
  const std::string_view text(value);
  return text == "1" || text == "true" || text == "yes" || text == "on";
}

const Tracing* active_tracing = nullptr;  // set and cleared on the main thread only

// A sink's reports quote a collector's answers and file names: untrusted
// text, said as the sinks' own default says it.
trace::Report report_as(std::string prefix) {
  return [prefix = std::move(prefix)](const std::string& message) { print_untrusted(stderr, "{}{}\n", prefix, message); };
}

}  // namespace

void Tracing::flush() const {
  if (file) (void)file->flush(std::chrono::seconds(5));
  if (otlp) (void)otlp->flush(trace::OtlpOptions{}.flush_timeout);
}

ActiveTracing::ActiveTracing(const Tracing& tracing) { active_tracing = &tracing; }
ActiveTracing::~ActiveTracing() { active_tracing = nullptr; }

void flush_active_tracing() {
  if (active_tracing) active_tracing->flush();
}

Outcome<Tracing> start_tracing(std::vector<std::string>& args) {
  std::string file;
  if (const char* env = std::getenv("CAIRN_TRACE"); env != nullptr) file = env;
  bool content = truthy(std::getenv("CAIRN_TRACE_CONTENT"));
  for (std::size_t i = 0; i < args.size();) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (arg == "--trace-content") {
      content = true;
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (arg == "--trace") {
      // An option after it is not its file (--trace=-odd names one that is).
      if (i + 1 >= args.size() || args[i + 1].empty() || args[i + 1].starts_with("-")) {
        return std::unexpected(report(kUsage, "--trace needs a FILE"));
      }
      file = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    } else if (arg.starts_with("--trace=")) {
      file = arg.substr(8);
      if (file.empty()) return std::unexpected(report(kUsage, "--trace needs a FILE"));
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  Tracing tracing;
  trace::set_capture_content(content);
  if (!file.empty()) {
    auto sink = trace::JsonLinesSink::open(file, {.report = report_as("cairn: trace: ")});
    if (!sink) return std::unexpected(report(kFailure, sink.error().message));
    tracing.file = std::move(*sink);
  }
  auto otlp = trace::OtlpOptions::from_environment();
  if (!otlp) return std::unexpected(report(kUsage, otlp.error().message));
  if (*otlp) {
    (*otlp)->report = report_as("cairn: trace export: ");
    tracing.otlp = std::make_unique<trace::OtlpExporter>(std::move(**otlp));
  }
  return tracing;
}

}  // namespace cairn::cli
