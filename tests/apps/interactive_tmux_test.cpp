// Interactive mode as a person uses it: `cairn` runs in a detached tmux
// session against the local HTTP server (an OpenAI-compatible endpoint);
// the test types with send-keys and reads the screen with capture-pane.
// A prompt streams text and a bash tool call onto the screen; a steering
// message typed while the tool runs reaches the next request; Ctrl+C aborts
// a run durably (operation_cancelled and an aborted operation_finished in
// `cairn log --json`); /tree moves the ref's leaf to a picked entry and puts
// the prompt back in the input line.
//
// Every wait polls the screen (every 100 ms) up to a deadline long enough for
// a loaded machine; nothing synchronises on a fixed sleep.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "support/http_test_server.hpp"
#include "support/test_support.hpp"

extern char** environ;

namespace cairn::testing {
namespace {

using namespace std::chrono_literals;

struct Process {
  int status = -1;
  std::string out;
};

// Runs argv[0] (looked up in PATH) with `argv`, stdout captured, stderr
// into stdout as well (a failure says why).
Process run_process(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& arg : copy) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  Process process;
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return process;
  }
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    process.out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  process.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return process;
}

bool tmux_available() { return run_process({"tmux", "-V"}).status == 0; }

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// One tmux server (its own socket) with one session running a command;
// killed, with everything in it, when the object goes.
class TmuxSession {
 public:
  TmuxSession(const std::string& command, const std::string& cwd) {
    static int counter = 0;
    socket_ = fmt::format("cairn-test-{}-{}", ::getpid(), ++counter);
    Process started = tmux({"new-session", "-d", "-s", "t", "-x", "160", "-y", "50", "-c", cwd, command});
    started_ = started.status == 0;
    start_error_ = started.out;
    // Keep the pane when cairn exits, so a failure's last screen can be read.
    tmux({"set-option", "-t", "t", "remain-on-exit", "on"});
    socket_path_ = tmux({"display-message", "-p", "#{socket_path}"}).out;
    if (!socket_path_.empty() && socket_path_.back() == '\n') socket_path_.pop_back();
  }
  ~TmuxSession() {
    tmux({"kill-server"});
    // The server leaves its socket file behind.
    if (!socket_path_.empty() && socket_path_.find(socket_) != std::string::npos) {
      std::error_code ec;
      std::filesystem::remove(socket_path_, ec);
    }
  }

  bool started() const { return started_; }
  const std::string& start_error() const { return start_error_; }

  Process tmux(std::vector<std::string> args) const {
    args.insert(args.begin(), {"tmux", "-L", socket_});
    return run_process(args);
  }
  // The screen with its scrollback, so nothing that scrolled away is missed.
  // cairn's exit status once it has exited, as the shell around it wrote
  // it to `status_file` (tmux's own record of a dead pane's status is not
  // always there); nullopt while it runs or after the deadline. A sanitizer's
  // report makes it non-zero.
  std::optional<int> exit_status(const std::filesystem::path& status_file, std::chrono::seconds deadline = 30s) const {
    const auto until = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < until) {
      std::ifstream in(status_file);
      int status = -1;
      if (in >> status) return status;
      std::this_thread::sleep_for(100ms);
    }
    return std::nullopt;
  }
  std::string screen() const { return tmux({"capture-pane", "-p", "-S", "-", "-t", "t"}).out; }
  void type(const std::string& text) const { tmux({"send-keys", "-t", "t", "-l", text}); }
  void key(const std::string& name) const { tmux({"send-keys", "-t", "t", name}); }

  // Polls the screen until `done` holds; false (and the screen in the
  // failure) at the deadline.
  ::testing::AssertionResult wait_for(const std::function<bool(const std::string&)>& done, const std::string& what,
                                      std::chrono::seconds deadline = 30s) const {
    const auto until = std::chrono::steady_clock::now() + deadline;
    std::string last;
    while (std::chrono::steady_clock::now() < until) {
      last = screen();
      if (done(last)) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(100ms);
    }
    return ::testing::AssertionFailure() << "timed out waiting for " << what << "; the screen:\n" << last;
  }
  // The input line is the idle prompt with nothing typed: the last line
  // with anything on it is ">". (A screen caught mid-repaint has no prompt.)
  ::testing::AssertionResult wait_for_idle_prompt(std::chrono::seconds deadline = 30s) const {
    return wait_for(
        [](const std::string& s) {
          std::istringstream in(s);
          std::string last;
          for (std::string line; std::getline(in, line);) {
            while (!line.empty() && line.back() == ' ') line.pop_back();
            if (!line.empty()) last = line;
          }
          return last == ">";
        },
        "the idle prompt", deadline);
  }
  ::testing::AssertionResult wait_for_text(const std::string& text, std::chrono::seconds deadline = 30s) const {
    return wait_for([&](const std::string& s) { return s.find(text) != std::string::npos; }, "'" + text + "'",
                    deadline);
  }

 private:
  std::string socket_;
  std::string socket_path_;
  bool started_ = false;
  std::string start_error_;
};

// OpenAI chat completion chunks.
std::string tmux_chunk(const Json& delta, const Json& finish = nullptr) {
  Json body = {{"id", "chatcmpl-t"},
               {"object", "chat.completion.chunk"},
               {"created", 1723000000},
               {"model", "test"},
               {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
  return "data: " + body.dump() + "\n\n";
}

std::string usage_chunk(int prompt, int completion) {
  Json body = {{"id", "chatcmpl-t"},
               {"object", "chat.completion.chunk"},
               {"created", 1723000000},
               {"model", "test"},
               {"choices", Json::array()},
               {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}}}};
  return "data: " + body.dump() + "\n\n";
}

ScriptedResponse tmux_sse(std::vector<std::string> events, ScriptedResponse::End end = ScriptedResponse::End::finish) {
  ScriptedResponse response;
  response.headers = {{"Content-Type", "text/event-stream"}};
  for (auto& event : events) response.body.push_back({.delay = 20ms, .bytes = std::move(event)});
  response.end = end;
  return response;
}

// Text, then a bash call.
ScriptedResponse text_then_bash(const std::string& text, const std::string& command) {
  const Json args = {{"command", command}};
  return tmux_sse({tmux_chunk({{"role", "assistant"}, {"content", text.substr(0, text.size() / 2)}}),
              tmux_chunk({{"content", text.substr(text.size() / 2)}}),
              tmux_chunk({{"tool_calls", Json::array({{{"index", 0},
                                                  {"id", "call_bash_1"},
                                                  {"type", "function"},
                                                  {"function", {{"name", "bash"}, {"arguments", ""}}}}})}}),
              tmux_chunk({{"tool_calls", Json::array({{{"index", 0}, {"function", {{"arguments", args.dump()}}}}})}}),
              tmux_chunk(Json::object(), "tool_calls"), usage_chunk(120, 30), "data: [DONE]\n\n"});
}

// A bash call alone.
ScriptedResponse bash_call(const std::string& id, const std::string& command) {
  const Json call = {{"index", 0}, {"id", id}, {"type", "function"},
                     {"function", {{"name", "bash"}, {"arguments", Json{{"command", command}}.dump()}}}};
  return tmux_sse({tmux_chunk({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call})}}),
                   tmux_chunk(Json::object(), "tool_calls"), usage_chunk(120, 30), "data: [DONE]\n\n"});
}

ScriptedResponse answer(const std::string& text) {
  return tmux_sse({tmux_chunk({{"role", "assistant"}, {"content", text}}), tmux_chunk(Json::object(), "stop"), usage_chunk(200, 10),
              "data: [DONE]\n\n"});
}

// Some text, then nothing more until the client hangs up.
ScriptedResponse stalls_after(const std::string& text) {
  return tmux_sse({tmux_chunk({{"role", "assistant"}, {"content", text}})}, ScriptedResponse::End::stall);
}

std::vector<Json> log_records(const std::string& store, const std::string& session) {
  Process log = run_process({CAIRN_CLI_PATH, "log", "--json", "--store", store, session});
  EXPECT_EQ(log.status, 0) << log.out;
  std::vector<Json> records;
  std::istringstream in(log.out);
  for (std::string line; std::getline(in, line);) {
    auto json = Json::parse(line, nullptr, false);
    if (!json.is_discarded()) records.push_back(std::move(json));
  }
  return records;
}

// The shell command tmux runs: cairn's interactive mode on `store`, talking
// to `server`, with this test's HOME and XDG directories (and `env`, more
// variables), its exit status written to DIR/exit-status.
std::string interactive_command(const TempDir& dir, const std::string& store, const HttpTestServer& server,
                                std::string_view env = "", std::string_view args = "") {
  return fmt::format(
      "env HOME={home} XDG_STATE_HOME={home}/state XDG_CONFIG_HOME={home}/config XDG_DATA_HOME={home}/data "
      "XDG_CACHE_HOME={home}/cache {env} {cairn} --store {store} --api openai-completions --base-url {url} "
      "--model test {args}; echo $? > {status}",
      fmt::arg("home", shell_quote(dir.str())), fmt::arg("env", env), fmt::arg("cairn", shell_quote(CAIRN_CLI_PATH)),
      fmt::arg("store", shell_quote(store)), fmt::arg("url", shell_quote(server.url("/v1"))), fmt::arg("args", args),
      fmt::arg("status", shell_quote((dir.path() / "exit-status").string())));
}

std::string only_session(const std::string& store) {
  Process sessions = run_process({CAIRN_CLI_PATH, "sessions", "--store", store});
  EXPECT_EQ(sessions.status, 0) << sessions.out;
  return sessions.out.substr(0, sessions.out.find(' '));
}

TEST(InteractiveTmux, StreamsSteersAbortsAndNavigatesTheTree) {
  if (!tmux_available()) GTEST_SKIP() << "tmux is not installed";
  TempDir dir;
  const std::string store = "jsonl:" + (dir.path() / "sessions").string();
  const auto work = dir.path() / "work";
  std::filesystem::create_directories(work);
  HttpTestServer server({
      text_then_bash("Let me check the files.", "sleep 8"),  // the prompt
      answer("Steered to the left as asked."),                  // after the tool, with the steering message
      stalls_after("Thinking very slowly"),                      // the run Ctrl+C aborts
  });

  const std::string command = interactive_command(dir, store, server, "", "--api-key sk-test");
  TmuxSession tmux(command, work.string());
  ASSERT_TRUE(tmux.started()) << tmux.start_error();
  ASSERT_TRUE(tmux.wait_for_text("/help lists commands"));
  ASSERT_TRUE(tmux.wait_for_text("custom/test"));  // the status line names the model

  // A prompt: streamed text, then the tool call with its arguments.
  tmux.type("list the files please");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("> list the files please"));
  ASSERT_TRUE(tmux.wait_for_text("Let me check the files."));
  ASSERT_TRUE(tmux.wait_for_text("-> bash {\"command\":\"sleep 8\"}"));
  // bash asks first (--approval ask is the default): yes.
  ASSERT_TRUE(tmux.wait_for_text("allow? [y]es [n]o [a]lways [e]dit"));
  ASSERT_TRUE(tmux.wait_for_text("$ sleep 8"));
  tmux.type("y");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("running bash"));

  // While bash sleeps: a steering message.
  tmux.type("please steer left");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("(queued to steer: please steer left)"));
  ASSERT_TRUE(tmux.wait_for_text("Steered to the left as asked.", 40s));
  ASSERT_TRUE(tmux.wait_for_text("> please steer left"));  // shown when the run read it
  const auto requests = server.requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_NE(requests[1].body.find("please steer left"), std::string::npos) << requests[1].body;
  EXPECT_EQ(requests[0].body.find("please steer left"), std::string::npos);
  // The run has ended: the prompt is the idle one again.
  ASSERT_TRUE(tmux.wait_for_idle_prompt());

  // A run that hangs in its request: Ctrl+C aborts it.
  tmux.type("now wait for me");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("Thinking very slowly"));
  tmux.key("C-c");
  ASSERT_TRUE(tmux.wait_for_text("(run aborted)"));
  ASSERT_TRUE(tmux.wait_for_idle_prompt());
  const std::string session = only_session(store);
  ASSERT_FALSE(session.empty());
  {
    bool cancelled = false, finished_aborted = false;
    for (const Json& record : log_records(store, session)) {
      const std::string type = record.value("type", "");
      if (type == "operation_cancelled") cancelled = true;
      if (type == "operation_finished" && record.value("outcome", "") == "aborted") finished_aborted = true;
    }
    EXPECT_TRUE(cancelled);
    EXPECT_TRUE(finished_aborted);
  }

  // /tree: pick the first prompt; the leaf moves to its parent and the
  // prompt comes back into the input line.
  tmux.type("/tree");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("go to entry"));
  const std::string tree_screen = tmux.screen();
  std::smatch match;
  const std::regex numbered(R"((\d+) [ *] +\S+ user: list the files please)");
  ASSERT_TRUE(std::regex_search(tree_screen, match, numbered)) << tree_screen;
  tmux.type(match[1].str());
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("summarise the branch you leave?"));
  tmux.type("n");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("(moved to"));
  ASSERT_TRUE(tmux.wait_for([](const std::string& s) { return s.find("\n> list the files please") != std::string::npos &&
                                                                s.rfind("> list the files please") > s.rfind("(moved to"); },
                            "the prompt back in the input line"));
  {
    std::string prompt_parent;
    std::optional<Json> leaf;
    for (const Json& record : log_records(store, session)) {
      const std::string type = record.value("type", "");
      if (type == "message" && record["message"].value("role", "") == "user" && prompt_parent.empty()) {
        prompt_parent = record.value("parentId", Json()).is_string() ? record["parentId"].get<std::string>() : "";
      }
      if (type == "leaf") leaf = record;
    }
    ASSERT_TRUE(leaf);
    EXPECT_EQ(leaf->value("ref", ""), "main");
    EXPECT_EQ(leaf->value("targetId", Json()).is_string() ? (*leaf)["targetId"].get<std::string>() : "", prompt_parent);
  }

  // Ctrl+C clears the line, Ctrl+D leaves; the session id is said on the way out.
  tmux.key("C-c");
  ASSERT_TRUE(tmux.wait_for([](const std::string& s) { return s.find("\n> list the files please") == std::string::npos ||
                                                              s.rfind("> list the files please") < s.rfind("(moved to"); },
                            "the input line cleared"));
  tmux.key("C-d");
  ASSERT_TRUE(tmux.wait_for_text("cairn: session " + session));
  EXPECT_EQ(tmux.exit_status(dir.path() / "exit-status"), 0) << tmux.screen();
}

// What the screen says after `prefix` up to the end of its line.
std::string after(const std::string& screen, const std::string& prefix) {
  const std::size_t at = screen.rfind(prefix);
  if (at == std::string::npos) return {};
  const std::size_t start = at + prefix.size();
  return screen.substr(start, screen.find_first_of(")\n", start) - start);
}

TEST(InteractiveTmux, SwitchesRefsForksAndResumesSessions) {
  if (!tmux_available()) GTEST_SKIP() << "tmux is not installed";
  TempDir dir;
  const std::string store = "jsonl:" + (dir.path() / "sessions").string();
  const auto work = dir.path() / "work";
  std::filesystem::create_directories(work);
  HttpTestServer server(answer("Hello from the model."));
  const std::string command = interactive_command(dir, store, server);
  TmuxSession tmux(command, work.string());
  ASSERT_TRUE(tmux.started()) << tmux.start_error();
  ASSERT_TRUE(tmux.wait_for_text("/help lists commands"));
  const std::string original = only_session(store);
  ASSERT_FALSE(original.empty());

  const auto run = [&](const std::string& line, const std::string& expect) {
    tmux.type(line);
    tmux.key("Enter");
    return tmux.wait_for_text(expect);
  };
  ASSERT_TRUE(run("hello", "Hello from the model."));
  ASSERT_TRUE(tmux.wait_for_idle_prompt());
  ASSERT_TRUE(run("/name the first one", "(session named \"the first one\")"));
  ASSERT_TRUE(run("/ref side", "(created ref side at this leaf; now on it)"));
  ASSERT_TRUE(tmux.wait_for_text("| side |"));  // the status line names the ref
  ASSERT_TRUE(run("/frok", "unknown command /frok (did you mean /fork?)"));

  // /fork: a new session from this branch, and the mode moves to it.
  ASSERT_TRUE(run("/fork", "(forked: now in session "));
  const std::string forked = after(tmux.screen(), "(forked: now in session ");
  ASSERT_EQ(forked.size(), original.size()) << tmux.screen();
  ASSERT_NE(forked, original);
  ASSERT_TRUE(run("/session", "forked   from " + original));
  ASSERT_TRUE(tmux.wait_for_text("> hello"));  // its transcript is shown

  // /resume: the picker lists this directory's sessions, newest first.
  ASSERT_TRUE(run("/resume", "session number (or id; Enter cancels):"));
  std::smatch match;
  const std::string screen = tmux.screen();
  ASSERT_TRUE(std::regex_search(screen, match, std::regex("(\\d+)[ *] " + original))) << screen;
  ASSERT_TRUE(run(match[1].str(), "(now in session " + original + ")"));
  ASSERT_TRUE(run("/ref", "  side at "));
  ASSERT_TRUE(tmux.wait_for_text("* main at "));
  ASSERT_TRUE(run("/ref side", "(now on ref side)"));

  // Both sessions are in the store; the fork names its parent.
  Process sessions = run_process({CAIRN_CLI_PATH, "sessions", "--json", "--store", store});
  ASSERT_EQ(sessions.status, 0) << sessions.out;
  bool fork_has_parent = false;
  int count = 0;
  std::istringstream in(sessions.out);
  for (std::string line; std::getline(in, line);) {
    const Json header = Json::parse(line);
    ++count;
    if (header.value("id", "") == forked) fork_has_parent = header.value("parentSession", "") == original;
  }
  EXPECT_EQ(count, 2);
  EXPECT_TRUE(fork_has_parent) << sessions.out;

  // Leaving says which session it was in (once at the start, once now).
  tmux.key("C-d");
  ASSERT_TRUE(tmux.wait_for(
      [&](const std::string& s) {
        const std::string line = "cairn: session " + original;
        return s.find(line) != s.rfind(line);
      },
      "the session id on the way out"));
  EXPECT_EQ(tmux.exit_status(dir.path() / "exit-status"), 0) << tmux.screen();
}

// The approval question of the interactive mode: a denial with a reason the
// model reads, "always" for the session (the same command then runs
// unasked), arguments edited in $EDITOR, and Ctrl+C while it asks.
TEST(InteractiveTmux, AsksBeforeBashDeniesRemembersEditsAndAborts) {
  if (!tmux_available()) GTEST_SKIP() << "tmux is not installed";
  TempDir dir;
  const std::string store = "jsonl:" + (dir.path() / "sessions").string();
  const auto work = dir.path() / "work";
  std::filesystem::create_directories(work);
  const std::string marker = (work / "marker.txt").string();
  HttpTestServer server({
      bash_call("call_a", "echo denied >> " + marker),  // first prompt: denied
      answer("Skipped it as you asked."),
      bash_call("call_b", "echo kept >> " + marker),  // second prompt: always
      bash_call("call_c", "echo kept >> " + marker),  // the same command: not asked again
      answer("Ran it twice."),
      bash_call("call_d", "echo one >> " + marker),  // third prompt: edited in $EDITOR
      answer("Ran the edited one."),
      bash_call("call_e", "echo never >> " + marker),  // fourth prompt: Ctrl+C while it asks
  });
  const std::string command = interactive_command(dir, store, server, "EDITOR='sed -i s/one/two/'");
  TmuxSession tmux(command, work.string());
  ASSERT_TRUE(tmux.started()) << tmux.start_error();
  ASSERT_TRUE(tmux.wait_for_text("/help lists commands"));
  // The approval questions on the screen: each is one "wants to run" header.
  const auto count_asked = [](const std::string& screen) {
    std::size_t n = 0;
    for (std::size_t at = screen.find("bash wants to run"); at != std::string::npos;
         at = screen.find("bash wants to run", at + 1)) {
      ++n;
    }
    return n;
  };
  const auto asked = [&](std::size_t times) {
    return tmux.wait_for([&](const std::string& screen) { return count_asked(screen) >= times; },
                         "the approval question");
  };

  tmux.type("run the first");
  tmux.key("Enter");
  ASSERT_TRUE(asked(1));
  ASSERT_TRUE(tmux.wait_for_text("$ echo denied >> "));
  tmux.type("n");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("why (for the model; Enter: no reason):"));
  tmux.type("not now");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("Skipped it as you asked."));
  ASSERT_TRUE(tmux.wait_for_idle_prompt());

  tmux.type("run the second");
  tmux.key("Enter");
  ASSERT_TRUE(asked(2));
  tmux.type("a");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("always allow bash(echo kept >> "));
  tmux.type("s");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("Ran it twice.", 40s));
  ASSERT_TRUE(tmux.wait_for_idle_prompt());
  EXPECT_EQ(count_asked(tmux.screen()), 2u) << tmux.screen();  // call_c ran unasked

  // [e]dit: the arguments go through $EDITOR (here a sed that edits the
  // file), and what it saved is what runs.
  tmux.type("run the third");
  tmux.key("Enter");
  ASSERT_TRUE(asked(3));
  tmux.type("e");
  tmux.key("Enter");
  ASSERT_TRUE(tmux.wait_for_text("Ran the edited one.", 40s));
  ASSERT_TRUE(tmux.wait_for_idle_prompt());

  // Ctrl+C while it asks: the run ends aborted, durably, and the call never runs.
  tmux.type("run the fourth");
  tmux.key("Enter");
  ASSERT_TRUE(asked(4));
  tmux.key("C-c");
  ASSERT_TRUE(tmux.wait_for_text("(run aborted)"));
  ASSERT_TRUE(tmux.wait_for_idle_prompt());

  std::ifstream in(marker);
  std::stringstream ran;
  ran << in.rdbuf();
  EXPECT_EQ(ran.str(), "kept\nkept\ntwo\n");
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 8u);
  EXPECT_NE(requests[1].body.find("not now"), std::string::npos) << requests[1].body;
  std::vector<std::string> decisions;
  for (const Json& record : log_records(store, only_session(store))) {
    if (record.value("type", "") == "input_resolved") {
      decisions.push_back(record.value("decision", "") + ":" + record.value("reason", record.value("remember", "")));
    }
  }
  EXPECT_EQ(decisions, (std::vector<std::string>{"deny:not now", "allow:bash(echo kept >> " + marker + ")", "allow:"}));
  bool aborted = false;
  for (const Json& record : log_records(store, only_session(store))) {
    if (record.value("type", "") == "tool_started" && record.value("toolCallId", "") == "call_d") {
      EXPECT_EQ(record["effectiveArgs"].value("command", ""), "echo two >> " + marker);
    }
    if (record.value("type", "") == "operation_finished" && record.value("outcome", "") == "aborted") aborted = true;
  }
  EXPECT_TRUE(aborted);
  EXPECT_EQ(run_process({CAIRN_CLI_PATH, "verify", "--store", store, only_session(store)}).status, 0);

  tmux.key("C-d");
  ASSERT_TRUE(tmux.wait_for_text("cairn: session "));
  EXPECT_EQ(tmux.exit_status(dir.path() / "exit-status"), 0) << tmux.screen();
}

}  // namespace
}  // namespace cairn::testing
