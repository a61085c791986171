// A parent with two subagents, each running a long bash command, is sent
// SIGINT and then SIGKILLed while it aborts, at many delays (the 2–30 ms
// window included): the crash leaves the parent and its children anywhere
// between "nothing cancelled yet" and "everything finished". Then `cairn
// resume PARENT`, `cairn abort PARENT`, or `cairn worker` on PostgreSQL:
// every child's operation ends aborted, every started call has one result,
// the parent's task results name their child and its outcome, no process
// the children started is alive, and `cairn verify` (check 21, children
// included) passes on all three sessions.
#include <chrono>

#include "apps/subagent_fixture.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

namespace cairn::cli_testing {
namespace {

using testing::openai_text_reply;
using testing::openai_tool_reply;
using testing::ReceivedRequest;

enum class Recovery { resume, abort, worker };

const char* name_of(Recovery recovery) {
  switch (recovery) {
    case Recovery::resume: return "resume";
    case Recovery::abort: return "abort";
    case Recovery::worker: return "worker";
  }
  return "?";
}

// Where a session's log stood when its process died.
struct Standing {
  std::size_t started = 0, cancelled = 0, finished = 0;
  bool open() const { return started > finished; }
  bool cancelled_open() const { return open() && cancelled > 0; }
};

class SubagentAbortTest : public SubagentTest {
 protected:
  static constexpr std::chrono::milliseconds kLease{1000};

  std::filesystem::path marker(const std::string& session, char child) const {
    return path("work") / fmt::format("{}-{}", session, child);
  }

  // The parent delegates two tasks; each child marks its file and sleeps a
  // minute in bash (a replay-never call), so both are mid-command when the
  // parent is interrupted.
  HttpTestServer::Responder script() const {
    return [this](const ReceivedRequest& request) {
      const Json body = Json::parse(request.body);
      const std::string asker = testing::openai_first_user_text(body);
      if (asker.starts_with("child ")) {
        if (has_tool_result(body)) return openai_text_reply("child done");
        const std::string command = fmt::format("echo ran >> {}; sleep 60", asker.substr(6));
        return openai_tool_reply("c_bash", "bash", Json{{"command", command}});
      }
      if (has_tool_result(body)) return openai_text_reply("Both subagents answered.");
      const std::string session = asker.substr(asker.rfind(' ') + 1);
      return two_tasks(Json{{"prompt", "child " + marker(session, 'A').string()}, {"description", "A"}},
                       Json{{"prompt", "child " + marker(session, 'B').string()}, {"description", "B"}});
    };
  }

  Finished run(std::vector<std::string> args, const std::string& uri) {
    args.insert(args.end(), {"--store", uri});
    return finish(start(args, path("work")));
  }
  std::vector<std::string> with_model(std::vector<std::string> args, const HttpTestServer& server) const {
    auto model = endpoint(server);
    args.insert(args.end(), model.begin(), model.end());
    return args;
  }

  Standing standing(const std::string& session, const std::string& uri) {
    Finished log = run({"log", session, "--json"}, uri);
    EXPECT_EQ(log.status, 0) << session << ": " << log.err;
    return Standing{log_of(log.out, "operation_started").size(), log_of(log.out, "operation_cancelled").size(),
                    log_of(log.out, "operation_finished").size()};
  }

  // `cairn -p` delegating two tasks, interrupted once both children's
  // commands run, and killed `delay` after. False when it never got there.
  bool interrupt_during_abort(const HttpTestServer& server, const std::string& session, const std::string& uri,
                              std::chrono::milliseconds delay) {
    const pid_t pid = start(with_model({"--approval", "never-ask", "-p", "Delegate for " + session, "--session",
                                        session, "--store", uri},
                                       server),
                            path("work"));
    if (pid <= 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (count_of(read_file(marker(session, 'A')), "ran") == 0 ||
           count_of(read_file(marker(session, 'B')), "ran") == 0) {
      if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
        ::kill(pid, SIGKILL);
        ADD_FAILURE() << session << ": the children's commands never both ran:\n" << read_file(err_);
        finish(pid);
        return false;
      }
      std::this_thread::sleep_for(2ms);
    }
    ::kill(pid, SIGINT);
    std::this_thread::sleep_for(delay);
    ::kill(pid, SIGKILL);
    (void)finish(pid);
    return true;
  }

  void recover(Recovery recovery, const HttpTestServer& server, const std::string& session, const std::string& uri) {
    Finished done;
    switch (recovery) {
      case Recovery::resume:
        done = run(with_model({"resume", session, "--approval", "never-ask"}, server), uri);
        break;
      case Recovery::abort:
        done = run({"abort", session}, uri);
        break;
      case Recovery::worker:
        // Claimed once the dead process's lease has run out.
        std::this_thread::sleep_for(kLease + 300ms);
        done = run(with_model({"worker", "--once", "--poll", "0.1", "--approval", "never-ask"}, server), uri);
        break;
    }
    // 2: nothing was suspended (the abort had finished before the kill).
    EXPECT_TRUE(done.status == 0 || done.status == 2)
        << session << ": " << name_of(recovery) << " exited " << done.status << ":\n" << done.out << done.err;
  }

  // Everything the acceptance asks of one round, after its recovery.
  // `aborted`: the parent's run was cancelled (or its recovery aborts it);
  // else a resume (by `cairn resume` or a worker) rightly runs it on to
  // the end, children and all.
  void check_ended(const std::string& session, const std::string& uri, bool aborted) {
    const std::string parent_outcome = aborted ? "aborted" : "completed";
    const std::string child_outcome = aborted ? "aborted" : "ok";
    SCOPED_TRACE(session);
    Finished log = run({"log", session, "--json"}, uri);
    ASSERT_EQ(log.status, 0) << log.err;
    const auto finished = log_of(log.out, "operation_finished");
    EXPECT_EQ(log_of(log.out, "operation_started").size(), finished.size()) << "the parent's run is still open";
    ASSERT_FALSE(finished.empty());
    EXPECT_EQ(finished.back()["outcome"], parent_outcome);

    const auto children = children_of(session, uri);
    ASSERT_EQ(children.size(), 2u) << "both children ran their commands, so both exist";
    for (const char* call : {"t_a", "t_b"}) {
      const Json result = result_of(log.out, call);
      ASSERT_FALSE(result.is_null()) << "task call " << call << " has no result";
      const Json details = result.value("details", Json::object());
      const std::string child = details.value("childSession", "");
      EXPECT_NE(std::find(children.begin(), children.end(), child), children.end())
          << "task call " << call << "'s result names no child session of it: " << result.dump();
      EXPECT_EQ(details.value("outcome", ""), child_outcome) << result.dump();
      EXPECT_FALSE(details.contains("interrupted")) << "a resume-kind call is never interrupted: " << result.dump();
    }
    for (const std::string& child : children) {
      Finished child_log = run({"log", child, "--json"}, uri);
      ASSERT_EQ(child_log.status, 0) << child_log.err;
      const auto child_finished = log_of(child_log.out, "operation_finished");
      EXPECT_EQ(log_of(child_log.out, "operation_started").size(), child_finished.size())
          << "child " << child << "'s operation is still open";
      ASSERT_FALSE(child_finished.empty()) << child;
      EXPECT_EQ(child_finished.back()["outcome"], parent_outcome) << child;
      EXPECT_NE(result_text(child_log.out, "c_bash"), "(no result)") << child << "'s bash call has no result";
    }
    for (const std::string& id : {session, children[0], children[1]}) {
      Finished verified = run({"verify", id}, uri);
      EXPECT_EQ(verified.status, 0) << id << ": " << verified.out << verified.err;
      EXPECT_NE(verified.out.find("ok    21 "), std::string::npos) << verified.out;
    }
    EXPECT_TRUE(leftovers_gone_after(std::chrono::steady_clock::now(), 3s)) << "a child's command outlived the round";
  }

  // One round per delay, recovered as `recoveries` take turns. Returns how
  // many rounds the kill caught with a child's abort begun and not ended.
  int rounds(const std::string& uri, const std::vector<int>& delays, const std::vector<Recovery>& recoveries) {
    HttpTestServer server(script());
    int caught = 0;
    for (std::size_t i = 0; i < delays.size(); ++i) {
      const Recovery recovery = recoveries[i % recoveries.size()];
      const std::string session = fmt::format("abort-{}-{}ms-{}", name_of(recovery), delays[i], i);
      SCOPED_TRACE(session);
      if (!interrupt_during_abort(server, session, uri, std::chrono::milliseconds(delays[i]))) continue;
      const auto children = children_of(session, uri);
      for (const std::string& child : children) caught += standing(child, uri).cancelled_open();
      const Standing parent = standing(session, uri);
      recover(recovery, server, session, uri);
      check_ended(session, uri, parent.cancelled > 0 || recovery == Recovery::abort);
      if (HasFatalFailure()) break;
    }
    return caught;
  }

  // `delays` spread over the 2–30 ms window and past it, as many as the
  // build's scale allows (the sanitizer builds run a third).
  static std::vector<int> delays(std::vector<int> all) {
    const auto keep = static_cast<std::size_t>(testing::scaled(static_cast<int>(all.size())));
    std::vector<int> kept;
    for (std::size_t i = 0; i < keep; ++i) kept.push_back(all[i * all.size() / keep]);
    return kept;
  }
};

TEST_F(SubagentAbortTest, AParentKilledWhileItAbortsItsSubagentsEndsThemOnResumeOrAbort) {
  const int caught = rounds(store(), delays({2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 50, 100, 250}),
                            {Recovery::resume, Recovery::abort});
  // The rounds above must have met the state they are about: a child whose
  // abort the kill interrupted.
  EXPECT_GT(caught, 0) << "no round killed the parent while a child's abort was under way";
  std::printf("[ subagent abort ] %d children were caught mid-abort\n", caught);
}

TEST_F(SubagentAbortTest, AParentKilledWhileItAbortsItsSubagentsIsEndedByAWorkerOnPostgres) {
  std::string why;
  const std::string uri = testing::PgCluster::shared_database(&why);
  ASSERT_FALSE(uri.empty()) << why;
  extra_env_.push_back(fmt::format("CAIRN_LEASE_TTL={}", kLease.count() / 1000));
  (void)rounds(uri, delays({2, 10, 20, 30}), {Recovery::worker});
}

}  // namespace
}  // namespace cairn::cli_testing
