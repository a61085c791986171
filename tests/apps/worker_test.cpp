// `cairn worker` on a PostgreSQL store: runs whose process died are claimed
// and resumed by workers; a worker killed in the middle of runs is replaced
// by others within the lease's lifetime, the poll interval and a second; no
// command (a replay-never tool) runs twice.
#include <algorithm>
#include <chrono>

#include "apps/agent_cli_fixture.hpp"
#include "support/openai_script.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

namespace cairn::cli_testing {
namespace {

using testing::openai_text_reply;
using testing::openai_tool_reply;
using testing::ReceivedRequest;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "2026-12-05T07:30:00.123Z" -> ms since the epoch.
std::int64_t iso_ms(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &ms) != 7) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<std::int64_t>(::timegm(&tm)) * 1000 + ms;
}

class WorkerTest : public AgentCliTest {
 protected:
  void SetUp() override {
    std::string why;
    uri_ = testing::PgCluster::shared_database(&why);
    ASSERT_FALSE(uri_.empty()) << why;
    extra_env_.push_back("CAIRN_LEASE_TTL=" + std::string(kTtlSeconds));
  }
  static constexpr const char* kTtlSeconds = "1";
  static constexpr std::chrono::milliseconds kTtl{1000};
  static constexpr double kPollSeconds = 0.2;

  std::filesystem::path marker(const std::string& task, int step) const {
    return path("work") / fmt::format("{}-{}", task, step);
  }
  // Each task: a long command (step 1), then another (step 2), then an answer.
  HttpTestServer::Responder script() const {
    return [this](const ReceivedRequest& request) {
      const Json body = Json::parse(request.body);
      const std::string task = testing::openai_first_user_text(body);
      const int done = testing::openai_tool_results(body);
      if (done >= 2) return openai_text_reply(task + " is done");
      // "quick" tasks' second command ends at once.
      const bool long_command = done == 0 || !task.starts_with("quick");
      const std::string command =
          fmt::format("echo ran >> {}{}", marker(task, done + 1).string(), long_command ? "; sleep 60" : "");
      return openai_tool_reply(fmt::format("c{}", done + 1), "bash", Json{{"command", command}});
    };
  }
  std::vector<std::string> with(std::vector<std::string> args, const HttpTestServer& server) const {
    args.insert(args.end(), {"--store", uri_, "--approval", "never-ask"});
    auto model = endpoint(server);
    args.insert(args.end(), model.begin(), model.end());
    return args;
  }
  pid_t start_worker(const HttpTestServer& server) {
    return start(with({"worker", "--poll", fmt::format("{}", kPollSeconds)}, server), path("work"));
  }
  // Waits until every marker of `step` holds a line.
  bool wait_for_markers(const std::vector<std::string>& tasks, int step, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::all_of(tasks.begin(), tasks.end(), [&](const std::string& task) {
            return count_of(read_file(marker(task, step)), "ran") > 0;
          })) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void kill_all(std::vector<pid_t>& pids) {
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    for (pid_t pid : pids) finish(pid);
    pids.clear();
  }

  std::string uri_;
};

TEST_F(WorkerTest, WorkersResumeDeadRunsAndReplaceAKilledWorkerWithoutRunningACommandTwice) {
  HttpTestServer server(script());
  constexpr int kTasks = 4;
  std::vector<std::string> tasks;
  for (int t = 0; t < kTasks; ++t) tasks.push_back(fmt::format("task{}", t));

  // Four runs whose process dies in their first command.
  std::vector<pid_t> agents;
  for (const auto& task : tasks) agents.push_back(start(with({"-p", task, "--session", task}, server), path("work")));
  ASSERT_TRUE(wait_for_markers(tasks, 1, std::chrono::seconds(60))) << read_file(err_);
  kill_all(agents);

  // Four workers claim one session each (the dead processes' leases expire
  // first), resume it — the first command is "interrupted", not run again —
  // and each gets stuck in the second command.
  std::vector<pid_t> first_workers;
  for (int w = 0; w < kTasks; ++w) first_workers.push_back(start_worker(server));
  ASSERT_TRUE(wait_for_markers(tasks, 2, std::chrono::seconds(60))) << read_file(err_);

  // Replacements wait; the first workers die mid-run.
  std::vector<pid_t> replacements;
  for (int w = 0; w < kTasks; ++w) replacements.push_back(start_worker(server));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::int64_t killed_at = wall_ms();
  kill_all(first_workers);

  // Every session ends; how long after the kill its first new record came.
  std::vector<std::int64_t> resumed_after;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (const auto& task : tasks) {
    for (;;) {
      Finished log = finish(start({"log", task, "--json", "--store", uri_}, path("work")));
      ASSERT_EQ(log.status, 0) << log.err;
      if (log.out.find(task + " is done") != std::string::npos) {
        for (const auto& line : lines_of(log.out)) {
          const Json record = Json::parse(line);
          const std::int64_t at = iso_ms(record.value("timestamp", ""));
          if (at >= killed_at) {
            resumed_after.push_back(at - killed_at);
            break;
          }
        }
        break;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << task << " never finished:\n" << log.out;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  kill_all(replacements);

  for (const auto& task : tasks) {
    EXPECT_EQ(count_of(read_file(marker(task, 1)), "ran"), 1) << task << " ran its first command again";
    EXPECT_EQ(count_of(read_file(marker(task, 2)), "ran"), 1) << task << " ran its second command again";
    Finished verify = finish(start({"verify", task, "--store", uri_}, path("work")));
    EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  }
  ASSERT_EQ(resumed_after.size(), static_cast<std::size_t>(kTasks));
  std::sort(resumed_after.begin(), resumed_after.end());
  const std::int64_t p99 = resumed_after.back();  // of four, the largest
  const std::int64_t bound = kTtl.count() + static_cast<std::int64_t>(kPollSeconds * 1000) + 1000;
  // A time bound holds where time is the machine's own: the sanitizer builds
  // (a scaled run) take several times longer to start a harness, and print
  // their figure only.
  if (cairn::testing::test_scale() == 1.0) {
    EXPECT_LE(p99, bound);
  }
  std::printf("[ worker   ] %d runs taken over after SIGKILL of their workers: resumed after %lld..%lld ms (bound: "
              "lease %lld + poll %lld + 1000 ms = %lld ms); every command ran once\n",
              kTasks, static_cast<long long>(resumed_after.front()), static_cast<long long>(p99),
              static_cast<long long>(kTtl.count()), static_cast<long long>(kPollSeconds * 1000),
              static_cast<long long>(bound));
}

// `cairn serve` on a PostgreSQL store claims like a worker: a run whose
// process died while the server was already up is resumed by the server
// once its lease expires.
TEST_F(WorkerTest, ServeOnASharedStoreClaimsARunLeftByADeadProcess) {
  HttpTestServer server(script());
  const std::string task = "quick-serve";
  const pid_t agent = start(with({"-p", task, "--session", task}, server), path("work"));
  ASSERT_TRUE(wait_for_markers({task}, 1, std::chrono::seconds(60))) << read_file(err_);
  // The server starts while the run's process still holds the session.
  const pid_t serve = start(with({"serve", "--listen", "127.0.0.1:0", "--token-file", (path("home") / "tokens").string(),
                                  "--claim-poll", "0.2"},
                                 server),
                            path("work"));
  const auto serve_err = err_;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(agent, SIGKILL);
  finish(agent);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    Finished log = finish(start({"log", task, "--json", "--store", uri_}, path("work")));
    ASSERT_EQ(log.status, 0) << log.err;
    if (log.out.find(task + " is done") != std::string::npos) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "never finished:\n" << log.out << read_file(serve_err);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(serve, SIGTERM);
  finish(serve);
  // Taken over by a claim once the dead holder's lease expired or, when the
  // server's start came after the kill (a slow machine), at its start: a
  // holder of this machine that is gone keeps its lease no longer.
  const std::string said = read_file(serve_err);
  EXPECT_TRUE(said.find("claimed session " + task) != std::string::npos ||
              said.find("session " + task + " ref main: resuming run") != std::string::npos)
      << said;
  EXPECT_EQ(count_of(read_file(marker(task, 1)), "ran"), 1);
  EXPECT_EQ(count_of(read_file(marker(task, 2)), "ran"), 1);
  Finished verify = finish(start({"verify", task, "--store", uri_}, path("work")));
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
}

TEST_F(WorkerTest, AWorkerOnAStoreOfOneWriterSaysItNeedsASharedOne) {
  Finished finished = finish(start({"worker", "--store", "sqlite:" + (path("data") / "s.db").string(), "--once"},
                                   path("work")));
  EXPECT_EQ(finished.status, 2);
  EXPECT_NE(finished.err.find("postgres://"), std::string::npos) << finished.err;
}

}  // namespace
}  // namespace cairn::cli_testing
