// See resume_timing.hpp.
#include "resume_timing.hpp"

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "support/http_test_server.hpp"

namespace cairn::bench {

struct ModelServer::State {
  std::mutex mu;
  std::condition_variable arrived;
  std::vector<std::int64_t> arrivals;
  std::unique_ptr<testing::HttpTestServer> http;
};

ModelServer::ModelServer() : state_(std::make_unique<State>()) {
  State* state = state_.get();
  state->http = std::make_unique<testing::HttpTestServer>([state](const testing::ReceivedRequest& request) {
    const std::int64_t now = monotonic_ns();
    if (request.target.ends_with("/chat/completions")) {
      std::lock_guard lock(state->mu);
      state->arrivals.push_back(now);
      state->arrived.notify_all();
    }
    // No answer, ever: the bench kills the client, which closes the connection.
    testing::ScriptedResponse response;
    response.stall_before_response = true;
    return response;
  });
}

ModelServer::~ModelServer() = default;

std::vector<std::string> ModelServer::flags() const {
  return {"--api", "openai-completions", "--base-url", state_->http->url("/v1"), "--model", "test"};
}

std::optional<std::int64_t> ModelServer::wait_for_request(std::size_t seen, int timeout_ms) {
  std::unique_lock lock(state_->mu);
  if (!state_->arrived.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                [&] { return state_->arrivals.size() > seen; })) {
    return std::nullopt;
  }
  return state_->arrivals[seen];
}

std::size_t ModelServer::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->arrivals.size();
}

namespace {

struct Timed {
  std::optional<double> to_request_ms;
  Sample sample;  // the --measure child's last line: ms, exit, peak KiB
};

// Runs `cairn ARGS` under `self --measure`, waits for its model request (a
// minute at most: a 1M-entry open on a loaded machine is slow, not hung),
// then kills it.
Timed run_to_request(const std::string& self, const std::string& cairn, std::vector<std::string> args,
                     ModelServer& server) {
  args.insert(args.begin(), {self, "--measure", cairn});
  Timed timed;
  const std::size_t seen = server.requests();
  auto child = Child::spawn(args);
  if (!child) return timed;
  int pid = 0;
  long long start_ns = 0;
  if (auto line = child->next_line(); !line || std::sscanf(line->c_str(), "spawned %d %lld", &pid, &start_ns) != 2) {
    return timed;
  }
  if (auto arrival = server.wait_for_request(seen, 60'000)) {
    timed.to_request_ms = static_cast<double>(*arrival - start_ns) / 1e6;
  }
  ::kill(pid, SIGKILL);  // also when it never asked: it has hung or failed
  if (auto sample = parse_sample(child->finish())) timed.sample = *sample;
  return timed;
}

}  // namespace

std::optional<Figures> time_resume(const std::string& self, const std::string& cairn, const std::string& uri,
                                   const std::string& id, ModelServer& server, int runs) {
  std::vector<std::string> common = {"--store", uri};
  for (const auto& flag : server.flags()) common.push_back(flag);
  std::vector<std::string> prompt = {"-p", "Go on with the next failing module.", "--session", id};
  prompt.insert(prompt.end(), common.begin(), common.end());
  if (!run_to_request(self, cairn, prompt, server).to_request_ms) {
    std::fprintf(stderr, "cairn -p --session %s on %s sent no model request: cannot suspend it\n", id.c_str(),
                 uri.c_str());
    return std::nullopt;
  }
  std::vector<std::string> resume = {"resume", id};
  resume.insert(resume.end(), common.begin(), common.end());
  std::vector<Sample> samples;
  for (int r = 0; r < runs; ++r) {
    Timed timed = run_to_request(self, cairn, resume, server);
    if (!timed.to_request_ms) {
      std::fprintf(stderr, "cairn resume %s on %s sent no model request (exit %ld)\n", id.c_str(), uri.c_str(),
                   timed.sample.middle);
      return std::nullopt;
    }
    samples.push_back({.ms = *timed.to_request_ms, .middle = 0, .kib = timed.sample.kib});
  }
  return summarise(std::move(samples));
}

}  // namespace cairn::bench
