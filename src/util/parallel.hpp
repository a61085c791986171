// Running independent work on every core: the read path decodes the records
// of a long log this way (each record decodes on its own), then uses them in
// order on one thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace cairn {

// Calls fn(i) for every i in [0, n), in chunks of `chunk` taken by up to one
// thread per core (the caller's own included), and returns when all calls
// have returned. fn must be safe to call from several threads at once, for
// different i. Below two chunks it all runs on the caller's thread.
template <class Fn>
void parallel_for(std::size_t n, Fn&& fn, std::size_t chunk = 256) {
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t begin; (begin = next.fetch_add(chunk)) < n;) {
      for (std::size_t i = begin; i < std::min(begin + chunk, n); ++i) fn(i);
    }
  };
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t helpers = std::min(cores - 1, n / (2 * chunk));
  std::vector<std::jthread> threads;
  threads.reserve(helpers);
  for (std::size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  // The helpers join as `threads` goes.
}

}  // namespace cairn
