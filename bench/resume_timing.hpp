// `cairn resume`'s time to its first model request, as a whole process.
//
// A model server on loopback speaks the OpenAI chat-completions wire and
// answers no request: it notes when each arrives. The session is first left
// as a crash leaves it — `cairn -p` killed once its request has arrived, so
// its run is suspended mid-turn — and each timed `cairn resume` re-sends that
// turn's request at once; it is killed when the request arrives, which
// leaves the run suspended for the next. The figure is the request's arrival
// minus the process's start (one monotonic clock).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_process.hpp"

namespace cairn::bench {

class ModelServer {
 public:
  ModelServer();
  ~ModelServer();
  // cairn's flags that point it at this server.
  std::vector<std::string> flags() const;
  // Waits up to `timeout_ms` for the chat-completions request after the
  // `seen`-th; its arrival (monotonic ns), or nullopt.
  std::optional<std::int64_t> wait_for_request(std::size_t seen, int timeout_ms);
  std::size_t requests() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Suspends the session (`cairn -p` killed at its request), then times
// `runs` resumes. Each sample: ms to the request, 0, the process's peak KiB.
// Prints why and returns nullopt when the session cannot be suspended.
std::optional<Figures> time_resume(const std::string& self, const std::string& cairn, const std::string& uri,
                                   const std::string& id, ModelServer& server, int runs);

}  // namespace cairn::bench
