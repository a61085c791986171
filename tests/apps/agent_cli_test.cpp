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
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "support/http_test_server.hpp"
#include "support/openai_script.hpp"
#include "apps/agent_cli_fixture.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ScriptedResponse;
using namespace cli_testing;

// ---- SSE streams of openai-completions ---------------------------------------------

using testing::openai_chunk;
using testing::openai_stream;
using testing::openai_text_reply;
using testing::openai_tool_reply;

ScriptedResponse http_error(int status, std::string body) {
  ScriptedResponse response;
  response.status = status;
  response.reason = "Bad Request";
  response.headers = {{"Content-Type", "application/json"}};
  response.body = {{.bytes = std::move(body)}};
  response.framing = ScriptedResponse::Framing::content_length;
  return response;
}

// ---- print mode ---------------------------------------------------------------------

TEST_F(AgentCliTest, AgentCliPrintModeStreamsTheAnswerAndNamesTheSession) {
  HttpTestServer server({openai_text_reply("Hello from the model.")});
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
  HttpTestServer server({openai_text_reply("ok")});
  auto args = endpoint(server);
  args.insert(args.begin(), "-p");
  Finished run = cairn(args, std::string("a prompt from stdin-4411\n"));
  EXPECT_EQ(run.status, 0) << run.err;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_NE(server.requests()[0].body.find("a prompt from stdin-4411"), std::string::npos);
}

TEST_F(AgentCliTest, AgentCliJsonPrintsEveryEventAsOneLine) {
  HttpTestServer server({openai_text_reply("Hello in JSON.")});
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

// libcurl is loaded on the first request (src/llm/curl_support.hpp). Where it
// cannot be, the request fails saying which library and why, and the prompt
// is in the session, as with any failed request; every command that makes no
// request works without it.
TEST_F(AgentCliTest, AgentCliWithoutLibcurlNamesItAndKeepsThePrompt) {
  HttpTestServer server({openai_text_reply("never sent")});
  std::filesystem::create_directories(path("no-curl"));
  std::ofstream(path("no-curl") / "libcurl.so.4") << "not a library\n";
  extra_env_ = {"LD_LIBRARY_PATH=" + path("no-curl").string()};
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "a prompt kept-7310"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.err.find("cannot load libcurl.so.4"), std::string::npos) << run.err;
  EXPECT_EQ(server.requests().size(), 0u);
  const std::string id = session_line_id(run.err);
  ASSERT_FALSE(id.empty()) << run.err;
  Finished log = cairn({"log", id, "--json"});
  EXPECT_EQ(log.status, 0) << log.err;
  EXPECT_NE(log.out.find("a prompt kept-7310"), std::string::npos);
}

// A response whose stream breaks after `text` (a connection closed
// mid-answer): a retryable failure.
ScriptedResponse broken_reply(const std::string& text) {
  ScriptedResponse response = openai_stream({openai_chunk({{"role", "assistant"}, {"content", ""}}), openai_chunk({{"content", text}})});
  response.body.pop_back();  // no [DONE]: the server goes away instead
  response.end = ScriptedResponse::End::close;
  return response;
}

ScriptedResponse text_and_tool_call_reply(const std::string& text, const std::string& id, const std::string& name,
                                          const Json& args) {
  Json call = {{"index", 0}, {"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args.dump()}}}};
  return openai_stream({openai_chunk({{"role", "assistant"}, {"content", text}}), openai_chunk({{"tool_calls", Json::array({call})}}),
              openai_chunk(Json::object(), "tool_calls")});
}

TEST_F(AgentCliTest, AgentCliPrintModeStdoutHoldsOnlyTheFinalAnswerAfterARetry) {
  HttpTestServer server({broken_reply("do"), openai_text_reply("done")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Say done"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "done\n");  // not the failed attempt's "do" before it
  EXPECT_NE(run.err.find("retrying"), std::string::npos) << run.err;
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(AgentCliTest, AgentCliPrintModeStdoutHoldsOnlyTheLastMessageOfARunWithTools) {
  HttpTestServer server({text_and_tool_call_reply("Let me look first.", "call_ls", "ls", Json::object()),
                         openai_text_reply("Two files.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "How many files?"});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "Two files.\n");
  EXPECT_NE(run.err.find("[ls]"), std::string::npos) << run.err;  // progress stays on stderr
}

TEST_F(AgentCliTest, AgentCliAWordAfterPIsThePromptNotACommand) {
  HttpTestServer server({openai_text_reply("a prompt, not a command")});
  for (const char* word : {"new", "sessions"}) {
    auto args = endpoint(server);
    args.insert(args.begin(), {"-p", word});
    Finished run = cairn(args);
    EXPECT_EQ(run.status, 0) << word << ": " << run.err;
    EXPECT_EQ(run.out, "a prompt, not a command\n") << word;
  }
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  // The last message each request carries is the user's word, all of it.
  const auto last_text = [](const testing::ReceivedRequest& request) {
    const Json content = request_json(request)["messages"].back()["content"];
    if (content.is_string()) return content.get<std::string>();
    std::string text;
    for (const auto& part : content) text += part.value("text", "");
    return text;
  };
  EXPECT_EQ(last_text(requests[0]), "new");
  EXPECT_EQ(last_text(requests[1]), "sessions");
}

TEST_F(AgentCliTest, AgentCliAPromptThatIsNotUtf8IsRefusedBeforeAnythingIsAccepted) {
  HttpTestServer server({openai_text_reply("unused")});
  auto from_stdin = endpoint(server);
  from_stdin.insert(from_stdin.begin(), "-p");
  Finished piped = cairn(from_stdin, std::string("first line\ncaf\xE9 au lait\n"));
  EXPECT_EQ(piped.status, 2) << piped.err;
  EXPECT_EQ(lines_of(piped.err).size(), 1u) << piped.err;
  EXPECT_NE(piped.err.find("not valid UTF-8"), std::string::npos) << piped.err;
  EXPECT_NE(piped.err.find("line 2, column 4"), std::string::npos) << piped.err;
  EXPECT_NE(piped.err.find("0xE9"), std::string::npos) << piped.err;

  auto from_argument = endpoint(server);
  from_argument.insert(from_argument.begin(), {"-p", "\xFF\xFE"});
  Finished argued = cairn(from_argument);
  EXPECT_EQ(argued.status, 2) << argued.err;
  EXPECT_NE(argued.err.find("not valid UTF-8"), std::string::npos) << argued.err;

  EXPECT_TRUE(server.requests().empty());
  Finished sessions = cairn({"sessions"});
  EXPECT_EQ(sessions.status, 0) << sessions.err;
  EXPECT_TRUE(sessions.out.empty()) << "a session was made for a refused prompt:\n" << sessions.out;
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
  HttpTestServer server({openai_text_reply("unused")});
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
                             "--append-system-prompt", "--tools", "--no-tools", "--tool-env", "--tool-env-allow",
                             "--print", "--json", "resume",
                             "abort", "compact", "demo"}) {
    EXPECT_NE(top.out.find(option), std::string::npos) << option;
  }
  EXPECT_EQ(top.out.find("demo-agent"), std::string::npos);  // hidden
  // Every tool --tools takes is in its help's list, task and ask_user too.
  const auto tools_at = top.out.find("--tools LIST");
  ASSERT_NE(tools_at, std::string::npos) << top.out;
  const auto open = top.out.find('(', tools_at), close = top.out.find(')', tools_at);
  ASSERT_LT(open, close) << top.out.substr(tools_at, 200);
  const std::string listed = "," + top.out.substr(open + 1, close - open - 1) + ",";
  for (const char* tool : {"read", "bash", "edit", "write", "grep", "find", "ls", "ask_user", "task"}) {
    EXPECT_NE(listed.find(fmt::format(",{},", tool)), std::string::npos) << tool << " is not in --tools' help: " << listed;
  }
  Finished resume = cairn({"resume", "--help"});
  EXPECT_EQ(resume.status, 0);
  for (const char* option : {"SESSION", "--ref", "--model", "--api", "--base-url", "--json", "--store", "postgres://"}) {
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
  HttpTestServer server({openai_text_reply("ok")});
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
  HttpTestServer server({openai_text_reply("ok")});
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
            (std::vector<std::string>{"read", "bash", "edit", "write", "grep", "find", "ls", "ask_user", "task"}));
}

// ---- traces ------------------------------------------------------------------------------

// A collector that never answers costs the run nothing and its exit at most
// the exporter's flush timeout (5 s); the lost spans are said once.
TEST_F(AgentCliTest, AgentCliAHungCollectorDelaysTheExitByAtMostTheFlushTimeout) {
  HttpTestServer server({openai_text_reply("Answered despite the collector.")});
  HttpTestServer collector(ScriptedResponse{.stall_before_response = true});
  extra_env_ = {"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.url(""),
                "OTEL_EXPORTER_OTLP_HEADERS=x-collector-key=sk-collector-secret-5521"};
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Say something"});
  const auto started = std::chrono::steady_clock::now();
  Finished run = cairn(args);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "Answered despite the collector.\n");
  EXPECT_LT(took, 5s + 4s) << "the exit waited longer than the flush timeout";
  EXPECT_EQ(count_of(run.err, "spans were dropped"), 1) << run.err;
  EXPECT_LE(count_of(run.err, "cairn: trace export:"), 2) << run.err;  // at most the first failure and the total
  EXPECT_EQ(run.err.find("sk-collector-secret-5521"), std::string::npos) << run.err;
  // The collector's key went where it belongs.
  const auto received = collector.requests();
  ASSERT_FALSE(received.empty());
  EXPECT_EQ(received[0].header("x-collector-key"), "sk-collector-secret-5521");
}

// A collector that is not there at all (the variable set in a shell, no
// collector running) costs the run's exit no time: the same run with and
// without it, the fastest of two each, are within 0.5 s of each other. The
// lost spans are said once.
TEST_F(AgentCliTest, AgentCliARefusingCollectorDelaysTheExitByNoMoreThanHalfASecond) {
  HttpTestServer server({openai_text_reply("Answered."), openai_text_reply("Answered."), openai_text_reply("Answered."),
                         openai_text_reply("Answered.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Say something"});
  auto fastest_of_two = [&](std::vector<std::string> env, std::string* err) {
    extra_env_ = std::move(env);
    auto best = std::chrono::steady_clock::duration::max();
    for (int i = 0; i < 2; ++i) {
      const auto started = std::chrono::steady_clock::now();
      Finished run = cairn(args);
      best = std::min(best, std::chrono::steady_clock::now() - started);
      EXPECT_EQ(run.status, 0) << run.err;
      EXPECT_EQ(run.out, "Answered.\n");
      *err = run.err;
    }
    return best;
  };
  std::string err;
  const auto without = fastest_of_two({}, &err);
  EXPECT_EQ(err.find("trace export"), std::string::npos) << err;
  const auto refused = fastest_of_two({fmt::format("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{}", HttpTestServer::closed_port())}, &err);
  EXPECT_LT(refused - without, 500ms) << "without a collector " << without / 1ms << " ms, with a refusing one "
                                      << refused / 1ms << " ms";
  EXPECT_EQ(count_of(err, "spans were dropped"), 1) << err;
  EXPECT_LE(count_of(err, "cairn: trace export:"), 2) << err;
}

TEST_F(AgentCliTest, AgentCliTraceSettingsThatCannotWorkStopTheCommandFirst) {
  HttpTestServer server({openai_text_reply("never sent")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "hi", "--trace", (path("work") / "missing" / "t.jsonl").string()});
  Finished unwritable = cairn(args);
  EXPECT_EQ(unwritable.status, 1) << unwritable.err;
  EXPECT_NE(unwritable.err.find("missing/t.jsonl"), std::string::npos) << unwritable.err;

  extra_env_ = {"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"};
  args = endpoint(server);
  args.insert(args.begin(), {"-p", "hi"});
  Finished grpc = cairn(args);
  EXPECT_EQ(grpc.status, 2) << grpc.err;
  EXPECT_NE(grpc.err.find("OTEL_EXPORTER_OTLP_PROTOCOL"), std::string::npos) << grpc.err;
  EXPECT_TRUE(server.requests().empty());

  extra_env_.clear();
  Finished missing = cairn({"sessions", "--trace"});
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_NE(missing.err.find("--trace needs a FILE"), std::string::npos) << missing.err;

  Finished help = cairn({"--help"});
  EXPECT_NE(help.out.find("--trace FILE"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--trace-content"), std::string::npos) << help.out;
}

// ---- durability ------------------------------------------------------------------------

class AgentCliKillTest : public AgentCliTest {
 protected:
  // A `cairn -p` whose model has bash append a line to out.txt and sleep;
  // killed with SIGKILL once the line is there.
  void run_until_killed(HttpTestServer& server, const std::string& session) {
    const auto out_file = path("work") / "out.txt";
    auto args = endpoint(server);
    args.insert(args.begin(), {"--approval", "never-ask", "-p", "Append the line, then wait", "--session", session, "--store", store()});
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
    const auto killed_at = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    Finished killed = finish(pid);
    EXPECT_EQ(killed.status, 128 + SIGKILL);
    EXPECT_EQ(session_line_id(killed.err), session) << killed.err;
    // The command's processes died with the agent: nothing of this round can
    // touch the next one, and nothing is left for resume to find running.
    EXPECT_TRUE(leftovers_gone_after(killed_at, 1s)) << "processes of the killed agent still run 1 s after the kill";
  }

  std::string slow_command() const { return fmt::format("echo line >> {}; sleep 30", (path("work") / "out.txt").string()); }
};

TEST_F(AgentCliKillTest, AgentCliAKilledRunResumesWithoutRunningTheCommandAgain) {
  HttpTestServer server({openai_tool_reply("call_slow", "bash", Json{{"command", slow_command()}}),
                         openai_text_reply("The command was interrupted; I did not run it again.")});
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

// A resumed run's trace: `cairn resume --trace FILE` with an OTLP collector
// set writes and sends a cairn.harness.resume span whose children are the
// resumed work, and the provider request carries its span as traceparent.
TEST_F(AgentCliKillTest, AgentCliAResumedRunIsTracedUnderAResumeSpan) {
  HttpTestServer server({openai_tool_reply("call_slow", "bash", Json{{"command", slow_command()}}),
                         openai_text_reply("Interrupted; not run again.")});
  run_until_killed(server, "traced-run");

  std::mutex mu;
  std::vector<Json> exported;
  HttpTestServer collector([&](const testing::ReceivedRequest& request) {
    if (request.target == "/v1/traces") {
      std::lock_guard lock(mu);
      exported.push_back(Json::parse(request.body));
    }
    return ScriptedResponse{.headers = {{"Content-Type", "application/json"}}, .body = {{.bytes = "{}"}},
                            .framing = ScriptedResponse::Framing::content_length};
  });
  extra_env_ = {"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.url(""), "OTEL_SERVICE_NAME=cairn-test"};
  const auto trace_file = path("io") / "trace.jsonl";
  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "traced-run", "--trace", trace_file.string()});
  Finished resumed = cairn(resume);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(count_of(read_file(path("work") / "out.txt"), "line"), 1);

  // The file: every span started and ended, the resume span the root.
  std::map<std::string, Json> starts;  // span id -> start event
  std::ifstream in(trace_file);
  std::string root;
  for (std::string line; std::getline(in, line);) {
    Json event = Json::parse(line);
    if (event["type"] == "start") {
      if (!event.contains("parentSpanId")) root = event["spanId"];
      starts[event["spanId"]] = event;
    }
  }
  ASSERT_FALSE(root.empty());
  EXPECT_EQ(starts[root]["name"], "cairn.harness.resume");
  std::set<std::string> under_resume;
  for (const auto& [id, event] : starts) {
    std::string at = id;
    while (starts[at].contains("parentSpanId")) at = starts[at]["parentSpanId"];
    EXPECT_EQ(at, root) << event.dump();  // one tree: nothing outside the resume, nothing of the dead process
    under_resume.insert(event["name"].get<std::string>());
  }
  for (const char* name : {"cairn.harness.run", "cairn.harness.step", "cairn.harness.generation", "cairn.llm.request",
                           "cairn.session.append"}) {
    EXPECT_TRUE(under_resume.contains(name)) << name;
  }
  EXPECT_FALSE(under_resume.contains("cairn.harness.tool"));  // the bash call was not run again

  // The collector got the same spans, under the service's name.
  std::set<std::string> sent;
  {
    std::lock_guard lock(mu);
    ASSERT_FALSE(exported.empty());
    for (const auto& body : exported) {
      const Json& resource = body["resourceSpans"][0]["resource"]["attributes"];
      EXPECT_NE(resource.dump().find("cairn-test"), std::string::npos);
      for (const auto& span : body["resourceSpans"][0]["scopeSpans"][0]["spans"]) sent.insert(span["spanId"].get<std::string>());
    }
  }
  std::set<std::string> written;
  for (const auto& [id, event] : starts) written.insert(id);
  EXPECT_EQ(sent, written);

  // The model's request carried the cairn.llm.request span.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  const auto parent = requests[1].header("traceparent");
  ASSERT_TRUE(parent);
  const std::string span_id = parent->substr(36, 16);
  EXPECT_EQ(starts[span_id]["name"], "cairn.llm.request");
  EXPECT_FALSE(requests[0].header("traceparent"));  // the killed run traced nothing
}

TEST_F(AgentCliKillTest, AgentCliAbortEndsAKilledRun) {
  HttpTestServer server({openai_tool_reply("call_slow", "bash", Json{{"command", slow_command()}}),
                         openai_text_reply("unused")});
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
    HttpTestServer server({openai_tool_reply("call_slow", "bash", Json{{"command", slow_command()}}),
                           openai_text_reply("unused")});
    const std::string session = fmt::format("signalled-{}", signal);
    auto args = endpoint(server);
    args.insert(args.begin(), {"--approval", "never-ask", "-p", "Append the line, then wait", "--session", session, "--store", store()});
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
    EXPECT_TRUE(leftovers().empty()) << "an aborted run left processes running";

    Finished log = cairn({"log", session, "--json"});
    EXPECT_NE(log.out.find("\"operation_cancelled\""), std::string::npos) << log.out;
    EXPECT_NE(log.out.find("\"outcome\":\"aborted\""), std::string::npos) << log.out;
    EXPECT_EQ(cairn({"verify", session}).status, 0);
    EXPECT_EQ(cairn({"resume", session}).status, 2);  // nothing left suspended
    EXPECT_EQ(server.requests().size(), 1u);
  }
}

TEST_F(AgentCliKillTest, AgentCliAKilledAgentTakesEveryProcessOfItsToolsWithIt) {
  // A subshell, a background job, a nested sh -c and the command's own
  // sleep: each would write its line two seconds on, if it lived.
  const auto out_file = path("work") / "out.txt";
  const std::string command = fmt::format(
      "echo line >> {0}; (sleep 2; echo late-subshell >> {0}) & sleep 2 && echo late-job >> {0} & "
      "sh -c 'sleep 2; echo late-sh >> {0}' & sleep 2; echo late >> {0}",
      out_file.string());
  HttpTestServer server({openai_tool_reply("call_nested", "bash", Json{{"command", command}}), openai_text_reply("unused")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"--approval", "never-ask", "-p", "Leave processes behind", "--session", "nested", "--store", store()});
  const pid_t pid = start(args, path("work"));
  ASSERT_GT(pid, 0);
  // Every piece runs: bash, the subshell, the job, sh -c and the sleeps (at
  // least eight processes besides cairn).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (read_file(out_file).find("line") == std::string::npos || leftovers().size() < 9) {
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
      ::kill(pid, SIGKILL);
      FAIL() << "the command never ran whole (" << leftovers().size() << " processes):\n" << read_file(err_);
    }
    std::this_thread::sleep_for(5ms);
  }
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(pid, SIGKILL);
  const auto gone = leftovers_gone_after(killed_at, 1s);
  ASSERT_TRUE(gone) << leftovers().size() << " processes of the killed agent still run 1 s after the kill";
  std::printf("[ figures  ] SIGKILL of cairn -p to the last process of its bash call gone: %lld ms\n",
              static_cast<long long>(gone->count()));
  EXPECT_EQ(finish(pid).status, 128 + SIGKILL);
  // Past the sleeps: not one of them wrote.
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(read_file(out_file), "line\n");
}

// ---- a damaged session ------------------------------------------------------------------

// A byte changed inside the assistant message that called bash: the session
// is refused for writing (nothing is appended, no model is asked, nothing
// runs) until repair replaces that message by a placeholder; then the
// session goes on, and the request leaves out the result whose call was lost.
TEST_F(AgentCliTest, AgentCliADamagedSessionIsRefusedUntilRepairedAndThenGoesOn) {
  const auto marker = path("work") / "marker";
  HttpTestServer server({openai_tool_reply("call_lost", "bash", Json{{"command", "echo ran >> " + marker.string()}}),
                         openai_text_reply("First answer."), openai_text_reply("Second answer.")});
  auto first = endpoint(server);
  first.insert(first.begin(), {"--approval", "never-ask", "-p", "Run it", "--session", "damaged"});
  ASSERT_EQ(cairn(first).status, 0);
  ASSERT_EQ(read_file(marker), "ran\n");

  const auto file = dir_.path() / "store" / "damaged.jsonl";
  std::string bytes = read_file(file);
  const auto call = bytes.find("echo ran >> ");
  ASSERT_NE(call, std::string::npos);
  bytes[call] = 'E';  // still valid JSON: only its checksum tells
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;

  auto next = endpoint(server);
  next.insert(next.begin(), {"--approval", "never-ask", "-p", "And now?", "--session", "damaged"});
  Finished refused = cairn(next);
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("checksum"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("cairn repair"), std::string::npos) << refused.err;
  EXPECT_EQ(read_file(file), bytes) << "a refused session was changed";
  EXPECT_EQ(server.requests().size(), 2u);

  Finished repaired = cairn({"repair", "damaged"});
  EXPECT_EQ(repaired.status, 0) << repaired.err;
  EXPECT_NE(repaired.out.find("1 replaced by placeholders"), std::string::npos) << repaired.out;
  Finished goes_on = cairn(next);
  EXPECT_EQ(goes_on.status, 0) << goes_on.err;
  EXPECT_NE(goes_on.out.find("Second answer."), std::string::npos) << goes_on.out;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[2].body.find("call_lost"), std::string::npos) << "a result without its call was sent:\n"
                                                                   << requests[2].body;
  EXPECT_EQ(read_file(marker), "ran\n");
  Finished verified = cairn({"verify", "damaged"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
}

// ---- a kill in the middle of a parallel batch ------------------------------------------

ScriptedResponse bash_batch_reply(const std::vector<std::string>& commands) {
  Json calls = Json::array();
  for (std::size_t k = 0; k < commands.size(); ++k) {
    calls.push_back({{"index", k},
                     {"id", fmt::format("call_{}", k)},
                     {"type", "function"},
                     {"function", {{"name", "bash"}, {"arguments", Json{{"command", commands[k]}}.dump()}}}});
  }
  return openai_stream({openai_chunk({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}}), openai_chunk(Json::object(), "tool_calls")});
}

// What the JSONL log of a session says about its calls: which started, and
// each result's record line and text.
struct BatchLog {
  std::set<std::string> started;
  std::map<std::string, std::vector<std::string>> result_lines;  // by call id: every result record's line
  std::map<std::string, std::string> result_text;
};

BatchLog read_batch_log(const std::filesystem::path& file) {
  BatchLog log;
  for (const std::string& line : lines_of(read_file(file))) {
    const Json record = Json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.contains("type")) continue;  // a torn last line
    if (record["type"] == "tool_started") log.started.insert(record["toolCallId"].get<std::string>());
    if (record["type"] == "message" && record["message"]["role"] == "toolResult") {
      const std::string id = record["message"]["toolCallId"];
      log.result_lines[id].push_back(line);
      std::string text;
      for (const Json& block : record["message"]["content"]) {
        if (block.value("type", "") == "text") text += block.value("text", "");
      }
      log.result_text[id] = text;
    }
  }
  return log;
}

std::map<std::string, int> marker_counts(const std::filesystem::path& file) {
  std::map<std::string, int> counts;
  for (const std::string& line : lines_of(read_file(file))) ++counts[line];
  return counts;
}

// A response of 50 bash calls (bash calls of one response run one after
// another, in their order: a later command may need what an earlier one
// did); SIGKILL once a chosen number of them has its result in the log, 50
// rounds with no pause between them. Every fifth round resumes the killed run, the others abort it.
// Each command writes a marker as it starts, so a second run would show.
TEST_F(AgentCliKillTest, AgentCliAKillMidBatchKeepsFinishedResultsAndRunsNothingTwice) {
  constexpr int kCalls = 50;
  const int kRounds = testing::scaled(50);
  std::mt19937 random(15);
  long long slowest_gone_ms = 0;
  int kept = 0, interrupted = 0, aborted = 0, ran_on_resume = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    const bool resume_round = round % 5 == 4;
    const std::string session = fmt::format("batch-{}", round);
    const auto log_file = dir_.path() / "store" / (session + ".jsonl");
    const auto markers = path("work") / fmt::format("markers-{}", round);
    std::vector<std::string> commands;
    for (int k = 0; k < kCalls; ++k) {
      commands.push_back(fmt::format("echo {0}-{1} >> {2}; sleep 0.0{3}; echo done-{1}", session, k, markers.string(),
                                     1 + k % 3));
    }
    HttpTestServer server({bash_batch_reply(commands), openai_text_reply("Batch handled.")});
    auto args = endpoint(server);
    args.insert(args.begin(), {"--approval", "never-ask", "-p", "Run the batch", "--session", session, "--store", store()});
    const pid_t pid = start(args, path("work"));
    ASSERT_GT(pid, 0);

    // Killed once `target` results are durable (0: once the first call started).
    const std::size_t target = std::uniform_int_distribution<std::size_t>(0, 30)(random);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      const BatchLog now = read_batch_log(log_file);
      if (now.result_lines.size() >= target && !now.started.empty()) break;
      if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, nullptr, WNOHANG) == pid) {
        ::kill(pid, SIGKILL);
        FAIL() << "the batch never reached " << target << " results:\n" << read_file(err_);
      }
      std::this_thread::sleep_for(1ms);
    }
    const auto killed_at = std::chrono::steady_clock::now();
    ::kill(pid, SIGKILL);
    const auto gone = leftovers_gone_after(killed_at, 1s);
    ASSERT_TRUE(gone) << leftovers().size() << " processes of the killed agent still run 1 s after the kill";
    slowest_gone_ms = std::max<long long>(slowest_gone_ms, gone->count());
    EXPECT_EQ(finish(pid).status, 128 + SIGKILL);

    const BatchLog before = read_batch_log(log_file);
    const auto ran_before = marker_counts(markers);
    for (const auto& [marker, count] : ran_before) {
      EXPECT_EQ(count, 1) << marker << " ran " << count << " times";
      EXPECT_TRUE(before.started.contains("call_" + marker.substr(marker.rfind('-') + 1)))
          << marker << " ran with no tool_started in the log";
    }

    Finished ended = resume_round ? [&] {
      auto resume = endpoint(server);
      resume.insert(resume.begin(), {"resume", session, "--approval", "never-ask"});
      return cairn(resume);
    }()
                                  : cairn({"abort", session});
    ASSERT_EQ(ended.status, 0) << ended.err;
    BatchLog after = read_batch_log(log_file);
    const auto ran_after = marker_counts(markers);
    for (int k = 0; k < kCalls; ++k) {
      const std::string id = fmt::format("call_{}", k);
      const std::string marker = fmt::format("{}-{}", session, k);
      SCOPED_TRACE(id);
      ASSERT_EQ(after.result_lines[id].size(), 1u) << "a call must have exactly one result";
      const std::string& text = after.result_text[id];
      if (before.result_lines.contains(id)) {
        // Finished before the kill: its result survived, byte for byte.
        EXPECT_EQ(before.result_lines.at(id), after.result_lines[id]);
        EXPECT_NE(text.find(fmt::format("done-{}", k)), std::string::npos) << text;
        EXPECT_EQ(ran_after.count(marker) ? ran_after.at(marker) : 0, 1);
        ++kept;
      } else if (before.started.contains(id)) {
        // Running when the agent died: never run again, whatever ends the run.
        EXPECT_NE(text.find("interrupted"), std::string::npos) << text;
        EXPECT_EQ(ran_after.count(marker) ? ran_after.at(marker) : 0, ran_before.count(marker) ? 1 : 0);
        ++interrupted;
      } else if (resume_round) {
        // Never started: resume runs it, once.
        EXPECT_EQ(ran_after.count(marker) ? ran_after.at(marker) : 0, 1) << marker;
        EXPECT_NE(text.find(fmt::format("done-{}", k)), std::string::npos) << text;
        ++ran_on_resume;
      } else {
        // Never started: abort answers it without running it.
        EXPECT_EQ(ran_after.count(marker), 0u) << marker;
        EXPECT_NE(text.find("aborted before it started"), std::string::npos) << text;
        ++aborted;
      }
    }
    const Finished verified = cairn({"verify", session});
    EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
    if (::testing::Test::HasFailure()) break;
  }
  std::printf("[ figures  ] %d rounds of a 50-call batch killed mid-way: %d results kept, %d interrupted, %d aborted, "
              "%d run on resume; slowest kill to last process gone: %lld ms\n",
              kRounds, kept, interrupted, aborted, ran_on_resume, slowest_gone_ms);
}

// ---- secrets ------------------------------------------------------------------------------

TEST_F(AgentCliTest, AgentCliToolsGetNeitherProviderKeysNorSecretLookingVariables) {
  extra_env_ = {"ANTHROPIC_API_KEY=sk-ant-cli-test-8841", "FOO_TOKEN=foo-token-value-5512",
                "WORK_KEY_HOLDER=work-key-value-2207", "PLAIN_SETTING=plain-value-3390"};
  // models.json names the variable WORK_KEY_HOLDER holds a key.
  std::filesystem::create_directories(path("config") / "cairn");
  std::ofstream(path("config") / "cairn" / "models.json")
      << R"({"providers": {"work": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions",
            "apiKeyEnv": "WORK_KEY_HOLDER", "models": [{"id": "work-model"}]}}})";
  // What the tool's environment showed the model, for one choice of options.
  const auto env_seen = [&](std::vector<std::string> options) {
    HttpTestServer server({openai_tool_reply("call_env", "bash", Json{{"command", "env"}}), openai_text_reply("seen")});
    auto args = endpoint(server);
    args.insert(args.begin(), {"--approval", "never-ask", "-p", "Show the environment"});
    args.insert(args.end(), options.begin(), options.end());
    Finished run = cairn(args);
    EXPECT_EQ(run.status, 0) << run.err;
    const auto requests = server.requests();
    return requests.size() == 2 ? requests[1].body : std::string("no second request");
  };

  const std::string filtered = env_seen({});
  EXPECT_NE(filtered.find("PLAIN_SETTING=plain-value-3390"), std::string::npos) << filtered;
  EXPECT_NE(filtered.find("CAIRN_TOOL_CALL="), std::string::npos) << filtered;
  for (const char* withheld : {"ANTHROPIC_API_KEY", "FOO_TOKEN", "WORK_KEY_HOLDER", "sk-ant-cli-test-8841"}) {
    EXPECT_EQ(filtered.find(withheld), std::string::npos) << withheld;
  }

  const std::string allowed = env_seen({"--tool-env-allow", "FOO_TOKEN"});
  EXPECT_NE(allowed.find("FOO_TOKEN=foo-token-value-5512"), std::string::npos) << allowed;
  EXPECT_EQ(allowed.find("ANTHROPIC_API_KEY"), std::string::npos);

  // inherit passes everything, but a key's value is still never shown.
  const std::string inherited = env_seen({"--tool-env", "inherit"});
  for (const char* passed : {"ANTHROPIC_API_KEY=[redacted]", "FOO_TOKEN=foo-token-value-5512",
                             "WORK_KEY_HOLDER=[redacted]", "PLAIN_SETTING=plain-value-3390"}) {
    EXPECT_NE(inherited.find(passed), std::string::npos) << passed << " in:\n" << inherited;
  }
  EXPECT_EQ(inherited.find("sk-ant-cli-test-8841"), std::string::npos);
  EXPECT_EQ(inherited.find("work-key-value-2207"), std::string::npos);

  Finished bad = cairn({"-p", "hi", "--tool-env", "everything"});
  EXPECT_EQ(bad.status, 2) << bad.err;
}

TEST_F(AgentCliTest, AgentCliAKeyReachesNeitherTheLogNorTheJsonOutputNorTheSpillFile) {
  const std::string anthropic_key = "sk-ant-api03-leak-test-0123456789";
  const std::string endpoint_key = "sk-endpoint-leak-test-9876543210";
  extra_env_ = {"ANTHROPIC_API_KEY=" + anthropic_key};
  std::ofstream(path("work") / "key.txt") << anthropic_key << "\n" << endpoint_key << "\n";
  // The model looks for keys in the environment, prints a file holding them,
  // prints one split across two writes, and makes the output long enough to
  // be spilled.
  const std::string command =
      fmt::format("env | grep -i key; cat key.txt; printf '{}'; sleep 0.3; printf '{}\\n'; seq 1 3000; cat key.txt",
                  endpoint_key.substr(0, 12), endpoint_key.substr(12));
  HttpTestServer server({openai_tool_reply("call_keys", "bash", Json{{"command", command}}), openai_text_reply("done")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"--approval", "never-ask", "--json", "-p", "Find the keys", "--session", "leak", "--api-key", endpoint_key});
  Finished run = cairn(args);
  EXPECT_EQ(run.status, 0) << run.err;
  Finished log = cairn({"log", "leak", "--json"});
  EXPECT_EQ(log.status, 0) << log.err;

  std::string spilled;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path("cache") / "cairn" / "spill", ec)) {
    if (entry.is_regular_file()) spilled += read_file(entry.path());
  }
  ASSERT_NE(spilled.find("\n3000\n"), std::string::npos) << "the output was not spilled";
  const std::vector<std::pair<std::string, std::string>> places = {
      {"the session log", log.out}, {"the --json output", run.out}, {"the spill file", spilled},
      {"the model's next request", server.requests().size() == 2 ? server.requests()[1].body : std::string()}};
  for (const auto& [where, text] : places) {
    EXPECT_EQ(text.find(anthropic_key), std::string::npos) << "ANTHROPIC_API_KEY's value in " << where;
    EXPECT_EQ(text.find(endpoint_key), std::string::npos) << "the --api-key value in " << where;
    EXPECT_NE(text.find("[redacted]"), std::string::npos) << "no redaction mark in " << where;
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

// ---- durable approvals ---------------------------------------------------------------

namespace cairn::testing {
namespace {

ScriptedResponse question_reply(const std::string& id, const std::string& question) {
  return openai_tool_reply(id, "ask_user", Json{{"question", question}, {"choices", {"red", "blue"}}});
}

// The seqs of the log's records of `type` (`cairn log --json`).
class AgentCliApprovalTest : public AgentCliTest {};

// Print mode parks on the bash call and exits 3; a `cairn resume --wait`
// killed while it waits changes nothing; `cairn approve` from a third
// process records the allow; `cairn resume` runs the command, once, after
// the allow record.
TEST_F(AgentCliApprovalTest, AgentCliAnApprovalWaitsAcrossProcessesAndTheCommandRunsOnceAfterTheAllow) {
  const auto marker = path("work") / "marker.txt";
  HttpTestServer server({openai_tool_reply("call_rm", "bash", Json{{"command", "echo ran >> " + marker.string()}}),
                         openai_text_reply("The command ran.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Run it", "--session", "asking", "--approval", "ask"});
  Finished parked = cairn(args);
  EXPECT_EQ(parked.status, 3) << parked.err;
  EXPECT_NE(parked.err.find("cairn approve asking"), std::string::npos) << parked.err;
  EXPECT_NE(parked.err.find("cairn deny asking"), std::string::npos) << parked.err;
  EXPECT_NE(parked.err.find("cairn resume asking"), std::string::npos) << parked.err;
  EXPECT_NE(parked.err.find("echo ran"), std::string::npos) << parked.err;  // the call is shown
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(server.requests().size(), 1u);

  Finished listed = cairn({"sessions"});
  EXPECT_NE(listed.out.find("waits for input: 1"), std::string::npos) << listed.out;

  // A second process waits for the answer, holding nothing, and is killed.
  auto waiting = endpoint(server);
  waiting.insert(waiting.begin(), {"resume", "asking", "--wait", "--store", store()});
  const pid_t pid = start(waiting, path("work"));
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (read_file(err_).find("waiting for the answer") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_file(err_);
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGKILL);
  EXPECT_EQ(finish(pid).status, 128 + SIGKILL);
  EXPECT_FALSE(std::filesystem::exists(marker));

  // Without --wait, resume says what it waits for and asks nothing.
  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "asking"});
  EXPECT_EQ(cairn(resume).status, 3);
  EXPECT_EQ(server.requests().size(), 1u);

  Finished approved = cairn({"approve", "asking"});
  EXPECT_EQ(approved.status, 0) << approved.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  Finished again = cairn({"approve", "asking"});
  EXPECT_EQ(again.status, 2) << again.err;  // nothing waits any more

  Finished resumed = cairn(resume);
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("The command ran."), std::string::npos) << resumed.out;
  EXPECT_EQ(count_of(read_file(marker), "ran"), 1);

  Finished log = cairn({"log", "asking", "--json"});
  const auto allows = log_of(log.out, "input_resolved");
  const auto starts = log_of(log.out, "tool_started");
  ASSERT_EQ(allows.size(), 1u);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(allows[0].value("decision", ""), "allow");
  EXPECT_LT(allows[0].value("seq", 0), starts[0].value("seq", 0));
  Finished verified = cairn({"verify", "asking"});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
}

TEST_F(AgentCliApprovalTest, AgentCliADenialAndAnAnswerReachTheModel) {
  const auto marker = path("work") / "marker.txt";
  HttpTestServer server({openai_tool_reply("call_rm", "bash", Json{{"command", "echo ran >> " + marker.string()}}),
                         question_reply("call_q", "Which colour?"), openai_text_reply("Blue, then.")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Paint it", "--session", "painting"});  // ask is the default
  EXPECT_EQ(cairn(args).status, 3);
  EXPECT_EQ(cairn({"answer", "painting", "blue"}).status, 2);  // it asks to approve a call, not a question
  Finished denied = cairn({"deny", "painting", "--reason", "not on this machine"});
  EXPECT_EQ(denied.status, 0) << denied.err;
  // `resume --wait` goes on past the denial, meets the question and waits
  // for its answer, which another process gives.
  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "painting", "--wait", "--store", store()});
  const pid_t pid = start(resume, path("work"));
  ASSERT_GT(pid, 0);
  const auto waiting_err = err_;
  const auto waiting_out = out_;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (read_file(waiting_err).find("waiting for the answer") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_file(waiting_err);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_NE(read_file(waiting_err).find("Which colour?"), std::string::npos) << read_file(waiting_err);
  EXPECT_NE(read_file(waiting_err).find("cairn answer painting"), std::string::npos) << read_file(waiting_err);
  EXPECT_EQ(cairn({"approve", "painting"}).status, 2);  // a question is answered, not approved
  EXPECT_EQ(cairn({"answer", "painting", "blue"}).status, 0);
  Finished done = finish(pid);
  EXPECT_EQ(done.status, 0) << read_file(waiting_err);
  EXPECT_NE(read_file(waiting_out).find("Blue, then."), std::string::npos) << read_file(waiting_out);
  EXPECT_FALSE(std::filesystem::exists(marker));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_NE(requests[1].body.find("not on this machine"), std::string::npos) << requests[1].body;
  EXPECT_NE(requests[2].body.find("blue"), std::string::npos) << requests[2].body;
  EXPECT_EQ(cairn({"verify", "painting"}).status, 0);
}

TEST_F(AgentCliApprovalTest, AgentCliSettingsRulesAndAlwaysDecideBeforeTheMode) {
  const auto marker = path("work") / "marker.txt";
  std::filesystem::create_directories(path("work") / ".cairn");
  std::ofstream(path("work") / ".cairn" / "settings.json")
      << R"j({"approval": {"allow": ["bash(echo ok*)"], "deny": ["bash(rm -rf *)"]}})j";
  HttpTestServer server({openai_tool_reply("c1", "bash", Json{{"command", "echo ok >> " + marker.string()}}),
                         openai_tool_reply("c2", "bash", Json{{"command", "rm -rf /nothing-here"}}),
                         openai_tool_reply("c3", "bash", Json{{"command", "echo again >> " + marker.string()}}),
                         openai_text_reply("first run done"),
                         openai_tool_reply("c4", "bash", Json{{"command", "echo again >> " + marker.string()}}),
                         openai_text_reply("second run done")});
  auto args = endpoint(server);
  args.insert(args.begin(), {"-p", "Go", "--session", "ruled"});
  EXPECT_EQ(cairn(args).status, 3);  // c1 allowed by the project, c2 denied, c3 asks
  EXPECT_EQ(count_of(read_file(marker), "ok"), 1);
  Finished always = cairn({"approve", "ruled", "--always"});
  EXPECT_EQ(always.status, 0) << always.err;
  EXPECT_NE(always.err.find("from now on: bash(echo again >> "), std::string::npos) << always.err;
  auto resume = endpoint(server);
  resume.insert(resume.begin(), {"resume", "ruled"});
  EXPECT_EQ(cairn(resume).status, 0);
  auto next = endpoint(server);
  next.insert(next.begin(), {"-p", "Once more", "--session", "ruled"});
  EXPECT_EQ(cairn(next).status, 0);  // remembered: c4 does not ask
  EXPECT_EQ(count_of(read_file(marker), "again"), 2);
  const auto requests = server.requests();
  ASSERT_GE(requests.size(), 3u);
  EXPECT_NE(requests[2].body.find("denied by the approval policy (rule bash(rm -rf *))"), std::string::npos)
      << requests[2].body;

  // A settings file that is not what it should be is named, and nothing runs.
  std::ofstream(path("work") / ".cairn" / "settings.json") << R"({"approval": {"allow": "bash"}})";
  Finished bad = cairn(args);
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find(".cairn/settings.json: approval.allow: expected an array of rules"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace cairn::testing
