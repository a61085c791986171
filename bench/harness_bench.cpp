// Harness benchmarks. Prints the harness's own cost per step (memory session,
// sync none, the faux provider and a tool that does nothing, so what is left
// is the harness: records, context building, events, tool dispatch), what
// tracing adds to it (nobody listening, a JSON-lines sink, an OTLP exporter
// to a local receiver), and the latency of abort() to run_end while a tool
// runs on one ref and a stream is stalled on another.
//
//   cairn_bench_harness [--quick]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "cairn/harness/harness.hpp"
#include "cairn/llm/faux.hpp"
#include "cairn/store/store.hpp"
#include "cairn/trace_sinks.hpp"
#include "support/http_test_server.hpp"

using namespace cairn;
using Clock = std::chrono::steady_clock;

namespace {

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }
double millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Summary {
  double median = 0, p90 = 0, max = 0;
};

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.median = values[values.size() / 2];
  s.p90 = values[std::min(values.size() - 1, values.size() * 9 / 10)];
  s.max = values.back();
  return s;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

// The context holds the whole session, earlier prompts included: the current
// run's steps are the assistant messages after the last user message.
std::size_t steps_taken(const LlmContext& context) {
  std::size_t n = 0;
  for (auto it = context.messages.rbegin(); it != context.messages.rend(); ++it) {
    if (std::holds_alternative<UserMessage>(*it)) break;
    n += std::holds_alternative<AssistantMessage>(*it) ? 1 : 0;
  }
  return n;
}

std::string prompt_text(const LlmContext& context) {
  for (auto it = context.messages.rbegin(); it != context.messages.rend(); ++it) {
    const auto* user = std::get_if<UserMessage>(&*it);
    if (!user) continue;
    if (const auto* text = std::get_if<std::string>(&user->content)) return *text;
    for (const auto& block : std::get<std::vector<UserBlock>>(user->content)) {
      if (const auto* text = std::get_if<TextContent>(&block)) return text->text;
    }
    return {};
  }
  return {};
}

// A fresh memory session with its own harness and faux provider.
struct Rig {
  std::shared_ptr<FauxProvider> faux;
  std::optional<AgentHarness> harness;

  Rig(Store& store, FauxProvider::Script script, std::vector<Tool> tools)
      : faux(std::make_shared<FauxProvider>(std::move(script))) {
    faux->record_requests(false);  // a copy of the context per request is the provider's cost, not the harness's
    auto session = store.create(CreateOptions{.cwd = "/tmp"});
    if (!session) die("create session: " + session.error().message);
    HarnessOptions options;
    options.session = *session;
    options.models.add(FauxProvider::model(), faux);
    options.model = FauxProvider::model();
    options.tools = std::move(tools);
    auto created = AgentHarness::create(std::move(options));
    if (!created) die("AgentHarness::create: " + created.error().message);
    harness.emplace(std::move(created->harness));
  }
};

Tool noop_tool() {
  return Tool{.name = "noop", .description = "Does nothing", .parameters = {{"type", "object"}}, .replay = Replay::safe,
              .execute = [](const Json&, const ToolContext&) { return ToolResult::text("ok"); }};
}

struct StepSample {
  double per_step_us = 0;
  int prompt_in_session = 0;  // 1-based
  std::size_t context_messages = 0;  // in the prompt's last request
};

// Prompts of `steps` model responses: steps - 1 answered with one noop call,
// the last with text. A new session every `per_session` prompts bounds the
// context, which the harness rebuilds from the log for every request.
// `watched`: a listener that ignores every event is subscribed, so the
// harness builds the events it otherwise skips.
std::vector<StepSample> step_times(Store& store, int steps, int prompts, int per_session, bool watched = false) {
  auto context_messages = std::make_shared<std::size_t>(0);
  auto script = [steps, context_messages](const LlmContext& context) {
    *context_messages = context.messages.size();  // prompt() runs the script on the calling thread
    const std::size_t taken = steps_taken(context);
    if (taken + 1 < static_cast<std::size_t>(steps)) {
      return FauxResponse::tool_call(fmt::format("call_{}", taken), "noop", Json::object());
    }
    return FauxResponse::text("done");
  };
  std::vector<StepSample> samples;
  std::optional<Rig> rig;
  Subscription listener;
  for (int p = 0; p < prompts; ++p) {
    if (p % per_session == 0) {
      listener = {};
      rig.reset();
      rig.emplace(store, script, std::vector<Tool>{noop_tool()});
      if (watched) listener = rig->harness->on_event([](const Event&) {});
    }
    const auto start = Clock::now();
    RunResult result = rig->harness->main().prompt(fmt::format("prompt {}", p));
    const auto elapsed = Clock::now() - start;
    if (!result.ok()) die("prompt failed: " + (result.error ? result.error->message : std::string("?")));
    samples.push_back({micros(elapsed) / steps, p % per_session + 1, *context_messages});
  }
  return samples;
}

// One table row: the samples of the prompts at `position` in their session
// (0: every prompt).
void print_step_row(const std::string& label, const std::vector<StepSample>& samples, int position) {
  std::vector<double> times;
  std::size_t context = 0;
  for (const StepSample& sample : samples) {
    if (position != 0 && sample.prompt_in_session != position) continue;
    times.push_back(sample.per_step_us);
    context = std::max(context, sample.context_messages);
  }
  const Summary s = summarize(times);
  std::printf("%-38s %8zu %10zu %12.1f %12.1f\n", label.c_str(), times.size(), context, s.median, s.p90);
}

// Run state as the listener sees it; the listener runs on harness threads.
struct AbortProbe {
  std::mutex mu;
  std::condition_variable cv;
  bool tool_running = false;
  bool streaming = false;
  std::map<std::string, Clock::time_point> ended;

  void on_event(const Event& event) {
    const auto now = Clock::now();
    {
      std::lock_guard lock(mu);
      if (event.type == EventType::tool_start && event.ref == "main") tool_running = true;
      if (event.type == EventType::message_update && event.ref == "r2") streaming = true;
      if (event.type == EventType::run_end) ended[event.ref] = now;
    }
    cv.notify_all();
  }
  template <typename Pred>
  void wait(Pred pred) {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), pred)) die("abort bench: timed out waiting for the harness");
  }
};

struct AbortTimes {
  std::vector<double> tool_ms, stream_ms;
};

// Each round: main runs the "wait" tool while r2's stream stalls; both are
// aborted one after the other (alternating which goes first, so neither
// figure always has the other run alive beside it).
AbortTimes abort_times(Store& store, int rounds) {
  auto script = [](const LlmContext& context) {
    if (steps_taken(context) > 0) return FauxResponse::text("done");
    if (prompt_text(context) == "stall") {
      FauxResponse response = FauxResponse::text("streaming, then silence");
      response.stall = true;
      return response;
    }
    return FauxResponse::tool_call("call_wait", "wait", Json::object());
  };
  Tool wait_tool{.name = "wait", .description = "Waits to be cancelled", .parameters = {{"type", "object"}},
                 .replay = Replay::never,
                 .execute = [](const Json&, const ToolContext& context) {
                   std::mutex mu;
                   std::condition_variable_any cv;
                   std::unique_lock lock(mu);
                   cv.wait_for(lock, context.cancel, std::chrono::seconds(60), [] { return false; });
                   return ToolResult::text("stopped", true);
                 }};
  Rig rig(store, script, {wait_tool});
  AgentHarness& harness = *rig.harness;
  auto r2 = harness.create_ref("r2", std::nullopt);
  if (!r2) die("create_ref: " + r2.error().message);
  AgentRef main = harness.main();

  AbortProbe probe;
  Subscription subscription = harness.on_event([&probe](const Event& event) { probe.on_event(event); });
  AbortTimes times;
  for (int round = 0; round < rounds; ++round) {
    {
      std::lock_guard lock(probe.mu);
      probe.tool_running = probe.streaming = false;
      probe.ended.clear();
    }
    RunResult main_result, r2_result;
    {
      std::jthread tool_run([&] { main_result = main.prompt("tool"); });
      std::jthread stream_run([&] { r2_result = r2->prompt("stall"); });
      probe.wait([&] { return probe.tool_running && probe.streaming; });
      auto abort_one = [&](AgentRef& ref, std::vector<double>& out) {
        const auto start = Clock::now();
        if (AbortResult aborted = ref.abort(); !aborted.ok()) die("abort failed on " + ref.name());
        probe.wait([&] { return probe.ended.contains(ref.name()); });
        std::lock_guard lock(probe.mu);
        out.push_back(millis(probe.ended[ref.name()] - start));
      };
      if (round % 2 == 0) {
        abort_one(main, times.tool_ms);
        abort_one(*r2, times.stream_ms);
      } else {
        abort_one(*r2, times.stream_ms);
        abort_one(main, times.tool_ms);
      }
    }
    if (main_result.outcome != Outcome::aborted || r2_result.outcome != Outcome::aborted) {
      die(fmt::format("abort bench: runs ended {} / {}, not aborted", to_string(main_result.outcome),
                      to_string(r2_result.outcome)));
    }
  }
  return times;
}

// ---- tracing ------------------------------------------------------------------

enum class TraceSink { none, json_lines, otlp, otlp_down, otlp_hung, otlp_failing };

// Collectors that fail in each way the exporter must shrug off.
struct Collectors {
  testing::HttpTestServer ok{[](const testing::ReceivedRequest&) {
    return testing::ScriptedResponse{.headers = {{"Content-Type", "application/json"}},
                                     .body = {{.bytes = "{}"}},
                                     .framing = testing::ScriptedResponse::Framing::content_length};
  }};
  testing::HttpTestServer hung{testing::ScriptedResponse{.stall_before_response = true}};
  testing::HttpTestServer failing{testing::ScriptedResponse{.status = 500, .reason = "Internal Server Error",
                                                            .framing = testing::ScriptedResponse::Framing::content_length}};
  std::string down = "http://127.0.0.1:9";  // discard: nothing listens there on these machines

  std::string url(TraceSink sink) const {
    switch (sink) {
      case TraceSink::otlp: return ok.url("");
      case TraceSink::otlp_down: return down;
      case TraceSink::otlp_hung: return hung.url("");
      case TraceSink::otlp_failing: return failing.url("");
      default: return {};
    }
  }
};

constexpr std::pair<TraceSink, const char*> kTraceSinks[] = {
    {TraceSink::none, "nobody listening"},
    {TraceSink::json_lines, "JSON-lines sink"},
    {TraceSink::otlp, "OTLP exporter, local receiver"},
    {TraceSink::otlp_down, "OTLP, collector down"},
    {TraceSink::otlp_hung, "OTLP, collector never answers"},
    {TraceSink::otlp_failing, "OTLP, collector answers 500"},
};

// The per-step samples of `blocks` blocks of `per_block` 20-step prompts for
// each sink, the sinks taking turns block by block so that the machine's
// drift touches them alike.
std::map<TraceSink, std::vector<StepSample>> traced_step_times(Store& store, int steps, int blocks, int per_block,
                                                                const Collectors& collectors) {
  std::map<TraceSink, std::vector<StepSample>> out;
  const auto file = std::filesystem::temp_directory_path() / fmt::format("cairn-bench-trace-{}.jsonl", ::getpid());
  for (int block = 0; block < blocks; ++block) {
    for (auto [sink, label] : kTraceSinks) {
      std::unique_ptr<trace::JsonLinesSink> json_lines;
      std::unique_ptr<trace::OtlpExporter> otlp;
      if (sink == TraceSink::json_lines) {
        auto opened = trace::JsonLinesSink::open(file);
        if (!opened) die(opened.error().message);
        json_lines = std::move(*opened);
      } else if (sink != TraceSink::none) {
        const std::string url = collectors.url(sink);
        otlp = std::make_unique<trace::OtlpExporter>(
            trace::OtlpOptions{.traces_url = url + "/v1/traces", .metrics_url = url + "/v1/metrics", .max_queue = 65536,
                               .export_timeout = std::chrono::milliseconds(2000),
                               .flush_timeout = std::chrono::milliseconds(200), .report = [](const std::string&) {}});
      }
      auto samples = step_times(store, steps, per_block, per_block);
      auto& all = out[sink];
      all.insert(all.end(), samples.begin(), samples.end());
      if (json_lines && !json_lines->flush(std::chrono::seconds(30))) die("the JSON-lines sink did not catch up");
      if (sink == TraceSink::otlp) {
        if (!otlp->flush(std::chrono::seconds(30))) die("the OTLP exporter did not catch up");
        if (otlp->stats().dropped > 0) die(fmt::format("the OTLP exporter dropped {} spans", otlp->stats().dropped));
      }
      if (otlp) {
        // A failing collector: the exporter lets go within its flush timeout.
        const auto stopping = Clock::now();
        otlp.reset();
        const double ms = millis(Clock::now() - stopping);
        if (ms > 200 + 1000) die(fmt::format("the OTLP exporter took {:.0f} ms to stop", ms));
      }
    }
    std::filesystem::remove(file);
  }
  return out;
}

// Spans one 20-step prompt makes, per step.
double spans_per_step(Store& store, int steps) {
  std::atomic<std::int64_t> starts{0};
  auto counting = trace::subscribe([&](const trace::SpanEvent& e) {
    if (e.type == trace::SpanEventType::start) ++starts;
  });
  (void)step_times(store, steps, 1, 1);
  return static_cast<double>(starts.load()) / steps;
}

// What a span costs when nobody listens, in ns: made and ended, with a
// payload that is never built.
double inactive_span_ns() {
  constexpr int kSpans = 5'000'000;
  std::string runs = "run";
  const auto start = Clock::now();
  for (int i = 0; i < kSpans; ++i) {
    trace::Span span("cairn.bench", [&] { return Json{{"runId", runs}}; });
    if (span) die("a span was active with nobody listening");
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kSpans;
}

void print_tracing(Store& store, int steps, int blocks, int per_block) {
  const Collectors collectors;
  const auto runs = traced_step_times(store, steps, blocks, per_block, collectors);
  std::printf("%-38s %8s %10s %12s %12s %8s\n", "tracing, per step", "prompts", "ctx msgs", "median us", "p90 us",
              "ratio");
  auto median = [](const std::vector<StepSample>& samples) {
    std::vector<double> times;
    for (const auto& sample : samples) times.push_back(sample.per_step_us);
    return summarize(times).median;
  };
  const double base = median(runs.at(TraceSink::none));
  for (auto [sink, label] : kTraceSinks) {
    const auto& samples = runs.at(sink);
    std::vector<double> times;
    std::size_t context = 0;
    for (const auto& sample : samples) {
      times.push_back(sample.per_step_us);
      context = std::max(context, sample.context_messages);
    }
    const Summary s = summarize(times);
    std::printf("%-38s %8zu %10zu %12.1f %12.1f %8.2f\n", label, times.size(), context, s.median, s.p90, s.median / base);
  }
  const double spans = spans_per_step(store, steps);
  const double span_ns = inactive_span_ns();
  const double share = spans * span_ns / (base * 1000) * 100;
  std::printf("nobody listening: %.1f spans per step x %.1f ns per inactive span = %.0f ns per step, "
              "%.3f %% of the step's %.1f us\n",
              spans, span_ns, spans * span_ns, share, base);
  std::printf("target: nobody listening costs <= 2 %% of a step (%s)\n\n", share <= 2.0 ? "met" : "NOT MET");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") quick = true;
  }
  constexpr int kSteps = 20;
  constexpr int kPerSession = 50;
  const int long_prompts = quick ? kPerSession : 10 * kPerSession;
  const int short_prompts = quick ? 200 : 2000;
  const int abort_rounds = quick ? 10 : 50;

  auto store = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
  std::printf("cairn harness benchmark (memory store, sync none, faux provider, %u cores)\n\n",
              std::thread::hardware_concurrency());

  std::printf("%-38s %8s %10s %12s %12s\n", "overhead per step", "prompts", "ctx msgs", "median us", "p90 us");
  const auto long_runs = step_times(*store, kSteps, long_prompts, kPerSession);
  for (int position : {1, 10, kPerSession}) {
    print_step_row(fmt::format("{}-step prompt, #{} in its session", kSteps, position), long_runs, position);
  }
  print_step_row(fmt::format("{}-step prompt, all", kSteps), long_runs, 0);
  const auto watched_runs = step_times(*store, kSteps, long_prompts, kPerSession, /*watched=*/true);
  print_step_row(fmt::format("{}-step prompt, all, watched", kSteps), watched_runs, 0);
  const auto short_runs = step_times(*store, 1, short_prompts, kPerSession);
  print_step_row("1-step prompt (text only), #1", short_runs, 1);
  print_step_row("1-step prompt (text only), all", short_runs, 0);
  std::printf("a %d-step prompt is %d noop tool steps and a text answer; a new session every %d prompts;\n"
              "ctx msgs: the largest context a prompt of the row sent to the provider;\n"
              "watched: a listener is subscribed, so every event is built and delivered\n",
              kSteps, kSteps - 1, kPerSession);
  std::printf("target: median per step <= 50 us\n\n");

  print_tracing(*store, kSteps, quick ? 2 : 6, kPerSession);

  const AbortTimes aborts = abort_times(*store, abort_rounds);
  std::printf("%-38s %8s %10s %12s %12s\n", "abort() -> run_end", "rounds", "", "median ms", "max ms");
  const Summary tool = summarize(aborts.tool_ms);
  const Summary stream = summarize(aborts.stream_ms);
  std::printf("%-38s %8d %10s %12.3f %12.3f\n", "tool running (waits on its stop_token)", abort_rounds, "",
              tool.median, tool.max);
  std::printf("%-38s %8d %10s %12.3f %12.3f\n", "stream stalled", abort_rounds, "", stream.median, stream.max);
  std::printf("target: <= 50 ms\n");
  return 0;
}
