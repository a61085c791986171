// Asks a server for one target (GET /healthz unless told) on a thread of
// its own, every `every`, until stopped, and keeps each answer's time: the
// tests' and the benchmarks' witness that a server answers at once whatever
// else it is doing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cairn::testing {

class HealthProbe {
 public:
  explicit HealthProbe(int port, std::chrono::milliseconds every = std::chrono::milliseconds(25),
                       std::string target = "/healthz", std::vector<std::string> headers = {});
  ~HealthProbe() { stop(); }
  HealthProbe(const HealthProbe&) = delete;
  HealthProbe& operator=(const HealthProbe&) = delete;

  void stop();
  std::chrono::milliseconds slowest() const { return std::chrono::milliseconds(slowest_ms_.load()); }
  int probes() const { return probes_.load(); }
  int failures() const { return failures_.load(); }
  // "N probes, F failed, slowest X ms".
  std::string summary() const;
  // "N probes of TARGET: median, p99, slowest, how many over 100 ms, failed"; stops it.
  std::string distribution();

 private:
  void run();

  int port_;
  std::chrono::milliseconds every_;
  std::string target_;
  std::string request_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> probes_{0}, failures_{0};
  std::atomic<std::int64_t> slowest_ms_{0};
  std::mutex mu_;
  std::vector<double> millis_;  // under mu_
  std::thread thread_;          // last: started once the rest is there
};

}  // namespace cairn::testing
