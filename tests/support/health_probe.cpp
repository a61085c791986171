#include "support/health_probe.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "support/loopback.hpp"

namespace cairn::testing {

HealthProbe::HealthProbe(int port, std::chrono::milliseconds every, std::string target, std::vector<std::string> headers)
    : port_(port), every_(every), target_(std::move(target)) {
  request_ = fmt::format("GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n", target_);
  for (const auto& header : headers) request_ += header + "\r\n";
  request_ += "\r\n";
  thread_ = std::thread([this] { run(); });
}

void HealthProbe::stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string HealthProbe::summary() const {
  return fmt::format("{} probes, {} failed, slowest {} ms", probes(), failures(), slowest().count());
}

std::string HealthProbe::distribution() {
  stop();
  std::lock_guard lock(mu_);
  std::sort(millis_.begin(), millis_.end());
  const auto at = [&](std::size_t percent) {
    return millis_.empty() ? 0.0 : millis_[std::min(millis_.size() - 1, millis_.size() * percent / 100)];
  };
  const auto over = std::count_if(millis_.begin(), millis_.end(), [](double ms) { return ms > 100; });
  return fmt::format("{} probes of {}: median {:.1f} ms, p99 {:.1f} ms, slowest {:.1f} ms ({} over 100 ms), {} failed",
                     millis_.size(), target_, at(50), at(99), millis_.empty() ? 0.0 : millis_.back(), over, failures());
}

void HealthProbe::run() {
  while (!stopping_.load()) {
    const auto started = std::chrono::steady_clock::now();
    const int fd = connect_loopback(port_);
    bool ok = false;
    if (fd >= 0) {
      send_all_bytes(fd, request_);
      ok = read_until_closed(fd, std::chrono::seconds(5)).rfind("HTTP/1.1 200", 0) == 0;
      ::close(fd);
    }
    const auto took = std::chrono::steady_clock::now() - started;
    const auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    {
      std::lock_guard lock(mu_);
      millis_.push_back(std::chrono::duration<double, std::milli>(took).count());
    }
    ++probes_;
    if (!ok) ++failures_;
    if (took_ms > slowest_ms_.load()) slowest_ms_.store(took_ms);
    std::this_thread::sleep_for(every_);
  }
}

}  // namespace cairn::testing
