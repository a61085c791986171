// `cairn -p` on PostgreSQL, SIGKILLed at a random instant of a run of three
// bash steps, and `cairn resume` started at once on the same machine: the
// dead process's lease is taken at once (its holder is seen to be gone), not
// waited out for its 15 s. Round after round: resume is never refused as
// locked, no step runs twice, every tool call has one result, verify passes.
// A holder in another PID and UTS namespace (another "machine") cannot be
// seen to be gone: resume waits for its lease, says so once, and goes on.
#include <random>
#include <set>

#include "apps/agent_cli_fixture.hpp"
#include "support/openai_script.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

namespace cairn::cli_testing {
namespace {

using testing::openai_text_reply;
using testing::openai_tool_reply;
using testing::ReceivedRequest;

constexpr int kSteps = 3;

class PgResumeTest : public AgentCliTest {
 protected:
  void SetUp() override {
    std::string why;
    uri_ = testing::PgCluster::shared_database(&why);
    ASSERT_FALSE(uri_.empty()) << why;
  }

  std::filesystem::path markers(const std::string& session) const { return path("work") / (session + ".markers"); }

  // Step k (the results so far) appends "SESSION-k" to the session's markers
  // and sleeps a little; after kSteps results, the answer.
  HttpTestServer::Responder script() const {
    return [this](const ReceivedRequest& request) {
      const Json body = Json::parse(request.body);
      const std::string session = testing::openai_first_user_text(body);
      const int done = testing::openai_tool_results(body);
      if (done >= kSteps) return openai_text_reply("all steps done");
      const std::string command =
          fmt::format("echo {}-{} >> {}; sleep 0.02", session, done, markers(session).string());
      return openai_tool_reply(fmt::format("step{}", done), "bash", Json{{"command", command}});
    };
  }

  std::vector<std::string> with(std::vector<std::string> args, const HttpTestServer& server) const {
    args.insert(args.end(), {"--store", uri_, "--approval", "never-ask"});
    auto model = endpoint(server);
    args.insert(args.end(), model.begin(), model.end());
    return args;
  }

  std::string uri_;
};

TEST_F(PgResumeTest, AKilledRunResumesAtOnceOnTheSameMachineRunningNoStepTwice) {
  HttpTestServer server(script());
  const int rounds = testing::scaled(200);
  std::mt19937 random(44);
  int completed = 0, nothing_left = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string session = fmt::format("pg-kill-{}", round);
    SCOPED_TRACE(session);
    const pid_t pid = start(with({"-p", session, "--session", session}, server), path("work"));
    ASSERT_GT(pid, 0);
    // Killed at a random instant after the session exists: before the
    // run, in a step, between steps, or after the answer.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (read_file(err_).find("cairn: session ") == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
        ::kill(pid, SIGKILL);
        FAIL() << "cairn -p never named its session:\n" << read_file(err_);
      }
      std::this_thread::sleep_for(1ms);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 150)(random)));
    ::kill(pid, SIGKILL);
    (void)finish(pid);

    Finished resumed = finish(start(with({"resume", session}, server), path("work")));
    ASSERT_TRUE(resumed.status == 0 || resumed.status == 2)
        << "resume exited " << resumed.status << ":\n" << resumed.err;
    EXPECT_EQ(resumed.err.find("held by"), std::string::npos) << resumed.err;
    (resumed.status == 0 ? completed : nothing_left) += 1;

    std::set<std::string> seen;
    for (const auto& line : lines_of(read_file(markers(session)))) {
      EXPECT_TRUE(seen.insert(line).second) << "step " << line << " ran twice";
    }
    Finished verified = finish(start({"verify", session, "--store", uri_}, path("work")));
    EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
    if (HasFailure()) break;
  }
  std::printf("[ figures  ] %d SIGKILLs on PostgreSQL, each resumed at once: %d resumed to the end, %d had nothing "
              "left to resume\n",
              rounds, completed, nothing_left);
}

TEST_F(PgResumeTest, AKilledRunOfAnotherMachineIsWaitedForThenResumed) {
  const std::vector<std::string> unshare = {"/usr/bin/unshare", "--pid", "--uts", "--fork", "--kill-child=SIGKILL"};
  {
    launcher_ = unshare;
    const Finished probe = finish(start({"--version"}, path("work")));
    launcher_.clear();
    if (probe.status != 0) GTEST_SKIP() << "no PID namespace can be made here: " << probe.err;
  }
  extra_env_.push_back("CAIRN_LEASE_TTL=1");
  HttpTestServer server([this](const ReceivedRequest& request) {
    const Json body = Json::parse(request.body);
    if (testing::openai_tool_results(body) > 0) return openai_text_reply("resumed");
    const std::string command = fmt::format("echo ran >> {}; sleep 30", markers("elsewhere").string());
    return openai_tool_reply("slow", "bash", Json{{"command", command}});
  });
  launcher_ = unshare;
  const pid_t pid = start(with({"-p", "elsewhere", "--session", "elsewhere"}, server), path("work"));
  launcher_.clear();
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (read_file(markers("elsewhere")).empty()) {
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
      ::kill(pid, SIGKILL);
      FAIL() << "the command never ran:\n" << read_file(err_);
    }
    std::this_thread::sleep_for(2ms);
  }
  ::kill(pid, SIGKILL);  // unshare, and with it the cairn it started
  (void)finish(pid);

  const auto resumed_at = std::chrono::steady_clock::now();
  Finished resumed = finish(start(with({"resume", "elsewhere"}, server), path("work")));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - resumed_at);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(count_of(resumed.err, "waiting up to 6.0 s for it"), 1) << resumed.err;
  EXPECT_NE(resumed.err.find("is held by pid"), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.out.find("resumed"), std::string::npos) << resumed.out;
  EXPECT_EQ(count_of(read_file(markers("elsewhere")), "ran"), 1);
  std::printf("[ figures  ] resume of a run killed in another PID namespace (lease 1 s): %lld ms\n",
              static_cast<long long>(took.count()));
  Finished verified = finish(start({"verify", "elsewhere", "--store", uri_}, path("work")));
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
}

}  // namespace
}  // namespace cairn::cli_testing
