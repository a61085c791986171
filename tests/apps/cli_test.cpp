// The `cairn` command, run as a process against a temporary jsonl: store:
// exit codes (0 ok, 1 failure, 2 usage), output that scripts rely on, and
// verify's verdicts on good and broken sessions.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/harness/harness.hpp"
#include "cairn/llm/faux.hpp"
#include "log/checksum.hpp"
#include "cairn/store/store.hpp"
#include "support/test_support.hpp"

extern char** environ;

namespace cairn {
namespace {

struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

using testing::lines_of;

std::string read_fd(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// How a test runs the built `cairn`.
struct CliSpawn {
  // Run as the user nobody (through setpriv) when the tests run as root, so
  // that file permissions apply to it as they do to any user.
  bool as_unprivileged = false;
  // Variables set (or replaced) in the child's environment, "NAME=value".
  std::vector<std::string> env;
  // Killed (SIGKILL, status 128 + 9) when it runs longer.
  std::chrono::milliseconds timeout{60000};
};

std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view entry(*variable);
    const auto name = entry.substr(0, entry.find('=') + 1);
    const bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                      [&](const std::string& o) { return o.starts_with(name); });
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

// Runs the built `cairn` with `args`; stdout and stderr are captured separately.
CliRun cairn_cli(const std::vector<std::string>& args, const CliSpawn& how = {}) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);

  std::vector<std::string> argv_strings{CAIRN_CLI_PATH};
  if (how.as_unprivileged && ::geteuid() == 0) {
    argv_strings = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", CAIRN_CLI_PATH};
  }
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = child_environment(how.env);
  std::vector<char*> envp;
  for (auto& variable : env_strings) envp.push_back(variable.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv_strings.front().c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CliRun run;
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return run;
  }
  // A command that never ends fails its test instead of hanging it.
  std::mutex mu;
  std::condition_variable ended_cv;
  bool ended = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!ended_cv.wait_for(lock, how.timeout, [&] { return ended; })) ::kill(pid, SIGKILL);
  });
  // Drain stderr on its own thread so neither pipe can fill up and stall the child.
  std::thread err_reader([&] { run.err = read_fd(err_pipe[0]); });
  run.out = read_fd(out_pipe[0]);
  err_reader.join();
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard lock(mu);
    ended = true;
  }
  ended_cv.notify_one();
  watchdog.join();
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

class CliTest : public ::testing::Test {
 protected:
  std::string store_uri() const { return "jsonl:" + dir_.str(); }
  std::string file_of(const std::string& id) const { return dir_.str() + "/" + id + ".jsonl"; }

  CliRun cairn(std::vector<std::string> args) {
    args.push_back("--store");
    args.push_back(store_uri());
    return cairn_cli(args);
  }

  std::string demo_session() {
    CliRun run = cairn({"demo-session"});
    EXPECT_EQ(run.status, 0) << run.err;
    return trimmed(run.out);
  }

  std::unique_ptr<Store> open_store_here() {
    auto store = open_store(store_uri());
    EXPECT_TRUE(store) << store.error().message;
    return std::move(*store);
  }

  // A session built with the library, records as given.
  std::string session_with(std::vector<Record> records) {
    auto store = open_store_here();
    auto session = store->create(CreateOptions{});
    EXPECT_TRUE(session) << session.error().message;
    auto appended = (*session)->append(std::move(records));
    EXPECT_TRUE(appended) << appended.error().message;
    return (*session)->id();
  }

  testing::TempDir dir_;
};

ToolCall call(std::string id, std::string name) { return ToolCall{.id = std::move(id), .name = std::move(name)}; }

// ---- usage and exit codes ------------------------------------------------------

TEST_F(CliTest, VersionAndHelpExitZero) {
  CliRun version = cairn_cli({"--version"});
  EXPECT_EQ(version.status, 0);
  EXPECT_NE(version.out.find("cairn"), std::string::npos);

  CliRun help = cairn_cli({"log", "--help"});
  EXPECT_EQ(help.status, 0);
  for (const char* option : {"--store", "--after", "--json", "SESSION"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  }
  CliRun fork_help = cairn_cli({"fork", "--help"});
  EXPECT_EQ(fork_help.status, 0);
  for (const char* option : {"--entry", "--before", "--tree", "--ref", "--id"}) {
    EXPECT_NE(fork_help.out.find(option), std::string::npos) << option;
  }
}

TEST_F(CliTest, BadUsageExitsTwoWithOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"log", "--bogus"}, {"log"}, {"no-such-command"}, {"log", "x", "--after", "many"}}) {
    CliRun run = cairn_cli(args);
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
  }
  CliRun bad_store = cairn_cli({"sessions", "--store", "nowhere:at-all"});
  EXPECT_EQ(bad_store.status, 2);
}

TEST_F(CliTest, UnknownSessionExitsTwoWithOneLine) {
  demo_session();
  for (const char* command : {"log", "tree", "context", "verify", "fork", "repair"}) {
    CliRun run = cairn({command, "no-such-session"});
    EXPECT_EQ(run.status, 2) << command << ": " << run.err;
    ASSERT_EQ(lines_of(run.err).size(), 1u) << command << ": " << run.err;
    EXPECT_TRUE(run.err.starts_with("cairn: ")) << run.err;
    EXPECT_TRUE(run.out.empty()) << run.out;
  }
}

// ---- sessions, new ---------------------------------------------------------------

TEST_F(CliTest, NewPrintsTheIdAndSessionsListsIt) {
  CliRun created = cairn({"new", "--id", "cli-test-session", "--cwd", "/srv/work"});
  ASSERT_EQ(created.status, 0) << created.err;
  EXPECT_EQ(created.out, "cli-test-session\n");

  CliRun again = cairn({"new", "--id", "cli-test-session"});
  EXPECT_NE(again.status, 0);

  CliRun list = cairn({"sessions"});
  ASSERT_EQ(list.status, 0) << list.err;
  ASSERT_EQ(lines_of(list.out).size(), 1u);
  EXPECT_NE(list.out.find("cli-test-session"), std::string::npos);
  EXPECT_NE(list.out.find("/srv/work"), std::string::npos);

  CliRun json = cairn({"sessions", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  auto header = Json::parse(lines_of(json.out).at(0));
  EXPECT_EQ(header["type"], "session");
  EXPECT_EQ(header["id"], "cli-test-session");
  EXPECT_EQ(header["cwd"], "/srv/work");
}

// ---- log --------------------------------------------------------------------------

TEST_F(CliTest, LogJsonIsTheStoredLog) {
  const std::string id = demo_session();
  CliRun run = cairn({"log", id, "--json"});
  ASSERT_EQ(run.status, 0) << run.err;

  auto store = open_store_here();
  auto session = store->open(id, OpenOptions{.read_only = true});
  ASSERT_TRUE(session) << session.error().message;
  std::vector<std::string> expected;
  const std::vector<LogLine> lines = (*session)->get_log().value();
  for (const LogLine& line : lines) expected.push_back(line.json);
  EXPECT_EQ(lines_of(run.out), expected);
  EXPECT_GT(expected.size(), 10u);

  CliRun after = cairn({"log", id, "--json", "--after", "5"});
  ASSERT_EQ(after.status, 0) << after.err;
  EXPECT_EQ(lines_of(after.out), std::vector<std::string>(expected.begin() + 6, expected.end()));
}

TEST_F(CliTest, LogSummaryHasOneLinePerRecordAndTakesAPrefix) {
  const std::string id = demo_session();
  CliRun run = cairn({"log", id.substr(0, id.size() - 2)});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 14u);
  EXPECT_NE(lines[0].find("operation_started"), std::string::npos);
  EXPECT_NE(lines[1].find("user: Which files"), std::string::npos);
  EXPECT_NE(lines[10].find("ref_created"), std::string::npos);
  EXPECT_NE(lines[11].find("experiment"), std::string::npos);
}

// ---- tree, context ----------------------------------------------------------------

TEST_F(CliTest, TreeIndentsOnlyAtBranchPoints) {
  const std::string id = demo_session();
  CliRun run = cairn({"tree", id});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 8u) << run.out;
  // The chain from the prompt to the answer stays at the left margin.
  for (int i = 0; i < 4; ++i) EXPECT_NE(lines[static_cast<std::size_t>(i)][0], ' ') << lines[static_cast<std::size_t>(i)];
  EXPECT_NE(lines[0].find("[start]"), std::string::npos);
  EXPECT_NE(lines[0].find("user: Which files"), std::string::npos);
  EXPECT_TRUE(lines[4].starts_with("|- ")) << lines[4];
  EXPECT_NE(lines[4].find("model_change openai/gpt-5"), std::string::npos);
  EXPECT_TRUE(lines[6].ends_with("← main")) << lines[6];
  EXPECT_TRUE(lines[7].starts_with("`- ")) << lines[7];
  EXPECT_TRUE(lines[7].ends_with("← experiment")) << lines[7];
}

TEST_F(CliTest, ContextJsonCarriesTheLlmMessagesOfARef) {
  const std::string id = demo_session();
  CliRun main_ref = cairn({"context", id, "--json"});
  ASSERT_EQ(main_ref.status, 0) << main_ref.err;
  auto messages = Json::parse(main_ref.out);
  ASSERT_TRUE(messages.is_array());
  std::vector<std::string> roles;
  for (const auto& message : messages) roles.push_back(message["role"].get<std::string>());
  EXPECT_EQ(roles, (std::vector<std::string>{"user", "assistant", "toolResult", "assistant"}));

  CliRun experiment = cairn({"context", id, "--ref", "experiment", "--json"});
  ASSERT_EQ(experiment.status, 0) << experiment.err;
  auto branch = Json::parse(experiment.out);
  ASSERT_EQ(branch.size(), 5u);
  EXPECT_EQ(branch[4]["content"][0]["text"], "Now summarise README.md instead.");

  CliRun transcript = cairn({"context", id});
  ASSERT_EQ(transcript.status, 0) << transcript.err;
  EXPECT_NE(transcript.out.find("model: openai/gpt-5"), std::string::npos);
  EXPECT_NE(transcript.out.find("--- toolResult ls"), std::string::npos);

  CliRun unknown_ref = cairn({"context", id, "--ref", "nope"});
  EXPECT_EQ(unknown_ref.status, 2);
  EXPECT_EQ(lines_of(unknown_ref.err).size(), 1u);
}

// ---- verify -------------------------------------------------------------------------

TEST_F(CliTest, VerifyPassesOnAGoodSession) {
  const std::string id = demo_session();
  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  for (const auto& line : lines_of(run.out)) EXPECT_EQ(line.find("FAIL"), std::string::npos) << line;
  EXPECT_GE(lines_of(run.out).size(), 8u);
}

TEST_F(CliTest, VerifyReportsASuspendedOperationWithoutFailing) {
  const std::string id = session_with({
      testing::harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "run1"),
      testing::user_entry("hello", std::nullopt, "u1"),
      testing::harness(GenerationStarted{"run1", GenerationPurpose::step, 1, ModelRef{"faux", "m"}}),
  });
  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("open (suspended)"), std::string::npos) << run.out;
}

TEST_F(CliTest, VerifyFailsOnAnUnansweredToolCall) {
  const std::string id = session_with({
      testing::user_entry("list files", std::nullopt, "u1"),
      testing::assistant_entry("looking", "u1", "a1", {call("call_1", "ls")}),
      testing::assistant_entry("done without a result", "a1", "a2"),
  });
  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("FAIL  5"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("call_1"), std::string::npos) << run.out;
}

TEST_F(CliTest, VerifyFailsOnRepeatedToolStartsAndSkippedAttempts) {
  const std::string id = session_with({
      testing::harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "run1"),
      testing::user_entry("list files", std::nullopt, "u1"),
      testing::harness(GenerationStarted{"run1", GenerationPurpose::step, 1, ModelRef{"faux", "m"}}),
      testing::harness(GenerationStarted{"run1", GenerationPurpose::step, 3, ModelRef{"faux", "m"}}),
      testing::assistant_entry("looking", "u1", "a1", {call("call_1", "ls")}),
      testing::harness(ToolStarted{"run1", "a1", 0, "call_1", "ls", Json::object(), "r1", Replay::safe}),
      testing::harness(ToolStarted{"run1", "a1", 0, "call_1", "ls", Json::object(), "r1", Replay::safe}),
      testing::tool_result_entry("call_1", "ls", "a\nb", "a1", "r1"),
      testing::harness(OperationFinished{"run1", OperationOutcome::completed, std::nullopt}),
  });
  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("FAIL  6"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("FAIL  7"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ok    5"), std::string::npos) << run.out;
}

TEST_F(CliTest, VerifyFailsWhereAnAskedCallStartedWithoutAnAllow) {
  auto asked = [](std::string call_id, std::int64_t index) {
    return InputRequested{.run_id = "run1", .kind = InputKind::approval, .assistant_entry_id = "a1", .tool_index = index,
                          .tool_call_id = std::move(call_id), .tool_name = "ls", .arguments = Json::object(),
                          .rule = "ls"};
  };
  const std::string id = session_with({
      testing::harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "run1"),
      testing::user_entry("list files", std::nullopt, "u1"),
      testing::harness(GenerationStarted{"run1", GenerationPurpose::step, 1, ModelRef{"faux", "m"}}),
      testing::assistant_entry("looking", "u1", "a1", {call("call_1", "ls"), call("call_2", "ls")}),
      testing::harness(asked("call_1", 0), "main", "q1"),
      testing::harness(asked("call_2", 1), "main", "q2"),
      testing::harness(InputResolved{.run_id = "run1", .request_id = "q2", .decision = InputDecision::deny, .by = "ada"}, "main", "d1"),
      // Started with no answer at all, and the other after its denial.
      testing::harness(ToolStarted{"run1", "a1", 0, "call_1", "ls", Json::object(), "r1", Replay::safe}),
      testing::harness(ToolStarted{"run1", "a1", 1, "call_2", "ls", Json::object(), "r2", Replay::safe}),
  });
  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("FAIL  13"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("has no allow before it"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(and 1 more)"), std::string::npos) << run.out;  // call_2, started after its denial
}

TEST_F(CliTest, VerifyFailsOnAnInputRequestAnsweredTwice) {
  const std::string id = session_with({
      testing::harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "run1"),
      testing::user_entry("list files", std::nullopt, "u1"),
      testing::harness(GenerationStarted{"run1", GenerationPurpose::step, 1, ModelRef{"faux", "m"}}),
      testing::assistant_entry("looking", "u1", "a1", {call("call_1", "ls")}),
      testing::harness(InputRequested{.run_id = "run1", .kind = InputKind::approval, .assistant_entry_id = "a1",
                                      .tool_index = 0, .tool_call_id = "call_1", .tool_name = "ls",
                                      .arguments = Json::object(), .rule = "ls"},
                       "main", "q1"),
      testing::harness(InputResolved{.run_id = "run1", .request_id = "q1", .decision = InputDecision::allow, .by = "ada"}, "main", "y1"),
      testing::harness(InputResolved{.run_id = "run1", .request_id = "q1", .decision = InputDecision::deny, .by = "bob"}, "main", "n1"),
  });
  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("FAIL  13"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("already resolved (allow)"), std::string::npos) << run.out;
}

TEST_F(CliTest, VerifyFailsOnAHandBrokenFile) {
  const std::string id = demo_session();
  // An assistant message whose stopReason no reader knows, its checksum
  // recomputed as a careless tool would: the line scans and its checksum
  // holds (the store opens it), but the record no longer decodes.
  std::ifstream in(file_of(id));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  in.close();
  bool edited = false;
  for (auto& line : lines) {
    const std::string from = "\"stopReason\":\"stop\"";
    const auto at = line.find(from);
    if (at == std::string::npos || edited) continue;
    line.replace(at, from.size(), "\"stopReason\":\"maybe\"");
    line.erase(line.size() - kChecksumSuffixSize);
    line += "}";
    add_checksum(line);
    edited = true;
  }
  ASSERT_TRUE(edited);
  std::ofstream out(file_of(id), std::ios::trunc);
  for (const auto& line : lines) out << line << "\n";
  out.close();

  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("FAIL  0"), std::string::npos) << run.out << run.err;
}

TEST_F(CliTest, ADamagedRecordIsFoundByItsChecksumAndRepairKeepsEverythingElse) {
  const std::string id = demo_session();
  std::ifstream in(file_of(id));
  std::stringstream contents;
  contents << in.rdbuf();
  in.close();
  const std::string original = contents.str();
  // One byte inside a string, the JSON still valid: only the checksum can tell.
  std::string text = original;
  const auto at = text.find("\"stopReason\":\"stop\"");
  ASSERT_NE(at, std::string::npos);
  text[at + 15] = 'x';  // "stop" -> "xtop"
  std::ofstream(file_of(id), std::ios::trunc) << text;

  CliRun log = cairn({"log", id});
  EXPECT_EQ(log.status, 1);
  EXPECT_NE(log.err.find("checksum mismatch"), std::string::npos) << log.err;
  EXPECT_NE(log.err.find(file_of(id)), std::string::npos) << log.err;

  CliRun repair = cairn({"repair", id});
  EXPECT_EQ(repair.status, 0) << repair.err;
  EXPECT_NE(repair.out.find("14 records: 13 intact and unchanged, 1 replaced by placeholders"), std::string::npos)
      << repair.out;
  EXPECT_NE(repair.out.find("checksum mismatch"), std::string::npos) << repair.out;
  const auto backup_at = repair.out.find("the original bytes are in ");
  ASSERT_NE(backup_at, std::string::npos) << repair.out;
  const std::string backup = repair.out.substr(backup_at + 26, repair.out.find('\n', backup_at) - backup_at - 26);
  std::ifstream saved(backup);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(saved), {}), text);

  CliRun verified = cairn({"verify", id});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
  EXPECT_NE(verified.out.find("1 records replaced by cairn repair"), std::string::npos) << verified.out;
  CliRun tree = cairn({"tree", id});
  EXPECT_EQ(tree.status, 0) << tree.err;
  EXPECT_NE(tree.out.find("damaged"), std::string::npos) << tree.out;

  CliRun again = cairn({"repair", id});
  EXPECT_NE(again.out.find("nothing to repair"), std::string::npos) << again.out;
}

TEST_F(CliTest, RepairRefusesANewerFormatAndRebuildsADamagedHeader) {
  const std::string id = demo_session();
  std::ifstream in(file_of(id));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  in.close();
  auto write = [&](const std::string& header) {
    std::ofstream out(file_of(id), std::ios::trunc);
    out << header << "\n";
    for (std::size_t i = 1; i < lines.size(); ++i) out << lines[i] << "\n";
  };
  Json header = Json::parse(lines[0]);
  header["version"] = 999;
  write(header.dump());
  CliRun newer = cairn({"repair", id});
  EXPECT_EQ(newer.status, 1) << newer.out;
  EXPECT_NE(newer.err.find("newer"), std::string::npos) << newer.err;
  EXPECT_NE(newer.err.find("repair changes nothing"), std::string::npos) << newer.err;

  write(lines[0].substr(0, lines[0].size() / 2) + std::string(8, '\0'));
  CliRun rebuilt = cairn({"repair", id});
  EXPECT_EQ(rebuilt.status, 0) << rebuilt.err;
  EXPECT_NE(rebuilt.out.find("header was damaged"), std::string::npos) << rebuilt.out;
  CliRun verified = cairn({"verify", id});
  EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
}

// ---- torn tails and repair ------------------------------------------------------------

TEST_F(CliTest, InspectionWarnsAboutATornTailAndOnlyRepairCutsIt) {
  const std::string id = demo_session();
  const auto size_before = std::filesystem::file_size(file_of(id));
  std::ofstream(file_of(id), std::ios::app) << R"({"type":"message","seq":14,"id":"torn","par)";
  const auto torn_size = std::filesystem::file_size(file_of(id));

  CliRun log = cairn({"log", id, "--json"});
  EXPECT_EQ(log.status, 0) << log.err;
  EXPECT_EQ(lines_of(log.out).size(), 14u);
  EXPECT_NE(log.err.find("torn tail"), std::string::npos) << log.err;
  EXPECT_NE(log.err.find("after seq 13"), std::string::npos) << log.err;
  EXPECT_EQ(std::filesystem::file_size(file_of(id)), torn_size) << "inspection changed the file";

  CliRun repair = cairn({"repair", id});
  EXPECT_EQ(repair.status, 0) << repair.err;
  EXPECT_NE(repair.out.find("cut a torn last line"), std::string::npos) << repair.out;
  EXPECT_EQ(std::filesystem::file_size(file_of(id)), size_before);

  CliRun again = cairn({"repair", id});
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to repair"), std::string::npos) << again.out;
}

// ---- fork, import -----------------------------------------------------------------------

TEST_F(CliTest, ForkPrintsTheNewSessionId) {
  const std::string id = demo_session();
  CliRun fork = cairn({"fork", id, "--id", "forked-at-main"});
  ASSERT_EQ(fork.status, 0) << fork.err;
  EXPECT_EQ(fork.out, "forked-at-main\n");
  CliRun context = cairn({"context", "forked-at-main", "--json"});
  ASSERT_EQ(context.status, 0) << context.err;
  EXPECT_EQ(Json::parse(context.out).size(), 4u);

  // A short id from `cairn tree` names the fork point; --before forks at its parent.
  CliRun log = cairn({"log", id, "--json"});
  const auto answer = Json::parse(lines_of(log.out).at(7));
  ASSERT_EQ(answer["type"], "message");
  const std::string short_answer = answer["id"].get<std::string>().substr(0, 8);
  CliRun before = cairn({"fork", id, "--entry", short_answer, "--before", "--id", "forked-before"});
  ASSERT_EQ(before.status, 0) << before.err;
  CliRun before_context = cairn({"context", "forked-before", "--json"});
  EXPECT_EQ(Json::parse(before_context.out).size(), 3u);

  CliRun tree = cairn({"fork", id, "--tree", "--id", "forked-tree"});
  ASSERT_EQ(tree.status, 0) << tree.err;
  CliRun verify = cairn({"verify", "forked-tree"});
  EXPECT_EQ(verify.status, 0) << verify.out;
}

TEST_F(CliTest, ImportPiPrintsTheIdAndNotes) {
  CliRun run = cairn({"import", "pi", std::string(CAIRN_FIXTURES_DIR) + "/pi/v1_session.jsonl"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string id = trimmed(run.out);
  EXPECT_EQ(lines_of(run.out).size(), 1u);
  EXPECT_NE(run.err.find("firstKeptEntryIndex 4"), std::string::npos) << run.err;

  CliRun context = cairn({"context", id, "--json"});
  ASSERT_EQ(context.status, 0) << context.err;
  EXPECT_EQ(Json::parse(context.out).size(), 5u);
  CliRun verify = cairn({"verify", id});
  EXPECT_EQ(verify.status, 0) << verify.out;

  CliRun list = cairn({"sessions"});
  EXPECT_NE(list.out.find("imported from pi"), std::string::npos) << list.out;

  CliRun missing = cairn({"import", "pi", dir_.str() + "/missing.jsonl"});
  EXPECT_EQ(missing.status, 2);
}

// ---- compaction, forks of busy sessions ----------------------------------------

TEST_F(CliTest, ASessionCompactedThreeTimesKeepsEveryEntryInItsLogAndShowsTheCompactedContext) {
  std::string id;
  std::vector<std::string> entry_ids;
  {
    auto store = open_store_here();
    auto session = store->create(CreateOptions{});
    ASSERT_TRUE(session) << session.error().message;
    id = (*session)->id();
    auto faux = std::make_shared<FauxProvider>();
    HarnessOptions options;
    options.session = *session;
    options.models.add(FauxProvider::model(), faux);
    options.model = FauxProvider::model();
    options.compaction = CompactionSettings{.keep_recent_tokens = 60};
    auto created = AgentHarness::create(std::move(options));
    ASSERT_TRUE(created) << created.error().message;
    AgentHarness& harness = created->harness;
    int question = 0;
    for (int round = 1; round <= 3; ++round) {
      for (int i = 0; i < 3; ++i, ++question) {
        faux->push(FauxResponse::text(fmt::format("answer {} {}", question, std::string(200, 'a'))));
        ASSERT_TRUE(harness.main().prompt(fmt::format("question {} {}", question, std::string(200, 'q'))).ok());
      }
      faux->push(FauxResponse::text(fmt::format("SUMMARY-{}", round)));
      RunResult compacted = harness.main().compact();
      ASSERT_TRUE(compacted.ok()) << compacted.error->message;
    }
    auto entries = (*session)->find_entries(EntryQuery{.order = Order::oldest_first});
    ASSERT_TRUE(entries);
    for (const auto& entry : entries->items) entry_ids.push_back(entry.id);
    harness.close();
  }
  ASSERT_GE(entry_ids.size(), 21u);  // 9 questions, 9 answers, 3 compactions

  // The log still holds every entry, in order.
  CliRun log = cairn({"log", id, "--json"});
  ASSERT_EQ(log.status, 0) << log.err;
  std::vector<std::string> logged;
  int compactions = 0;
  for (const auto& line : lines_of(log.out)) {
    const auto record = Json::parse(line);
    if (record.contains("parentId")) logged.push_back(record["id"].get<std::string>());
    if (record["type"] == "compaction") ++compactions;
  }
  EXPECT_EQ(logged, entry_ids);
  EXPECT_EQ(compactions, 3);
  EXPECT_NE(log.out.find("question 0 "), std::string::npos);

  // The context starts at the newest summary, then the kept entries.
  CliRun context = cairn({"context", id, "--json"});
  ASSERT_EQ(context.status, 0) << context.err;
  const auto messages = Json::parse(context.out);
  ASSERT_GE(messages.size(), 2u);
  EXPECT_LT(messages.size(), 9u);
  EXPECT_NE(messages[0].dump().find("SUMMARY-3"), std::string::npos) << messages[0].dump();
  EXPECT_EQ(context.out.find("question 0 "), std::string::npos);
  EXPECT_NE(context.out.find("answer 8 "), std::string::npos);
}

TEST_F(CliTest, AForkOfABusySessionSaysItCopiedOnlyClosedHistory) {
  const std::string id = session_with({testing::user_entry("a", std::nullopt, "a"),
                                       testing::assistant_entry("b", "a", "b"),
                                       testing::harness(OperationStarted{"b", RunIntent{}}, "main", "run-open"),
                                       testing::user_entry("c", "b", "c", "main")});
  CliRun fork = cairn({"fork", id, "--id", "calm"});
  ASSERT_EQ(fork.status, 0) << fork.err;
  EXPECT_EQ(fork.out, "calm\n");
  EXPECT_NE(fork.err.find("only closed history was copied: ref main: run run-open open since seq 2"), std::string::npos)
      << fork.err;
  CliRun context = cairn({"context", "calm", "--json"});
  EXPECT_EQ(Json::parse(context.out).size(), 2u);
}

// ---- the door: bad input refused before anything is accepted ----------------------

TEST_F(CliTest, StoreBeforeTheCommandAppliesToIt) {
  CliRun created = cairn_cli({"--store", store_uri(), "new", "--id", "store-first"});
  ASSERT_EQ(created.status, 0) << created.err;
  EXPECT_EQ(created.out, "store-first\n");
  CliRun list = cairn_cli({"--store", store_uri(), "sessions"});
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("store-first"), std::string::npos) << list.out;
  CliRun log = cairn_cli({"--store", store_uri(), "log", "store-first", "--json"});
  EXPECT_EQ(log.status, 0) << log.err;
  CliRun imported =
      cairn_cli({"--store", store_uri(), "import", "pi", std::string(CAIRN_FIXTURES_DIR) + "/pi/v1_session.jsonl"});
  EXPECT_EQ(imported.status, 0) << imported.err;
  CliRun same_twice = cairn_cli({"--store", store_uri(), "sessions", "--store", store_uri()});
  EXPECT_EQ(same_twice.status, 0) << same_twice.err;
  EXPECT_EQ(lines_of(same_twice.out).size(), 2u) << same_twice.out;

  // Two different stores: which one was meant is not for cairn to guess.
  CliRun two = cairn_cli({"--store", store_uri(), "sessions", "--store", "memory:"});
  EXPECT_EQ(two.status, 2) << two.err;
  EXPECT_EQ(lines_of(two.err).size(), 1u) << two.err;
  EXPECT_NE(two.err.find("--store"), std::string::npos) << two.err;
  // The agent's other options still do not belong before a command.
  CliRun model = cairn_cli({"--model", "x", "sessions", "--store", store_uri()});
  EXPECT_EQ(model.status, 2) << model.err;
}

TEST_F(CliTest, AnEmptyStoreIsAUsageError) {
  // Were the empty value taken for "not given", the default store would be
  // created here.
  const testing::TempDir home;
  const CliSpawn how{.env = {"HOME=" + home.str(), "XDG_DATA_HOME=" + home.str() + "/data", "CAIRN_STORE="}};
  for (const auto& args : std::vector<std::vector<std::string>>{{"sessions", "--store", ""},
                                                                 {"--store", "", "sessions"},
                                                                 {"new", "--store", ""},
                                                                 {"import", "pi", "x.jsonl", "--store", ""},
                                                                 {"-p", "hello", "--store", ""}}) {
    const std::string shown = fmt::format("{}", fmt::join(args, " "));
    CliRun run = cairn_cli(args, how);
    EXPECT_EQ(run.status, 2) << shown << ": " << run.err;
    EXPECT_EQ(lines_of(run.err).size(), 1u) << shown << ": " << run.err;
    EXPECT_NE(run.err.find("--store"), std::string::npos) << shown << ": " << run.err;
  }
  EXPECT_TRUE(std::filesystem::is_empty(home.path()));
}

TEST_F(CliTest, ImportPiRefusesWhatIsNotARegularFile) {
  const std::string fifo = dir_.str() + "/a-fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/urandom"), fifo, dir_.str()}) {
    CliRun run = cairn_cli({"import", "pi", path, "--store", store_uri()}, {.timeout = std::chrono::seconds(10)});
    EXPECT_EQ(run.status, 2) << path << ": " << run.err;
    EXPECT_EQ(lines_of(run.err).size(), 1u) << path << ": " << run.err;
    EXPECT_NE(run.err.find(path), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("not a regular file"), std::string::npos) << run.err;
  }
  CliRun list = cairn({"sessions"});
  EXPECT_TRUE(list.out.empty()) << list.out;
}

TEST_F(CliTest, ADamagedSqliteFileIsNamedWithWhatToDo) {
  const std::string file = dir_.str() + "/damaged.db";
  std::string id;
  {
    auto store = open_store("sqlite:" + file);
    ASSERT_TRUE(store) << store.error().message;
    auto session = (*store)->create(CreateOptions{});
    ASSERT_TRUE(session) << session.error().message;
    id = (*session)->id();
    std::vector<Record> records;
    std::optional<std::string> parent;
    for (int i = 0; i < 400; ++i) {
      const std::string entry = fmt::format("e{}", i);
      records.push_back(testing::user_entry(fmt::format("entry {} {}", i, std::string(300, 'x')), parent, entry));
      parent = entry;
    }
    ASSERT_TRUE((*session)->append(std::move(records)));
  }
  ASSERT_FALSE(std::filesystem::exists(file + "-wal"));  // checkpointed when the last connection closed
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);

  const std::string recover = fmt::format("sqlite3 {} .recover | sqlite3", file);
  for (const auto& args : std::vector<std::vector<std::string>>{{"sessions"}, {"log", id}, {"repair", id}}) {
    CliRun run = cairn_cli([&] {
      auto all = args;
      all.insert(all.end(), {"--store", "sqlite:" + file});
      return all;
    }());
    const std::string shown = fmt::format("{}", fmt::join(args, " "));
    EXPECT_EQ(run.status, 1) << shown << ": " << run.err;
    EXPECT_NE(run.err.find("is damaged"), std::string::npos) << shown << ": " << run.err;
    EXPECT_NE(run.err.find(recover), std::string::npos) << shown << ": " << run.err;
  }

  // A file that is no database at all (SQLITE_NOTADB) says so the same way.
  const std::string text_file = dir_.str() + "/notes.db";
  std::ofstream(text_file) << std::string(4096, 'n');
  CliRun not_a_database = cairn_cli({"sessions", "--store", "sqlite:" + text_file});
  EXPECT_EQ(not_a_database.status, 1) << not_a_database.err;
  EXPECT_NE(not_a_database.err.find(fmt::format("sqlite3 {} .recover | sqlite3", text_file)), std::string::npos)
      << not_a_database.err;
}

// Makes a store read-only for the user nobody, and for the tests' own user
// when it is not root; restored (so that the directory can go) on destruction.
class ReadOnly {
 public:
  explicit ReadOnly(std::vector<std::filesystem::path> dirs) : dirs_(std::move(dirs)) {
    for (const auto& dir : dirs_) {
      for (const auto& entry : std::filesystem::directory_iterator(dir)) ::chmod(entry.path().c_str(), 0444);
      ::chmod(dir.c_str(), 0555);
    }
  }
  ~ReadOnly() {
    for (const auto& dir : dirs_) {
      ::chmod(dir.c_str(), 0755);
      for (const auto& entry : std::filesystem::directory_iterator(dir)) ::chmod(entry.path().c_str(), 0644);
    }
  }
  ReadOnly(const ReadOnly&) = delete;
  ReadOnly& operator=(const ReadOnly&) = delete;

 private:
  std::vector<std::filesystem::path> dirs_;
};

TEST_F(CliTest, AReadOnlyStoreCanBeReadAndSaysWhyItCannotBeWritten) {
  // Root passes every permission check; the commands then run as nobody.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  for (const std::string kind : {"sqlite", "jsonl"}) {
    const std::filesystem::path dir = dir_.path() / ("ro-" + kind);
    std::filesystem::create_directories(dir);
    const std::string uri = kind == "sqlite" ? "sqlite:" + (dir / "sessions.db").string() : "jsonl:" + dir.string();
    CliRun demo = cairn_cli({"demo-session", "--store", uri});
    ASSERT_EQ(demo.status, 0) << demo.err;
    const std::string id = trimmed(demo.out);
    ReadOnly read_only({dir});

    for (const auto& args : std::vector<std::vector<std::string>>{
             {"sessions"}, {"log", id}, {"tree", id}, {"context", id}, {"verify", id}}) {
      auto all = args;
      all.insert(all.end(), {"--store", uri});
      CliRun run = cairn_cli(all, {.as_unprivileged = true});
      EXPECT_EQ(run.status, 0) << kind << " " << args.front() << ": " << run.err;
      EXPECT_FALSE(run.out.empty()) << kind << " " << args.front();
    }
    CliRun created = cairn_cli({"new", "--id", "not-here", "--store", uri}, {.as_unprivileged = true});
    EXPECT_EQ(created.status, 1) << kind << ": " << created.err;
    EXPECT_EQ(lines_of(created.err).size(), 1u) << kind << ": " << created.err;
    EXPECT_NE(created.err.find(dir.string()), std::string::npos) << kind << ": " << created.err;
    EXPECT_NE(created.err.find("ermission denied"), std::string::npos) << kind << ": " << created.err;
    CliRun repaired = cairn_cli({"repair", id, "--store", uri}, {.as_unprivileged = true});
    EXPECT_EQ(repaired.status, 1) << kind << ": " << repaired.err;
    EXPECT_NE(repaired.err.find(dir.string()), std::string::npos) << kind << ": " << repaired.err;
  }
}

// ---- kills: nothing half-made is left behind ---------------------------------------------

// Starts `cairn` without waiting for it; its output goes nowhere.
pid_t start_cli(const std::vector<std::string>& args) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> argv_strings{CAIRN_CLI_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, CAIRN_CLI_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return spawned == 0 ? pid : -1;
}

// Runs `args` to its end once (how long that takes), then many times killed
// with SIGKILL at random instants of that span; after each kill the session
// `<prefix><n>` must be absent or whole (`whole_size` records).
struct KillCampaign {
  int runs = 0;
  int absent = 0;
  int whole = 0;
  std::vector<std::string> partial;  // what was left half-made
};

KillCampaign kill_at_random(const std::string& uri, const std::function<std::vector<std::string>(int)>& command,
                            const std::function<std::optional<std::string>(int)>& session_of, std::int64_t whole_size,
                            int runs) {
  KillCampaign campaign;
  const auto started = std::chrono::steady_clock::now();
  CliRun full = cairn_cli(command(0));
  const auto span = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(full.status, 0) << full.err;
  std::mt19937 rng(20261201);
  std::uniform_int_distribution<std::int64_t> instant(0, std::chrono::duration_cast<std::chrono::microseconds>(span).count());
  for (int n = 1; n <= runs; ++n) {
    const pid_t pid = start_cli(command(n));
    EXPECT_GT(pid, 0);
    if (pid <= 0) break;
    std::this_thread::sleep_for(std::chrono::microseconds(instant(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ++campaign.runs;
    auto store = open_store(uri);
    EXPECT_TRUE(store) << store.error().message;
    if (!store) break;
    const std::optional<std::string> id = session_of(n);
    if (!id) {
      ++campaign.absent;
      continue;
    }
    auto session = (*store)->open(*id, OpenOptions{.read_only = true});
    if (!session) {
      campaign.partial.push_back(fmt::format("run {}: {} listed but cannot be opened: {}", n, *id,
                                             session.error().message));
    } else if ((*session)->size() != whole_size) {
      campaign.partial.push_back(fmt::format("run {}: {} holds {} of {} records", n, *id, (*session)->size(),
                                             whole_size));
    } else {
      ++campaign.whole;
    }
  }
  return campaign;
}

class CliKillTest : public CliTest, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string uri() const {
    return GetParam() == "sqlite" ? "sqlite:" + dir_.str() + "/sessions.db" : "jsonl:" + dir_.str() + "/sessions";
  }
  // The id of the session listed whose header says it came from `marker`.
  std::optional<std::string> listed_with(const std::string& field, const std::string& value) {
    auto store = open_store(uri());
    if (!store) return std::nullopt;
    auto headers = (*store)->list();
    if (!headers) return std::nullopt;
    for (const SessionHeader& header : *headers) {
      if (field == "id" && header.id == value) return header.id;
      if (field == "cwd" && header.cwd == value) return header.id;
    }
    return std::nullopt;
  }
};

constexpr int kKillEntries = 4000;
constexpr int kKillRuns = 12;

TEST_P(CliKillTest, AKilledForkLeavesNoSessionOrTheWholeOne) {
  std::string source;
  {
    auto store = open_store(uri());
    ASSERT_TRUE(store) << store.error().message;
    auto session = (*store)->create(CreateOptions{});
    ASSERT_TRUE(session) << session.error().message;
    source = (*session)->id();
    std::vector<Record> records;
    std::optional<std::string> parent;
    for (int i = 0; i < kKillEntries; ++i) {
      const std::string entry = fmt::format("e{}", i);
      records.push_back(testing::user_entry(fmt::format("entry {} of a long session", i), parent, entry));
      parent = entry;
    }
    ASSERT_TRUE((*session)->append(std::move(records)));
  }
  const KillCampaign campaign = kill_at_random(
      uri(), [&](int n) { return std::vector<std::string>{"fork", source, "--tree", "--id", fmt::format("fork-{}", n), "--store", uri()}; },
      [&](int n) { return listed_with("id", fmt::format("fork-{}", n)); }, kKillEntries, kKillRuns);
  EXPECT_TRUE(campaign.partial.empty()) << fmt::format("{}", fmt::join(campaign.partial, "\n"));
  EXPECT_EQ(campaign.runs, kKillRuns);
}

TEST_P(CliKillTest, AKilledImportLeavesNoSessionOrTheWholeOne) {
  // A pi v3 file; each import's cwd says which run made it.
  const auto pi_file = [&](int n) {
    const std::string path = dir_.str() + fmt::format("/pi-{}.jsonl", n);
    std::ofstream out(path);
    out << Json{{"type", "session"}, {"version", 3}, {"id", "pi-session"}, {"timestamp", "2026-11-30T10:00:00.000Z"},
                {"cwd", fmt::format("/import/{}", n)}}
               .dump()
        << "\n";
    std::string parent;
    for (int i = 0; i < kKillEntries; ++i) {
      const std::string id = fmt::format("{:08x}", i + 1);
      Json entry = {{"type", "message"}, {"id", id}, {"parentId", parent.empty() ? Json(nullptr) : Json(parent)},
                    {"timestamp", "2026-11-30T10:00:01.000Z"},
                    {"message", {{"role", "user"}, {"content", fmt::format("line {} of a long session", i)},
                                 {"timestamp", 1764496801000}}}};
      out << entry.dump() << "\n";
      parent = id;
    }
    return path;
  };
  for (int n = 0; n <= kKillRuns; ++n) pi_file(n);
  const KillCampaign campaign = kill_at_random(
      uri(), [&](int n) { return std::vector<std::string>{"import", "pi", dir_.str() + fmt::format("/pi-{}.jsonl", n), "--store", uri()}; },
      [&](int n) { return listed_with("cwd", fmt::format("/import/{}", n)); }, kKillEntries, kKillRuns);
  EXPECT_TRUE(campaign.partial.empty()) << fmt::format("{}", fmt::join(campaign.partial, "\n"));
  EXPECT_EQ(campaign.runs, kKillRuns);
}

INSTANTIATE_TEST_SUITE_P(Stores, CliKillTest, ::testing::Values("jsonl", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace cairn
