// The `cairn` command with MCP servers nobody on the team wrote
// (@modelcontextprotocol/server-everything over stdio and Streamable HTTP,
// @modelcontextprotocol/server-filesystem), installed from npm with the
// committed lockfile in tests/mcp, and our misbehaving server: an agent run
// through the local model server calls their tools (reads allowed, writes
// asking), `cairn mcp list` shows what cairn derived, and a `cairn -p` killed
// during an MCP call resumes without calling a `never` tool again and calls
// a `safe` one again exactly once.
#include <netinet/in.h>
#include <sys/socket.h>

#include "apps/agent_cli_fixture.hpp"
#include "support/loopback.hpp"
#include "support/openai_script.hpp"

namespace cairn::cli_testing {
namespace {

using testing::openai_text_reply;
using testing::openai_tool_reply;

const std::string kMcpDir = CAIRN_MCP_DIR;
const std::string kEverything = kMcpDir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
const std::string kFilesystem = kMcpDir + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
const std::string kMisbehaving = kMcpDir + "/misbehaving-server.mjs";

// A port nothing listens on now (the kernel's choice for a socket bound to 0).
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

int lines_with(const std::string& text, const std::string& prefix) {
  int count = 0;
  for (const auto& line : lines_of(text)) count += line.starts_with(prefix) ? 1 : 0;
  return count;
}

class McpCliTest : public AgentCliTest {
 protected:
  ~McpCliTest() override {
    if (http_server_ > 0) {
      ::kill(http_server_, SIGKILL);
      ::waitpid(http_server_, nullptr, 0);
    }
  }

  void write_config(const Json& servers) const {
    std::ofstream(path("work") / ".mcp.json") << Json{{"mcpServers", servers}}.dump(2);
  }

  // server-everything over Streamable HTTP on a port of its own; its URL.
  std::string start_http_everything() {
    const int port = unused_port();
    const auto log = path("io") / "everything-http.log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<std::string> argv_strings{"node", kEverything, "streamableHttp"};
    std::vector<char*> argv;
    for (auto& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = environment();
    env_strings.push_back(fmt::format("PORT={}", port));
    std::vector<char*> envp;
    for (auto& variable : env_strings) envp.push_back(variable.data());
    envp.push_back(nullptr);
    EXPECT_EQ(posix_spawnp(&http_server_, "node", &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      if (const int fd = testing::connect_loopback(port); fd >= 0) {
        ::close(fd);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "server-everything did not listen: " << read_file(log);
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    return fmt::format("http://127.0.0.1:{}/mcp", port);
  }

  // The text of the tool result answering `call_id` in `cairn log --json`.
  static std::string result_of(const std::string& log, const std::string& call_id) {
    for (const auto& line : lines_of(log)) {
      Json record = Json::parse(line, nullptr, false);
      if (!record.is_object()) continue;
      const Json message = record.value("message", Json());
      if (!message.is_object() || message.value("role", "") != "toolResult" || message.value("toolCallId", "") != call_id) {
        continue;
      }
      std::string text;
      for (const auto& block : message.value("content", Json::array())) text += block.value("text", "");
      return text;
    }
    return "<no result>";
  }

  // `cairn ARGS` in the work directory, without --store (for commands that take none).
  Finished finish_in_work(const std::vector<std::string>& args) { return finish(start(args, path("work"))); }

  pid_t http_server_ = -1;
};

TEST_F(McpCliTest, McpCliAnAgentRunCallsRealServersReadsRunAndWritesAsk) {
  const std::string url = start_http_everything();
  std::ofstream(path("work") / "notes.txt") << "the notes say hello";
  write_config(Json{{"everything", {{"command", "node"}, {"args", {kEverything, "stdio"}}}},
                    {"remote", {{"type", "http"}, {"url", url}}},
                    {"fs", {{"command", "node"}, {"args", {kFilesystem, path("work").string()}}}}});
  const std::string written = (path("work") / "new.txt").string();
  HttpTestServer server({openai_tool_reply("c_echo", "mcp__everything__echo", Json{{"message", "over stdio"}}),
                         openai_tool_reply("c_sum", "mcp__remote__get-sum", Json{{"a", 2}, {"b", 3}}),
                         openai_tool_reply("c_image", "mcp__remote__get-tiny-image", Json::object()),
                         openai_tool_reply("c_read", "mcp__fs__read_text_file",
                                           Json{{"path", (path("work") / "notes.txt").string()}}),
                         openai_tool_reply("c_write", "mcp__fs__write_file", Json{{"path", written}, {"content", "written"}}),
                         openai_text_reply("All done.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Use the servers", "--session", "mcp-run", "--approval", "ask"});
  Finished parked = cairn(args);
  ASSERT_EQ(parked.status, 3) << parked.err;  // the write asks
  EXPECT_NE(parked.err.find("mcp__fs__write_file"), std::string::npos) << parked.err;
  EXPECT_FALSE(std::filesystem::exists(written));

  // The tools were offered to the model with their schemas.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 5u);
  const Json first = Json::parse(requests[0].body);
  std::set<std::string> offered;
  for (const auto& tool : first["tools"]) offered.insert(tool["function"]["name"].get<std::string>());
  for (const char* name : {"mcp__everything__echo", "mcp__remote__get-sum", "mcp__fs__read_text_file", "mcp__fs__write_file", "bash"}) {
    EXPECT_TRUE(offered.contains(name)) << name;
  }

  Finished approved = cairn({"approve", "mcp-run"});
  ASSERT_EQ(approved.status, 0) << approved.err;
  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "mcp-run"});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("All done."), std::string::npos);
  EXPECT_EQ(read_file(written), "written");

  Finished log = cairn({"log", "mcp-run", "--json"});
  ASSERT_EQ(log.status, 0) << log.err;
  EXPECT_EQ(result_of(log.out, "c_echo"), "Echo: over stdio");
  EXPECT_NE(result_of(log.out, "c_sum").find("5"), std::string::npos) << result_of(log.out, "c_sum");
  EXPECT_NE(result_of(log.out, "c_read").find("the notes say hello"), std::string::npos) << result_of(log.out, "c_read");
  EXPECT_NE(log.out.find("\"image/png\""), std::string::npos);  // the tiny image, kept as an image
  EXPECT_EQ(log_of(log.out, "tool_started").size(), 5u);
  Finished verified = cairn({"verify", "mcp-run"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
}

TEST_F(McpCliTest, McpCliListShowsServersToolsAnnotationsAndTheDerivedPolicyButNoCredential) {
  extra_env_ = {"MCP_TEST_TOKEN=sk-very-secret-token-42"};
  write_config(Json{{"bad", {{"command", "node"}, {"args", {kMisbehaving}}, {"tools", {{"slow_safe", {{"replay", "never"}}}}}}},
                    {"gone", {{"type", "http"}, {"url", "http://127.0.0.1:9/mcp"},
                              {"headers", {{"Authorization", "Bearer ${MCP_TEST_TOKEN}"}}}}}});
  Finished listed = finish_in_work({"mcp", "list", "--wait", "20"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_NE(listed.out.find("bad  ready"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("mcp__bad__slow_never  replay never, approval ask  [no annotations]"), std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("mcp__bad__slow_safe  replay never, approval allow  [readOnly=true]"), std::string::npos)
      << listed.out;  // the override wins over the annotation
  EXPECT_NE(listed.out.find("gone  failed"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("MCP server 'gone' gave no answer to initialize: "), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("sk-very-secret-token-42"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.err.find("sk-very-secret-token-42"), std::string::npos) << listed.err;

  Finished json = finish_in_work({"mcp", "list", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  const auto lines = lines_of(json.out);
  ASSERT_EQ(lines.size(), 2u);
  const Json bad = Json::parse(lines[0]);
  EXPECT_EQ(bad["server"], "bad");
  EXPECT_EQ(bad["tools"][0]["name"], "mcp__bad__slow_never");
  EXPECT_EQ(bad["tools"][0]["replay"], "never");
}

// A stdio server inherits what the coding tools' processes do: no provider
// key, no variable named like a secret, but what its `env` gives it.
TEST_F(McpCliTest, McpCliAStdioServerGetsNeitherProviderKeysNorSecretLookingVariables) {
  extra_env_ = {"ANTHROPIC_API_KEY=sk-ant-provider-key-0123", "DEPLOY_TOKEN=deploy-token-4567", "PLAIN_SETTING=plain-value"};
  write_config(Json{{"everything", {{"command", "node"}, {"args", {kEverything, "stdio"}},
                                    {"env", {{"GIVEN_TOKEN", "given-token-89ab"}}}}}});
  HttpTestServer server({openai_tool_reply("c_env", "mcp__everything__get-env", Json::object()),
                         openai_text_reply("Seen.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Show the environment", "--session", "mcp-env"});
  Finished run = cairn(args);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string env = result_of(cairn({"log", "mcp-env", "--json"}).out, "c_env");
  EXPECT_NE(env.find("plain-value"), std::string::npos) << env;
  EXPECT_NE(env.find("given-token-89ab"), std::string::npos) << env;
  EXPECT_EQ(env.find("sk-ant-provider-key-0123"), std::string::npos) << env;
  EXPECT_EQ(env.find("deploy-token-4567"), std::string::npos) << env;
}

TEST_F(McpCliTest, McpCliABadConfigurationIsOneLineNamingTheFile) {
  std::ofstream(path("work") / ".mcp.json") << "{\"mcpServers\": {\"x\": ";
  Finished listed = finish_in_work({"mcp", "list"});
  EXPECT_EQ(listed.status, 2) << listed.err;
  EXPECT_NE(listed.err.find(".mcp.json"), std::string::npos) << listed.err;
  EXPECT_EQ(lines_of(listed.err).size(), 1u) << listed.err;
  Finished missing = finish_in_work({"mcp", "list", "--mcp-config", "/nonexistent/mcp.json"});
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/mcp.json"), std::string::npos) << missing.err;
}

// A `cairn -p` killed with SIGKILL while an MCP tool runs (the server's
// marker file shows the call began), then `cairn resume`.
class McpCliKillTest : public McpCliTest {
 protected:
  void run_until_killed(HttpTestServer& server, const std::string& session, const std::string& tool) {
    const auto marker = path("work") / "marker";
    write_config(Json{{"bad", {{"command", "node"}, {"args", {kMisbehaving}}, {"env", {{"MARKER", marker.string()}}}}}});
    auto args = endpoint(server);
    args.insert(args.begin(), {"--approval", "never-ask", "-p", "Call it", "--session", session, "--store", store()});
    const pid_t pid = start(args, path("work"));
    ASSERT_GT(pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (lines_with(read_file(marker), "called " + tool) == 0) {
      if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
        ::kill(pid, SIGKILL);
        FAIL() << "the tool was never called:\n" << read_file(err_);
      }
      std::this_thread::sleep_for(5ms);
    }
    const auto killed_at = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    EXPECT_EQ(finish(pid).status, 128 + SIGKILL);
    // The server went with the agent (its process group was watched).
    EXPECT_TRUE(leftovers_gone_after(killed_at, 2s)) << "the MCP server outlived the killed agent";
  }

  std::filesystem::path hold() const { return path("work") / "hold"; }
  Json slow_args() const { return Json{{"ms", 60000}, {"until_gone", hold().string()}}; }
};

TEST_F(McpCliKillTest, McpCliAKilledNeverCallIsInterruptedAndNotCalledAgain) {
  std::ofstream(hold()) << "hold";
  HttpTestServer server({openai_tool_reply("c_slow", "mcp__bad__slow_never", slow_args()),
                         openai_text_reply("It was interrupted; I did not call it again.")});
  run_until_killed(server, "mcp-never", "slow_never");
  std::filesystem::remove(hold());

  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "mcp-never"});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const std::string marker = read_file(path("work") / "marker");
  EXPECT_EQ(lines_with(marker, "called slow_never"), 1) << marker;
  Finished log = cairn({"log", "mcp-never", "--json"});
  EXPECT_NE(result_of(log.out, "c_slow").find("nterrupted"), std::string::npos) << result_of(log.out, "c_slow");
  EXPECT_EQ(cairn({"verify", "mcp-never"}).status, 0);
}

TEST_F(McpCliKillTest, McpCliAKilledSafeCallIsCalledAgainOnce) {
  std::ofstream(hold()) << "hold";
  HttpTestServer server({openai_tool_reply("c_slow", "mcp__bad__slow_safe", slow_args()),
                         openai_text_reply("Done after the restart.")});
  run_until_killed(server, "mcp-safe", "slow_safe");
  std::filesystem::remove(hold());

  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "mcp-safe"});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  const std::string marker = read_file(path("work") / "marker");
  EXPECT_EQ(lines_with(marker, "called slow_safe"), 2) << marker;
  Finished log = cairn({"log", "mcp-safe", "--json"});
  EXPECT_EQ(result_of(log.out, "c_slow"), "slow_safe done");
  EXPECT_EQ(cairn({"verify", "mcp-safe"}).status, 0);
}

// A session resumed where its MCP server is no longer configured: the safe
// call is answered with an error naming the server, and the run goes on.
TEST_F(McpCliKillTest, McpCliAResumeWithoutTheServerGivesAnErrorResultNamingIt) {
  std::ofstream(hold()) << "hold";
  HttpTestServer server({openai_tool_reply("c_slow", "mcp__bad__slow_safe", slow_args()),
                         openai_text_reply("The server is gone.")});
  run_until_killed(server, "mcp-gone", "slow_safe");
  std::filesystem::remove(path("work") / ".mcp.json");

  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "mcp-gone"});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  Finished log = cairn({"log", "mcp-gone", "--json"});
  EXPECT_NE(result_of(log.out, "c_slow").find("no MCP server 'bad' is configured here"), std::string::npos)
      << result_of(log.out, "c_slow");
  EXPECT_EQ(lines_with(read_file(path("work") / "marker"), "called slow_safe"), 1);
}

// SIGINT during an MCP call: the run is aborted durably and the server is
// told (notifications/cancelled reaches it before the agent exits).
TEST_F(McpCliKillTest, McpCliSigintDuringAnMcpCallCancelsItAtTheServer) {
  const auto marker = path("work") / "marker";
  write_config(Json{{"bad", {{"command", "node"}, {"args", {kMisbehaving}}, {"env", {{"MARKER", marker.string()}}}}}});
  HttpTestServer server({openai_tool_reply("c_slow", "mcp__bad__slow_never", Json{{"ms", 60000}}),
                         openai_text_reply("unused")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"--approval", "never-ask", "-p", "Call it", "--session", "mcp-int", "--store", store()});
  const pid_t pid = start(args, path("work"));
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (lines_with(read_file(marker), "called slow_never") == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_file(err_);
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGINT);
  Finished stopped = finish(pid);
  EXPECT_EQ(stopped.status, 1) << stopped.err;
  EXPECT_EQ(lines_with(read_file(marker), "cancelled "), 1) << read_file(marker);
  Finished log = cairn({"log", "mcp-int", "--json"});
  EXPECT_EQ(log_of(log.out, "operation_cancelled").size(), 1u) << log.out;
}

}  // namespace
}  // namespace cairn::cli_testing
