// Reading a large session on two threads: a producer thread reads or parses
// records a chunk at a time, ahead of the calling thread, which must build the
// index alone and in order. A bounded queue keeps a few chunks in flight.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace cairn {

template <class Chunk>
class ChunkPipeline {
 public:
  // `produce` fills one chunk and returns whether more follow it. It runs on
  // the pipeline's thread, once per chunk, until it returns false or the
  // pipeline is destroyed.
  explicit ChunkPipeline(std::function<bool(Chunk&)> produce)
      : produce_(std::move(produce)), thread_([this](std::stop_token stop) { run(stop); }) {}
  ChunkPipeline(const ChunkPipeline&) = delete;
  ChunkPipeline& operator=(const ChunkPipeline&) = delete;
  ~ChunkPipeline() {
    thread_.request_stop();
    { std::lock_guard lock(mu_); }  // the producer is waiting, or will see the stop
    space_.notify_all();
  }  // then the jthread joins

  // The next chunk, in order; null after the last.
  std::unique_ptr<Chunk> next() {
    std::unique_lock lock(mu_);
    ready_.wait(lock, [&] { return !chunks_.empty() || finished_; });
    if (chunks_.empty()) return nullptr;
    std::unique_ptr<Chunk> chunk = std::move(chunks_.front());
    chunks_.pop_front();
    space_.notify_one();
    return chunk;
  }

 private:
  static constexpr std::size_t kChunksAhead = 8;

  void run(std::stop_token stop) {
    for (bool more = true; more && !stop.stop_requested();) {
      auto chunk = std::make_unique<Chunk>();
      more = produce_(*chunk);
      std::unique_lock lock(mu_);
      space_.wait(lock, [&] { return chunks_.size() < kChunksAhead || stop.stop_requested(); });
      chunks_.push_back(std::move(chunk));
      ready_.notify_one();
    }
    std::lock_guard lock(mu_);
    finished_ = true;
    ready_.notify_one();
  }

  std::function<bool(Chunk&)> produce_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<std::unique_ptr<Chunk>> chunks_;  // guarded by mu_
  bool finished_ = false;                      // guarded by mu_
  std::jthread thread_;                        // last: starts once the rest exists
};

}  // namespace cairn
