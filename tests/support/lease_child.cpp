// The child of the PostgreSQL fencing test. Holds one session's lease and
// appends to it until its lease is taken over; then waits for the lease again,
// and so on, until it is killed.
//
//   cairn_lease_child STORE_URI SESSION_ID TTL_MS MARKERS_FILE
//
// Stdout: "holding EPOCH" when it has taken the lease (EPOCH counts its takes
// from 1), "fenced EPOCH CODE" when an append failed. Each record's id is
// "pPIDeEPOCHnN". After every acknowledged append, one line in MARKERS_FILE
// (its stand-in for an effect, such as a tool run): "ID SEQ T" where T is
// CLOCK_MONOTONIC in ns read just before the append was called. Each line is
// one write(2) below PIPE_BUF with O_APPEND, so lines never interleave.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "support/crash_record.hpp"

using namespace cairn;

namespace {

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

void say(const std::string& line) {
  if (::write(STDOUT_FILENO, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s STORE_URI SESSION_ID TTL_MS MARKERS_FILE\n", argv[0]);
    return 2;
  }
  const std::string id = argv[2];
  StoreOptions options{.sync = SyncPolicy::full, .lease_ttl = std::chrono::milliseconds(std::stoi(argv[3]))};
  auto store = open_store(argv[1], options);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  const int markers = ::open(argv[4], O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (markers < 0) return 1;
  for (int epoch = 1;; ++epoch) {
    auto session = (*store)->open(id, {.lock_timeout = std::chrono::hours(1)});
    if (!session) {
      std::fprintf(stderr, "open: %s\n", session.error().message.c_str());
      return 1;
    }
    say(fmt::format("holding {}\n", epoch));
    for (std::int64_t n = 0;; ++n) {
      const std::string record_id = fmt::format("p{}e{}n{}", ::getpid(), epoch, n);
      const std::int64_t started = monotonic_ns();
      auto appended = (*session)->append(testing::crash_record(record_id, (*session)->leaf(), "main"));
      if (!appended) {
        say(fmt::format("fenced {} {}\n", epoch, appended.error().code));
        break;
      }
      const std::string marker = fmt::format("{} {} {}\n", record_id, appended->first_seq, started);
      if (::write(markers, marker.data(), marker.size()) != static_cast<ssize_t>(marker.size())) return 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + n % 3));
    }
  }
}
