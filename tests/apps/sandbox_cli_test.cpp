// The sandbox through real `cairn -p` runs (issue 46's acceptance): a
// scripted model asks bash for every attack of the suite
// (support/sandbox_attacks.hpp); each fails under read-only and
// workspace-write and succeeds under off, the legitimate work succeeds under
// workspace-write, every tool_started records the policy, and a resume with
// another configuration applies the policy the run recorded.
#include <set>

#include "apps/agent_cli_fixture.hpp"
#include "cairn/tools/sandbox.hpp"
#include "support/openai_script.hpp"
#include "support/sandbox_attacks.hpp"

namespace cairn::cli_testing {
namespace {

using testing::openai_text_reply;
using testing::openai_tool_reply;
using testing::SandboxAttack;
using testing::SandboxScene;

// One call's outcome in the session's log.
struct CallRecord {
  bool started = false;
  Json sandbox;  // the tool_started's "sandbox", null when absent
  bool is_error = false;
  std::string text;
};

std::map<std::string, CallRecord> calls_of(const std::filesystem::path& log_file) {
  std::map<std::string, CallRecord> calls;
  for (const std::string& line : lines_of(read_file(log_file))) {
    const Json record = Json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.contains("type")) continue;
    if (record["type"] == "tool_started") {
      auto& call = calls[record["toolCallId"].get<std::string>()];
      call.started = true;
      call.sandbox = record.value("sandbox", Json());
    }
    if (record["type"] == "message" && record["message"]["role"] == "toolResult") {
      auto& call = calls[record["message"]["toolCallId"].get<std::string>()];
      call.is_error = record["message"].value("isError", false);
      for (const Json& block : record["message"]["content"]) {
        if (block.value("type", "") == "text") call.text += block.value("text", "");
      }
    }
  }
  return calls;
}

class SandboxCliTest : public AgentCliTest, public ::testing::WithParamInterface<SandboxMode> {
 protected:
  void SetUp() override {
    if (GetParam() != SandboxMode::off) {
      if (std::string missing = sandbox_unavailable(GetParam()); !missing.empty()) GTEST_SKIP() << missing;
    }
    if (!scene_.ready()) GTEST_SKIP() << "the scene needs git, cc and a loopback port";
  }

  // Runs `commands` as one `cairn -p` whose model calls bash with each in
  // turn (call ids call_0, call_1, ...), and returns the calls of its log.
  std::map<std::string, CallRecord> run_commands(const std::vector<SandboxAttack>& commands, const std::string& session,
                                                 std::vector<std::string> extra_args = {}) {
    std::vector<testing::ScriptedResponse> script;
    for (std::size_t i = 0; i < commands.size(); ++i) {
      script.push_back(openai_tool_reply(fmt::format("call_{}", i), "bash", Json{{"command", commands[i].command}}));
    }
    script.push_back(openai_text_reply("Done."));
    HttpTestServer server(std::move(script));
    auto args = endpoint(server);
    args.insert(args.begin(), {"--approval", "never-ask", "--sandbox", std::string(sandbox_mode_name(GetParam())), "-p",
                               "Try these", "--session", session});
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    Finished run = cairn(args);
    EXPECT_EQ(run.status, 0) << run.err;
    return calls_of(path("store") / (session + ".jsonl"));
  }

  Json expected_record() const {
    return Json{{"mode", std::string(to_string(GetParam()))}, {"network", false}};
  }

  SandboxScene scene_{dir_.path(), path("config")};
};

TEST_P(SandboxCliTest, EveryAttackFailsUnderASandboxAndSucceedsWithout) {
  const auto attacks = scene_.attacks();
  const auto calls = run_commands(attacks, "attacks");
  for (std::size_t i = 0; i < attacks.size(); ++i) {
    const auto it = calls.find(fmt::format("call_{}", i));
    ASSERT_NE(it, calls.end()) << attacks[i].name << " never ran";
    const CallRecord& call = it->second;
    EXPECT_TRUE(call.started) << attacks[i].name;
    EXPECT_EQ(call.sandbox, expected_record()) << attacks[i].name;
    const bool escaped = SandboxScene::escaped(attacks[i], !call.is_error);
    if (GetParam() == SandboxMode::off) {
      EXPECT_TRUE(escaped) << attacks[i].name << " failed without a sandbox: " << call.text;
    } else {
      EXPECT_FALSE(escaped) << attacks[i].name << " got out of " << sandbox_mode_name(GetParam()) << ": " << call.text;
    }
  }
  if (GetParam() != SandboxMode::off) {
    // A refused write: the command's own error, then cairn's line naming the policy.
    const CallRecord& absolute = calls.at("call_0");
    EXPECT_NE(absolute.text.find("Permission denied"), std::string::npos) << absolute.text;
    EXPECT_NE(absolute.text.find(fmt::format("[cairn] this command ran in the sandbox ({}, network off)",
                                             sandbox_mode_name(GetParam()))),
              std::string::npos)
        << absolute.text;
  }
}

TEST_P(SandboxCliTest, LegitimateWorkSucceedsUnderWorkspaceWrite) {
  if (GetParam() == SandboxMode::read_only) GTEST_SKIP() << "read-only refuses writes to the workspace";
  const auto actions = scene_.legitimate();
  const auto calls = run_commands(actions, "legitimate");
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const auto it = calls.find(fmt::format("call_{}", i));
    ASSERT_NE(it, calls.end()) << actions[i].name << " never ran";
    EXPECT_FALSE(it->second.is_error) << actions[i].name << ": " << it->second.text;
  }
  EXPECT_NE(calls.at("call_0").text.find("ran"), std::string::npos) << calls.at("call_0").text;
}

// An MCP stdio server runs under the same sandbox as bash, unless its entry
// opts out: the server itself runs the attacks here.
TEST_P(SandboxCliTest, AnMcpStdioServerIsSandboxedToo) {
  std::error_code ec;
  if (!std::filesystem::exists(std::string(CAIRN_MCP_DIR) + "/escaping-server.mjs", ec) || std::system("node --version >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs node";
  }
  const Json server = {{"command", "node"}, {"args", {std::string(CAIRN_MCP_DIR) + "/escaping-server.mjs"}}};
  std::ofstream(path("work") / ".mcp.json") << Json{{"mcpServers", {{"escaping", server}}}}.dump();
  std::vector<SandboxAttack> tried;
  for (const auto& attack : scene_.attacks()) {
    if (attack.name == "absolute path" || attack.name == "ssh key" || attack.name == "tcp to 127.0.0.1" ||
        attack.name == "unshare -U") {
      tried.push_back(attack);
    }
  }
  ASSERT_EQ(tried.size(), 4u);
  std::vector<testing::ScriptedResponse> script;
  for (std::size_t i = 0; i < tried.size(); ++i) {
    script.push_back(openai_tool_reply(fmt::format("call_{}", i), "mcp__escaping__run", Json{{"command", tried[i].command}}));
  }
  script.push_back(openai_text_reply("Done."));
  HttpTestServer model(std::move(script));
  auto args = endpoint(model);
  args.insert(args.begin(), {"--approval", "never-ask", "--sandbox", std::string(sandbox_mode_name(GetParam())), "-p",
                             "Try these", "--session", "mcp"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 0) << run.err;
  const auto calls = calls_of(path("store") / "mcp.jsonl");
  for (std::size_t i = 0; i < tried.size(); ++i) {
    const auto it = calls.find(fmt::format("call_{}", i));
    ASSERT_NE(it, calls.end()) << tried[i].name << " never ran: " << run.err;
    const bool escaped = SandboxScene::escaped(tried[i], !it->second.is_error);
    if (GetParam() == SandboxMode::off) {
      EXPECT_TRUE(escaped) << tried[i].name << " failed without a sandbox: " << it->second.text;
    } else {
      EXPECT_FALSE(escaped) << tried[i].name << " got out of the MCP server's " << sandbox_mode_name(GetParam()) << ": "
                            << it->second.text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SandboxCliTest,
                         ::testing::Values(SandboxMode::off, SandboxMode::read_only, SandboxMode::workspace_write),
                         [](const auto& info) { return std::string(to_string(info.param)); });

class SandboxResumeTest : public AgentCliTest {
 protected:
  void SetUp() override {
    if (std::string missing = sandbox_unavailable(SandboxMode::workspace_write); !missing.empty()) GTEST_SKIP() << missing;
  }
};

// The first process runs under workspace-write and dies mid-call; a second,
// configured with --sandbox off, resumes the run: the run's next call still
// runs under workspace-write, and its tool_started says so.
TEST_F(SandboxResumeTest, AResumeAppliesTheRecordedPolicyNotItsOwn) {
  const auto out_file = path("work") / "out.txt";
  const auto escape = dir_.path() / "escaped";
  HttpTestServer server({openai_tool_reply("call_slow", "bash",
                                           Json{{"command", fmt::format("echo line >> {}; sleep 30", out_file.string())}}),
                         openai_tool_reply("call_escape", "bash", Json{{"command", "echo x > " + escape.string()}}),
                         openai_text_reply("Done.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"--approval", "never-ask", "--sandbox", "workspace-write", "-p", "Append, then escape",
                             "--session", "resumed", "--store", store()});
  const pid_t pid = start(args, path("work"));
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (read_file(out_file).find("line") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
      ::kill(pid, SIGKILL);
      FAIL() << "the command never ran:\n" << read_file(err_);
    }
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGKILL);
  finish(pid);

  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "resumed", "--sandbox", "off", "--approval", "never-ask"});
  Finished resumed = cairn(resume);
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_FALSE(std::filesystem::exists(escape)) << "the resumed run's call ran outside its recorded sandbox";
  const auto calls = calls_of(path("store") / "resumed.jsonl");
  ASSERT_TRUE(calls.contains("call_escape"));
  const Json recorded = Json{{"mode", "workspaceWrite"}, {"network", false}};
  EXPECT_EQ(calls.at("call_slow").sandbox, recorded);
  EXPECT_EQ(calls.at("call_escape").sandbox, recorded);
  EXPECT_TRUE(calls.at("call_escape").is_error) << calls.at("call_escape").text;

  Finished verified = cairn({"verify", "resumed"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
}

TEST_F(SandboxResumeTest, AnMcpServerWhoseEntryOptsOutRunsUnconfined) {
  if (std::system("node --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs node";
  const auto escape = dir_.path() / "escaped-by-mcp";
  const Json server = {{"command", "node"}, {"args", {std::string(CAIRN_MCP_DIR) + "/escaping-server.mjs"}}, {"sandbox", false}};
  std::ofstream(path("work") / ".mcp.json") << Json{{"mcpServers", {{"escaping", server}}}}.dump();
  HttpTestServer model({openai_tool_reply("call_0", "mcp__escaping__run", Json{{"command", "echo x > " + escape.string()}}),
                        openai_text_reply("Done.")});
  auto args = endpoint(model);
  args.insert(args.begin(), {"--approval", "never-ask", "--sandbox", "workspace-write", "-p", "Escape", "--session", "optout"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(std::filesystem::exists(escape)) << read_file(path("store") / "optout.jsonl");
}

// --approval auto: a sandboxed command runs unasked; one that asks for the
// network the sandbox keeps off waits for a person, who sees the policy it
// would run under, and runs with the network only after their allow — and
// only that call: the run's next command is back without it.
TEST_F(SandboxResumeTest, AutoAsksOnlyForWhatNeedsMoreThanTheSandbox) {
  SandboxScene scene(dir_.path() / "scene", path("config"));
  if (!scene.ready()) GTEST_SKIP() << "the scene needs git, cc and a loopback port";
  const auto attacks = scene.attacks();
  const auto tcp = std::find_if(attacks.begin(), attacks.end(), [](const auto& a) { return a.name == "tcp to 127.0.0.1"; });
  ASSERT_NE(tcp, attacks.end());
  HttpTestServer model({openai_tool_reply("call_local", "bash", Json{{"command", "echo x > inside.txt"}}),
                        openai_tool_reply("call_net", "bash", Json{{"command", tcp->command}, {"network", true}}),
                        openai_tool_reply("call_after", "bash", Json{{"command", tcp->command}}),
                        openai_text_reply("Done.")});
  auto args = endpoint(model);
  args.insert(args.begin(), {"--approval", "auto", "--sandbox", "workspace-write", "-p", "Work", "--session", "auto"});
  Finished parked = cairn(args);
  ASSERT_EQ(parked.status, 3) << parked.err;  // awaiting input
  EXPECT_TRUE(std::filesystem::exists(path("work") / "inside.txt")) << "the sandboxed command asked";
  EXPECT_NE(parked.err.find("[asked by rule auto: the command asks for the network]"), std::string::npos) << parked.err;
  EXPECT_NE(parked.err.find("[sandbox workspace-write, network on for this call]"), std::string::npos) << parked.err;
  EXPECT_EQ(parked.err.find("call_local"), std::string::npos) << parked.err;

  Finished approved = cairn({"approve", "auto"});
  ASSERT_EQ(approved.status, 0) << approved.err;
  auto resume = endpoint(model);
  resume.insert(resume.begin(), {"resume", "auto", "--approval", "auto", "--sandbox", "workspace-write"});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const auto calls = calls_of(path("store") / "auto.jsonl");
  const Json run_policy = Json{{"mode", "workspaceWrite"}, {"network", false}};
  EXPECT_EQ(calls.at("call_local").sandbox, run_policy);
  EXPECT_EQ(calls.at("call_net").sandbox, (Json{{"mode", "workspaceWrite"}, {"network", true}, {"networkGranted", true}}));
  EXPECT_FALSE(calls.at("call_net").is_error) << calls.at("call_net").text;
  EXPECT_EQ(calls.at("call_after").sandbox, run_policy);
  EXPECT_TRUE(calls.at("call_after").is_error) << "the grant outlived its call: " << calls.at("call_after").text;
  Finished verified = cairn({"verify", "auto"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
}

// A session whose tools ran with the user's full rights says so in the list.
TEST_F(SandboxResumeTest, TheSessionsListSaysWhichSessionRanWithoutASandbox) {
  for (const char* mode : {"off", "workspace-write"}) {
    HttpTestServer model({openai_tool_reply("call_0", "bash", Json{{"command", "true"}}), openai_text_reply("Done.")});
    auto args = endpoint(model);
    args.insert(args.begin(), {"--approval", "never-ask", "--sandbox", mode, "-p", "Go", "--session", std::string("s-") + mode});
    Finished run = cairn(args);
    ASSERT_EQ(run.status, 0) << run.err;
  }
  Finished listed = cairn({"sessions"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  std::map<std::string, std::string> line_of;
  for (const std::string& line : lines_of(listed.out)) line_of[line.substr(0, line.find(' '))] = line;
  EXPECT_NE(line_of["s-off"].find("(no sandbox)"), std::string::npos) << listed.out;
  EXPECT_EQ(line_of["s-workspace-write"].find("(no sandbox)"), std::string::npos) << listed.out;
  Finished json = cairn({"sessions", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  for (const std::string& line : lines_of(json.out)) {
    const Json header = Json::parse(line);
    const std::string mode = header["id"] == "s-off" ? "off" : "workspaceWrite";
    EXPECT_EQ(header["sandbox"], (Json{{"mode", mode}, {"network", false}})) << line;
  }
}

// settings.json chooses the mode and adds hidden paths; a flag wins over it.
TEST_F(SandboxResumeTest, TheUsersSettingsChooseTheSandboxAndAFlagWins) {
  const auto secret_dir = dir_.path() / "secrets";
  std::filesystem::create_directories(secret_dir);
  std::ofstream(secret_dir / "token") << "SETTINGS-HIDDEN\n";
  std::filesystem::create_directories(path("config") / "cairn");
  std::ofstream(path("config") / "cairn" / "settings.json")
      << Json{{"sandbox", {{"mode", "read-only"}, {"hide", {secret_dir.string()}}}}}.dump();
  const std::string read_secret = "grep SETTINGS-HIDDEN " + (secret_dir / "token").string();
  const auto run = [&](const std::string& session, std::vector<std::string> flags) {
    HttpTestServer model({openai_tool_reply("call_write", "bash", Json{{"command", "echo x > inside"}}),
                          openai_tool_reply("call_read", "bash", Json{{"command", read_secret}}),
                          openai_text_reply("Done.")});
    auto args = endpoint(model);
    args.insert(args.begin(), {"--approval", "never-ask", "-p", "Write, then read", "--session", session});
    args.insert(args.end(), flags.begin(), flags.end());
    Finished finished = cairn(args);
    EXPECT_EQ(finished.status, 0) << finished.err;
    return calls_of(path("store") / (session + ".jsonl"));
  };
  const auto by_settings = run("by-settings", {});
  EXPECT_EQ(by_settings.at("call_write").sandbox, (Json{{"mode", "readOnly"}, {"network", false}}));
  EXPECT_TRUE(by_settings.at("call_write").is_error) << by_settings.at("call_write").text;
  EXPECT_TRUE(by_settings.at("call_read").is_error) << by_settings.at("call_read").text;
  EXPECT_FALSE(std::filesystem::exists(path("work") / "inside"));

  const auto by_flag = run("by-flag", {"--sandbox", "workspace-write"});
  EXPECT_EQ(by_flag.at("call_write").sandbox, (Json{{"mode", "workspaceWrite"}, {"network", false}}));
  EXPECT_FALSE(by_flag.at("call_write").is_error) << by_flag.at("call_write").text;
  EXPECT_TRUE(by_flag.at("call_read").is_error) << by_flag.at("call_read").text;  // still hidden
  EXPECT_TRUE(std::filesystem::exists(path("work") / "inside"));
}

TEST_F(SandboxResumeTest, HelpNamesEveryModeAndABadSettingIsRefused) {
  Finished help = cairn({"--help"});
  for (const char* text : {"--sandbox", "workspace-write", "read-only", "--sandbox-network"}) {
    EXPECT_NE(help.out.find(text), std::string::npos) << text << "\n" << help.out;
  }
  std::filesystem::create_directories(path("config") / "cairn");
  std::ofstream(path("config") / "cairn" / "settings.json") << R"({"sandbox": "danger"})";
  Finished refused = cairn({"-p", "hi", "--api", "openai-completions", "--base-url", "http://127.0.0.1:9/v1", "--model", "t"});
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_NE(refused.err.find("sandbox: expected read-only, workspace-write or off"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace cairn::cli_testing
