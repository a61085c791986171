// The `cairn` coding agent run as a process against the local HTTP server
// speaking openai-completions: print mode (text, --json, failures), the
// no-model help, one-line usage errors, the system prompt's AGENTS.md, the
// tools sent, and the durability contract end to end — a `cairn -p` killed
// with SIGKILL while bash runs is resumed by `cairn resume` without running
// the command twice, and `cairn verify` passes; `cairn abort` ends one; `cairn
// demo` tells the same story offline.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "support/http_test_server.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ScriptedResponse;

struct Finished {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int count_of(const std::string& text, const std::string& needle) {
  int count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

// ---- SSE streams of openai-completions ---------------------------------------------

std::string chunk(const Json& delta, const Json& finish_reason = nullptr) {
  Json body = {{"id", "chatcmpl-test"},
               {"object", "chat.completion.chunk"},
               {"model", "test"},
               {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish_reason}}})}};
  return "data: " + body.dump() + "\n\n";
}

ScriptedResponse sse(std::vector<std::string> events) {
  ScriptedResponse response;
  response.headers = {{"Content-Type", "text/event-stream"}};
  events.push_back("data: [DONE]\n\n");
  for (auto& event : events) response.body.push_back({.delay = 1ms, .bytes = std::move(event)});
  return response;
}

ScriptedResponse text_reply(const std::string& text) {
  return sse({chunk({{"role", "assistant"}, {"content", ""}}), chunk({{"content", text.substr(0, text.size() / 2)}}),
              chunk({{"content", text.substr(text.size() / 2)}}), chunk(Json::object(), "stop")});
}

ScriptedResponse tool_call_reply(const std::string& id, const std::string& name, const Json& args) {
  Json call = {{"index", 0}, {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}};
  return sse({chunk({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call})}}),
              chunk(Json::object(), "tool_calls")});
}

ScriptedResponse http_error(int status, std::string body) {
  ScriptedResponse response;
  response.status = status;
  response.reason = "Bad Request";
  response.headers = {{"Content-Type", "application/json"}};
  response.body = {{.bytes = std::move(body)}};
  response.framing = ScriptedResponse::Framing::content_length;
  return response;
}

// ---- running cairn ---------------------------------------------------------------

class AgentCliTest : public ::testing::Test {
 protected:
  AgentCliTest() {
    for (const char* sub : {"home", "config", "data", "cache", "work", "io"}) {
      std::filesystem::create_directories(dir_.path() / sub);
    }
  }

  std::filesystem::path path(const std::string& sub) const { return dir_.path() / sub; }
  std::string store() const { return "jsonl:" + (dir_.path() / "store").string(); }

  // No key of this machine leaks in: only these variables.
  std::vector<std::string> environment() const {
    std::vector<std::string> env = {"HOME=" + path("home").string(), "XDG_CONFIG_HOME=" + path("config").string(),
                                    "XDG_DATA_HOME=" + path("data").string(),
                                    "XDG_CACHE_HOME=" + path("cache").string(), "LANG=C.UTF-8"};
    if (const char* system_path = std::getenv("PATH")) env.push_back(std::string("PATH=") + system_path);
    return env;
  }

  std::vector<std::string> endpoint(const HttpTestServer& server) const {
    return {"--api", "openai-completions", "--base-url", server.url("/v1"), "--model", "test"};
  }

  // Starts cairn with `args` in `cwd`; stdout and stderr go to files.
  pid_t start(const std::vector<std::string>& args, const std::filesystem::path& cwd,
              const std::optional<std::string>& input = std::nullopt) {
    ++runs_;
    out_ = path("io") / fmt::format("out-{}.txt", runs_);
    err_ = path("io") / fmt::format("err-{}.txt", runs_);
    const auto in = path("io") / fmt::format("in-{}.txt", runs_);
    std::ofstream(in, std::ios::binary) << input.value_or("");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, input ? in.c_str() : "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    std::vector<std::string> argv_strings{CAIRN_CLI_PATH};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = environment();
    std::vector<char*> envp;
    for (auto& variable : env_strings) envp.push_back(variable.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, CAIRN_CLI_PATH, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(spawned, 0);
    return spawned == 0 ? pid : -1;
  }

  // Waits for a started cairn (killed after a minute: a hung run fails the
  // test instead of hanging it).
  Finished finish(pid_t pid) {
    Finished finished;
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << "cairn did not end within a minute";
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    finished.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    finished.out = read_file(out_);
    finished.err = read_file(err_);
    return finished;
  }

  Finished cairn(std::vector<std::string> args, const std::optional<std::string>& input = std::nullopt) {
    return cairn_in(path("work"), std::move(args), input);
  }
  Finished cairn_in(const std::filesystem::path& cwd, std::vector<std::string> args,
                    const std::optional<std::string>& input = std::nullopt) {
    args.push_back("--store");
    args.push_back(store());
    return finish(start(args, cwd, input));
  }

  // Ends what a killed cairn left running: the bash tool runs each command in
  // a process group of its own, which outlives the agent's process. Found by
  // the test directory named in its command line.
  void kill_leftovers() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmdline = read_file(entry.path() / "cmdline");
      if (cmdline.find(dir_.str()) == std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(name));
      if (pid == ::getpid()) continue;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }

  static Json request_json(const testing::ReceivedRequest& request) { return Json::parse(request.body); }

  testing::TempDir dir_;
  int runs_ = 0;
  std::filesystem::path out_, err_;
};

std::string session_line_id(const std::string& err) {
  for (const auto& line : lines_of(err)) {
    if (line.starts_with("cairn: session ")) return line.substr(std::string("cairn: session ").size());
  }
  return {};
}

// ---- print mode ---------------------------------------------------------------------

TEST_F(AgentCliTest, AgentCliPrintModeStreamsTheAnswerAndNamesTheSession) {
  HttpTestServer server({text_reply("Hello from the model.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Say hello"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "Hello from the model.\n");
  const std::string id = session_line_id(run.err);
  EXPECT_FALSE(id.empty()) << run.err;
  EXPECT_TRUE(run.err.starts_with("cairn: session ")) << run.err;

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "/v1/chat/completions");
  const Json body = request_json(requests[0]);
  EXPECT_EQ(body["model"], "test");
  EXPECT_NE(requests[0].body.find("Say hello"), std::string::npos);

  // The session records the prompt, the answer and the model; -c continues it.
  Finished log = cairn({"log", id, "--json"});
  EXPECT_EQ(log.status, 0) << log.err;
  EXPECT_NE(log.out.find("\"model_change\""), std::string::npos);
  EXPECT_NE(log.out.find("Hello from the model."), std::string::npos);
  auto again = endpoint(server);
  again.insert(again.begin(), {"-c", "-p", "Once more"});
  Finished continued = cairn(again);
  EXPECT_EQ(continued.status, 0) << continued.err;
  EXPECT_EQ(session_line_id(continued.err), id);
  const auto second = server.requests();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_NE(second[1].body.find("Say hello"), std::string::npos);  // the earlier turn went along
}

TEST_F(AgentCliTest, AgentCliPrintModeReadsThePromptFromStandardInput) {
  HttpTestServer server({text_reply("ok")});
  auto args = endpoint(server);
  args.insert(args.begin(), "-p");
  Finished run = cairn(args, std::string("a prompt from stdin-4411\n"));
  EXPECT_EQ(run.status, 0) << run.err;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_NE(server.requests()[0].body.find("a prompt from stdin-4411"), std::string::npos);
}

TEST_F(AgentCliTest, AgentCliJsonPrintsEveryEventAsOneLine) {
  HttpTestServer server({text_reply("Hello in JSON.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"--json", "-p", "Say hello"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 0) << run.err;
  std::vector<std::string> types;
  for (const auto& line : lines_of(run.out)) {
    Json event = Json::parse(line, nullptr, false);
    ASSERT_FALSE(event.is_discarded()) << line;
    ASSERT_TRUE(event.contains("type")) << line;
    types.push_back(event["type"]);
    if (event["type"] == "run_end") {
      EXPECT_EQ(event["outcome"], "completed");
      EXPECT_NE(event.dump().find("Hello in JSON."), std::string::npos);
    }
  }
  EXPECT_NE(std::find(types.begin(), types.end(), "run_start"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "message_update"), types.end());
  EXPECT_EQ(types.back(), "run_end");
  EXPECT_FALSE(session_line_id(run.err).empty()) << run.err;
}

TEST_F(AgentCliTest, AgentCliAFailedRequestExitsOne) {
  HttpTestServer server({http_error(400, R"({"error":{"message":"this request is malformed-5521","type":"invalid_request_error"}})")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Say hello"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("malformed-5521"), std::string::npos) << run.err;
  EXPECT_EQ(server.requests().size(), 1u);  // a 400 is not retried
}

// ---- configuration and usage -------------------------------------------------------

TEST_F(AgentCliTest, AgentCliWithNoModelConfiguredSaysHowToConfigureOne) {
  Finished run = cairn({"-p", "hello"});
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
  for (const char* hint : {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "models.json", "\"providers\"",
                           "--api openai-completions --base-url http://localhost:11434/v1 --model qwen3"}) {
    EXPECT_NE(run.err.find(hint), std::string::npos) << hint << " in:\n" << run.err;
  }
  EXPECT_NE(run.err.find((path("config") / "cairn" / "models.json").string()), std::string::npos) << run.err;
}

TEST_F(AgentCliTest, AgentCliUnknownSessionsAndBadOptionsAreOneLineAndExitTwo) {
  HttpTestServer server({text_reply("unused")});
  const auto with_endpoint = [&](std::vector<std::string> args) {
    auto all = std::move(args);
    for (auto& arg : endpoint(server)) all.push_back(arg);
    return all;
  };
  const std::vector<std::vector<std::string>> cases = {
      {"resume", "no-such-session"},
      {"abort", "no-such-session"},
      {"compact", "no-such-session"},
      with_endpoint({"-r", "no-such-session", "-p", "hi"}),
      with_endpoint({"-r", "-p", "hi"}),
      with_endpoint({"-p", "hi", "--thinking", "extreme"}),
      with_endpoint({"-p", "hi", "--tools", "read,teleport"}),
      with_endpoint({"-p", "hi", "--no-tools", "--tools", "read"}),
      with_endpoint({"-p", "hi", "--bogus"}),
      {"-p", "hi", "--model", "no-such-provider/no-such-model"},
      {"-p", "hi", "--api", "openai-completions", "--model", "test"},
      {"--json"},
      {"resume"},
  };
  for (const auto& args : cases) {
    Finished run = cairn(args);
    const std::string shown = fmt::format("{}", fmt::join(args, " "));
    EXPECT_EQ(run.status, 2) << shown << "\n" << run.err;
    // Print mode names its session before the session's own error.
    std::vector<std::string> lines = lines_of(run.err);
    std::erase_if(lines, [](const std::string& line) { return line.starts_with("cairn: session "); });
    EXPECT_EQ(lines.size(), 1u) << shown << "\n" << run.err;
    EXPECT_TRUE(run.out.empty()) << shown << "\n" << run.out;
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(AgentCliTest, AgentCliHelpDocumentsEveryOption) {
  Finished top = cairn({"--help"});
  EXPECT_EQ(top.status, 0);
  for (const char* option : {"--store", "--session", "--continue", "--resume", "--ref", "--model", "--thinking",
                             "--api", "--base-url", "--api-key", "--models-file", "--system-prompt",
                             "--append-system-prompt", "--tools", "--no-tools", "--print", "--json", "resume",
                             "abort", "compact", "demo"}) {
    EXPECT_NE(top.out.find(option), std::string::npos) << option;
  }
  EXPECT_EQ(top.out.find("demo-agent"), std::string::npos);  // hidden
  Finished resume = cairn({"resume", "--help"});
  EXPECT_EQ(resume.status, 0);
  for (const char* option : {"SESSION", "--ref", "--model", "--api", "--base-url", "--json", "--store"}) {
    EXPECT_NE(resume.out.find(option), std::string::npos) << option;
  }
}

TEST_F(AgentCliTest, AgentCliContextFilesReachTheSystemPrompt) {
  // project/AGENTS.md wins over project/CLAUDE.md; project/sub has only a CLAUDE.md.
  const auto project = path("work") / "project";
  std::filesystem::create_directories(project / "sub");
  std::ofstream(project / "AGENTS.md") << "Always answer in haiku. marker-agents-7731\n";
  std::ofstream(project / "CLAUDE.md") << "marker-claude-shadowed-1180\n";
  std::ofstream(project / "sub" / "CLAUDE.md") << "marker-claude-sub-2093\n";
  HttpTestServer server({text_reply("ok")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "hi", "--append-system-prompt", "marker-appended-6650"});
  Finished run = cairn_in(project / "sub", args);
  EXPECT_EQ(run.status, 0) << run.err;
  ASSERT_EQ(server.requests().size(), 1u);
  const Json body = request_json(server.requests()[0]);
  const Json& first = body["messages"][0];
  ASSERT_TRUE(first["role"] == "system" || first["role"] == "developer") << first.dump();
  const std::string system = first["content"].is_string() ? first["content"].get<std::string>() : first["content"].dump();
  EXPECT_NE(system.find("marker-agents-7731"), std::string::npos) << system;
  EXPECT_NE(system.find("marker-claude-sub-2093"), std::string::npos) << system;
  EXPECT_EQ(system.find("marker-claude-shadowed-1180"), std::string::npos) << system;
  EXPECT_NE(system.find("marker-appended-6650"), std::string::npos) << system;
  EXPECT_NE(system.find((project / "AGENTS.md").string()), std::string::npos) << system;
  EXPECT_NE(system.find("Current working directory: " + (project / "sub").string()), std::string::npos) << system;
  EXPECT_LT(system.find("marker-agents-7731"), system.find("marker-claude-sub-2093"));  // root first
}

TEST_F(AgentCliTest, AgentCliNoToolsSendsNoToolsAndToolsChoosesThem) {
  HttpTestServer server({text_reply("ok")});
  auto none = endpoint(server);
  none.insert(none.begin(), {"-p", "hi", "--no-tools"});
  EXPECT_EQ(cairn(none).status, 0);
  auto some = endpoint(server);
  some.insert(some.begin(), {"-p", "hi", "--tools", "read,ls"});
  EXPECT_EQ(cairn(some).status, 0);
  auto all = endpoint(server);
  all.insert(all.begin(), {"-p", "hi"});
  EXPECT_EQ(cairn(all).status, 0);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  const Json without = request_json(requests[0]);
  EXPECT_TRUE(!without.contains("tools") || without["tools"].empty()) << requests[0].body;
  auto names = [](const Json& body) {
    std::vector<std::string> out;
    for (const auto& tool : body.value("tools", Json::array())) out.push_back(tool["function"]["name"]);
    return out;
  };
  EXPECT_EQ(names(request_json(requests[1])), (std::vector<std::string>{"read", "ls"}));
  EXPECT_EQ(names(request_json(requests[2])),
            (std::vector<std::string>{"read", "bash", "edit", "write", "grep", "find", "ls"}));
}

// ---- durability ------------------------------------------------------------------------

class AgentCliKillTest : public AgentCliTest {
 protected:
  // A `cairn -p` whose model has bash append a line to out.txt and sleep;
  // killed with SIGKILL once the line is there.
  void run_until_killed(HttpTestServer& server, const std::string& session) {
    const auto out_file = path("work") / "out.txt";
    auto args = endpoint(server);
    args.insert(args.begin(), {"-p", "Append the line, then wait", "--session", session, "--store", store()});
    const pid_t pid = start(args, path("work"));
    ASSERT_GT(pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (read_file(out_file).find("line") == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
        ::kill(pid, SIGKILL);
        kill_leftovers();
        FAIL() << "the command never ran:\n" << read_file(err_);
      }
      std::this_thread::sleep_for(5ms);
    }
    ::kill(pid, SIGKILL);
    Finished killed = finish(pid);
    EXPECT_EQ(killed.status, 128 + SIGKILL);
    EXPECT_EQ(session_line_id(killed.err), session) << killed.err;
    kill_leftovers();
  }

  std::string slow_command() const {
    // "; true": bash stays the group's leader with the test directory in its
    // command line (a last simple command would be exec'd in its place).
    return fmt::format("echo line >> {}; sleep 30; true", (path("work") / "out.txt").string());
  }
};

TEST_F(AgentCliKillTest, AgentCliAKilledRunResumesWithoutRunningTheCommandAgain) {
  HttpTestServer server({tool_call_reply("call_slow", "bash", Json{{"command", slow_command()}}),
                         text_reply("The command was interrupted; I did not run it again.")});
  run_until_killed(server, "killed-run");

  // Print mode refuses to start over a suspended run.
  auto prompt = endpoint(server);
  prompt.insert(prompt.begin(), {"-p", "something else", "--session", "killed-run"});
  Finished refused = cairn(prompt);
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_NE(refused.err.find("cairn resume killed-run"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("cairn abort killed-run"), std::string::npos) << refused.err;
  EXPECT_EQ(server.requests().size(), 1u);

  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "killed-run"});
  Finished resumed = cairn(resume);
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("I did not run it again."), std::string::npos) << resumed.out;
  EXPECT_EQ(count_of(read_file(path("work") / "out.txt"), "line"), 1);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].body.find("nterrupted"), std::string::npos) << requests[1].body;  // the synthetic result

  Finished verified = cairn({"verify", "killed-run"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;

  // Nothing is left to resume.
  Finished again = cairn(resume);
  EXPECT_EQ(again.status, 2) << again.err;
}

TEST_F(AgentCliKillTest, AgentCliAbortEndsAKilledRun) {
  HttpTestServer server({tool_call_reply("call_slow", "bash", Json{{"command", slow_command()}}),
                         text_reply("unused")});
  run_until_killed(server, "aborted-run");

  Finished aborted = cairn({"abort", "aborted-run"});
  EXPECT_EQ(aborted.status, 0) << aborted.err;
  EXPECT_EQ(server.requests().size(), 1u);  // aborting asks no model
  EXPECT_EQ(count_of(read_file(path("work") / "out.txt"), "line"), 1);

  Finished log = cairn({"log", "aborted-run", "--json"});
  EXPECT_NE(log.out.find("\"outcome\":\"aborted\""), std::string::npos) << log.out;
  Finished verified = cairn({"verify", "aborted-run"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
  Finished again = cairn({"abort", "aborted-run"});
  EXPECT_EQ(again.status, 2) << again.err;
  EXPECT_EQ(lines_of(again.err).size(), 1u) << again.err;
  EXPECT_NE(again.err.find("nothing is suspended"), std::string::npos) << again.err;
}

TEST_F(AgentCliKillTest, AgentCliSigintAndSigtermAbortTheRunDurablyAndExitOne) {
  for (int signal : {SIGINT, SIGTERM}) {
    std::filesystem::remove(path("work") / "out.txt");
    HttpTestServer server({tool_call_reply("call_slow", "bash", Json{{"command", slow_command()}}),
                           text_reply("unused")});
    const std::string session = fmt::format("signalled-{}", signal);
    auto args = endpoint(server);
    args.insert(args.begin(), {"-p", "Append the line, then wait", "--session", session, "--store", store()});
    const pid_t pid = start(args, path("work"));
    ASSERT_GT(pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (read_file(path("work") / "out.txt").find("line") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    const auto sent = std::chrono::steady_clock::now();
    ::kill(pid, signal);
    Finished stopped = finish(pid);
    EXPECT_EQ(stopped.status, 1) << stopped.err;
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 10s);  // the command was stopped, not waited for
    EXPECT_NE(stopped.err.find("run aborted"), std::string::npos) << stopped.err;
    kill_leftovers();

    Finished log = cairn({"log", session, "--json"});
    EXPECT_NE(log.out.find("\"operation_cancelled\""), std::string::npos) << log.out;
    EXPECT_NE(log.out.find("\"outcome\":\"aborted\""), std::string::npos) << log.out;
    EXPECT_EQ(cairn({"verify", session}).status, 0);
    EXPECT_EQ(cairn({"resume", session}).status, 2);  // nothing left suspended
    EXPECT_EQ(server.requests().size(), 1u);
  }
}

TEST_F(AgentCliTest, AgentCliDemoTellsTheStory) {
  Finished run = cairn_in(path("work"), {"demo", "--dir", (path("work") / "demo").string()});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  for (const char* told : {"SIGKILL", "accepted", "interrupted", "never re-run", "passed"}) {
    EXPECT_NE(run.out.find(told), std::string::npos) << told << " in:\n" << run.out;
  }
  EXPECT_EQ(count_of(read_file(path("work") / "demo" / "demo.log"), "started"), 1);
  EXPECT_EQ(count_of(read_file(path("work") / "demo" / "demo.log"), "finished"), 0);
}

}  // namespace
}  // namespace cairn
