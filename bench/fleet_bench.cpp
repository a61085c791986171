// A fleet's hand-over: the latency of a prompt and of an approval's answer
// sent to a `cairn serve` that does not hold the session (relayed through
// the session's inbox on PostgreSQL) beside the same sent to the server that
// holds it — two servers on one private, durable cluster, in one run.
// Issue 44's bound: the relayed prompt's p99 ≤ 2 × the local p99 + 10 ms.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "serve_support.hpp"
#include "support/http_test_server.hpp"
#include "support/openai_script.hpp"
#include "support/pg_cluster.hpp"

namespace {

using namespace cairn;
using bench::ServeProcess;
using Clock = std::chrono::steady_clock;

// Each run: one bash call (asked for under --approval ask), then done.
testing::ScriptedResponse model(const testing::ReceivedRequest& request) {
  const Json body = Json::parse(request.body, nullptr, false);
  if (body.is_discarded()) return testing::openai_text_reply("?");
  // A run's second request follows its tool's result.
  const Json& messages = body.value("messages", Json::array());
  if (messages.empty() || messages.back().value("role", "") == "tool") return testing::openai_text_reply("done");
  return testing::openai_tool_reply(fmt::format("call_{}", messages.size()), "bash", Json{{"command", "true"}});
}

int status_of(const std::string& reply) { return reply.size() > 12 ? std::atoi(reply.c_str() + 9) : 0; }

double millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto at = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(at, values.size() - 1)];
}

// The input the session's main ref waits for, asked of the holder.
std::string pending_input(const ServeProcess& holder, const std::string& session) {
  for (int i = 0; i < 500; ++i) {
    const Json inputs = bench::call(holder, "GET", fmt::format("/v1/sessions/{}/refs/main/inputs", session));
    for (const auto& input : inputs.value("inputs", Json::array())) return input.value("id", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return {};
}

bool wait_idle(const ServeProcess& holder, const std::string& session) {
  for (int i = 0; i < 5000; ++i) {
    const Json ref = bench::call(holder, "GET", fmt::format("/v1/sessions/{}/refs/main", session));
    if (ref.contains("ref") && ref["ref"].value("status", "") == "idle") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") samples = 30;
    if (arg == "--samples" && i + 1 < argc) samples = std::max(2, std::atoi(argv[++i]));
    if (arg == "--help" || arg == "-h") {
      fmt::print("usage: cairn_bench_fleet [--quick] [--samples N]\n"
                 "  two cairn serve processes on one private PostgreSQL cluster (fsync on): N prompts and N approval\n"
                 "  answers sent to the server that holds the session and N of each to the other one, which relays\n"
                 "  them through the session's inbox (default 100; --quick: 30); p50 and p99 of each\n");
      return 0;
    }
  }
  std::string why;
  auto cluster = testing::PgCluster::start_new(/*durable=*/true, &why);
  if (!cluster) {
    fmt::print(stderr, "cairn_bench_fleet: no PostgreSQL cluster: {}\n", why);
    return 1;
  }
  const std::string uri = cluster->new_database(&why);
  if (uri.empty()) {
    fmt::print(stderr, "cairn_bench_fleet: {}\n", why);
    return 1;
  }
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("cairn-bench-fleet-{}", ::getpid());
  for (const char* sub : {"a/config", "b/config"}) std::filesystem::create_directories(dir / sub);
  testing::HttpTestServer model_server{testing::HttpTestServer::Responder(model)};
  const std::vector<std::string> options = {"--approval", "ask", "--no-resume"};
  ServeProcess holder = bench::start_serve(dir / "a", model_server.url("/v1"), options, std::nullopt, uri);
  std::filesystem::copy_file(dir / "a" / "tokens", dir / "b" / "tokens");
  std::filesystem::permissions(dir / "b" / "tokens", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ServeProcess other = bench::start_serve(dir / "b", model_server.url("/v1"), options, std::nullopt, uri);
  if (holder.port == 0 || other.port == 0) {
    fmt::print(stderr, "cairn_bench_fleet: a server did not start (see {})\n", dir.string());
    return 1;
  }
  const std::string session = "bench";
  bench::call(holder, "POST", "/v1/sessions", Json{{"id", session}, {"cwd", dir.string()}});

  std::vector<double> prompt_ms[2], answer_ms[2];  // [0] the holder, [1] relayed
  int refused = 0;
  for (int i = 0; i < 2 * samples; ++i) {
    const ServeProcess& prompt_to = i % 2 == 0 ? holder : other;
    const ServeProcess& answer_to = (i / 2) % 2 == 0 ? holder : other;
    auto sent = Clock::now();
    const std::string started = bench::call_raw(prompt_to, "POST", fmt::format("/v1/sessions/{}/refs/main/prompt", session),
                                                Json{{"text", fmt::format("n{}", i)}});
    const double prompt_took = millis(Clock::now() - sent);
    const std::string input = pending_input(holder, session);
    sent = Clock::now();
    const std::string answered = bench::call_raw(
        answer_to, "POST", fmt::format("/v1/sessions/{}/refs/main/inputs/{}", session, input), Json{{"decision", "allow"}});
    const double answer_took = millis(Clock::now() - sent);
    if (status_of(started) != 202 || status_of(answered) != 200 || input.empty()) {
      if (refused++ == 0) {
        fmt::print(stderr, "cairn_bench_fleet: refused: prompt {} / answer {} (input '{}')\n", started.substr(0, 600),
                   answered.substr(0, 600), input);
      }
    } else {
      prompt_ms[&prompt_to == &other].push_back(prompt_took);
      answer_ms[&answer_to == &other].push_back(answer_took);
    }
    if (!wait_idle(holder, session)) {
      fmt::print(stderr, "cairn_bench_fleet: the session never went idle\n");
      break;
    }
  }
  fmt::print("cairn serve fleet: two servers, one PostgreSQL cluster (fsync on), {} samples of each\n", samples);
  fmt::print("{:<34} {:>9} {:>9} {:>9}\n", "request", "p50 ms", "p99 ms", "samples");
  const char* names[2] = {"to the holder", "to another server (relayed)"};
  for (int remote = 0; remote < 2; ++remote) {
    fmt::print("{:<34} {:>9.2f} {:>9.2f} {:>9}\n", fmt::format("prompt {}", names[remote]), percentile(prompt_ms[remote], 0.5),
               percentile(prompt_ms[remote], 0.99), prompt_ms[remote].size());
  }
  for (int remote = 0; remote < 2; ++remote) {
    fmt::print("{:<34} {:>9.2f} {:>9.2f} {:>9}\n", fmt::format("approval {}", names[remote]), percentile(answer_ms[remote], 0.5),
               percentile(answer_ms[remote], 0.99), answer_ms[remote].size());
  }
  if (prompt_ms[0].empty() || prompt_ms[1].empty()) {
    fmt::print("too few samples to compare (see {})\n", dir.string());
    return 1;
  }
  const double bound = 2 * percentile(prompt_ms[0], 0.99) + 10;
  fmt::print("relayed prompt p99 {:.2f} ms; bound 2 x local p99 + 10 ms = {:.2f} ms: {}\n", percentile(prompt_ms[1], 0.99),
             bound, percentile(prompt_ms[1], 0.99) <= bound ? "held" : "NOT held");
  if (refused > 0) fmt::print("{} samples were refused and left out\n", refused);
  ::kill(holder.pid, SIGTERM);
  ::kill(other.pid, SIGTERM);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
