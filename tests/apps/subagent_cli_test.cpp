// The `task` tool of the `cairn` command, as a process against the local
// model server: two subagents of one response, a SIGKILL while one of them
// runs bash, `cairn resume` of the parent finishing both with the command
// run once; lineage in `cairn sessions` and `cairn tree`; agent definitions
// from .cairn/agents.
#include <mutex>
#include <set>

#include "apps/subagent_fixture.hpp"
#include "support/openai_script.hpp"

namespace cairn::cli_testing {
namespace {

using testing::openai_text_reply;
using testing::openai_tool_reply;
using testing::ReceivedRequest;

class SubagentCliTest : public SubagentTest {
 protected:
  std::filesystem::path marker() const { return path("work") / "marker"; }

  // The parent delegates two tasks; A runs a long bash command that marks
  // the marker file first, B answers at once; each answers after its tool.
  HttpTestServer::Responder script() const {
    const std::string command = fmt::format("echo ran >> {}; sleep 60", marker().string());
    return [command](const ReceivedRequest& request) {
      const Json body = Json::parse(request.body);
      const std::string asker = testing::openai_first_user_text(body);
      if (asker.starts_with("child A")) {
        return has_tool_result(body) ? openai_text_reply("A is done")
                                     : openai_tool_reply("c_bash", "bash", Json{{"command", command}});
      }
      if (asker.starts_with("child B")) return openai_text_reply("hello from B");
      if (has_tool_result(body)) return openai_text_reply("Both subagents answered.");
      return two_tasks(Json{{"prompt", "child A: run the command"}, {"description", "run the command"}},
                       Json{{"prompt", "child B: say hello"}, {"description", "say hello"}});
    };
  }
};

TEST_F(SubagentCliTest, SubagentCliAKillWhileAChildsBashRunsIsResumedThroughTheParentRunningTheCommandOnce) {
  HttpTestServer server(script());
  auto args = endpoint(server);
  args.insert(args.begin(), {"--approval", "never-ask", "-p", "Delegate two tasks", "--session", "sub-kill", "--store", store()});
  const pid_t pid = start(args, path("work"));
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (count_of(read_file(marker()), "ran") == 0) {
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
      ::kill(pid, SIGKILL);
      FAIL() << "child A's command never ran:\n" << read_file(err_);
    }
    std::this_thread::sleep_for(5ms);
  }
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(pid, SIGKILL);
  EXPECT_EQ(finish(pid).status, 128 + SIGKILL);
  EXPECT_TRUE(leftovers_gone_after(killed_at, 2s)) << "child A's command outlived the killed agent";

  const auto children = children_of("sub-kill");
  ASSERT_EQ(children.size(), 2u);

  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "sub-kill", "--approval", "never-ask"});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Both subagents answered."), std::string::npos) << resumed.out;
  EXPECT_EQ(count_of(read_file(marker()), "ran"), 1) << "the child's command ran again";

  Finished log = cairn({"log", "sub-kill", "--json"});
  ASSERT_EQ(log.status, 0) << log.err;
  EXPECT_EQ(result_text(log.out, "t_a"), "A is done");
  EXPECT_EQ(result_text(log.out, "t_b"), "hello from B");
  EXPECT_EQ(children_of("sub-kill"), children) << "no subagent session was created again";
  for (const auto& child : children) {
    Finished child_log = cairn({"log", child, "--json"});
    EXPECT_EQ(log_of(child_log.out, "operation_started").size(), 1u) << child;
    ASSERT_EQ(log_of(child_log.out, "operation_finished").size(), 1u) << child;
    EXPECT_EQ(log_of(child_log.out, "operation_finished")[0]["outcome"], "completed");
  }
  for (const std::string& id : {std::string("sub-kill"), children[0], children[1]}) {
    Finished verified = cairn({"verify", id});
    EXPECT_EQ(verified.status, 0) << id << ": " << verified.out << verified.err;
  }

  // Lineage: the children under their parent, and where in its tree they ran.
  Finished sessions = cairn({"sessions"});
  const auto lines = lines_of(sessions.out);
  auto parent_line = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("sub-kill "); });
  ASSERT_NE(parent_line, lines.end()) << sessions.out;
  for (int i = 1; i <= 2; ++i) {
    ASSERT_NE(parent_line + i, lines.end()) << sessions.out;
    EXPECT_TRUE((parent_line + i)->starts_with("  ")) << sessions.out;
    EXPECT_NE((parent_line + i)->find("(subagent of sub-kill, call t_"), std::string::npos) << sessions.out;
  }
  Finished tree = cairn({"tree", "sub-kill"});
  EXPECT_EQ(count_of(tree.out, "⇢ subagent session"), 2) << tree.out;
  Finished child_tree = cairn({"tree", children[0]});
  EXPECT_NE(child_tree.out.find("subagent of session sub-kill"), std::string::npos) << child_tree.out;
}

// --approval ask: the subagent's bash waits for a human; the parent's
// process exits 3 naming it, `cairn approve` answers it through the parent,
// and `cairn resume` of the parent runs it once.
TEST_F(SubagentCliTest, SubagentCliASubagentsApprovalIsAskedAndAnsweredThroughTheParent) {
  const std::string command = fmt::format("echo ran >> {}", marker().string());
  HttpTestServer server([command](const ReceivedRequest& request) {
    const Json body = Json::parse(request.body);
    if (testing::openai_first_user_text(body).starts_with("child")) {
      return has_tool_result(body) ? openai_text_reply("child done")
                                   : openai_tool_reply("c_bash", "bash", Json{{"command", command}});
    }
    if (has_tool_result(body)) return openai_text_reply("The child is done.");
    return openai_tool_reply("t_c", "task", Json{{"prompt", "child: run it"}});
  });
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Delegate it", "--session", "sub-ask"});
  Finished parked = cairn(args);
  ASSERT_EQ(parked.status, 3) << parked.err;
  EXPECT_NE(parked.err.find("bash (c_bash): echo ran"), std::string::npos) << parked.err;
  EXPECT_NE(parked.err.find("(subagent session "), std::string::npos) << parked.err;
  EXPECT_NE(parked.err.find("cairn approve sub-ask"), std::string::npos) << parked.err;
  EXPECT_EQ(count_of(read_file(marker()), "ran"), 0);

  Finished approved = cairn({"approve", "sub-ask"});
  ASSERT_EQ(approved.status, 0) << approved.err;
  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "sub-ask"});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("The child is done."), std::string::npos) << resumed.out;
  EXPECT_EQ(count_of(read_file(marker()), "ran"), 1);
  const auto children = children_of("sub-ask");
  ASSERT_EQ(children.size(), 1u);
  Finished child_log = cairn({"log", children[0], "--json"});
  ASSERT_EQ(log_of(child_log.out, "input_resolved").size(), 1u) << child_log.out;
  EXPECT_EQ(log_of(child_log.out, "input_resolved")[0]["decision"], "allow");
  EXPECT_EQ(cairn({"verify", children[0]}).status, 0);
  EXPECT_EQ(cairn({"verify", "sub-ask"}).status, 0);
}

TEST_F(SubagentCliTest, SubagentCliAnAgentDefinitionGivesTheSubagentItsPromptToolsAndName) {
  std::filesystem::create_directories(path("work") / ".cairn" / "agents");
  std::ofstream(path("work") / ".cairn" / "agents" / "reviewer.md")
      << "---\nname: reviewer\ndescription: Reviews code\ntools:\n  - read\n  - grep\nmodel: inherit\n---\nYou are the "
         "reviewer. Be brief.\n";
  std::ofstream(path("work") / ".cairn" / "agents" / "broken.md") << "no front matter here\n";
  std::mutex mu;
  std::vector<Json> child_requests;
  HttpTestServer server([&](const ReceivedRequest& request) {
    const Json body = Json::parse(request.body);
    if (testing::openai_first_user_text(body).starts_with("review")) {
      std::lock_guard lock(mu);
      child_requests.push_back(body);
      return openai_text_reply("looks fine");
    }
    if (has_tool_result(body)) return openai_text_reply("The reviewer says it looks fine.");
    return openai_tool_reply("t_r", "task", Json{{"prompt", "review the change"}, {"agent", "reviewer"}});
  });
  auto args = endpoint(server);
  args.insert(args.begin(), {"--approval", "never-ask", "-p", "Get it reviewed", "--session", "sub-def"});
  Finished run = cairn(args);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("broken.md:1"), std::string::npos) << run.err;  // skipped, with where and why

  std::vector<Json> seen;  // taken under the server threads' lock (TSan saw the unlocked read)
  {
    std::lock_guard lock(mu);
    seen = child_requests;
  }
  ASSERT_EQ(seen.size(), 1u);
  const Json& request = seen[0];
  const std::string system = request["messages"][0].value("content", "");
  EXPECT_TRUE(system.starts_with("You are the reviewer. Be brief.")) << system;
  std::set<std::string> tools;
  for (const auto& tool : request.value("tools", Json::array())) tools.insert(tool["function"]["name"].get<std::string>());
  EXPECT_EQ(tools, (std::set<std::string>{"read", "grep"}));

  const auto children = children_of("sub-def");
  ASSERT_EQ(children.size(), 1u);
  Finished listed = cairn({"sessions"});
  EXPECT_NE(listed.out.find("(subagent of sub-def, call t_r, agent reviewer)"), std::string::npos) << listed.out;
  Finished log = cairn({"log", "sub-def", "--json"});
  EXPECT_EQ(result_text(log.out, "t_r"), "looks fine");
}

TEST_F(SubagentCliTest, SubagentCliAnUnknownAgentIsAnErrorResultTheModelReads) {
  HttpTestServer server([&](const ReceivedRequest& request) {
    const Json body = Json::parse(request.body);
    if (has_tool_result(body)) return openai_text_reply("No such agent.");
    return openai_tool_reply("t_x", "task", Json{{"prompt", "do it"}, {"agent", "nobody"}});
  });
  auto args = endpoint(server);
  args.insert(args.begin(), {"--approval", "never-ask", "-p", "Delegate", "--session", "sub-none"});
  Finished run = cairn(args);
  ASSERT_EQ(run.status, 0) << run.err;
  Finished log = cairn({"log", "sub-none", "--json"});
  EXPECT_NE(result_text(log.out, "t_x").find("there is no agent named 'nobody'"), std::string::npos)
      << result_text(log.out, "t_x");
  EXPECT_TRUE(children_of("sub-none").empty());
}

}  // namespace
}  // namespace cairn::cli_testing
