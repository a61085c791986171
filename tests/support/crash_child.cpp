// The child of the real-process crash tests. Appends batches to one session
// from several threads, one ref per thread, until it is killed, and reports
// every acknowledged record as "seq id parent ref" through stdout (one write
// per line, below PIPE_BUF, so lines never interleave).
//
//   cairn_crash_child STORE_URI SESSION_ID full|none THREADS RUN
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "support/crash_record.hpp"

using namespace cairn;

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s STORE_URI SESSION_ID full|none THREADS RUN\n", argv[0]);
    return 2;
  }
  const SyncPolicy sync = std::string(argv[3]) == "full" ? SyncPolicy::full : SyncPolicy::none;
  const int threads = std::stoi(argv[4]);
  const std::string run = argv[5];
  auto store = open_store(argv[1], {sync});
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  auto session = (*store)->open(argv[2], {.lock_timeout = std::chrono::milliseconds(10000)});
  if (!session) {
    std::fprintf(stderr, "%s\n", session.error().message.c_str());
    return 1;
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::string ref = fmt::format("t{}", t);
      std::optional<std::string> parent = (*session)->leaf(ref);
      for (std::int64_t i = 0;; ++i) {
        std::vector<Record> batch;
        std::vector<std::pair<std::string, std::optional<std::string>>> made;
        for (int k = 0; k < 1 + (i % 3); ++k) {
          const std::string id = fmt::format("r{}t{}n{}k{}", run, t, i, k);
          batch.push_back(testing::crash_record(id, parent, ref));
          made.emplace_back(id, parent);
          parent = id;
        }
        auto appended = (*session)->append(std::move(batch));
        if (!appended) {
          std::fprintf(stderr, "append failed: %s\n", appended.error().message.c_str());
          std::_Exit(1);
        }
        for (std::size_t k = 0; k < made.size(); ++k) {
          const std::string line = fmt::format("{} {} {} {}\n", appended->first_seq + static_cast<std::int64_t>(k),
                                               made[k].first, made[k].second.value_or("-"), ref);
          if (::write(STDOUT_FILENO, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(1);
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
}
