// `cairn -p` on PostgreSQL, SIGKILLed at a random instant of a run of three
// bash steps, and `cairn resume` started at once on the same machine: the
// dead process's lease is taken at once (its holder is seen to be gone), not
// waited out for its 15 s. Round after round: resume is never refused as
// locked, no step runs twice, every tool call has one result, verify passes.
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

}  // namespace
}  // namespace cairn::cli_testing
