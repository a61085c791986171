// Real-process crashes: a child appends in a loop and reports each
// acknowledged record; the parent SIGKILLs it at random moments and checks
// that the store opens without repair, seq is contiguous, and every
// acknowledged record is there byte for byte.
#include <gtest/gtest.h>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <map>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "cairn/store/store.hpp"
#include "support/crash_record.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

extern char** environ;

namespace cairn {
namespace {

struct Acknowledged {
  std::string id;
  std::optional<std::string> parent;
  std::string ref;
  std::string line;  // the stored line it must have, rebuilt here
};

// Runs the child for `run_ms`, kills it, and returns what it reported.
std::string run_store_child(const std::vector<std::string>& args, int run_ms) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return {};
  }
  // The kill comes `run_ms` after the child's first acknowledged record, so
  // that every kill lands while appends are going on, however slowly the
  // child starts (a sanitizer build takes a while).
  std::string out;
  char buffer[65536];
  auto drain_until = [&](auto done) {
    while (!done()) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 2) > 0) {
        ssize_t n = ::read(fds[0], buffer, sizeof buffer);
        if (n <= 0) return;
        out.append(buffer, static_cast<std::size_t>(n));
      }
    }
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  drain_until([&] { return out.find('\n') != std::string::npos || std::chrono::steady_clock::now() > give_up; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(run_ms);
  drain_until([&] { return std::chrono::steady_clock::now() >= deadline; });
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  return out;
}

// `reopen`: how the parent opens the session after each kill. A PostgreSQL
// session is still leased to the killed child until its lease expires; the
// parent, knowing it is dead, takes it over at once (break_lock), as an
// operator would.
void crash_loop(const std::string& uri, SyncPolicy sync, int threads, int kills, std::uint64_t seed,
                OpenOptions reopen = {}) {
  auto store = open_store(uri, {sync});
  ASSERT_TRUE(store) << store.error().message;
  {
    auto session = (*store)->create({.id = "crashy", .cwd = "/w"});
    ASSERT_TRUE(session) << session.error().message;
    for (int t = 0; t < threads; ++t) {
      const std::string ref = fmt::format("t{}", t);
      ASSERT_TRUE((*session)->append(testing::harness(RefCreated{ref, std::nullopt}, ref)));
    }
  }
  std::mt19937_64 rng(seed);
  std::map<std::int64_t, Acknowledged> acknowledged;
  std::int64_t tails_cut = 0;
  for (int run = 0; run < kills; ++run) {
    const int run_ms = std::uniform_int_distribution<int>(0, 40)(rng);
    const std::string output = run_store_child({CAIRN_CRASH_CHILD_PATH, uri, "crashy", sync == SyncPolicy::full ? "full" : "none",
                                             std::to_string(threads), std::to_string(run)},
                                            run_ms);
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::int64_t seq;
      Acknowledged ack;
      std::string parent;
      if (!(fields >> seq >> ack.id >> parent >> ack.ref)) continue;  // a report cut by the kill
      if (parent != "-") ack.parent = parent;
      Record expected = testing::crash_record(ack.id, ack.parent, ack.ref);
      expected.seq = seq;
      ack.line = encode(expected).dump();
      add_checksum(ack.line);
      acknowledged[seq] = std::move(ack);
    }

    // Opens for writing, as a restarted process would: a torn tail is cut.
    auto session = (*store)->open("crashy", reopen);
    ASSERT_TRUE(session) << "after kill " << run << ": " << session.error().message;
    tails_cut += (*session)->open_report().tail_cut ? 1 : 0;
    const auto log = (*session)->get_log().value();
    for (std::size_t i = 0; i < log.size(); ++i) ASSERT_EQ(log[i].seq, static_cast<std::int64_t>(i));
    for (const auto& [seq, ack] : acknowledged) {
      ASSERT_LT(seq, static_cast<std::int64_t>(log.size())) << "acknowledged seq " << seq << " lost after kill " << run;
      ASSERT_EQ(log[static_cast<std::size_t>(seq)].json, ack.line) << "seq " << seq << " after kill " << run;
    }
  }
  EXPECT_GT(acknowledged.size(), static_cast<std::size_t>(kills));
  std::printf("[ crash    ] %s sync=%s threads=%d: %d kills, %zu acknowledged records verified, %lld torn tails cut\n",
              uri.substr(0, uri.find(':')).c_str(), sync == SyncPolicy::full ? "full" : "none", threads, kills,
              acknowledged.size(), static_cast<long long>(tails_cut));
}

// SIGKILL loses nothing from the page cache, so records acknowledged under
// sync `none` survive it too; only a power loss could take them. The test
// checks both policies; `full` is the one with a durability promise.
TEST(CrashRealProcess, JsonlSyncFull) {
  testing::TempDir dir;
  crash_loop("jsonl:" + dir.str(), SyncPolicy::full, 4, 80, 11);
}
TEST(CrashRealProcess, JsonlSyncNone) {
  testing::TempDir dir;
  crash_loop("jsonl:" + dir.str(), SyncPolicy::none, 3, 80, 12);
}
TEST(CrashRealProcess, SqliteSyncFull) {
  testing::TempDir dir;
  crash_loop("sqlite:" + dir.str() + "/s.db", SyncPolicy::full, 4, 80, 13);
}
TEST(CrashRealProcess, SqliteSyncNone) {
  testing::TempDir dir;
  crash_loop("sqlite:" + dir.str() + "/s.db", SyncPolicy::none, 3, 80, 14);
}

TEST(CrashRealProcess, PostgresSyncFull) {
  std::string why;
  auto* cluster = testing::PgCluster::shared(&why);
  ASSERT_NE(cluster, nullptr) << why;
  const std::string uri = cluster->new_database(&why);
  ASSERT_FALSE(uri.empty()) << why;
  crash_loop(uri, SyncPolicy::full, 4, 80, 15, {.break_lock = true});
}

}  // namespace
}  // namespace cairn
