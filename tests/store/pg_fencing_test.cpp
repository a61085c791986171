// Fencing with real processes. Two children share one session
// (support/lease_child.cpp): one holds the lease and appends, the other waits
// for it. Each trial stops the holder with SIGSTOP at a random moment, keeps it
// stopped past its lease's lifetime by a random margin, lets the other child
// take over and write, then continues the stopped one. The stopped holder must
// append nothing more (its records form one unbroken run in the log, before
// its successor's) and start no further effect (no acknowledged append that it
// called after SIGCONT); every append it acknowledged is in the log; seqs have
// no gap.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

extern char** environ;

namespace cairn {
namespace {

std::int64_t fencing_clock_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// A lease child and what it has said (its standard error goes to
// `errors`, to be told when it exits: a child that died is not one that hung).
class LeaseChild {
 public:
  LeaseChild(const std::vector<std::string>& args, std::string errors) : errors_(std::move(errors)) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_ = fds[0];
  }
  ~LeaseChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) ::close(out_);
  }
  pid_t pid() const { return pid_; }
  bool holding() const { return holding_; }
  int epoch() const { return epoch_; }
  int fenced() const { return fenced_; }
  void signal(int signo) const { ::kill(pid_, signo); }
  // "running", or that it exited and what it wrote to its standard error.
  std::string state() const {
    if (!exited_) return "running";
    std::ifstream in(errors_);
    std::stringstream text;
    text << in.rdbuf();
    return fmt::format("exited, saying: {}", text.str().empty() ? std::string("nothing") : text.str());
  }

  // Reads what the child said within `ms`; false when it has exited.
  bool pump(int ms) {
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return true;
    char buffer[4096];
    const ssize_t n = ::read(out_, buffer, sizeof buffer);
    if (n <= 0) {
      exited_ = true;
      return false;
    }
    pending_.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t end; (end = pending_.find('\n')) != std::string::npos; pending_.erase(0, end + 1)) {
      std::istringstream line(pending_.substr(0, end));
      std::string word;
      int epoch = 0;
      line >> word >> epoch;
      if (word == "holding") {
        holding_ = true;
        epoch_ = epoch;
      } else if (word == "fenced") {
        holding_ = false;
        ++fenced_;
      }
    }
    return true;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string errors_;
  std::string pending_;
  bool exited_ = false;
  bool holding_ = false;
  int epoch_ = 0;
  int fenced_ = 0;
};

struct FencingTrial {
  pid_t pid;
  int epoch;
  std::int64_t continued_ns;  // when SIGCONT was sent
};

struct FencingOutcome {
  int trials = 0;
  int stale_records = 0;
  int gaps = 0;
  int lost = 0;
  int effects_after_resume = 0;
  std::int64_t records = 0;
  std::string failure;
};

// Runs `trials` trials on one session and checks its log.
FencingOutcome run_session(const std::string& uri, const std::string& id, const std::string& markers, int trials,
                    std::chrono::milliseconds ttl, std::uint64_t seed) {
  FencingOutcome outcome;
  std::mt19937_64 rng(seed);
  auto random_ms = [&](int hi) { return std::chrono::milliseconds(std::uniform_int_distribution<int>(0, hi)(rng)); };
  std::vector<FencingTrial> done;
  {
    std::vector<std::unique_ptr<LeaseChild>> children;
    for (int c = 0; c < 2; ++c) {
      children.push_back(std::make_unique<LeaseChild>(
          std::vector<std::string>{CAIRN_LEASE_CHILD_PATH, uri, id, std::to_string(ttl.count()), markers},
          fmt::format("{}.child{}.err", markers, c)));
    }
    auto states = [&] { return fmt::format(" (children: {}; {})", children[0]->state(), children[1]->state()); };
    auto pump_all = [&] {
      for (auto& child : children) {
        if (!child->pump(1)) return false;
      }
      return true;
    };
    // Until `done()` holds, reading both children; false after `limit`.
    auto wait_for = [&](auto ready, std::chrono::seconds limit) {
      const auto give_up = std::chrono::steady_clock::now() + limit;
      while (!ready()) {
        if (!pump_all() || std::chrono::steady_clock::now() > give_up) return false;
      }
      return true;
    };
    for (int t = 0; t < trials; ++t) {
      // Exactly one holder (a takeover's loser may not have noticed yet).
      if (!wait_for([&] { return children[0]->holding() != children[1]->holding(); }, std::chrono::seconds(30))) {
        outcome.failure = fmt::format("trial {}: no single holder", t) + states();
        break;
      }
      LeaseChild& holder = children[0]->holding() ? *children[0] : *children[1];
      LeaseChild& waiter = children[0]->holding() ? *children[1] : *children[0];
      std::this_thread::sleep_for(random_ms(20));
      holder.signal(SIGSTOP);
      std::this_thread::sleep_for(ttl + random_ms(static_cast<int>(ttl.count())));
      if (!wait_for([&] { return waiter.holding(); }, std::chrono::seconds(30))) {
        outcome.failure = fmt::format("trial {}: nobody took over from a stopped holder", t) + states();
        holder.signal(SIGCONT);
        break;
      }
      std::this_thread::sleep_for(random_ms(20));
      const int fenced_before = holder.fenced();
      const FencingTrial trial{holder.pid(), holder.epoch(), fencing_clock_ns()};
      holder.signal(SIGCONT);
      if (!wait_for([&] { return holder.fenced() > fenced_before; }, std::chrono::seconds(30))) {
        outcome.failure = fmt::format("trial {}: the continued holder never found itself fenced", t) + states();
        break;
      }
      done.push_back(trial);
      ++outcome.trials;
    }
  }  // both children killed

  auto store = open_store(uri, {});
  if (!store) {
    outcome.failure += store.error().message;
    return outcome;
  }
  auto session = (*store)->open(id, {.read_only = true});
  if (!session) {
    outcome.failure += session.error().message;
    return outcome;
  }
  const auto log = (*session)->get_log().value();
  outcome.records = static_cast<std::int64_t>(log.size());
  std::vector<std::string> ids;
  std::set<std::string> finished_runs;
  std::string run;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].seq != static_cast<std::int64_t>(i)) ++outcome.gaps;
    const std::string record = Json::parse(log[i].json)["id"].get<std::string>();
    ids.push_back(record);
    const std::string key = record.substr(0, record.find('n'));  // "pPIDeEPOCH"
    if (key == run) continue;
    if (!run.empty()) finished_runs.insert(run);
    if (finished_runs.contains(key)) ++outcome.stale_records;  // a holder wrote again after its successor
    run = key;
  }
  std::map<std::string, std::int64_t> continued;  // "pPIDeEPOCH" -> SIGCONT time
  for (const FencingTrial& trial : done) continued[fmt::format("p{}e{}", trial.pid, trial.epoch)] = trial.continued_ns;
  std::ifstream in(markers);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string record;
    std::int64_t seq = -1, started = 0;
    if (!(fields >> record >> seq >> started)) continue;
    if (seq < 0 || seq >= static_cast<std::int64_t>(ids.size()) || ids[static_cast<std::size_t>(seq)] != record) ++outcome.lost;
    auto it = continued.find(record.substr(0, record.find('n')));
    if (it != continued.end() && started > it->second) ++outcome.effects_after_resume;
  }
  return outcome;
}

TEST(PgFencing, AHolderStoppedPastItsLeaseAppendsNothingAndStartsNoEffectWhenContinued) {
  std::string why;
  auto* cluster = testing::PgCluster::shared(&why);
  ASSERT_NE(cluster, nullptr) << why;
  const std::string uri = cluster->new_database(&why);
  ASSERT_FALSE(uri.empty()) << why;
  testing::TempDir dir;
  constexpr int kSessions = 10;
  const int per_session = testing::scaled(100);
  const auto ttl = std::chrono::milliseconds(200);
  {
    auto store = open_store(uri, {});
    ASSERT_TRUE(store) << store.error().message;
    for (int s = 0; s < kSessions; ++s) ASSERT_TRUE((*store)->create({.id = fmt::format("fence-{}", s), .cwd = "/w"}));
  }
  std::vector<FencingOutcome> outcomes(kSessions);
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      outcomes[static_cast<std::size_t>(s)] = run_session(uri, fmt::format("fence-{}", s),
                                                          fmt::format("{}/markers-{}", dir.str(), s), per_session, ttl,
                                                          0x5eed + static_cast<std::uint64_t>(s));
    });
  }
  for (auto& thread : threads) thread.join();
  FencingOutcome total;
  for (const FencingOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.failure.empty()) << outcome.failure;
    total.trials += outcome.trials;
    total.stale_records += outcome.stale_records;
    total.gaps += outcome.gaps;
    total.lost += outcome.lost;
    total.effects_after_resume += outcome.effects_after_resume;
    total.records += outcome.records;
  }
  EXPECT_EQ(total.trials, kSessions * per_session);
  EXPECT_EQ(total.stale_records, 0);
  EXPECT_EQ(total.gaps, 0);
  EXPECT_EQ(total.lost, 0);
  EXPECT_EQ(total.effects_after_resume, 0);
  std::printf("[ fencing  ] %d trials (SIGSTOP past a %lld ms lease, takeover, SIGCONT) on %d sessions: %lld records, "
              "%d stale, %d gaps, %d acknowledged lost, %d effects after SIGCONT\n",
              total.trials, static_cast<long long>(ttl.count()), kSessions, static_cast<long long>(total.records),
              total.stale_records, total.gaps, total.lost, total.effects_after_resume);
}

}  // namespace
}  // namespace cairn
