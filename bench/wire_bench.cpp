// Wire benchmarks. Streams one long block through each wire provider's real
// stream() from a local HTTP server, every SSE event carrying 40 bytes of it,
// and prints the time beside its reference: a write call of 100 KB, 400 KB
// and 1 MB of arguments (the series shows whether the cost is linear), a text
// answer of 1 MB, and arguments nested 200,000 deep. The event sink does what
// the harness's does: one shared copy of the partial message per event.
//
//   cairn_bench_wire [--quick] [--limit SECONDS]
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/llm/anthropic_messages.hpp"
#include "cairn/llm/openai_completions.hpp"
#include "cairn/llm/openai_responses.hpp"
#include "llm/wire_streams.hpp"
#include "support/http_test_server.hpp"

using namespace cairn;
using Clock = std::chrono::steady_clock;
using testing::HttpTestServer;
using testing::ScriptedResponse;
using testing::StreamedBlock;

namespace {

constexpr std::size_t kPiece = 40;

// A file's worth of code, so that the arguments hold the escapes a real
// write call's do (quotes, backslashes, newlines).
std::string file_content(std::size_t size) {
  static const std::string kLine = "  if (path == \"C:\\\\tmp\") { std::puts(\"tab\\there\"); return 42; }\n";
  std::string out;
  out.reserve(size + kLine.size());
  while (out.size() < size) out += kLine;
  out.resize(size);
  return out;
}

struct Kind {
  const char* api;
  std::shared_ptr<Provider> (*make)(std::string, HttpClient);
};

const Kind kKinds[] = {
    {"openai-completions", make_openai_completions_provider},
    {"openai-responses", make_openai_responses_provider},
    {"anthropic-messages", make_anthropic_messages_provider},
};

struct Outcome {
  double seconds = 0;
  std::size_t events = 0;
  bool stopped = false;  // the limit passed and the stream was cancelled
  std::string result;    // what the response holds, to show it is the whole block
};

// Runs one response through the provider's stream(). The sink copies the
// partial message once per event, as the harness does for its snapshot.
Outcome stream_once(const Kind& kind, const StreamedBlock& block, std::chrono::seconds limit) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  std::string piece;
  for (std::string& event : testing::stream_in(kind.api, block)) {
    piece += event;
    if (piece.size() >= 16384) script.body.push_back({.bytes = std::exchange(piece, {})});
  }
  if (!piece.empty()) script.body.push_back({.bytes = std::move(piece)});
  HttpTestServer server(std::move(script));

  Model model;
  model.provider = "bench";
  model.id = "m";
  model.api = kind.api;
  model.base_url = server.url("/v1");
  LlmContext context;
  context.messages.emplace_back(UserMessage{.content = "Write the file."});
  auto provider = kind.make("sk-bench-key-0123456789", HttpClient{});

  std::stop_source stop;
  std::mutex mu;
  std::condition_variable finished;
  bool done = false;
  std::jthread watchdog([&] {
    std::unique_lock lock(mu);
    if (!finished.wait_for(lock, limit, [&] { return done; })) stop.request_stop();
  });

  Outcome outcome;
  std::shared_ptr<const AgentMessage> latest;
  const auto start = Clock::now();
  ProviderResponse response = provider->stream(
      model, context, StreamOptions{}, {},
      [&](const ProviderEvent& event) {
        latest = std::make_shared<const AgentMessage>(*event.partial);
        ++outcome.events;
      },
      stop.get_token());
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  {
    std::lock_guard lock(mu);
    done = true;
  }
  finished.notify_all();
  outcome.stopped = stop.stop_requested();

  const AssistantMessage& message = response.message;
  if (message.stop_reason == StopReason::error || message.stop_reason == StopReason::aborted) {
    outcome.result = "failed: " + message.error_message.value_or("?").substr(0, 60);
  } else if (message.content.empty()) {
    outcome.result = "no content";
  } else if (const auto* text = std::get_if<TextContent>(&message.content[0])) {
    outcome.result = fmt::format("text of {} bytes", text->text.size());
  } else if (const auto* call = std::get_if<ToolCall>(&message.content[0])) {
    if (call->raw_arguments) {
      outcome.result = fmt::format("raw arguments of {} bytes", call->raw_arguments->size());
    } else if (const auto it = call->arguments.find("content"); it != call->arguments.end() && it->is_string()) {
      outcome.result = fmt::format("content of {} bytes", it->get_ref<const std::string&>().size());
    } else {
      outcome.result = fmt::format("arguments {}", call->arguments.dump().substr(0, 40));
    }
  }
  return outcome;
}

std::string write_arguments(std::size_t size) {
  Json arguments = {{"path", "src/big.cpp"}, {"content", ""}};
  const std::size_t overhead = arguments.dump().size();
  std::string content = file_content(size);
  // The escapes make the text longer than the content; trim to the size asked.
  while (Json(content).dump().size() + overhead - 2 > size) content.resize(content.size() - 64);
  arguments["content"] = std::move(content);
  return arguments.dump();
}

std::string deep_arguments(std::size_t depth) {
  return "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

std::string bytes(std::size_t size) {
  return size >= 1'000'000 ? fmt::format("{} MB", size / 1'000'000) : fmt::format("{} KB", size / 1000);
}

void print_row(const Kind& kind, const std::string& what, const Outcome& outcome, const char* reference) {
  std::string time = outcome.stopped ? fmt::format("> {:.0f} s (cancelled)", outcome.seconds)
                                     : fmt::format("{:.3f} s", outcome.seconds);
  std::printf("%-20s %-34s %22s %9zu   %-8s %s\n", kind.api, what.c_str(), time.c_str(), outcome.events, reference,
              outcome.result.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::chrono::seconds limit{60};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") quick = true;
    if (arg == "--limit" && i + 1 < argc) limit = std::chrono::seconds(std::stoi(argv[++i]));
  }
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);

  std::printf("cairn wire benchmark: one block through stream() from a local server, %zu bytes per SSE event,\n"
              "one copy of the partial message per event (as the harness makes); %u cores\n\n",
              kPiece, std::thread::hardware_concurrency());
  std::printf("%-20s %-34s %22s %9s   %-8s %s\n", "api", "block", "time", "events", "target", "result");

  const std::vector<std::size_t> sizes =
      quick ? std::vector<std::size_t>{100'000, 400'000} : std::vector<std::size_t>{100'000, 400'000, 1'000'000};
  for (const Kind& kind : kKinds) {
    std::vector<double> times;
    for (std::size_t size : sizes) {
      Outcome outcome = stream_once(kind, StreamedBlock{.arguments = write_arguments(size), .piece = kPiece}, limit);
      times.push_back(outcome.seconds);
      print_row(kind, fmt::format("write call, {} of arguments", bytes(size)), outcome,
                size == 1'000'000 ? "< 1 s" : "");
    }
    // Linear: the time grows as the size does; quadratic: as its square.
    std::printf("%-20s %-34s %22s\n", kind.api, "growth, largest over smallest",
                fmt::format("time x{:.1f}, size x{}", times.back() / std::max(times.front(), 1e-9),
                            sizes.back() / sizes.front())
                    .c_str());
    Outcome text = stream_once(kind, StreamedBlock{.text = file_content(quick ? 400'000 : 1'000'000), .piece = kPiece}, limit);
    print_row(kind, fmt::format("text, {}", bytes(quick ? 400'000 : 1'000'000)), text, "< 1 s");
    Outcome deep = stream_once(kind, StreamedBlock{.arguments = deep_arguments(200'000), .piece = kPiece}, limit);
    print_row(kind, "arguments nested 200,000 deep", deep, "< 1 s");
  }
  std::printf("\nlinear: the time of the largest write call over the smallest's is about their sizes' ratio\n");
  return 0;
}
