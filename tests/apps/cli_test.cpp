// The `cairn` command, run as a process against a temporary jsonl: store:
// exit codes (0 ok, 1 failure, 2 usage), output that scripts rely on, and
// verify's verdicts on good and broken sessions.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/harness/harness.hpp"
#include "cairn/llm/faux.hpp"
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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

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

// Runs the built `cairn` with `args`; stdout and stderr are captured separately.
CliRun cairn_cli(const std::vector<std::string>& args) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);

  std::vector<std::string> argv_strings{CAIRN_CLI_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, CAIRN_CLI_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CliRun run;
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return run;
  }
  // Drain stderr on its own thread so neither pipe can fill up and stall the child.
  std::thread err_reader([&] { run.err = read_fd(err_pipe[0]); });
  run.out = read_fd(out_pipe[0]);
  err_reader.join();
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
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

ToolCall call(std::string id, std::string name) { return ToolCall{std::move(id), std::move(name), Json::object(), Json::object()}; }

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
      testing::harness(GenerationStarted{"run1", "step", 1, ModelRef{"faux", "m"}}),
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
      testing::harness(GenerationStarted{"run1", "step", 1, ModelRef{"faux", "m"}}),
      testing::harness(GenerationStarted{"run1", "step", 3, ModelRef{"faux", "m"}}),
      testing::assistant_entry("looking", "u1", "a1", {call("call_1", "ls")}),
      testing::harness(ToolStarted{"run1", "a1", 0, "call_1", "ls", Json::object(), "r1", "safe"}),
      testing::harness(ToolStarted{"run1", "a1", 0, "call_1", "ls", Json::object(), "r1", "safe"}),
      testing::tool_result_entry("call_1", "ls", "a\nb", "a1", "r1"),
      testing::harness(OperationFinished{"run1", "completed", std::nullopt}),
  });
  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 1) << run.out;
  EXPECT_NE(run.out.find("FAIL  6"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("FAIL  7"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ok    5"), std::string::npos) << run.out;
}

TEST_F(CliTest, VerifyFailsOnAHandBrokenFile) {
  const std::string id = demo_session();
  // An assistant message whose stopReason no reader knows: the line still
  // scans (the store opens it), but the record no longer decodes.
  std::ifstream in(file_of(id));
  std::stringstream contents;
  contents << in.rdbuf();
  in.close();
  std::string text = contents.str();
  const std::string from = "\"stopReason\":\"stop\"";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), "\"stopReason\":\"maybe\"");
  std::ofstream(file_of(id), std::ios::trunc) << text;

  CliRun run = cairn({"verify", id});
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("FAIL  0"), std::string::npos) << run.out << run.err;
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
  EXPECT_NE(repair.out.find("removed"), std::string::npos) << repair.out;
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

}  // namespace
}  // namespace cairn
