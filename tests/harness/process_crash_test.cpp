// Real-process crashes of the harness: a child runs the scenario of
// support/harness_scenario.hpp on a SQLite session (sync full) and is
// SIGKILLed at random instants; after each kill the parent reopens the
// session, resumes every suspended operation and checks the invariants of
// DESIGN.md against the log and against the outside world's record of tool
// executions (marker files). The in-process version with every crash point
// enumerated is CrashPointTest (resume_test.cpp); this one adds what only a
// real process shows: a kill mid-write, locks released by death, threads cut
// anywhere, not just at an append.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cairn/harness/harness.hpp"
#include "cairn/store/store.hpp"
#include "support/harness_scenario.hpp"
#include "support/test_support.hpp"

extern char** environ;

namespace cairn {
namespace {

namespace fs = std::filesystem;

struct ChildRun {
  std::string output;
  int status = 0;        // waitpid's
  bool started = false;  // it said "ready" before the kill
  std::chrono::milliseconds ran{0};  // from "ready" to the kill
};

// Starts the child, waits for it to open the harness, lets it run `run_ms`
// (or, given `until`, until its output holds that), kills it. Timing the kill
// from "ready" rather than from the spawn puts every kill inside the
// harness's work (resume or runs), however slowly the child starts.
ChildRun run_and_kill(const std::vector<std::string>& args, int run_ms, std::optional<std::string> until = {}) {
  ChildRun run;
  int fds[2];
  // Close-on-exec: a child spawned meanwhile by the other thread must not
  // hold this pipe open (dup2 onto stdout clears the flag for our child).
  if (::pipe2(fds, O_CLOEXEC) != 0) return run;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return run;
  }
  char buffer[65536];
  bool eof = false;
  auto drain_until = [&](auto done) {
    while (!eof && !done()) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 2) > 0) {
        ssize_t n = ::read(fds[0], buffer, sizeof buffer);
        if (n <= 0) {
          eof = true;  // the child died on its own; waitpid says how
          return;
        }
        run.output.append(buffer, static_cast<std::size_t>(n));
      }
    }
  };
  using Clock = std::chrono::steady_clock;
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  drain_until([&] { return run.output.find("ready\n") != std::string::npos || Clock::now() > give_up; });
  run.started = run.output.find("ready\n") != std::string::npos;
  const auto ready = Clock::now();
  if (until) {
    const auto limit = ready + std::chrono::seconds(60);
    drain_until([&] { return run.output.find(*until) != std::string::npos || Clock::now() > limit; });
  } else {
    const auto deadline = ready + std::chrono::milliseconds(run_ms);
    drain_until([&] { return Clock::now() >= deadline; });
  }
  run.ran = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - ready);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &run.status, 0);
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) run.output.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  return run;
}

// What the checks saw, for the summary line.
struct Tally {
  std::int64_t records = 0;
  int interrupted = 0;  // effect calls cut by a kill: synthetic "interrupted" results
  int replays = 0;      // echo calls that ran more than once (allowed: replay safe)
};

// The transcript line of a message, as CrashPointTest writes it.
std::string line_of(const AgentMessage& m) {
  std::string line(role_of(m));
  if (const auto* u = std::get_if<UserMessage>(&m)) line += ":" + testing::scenario::text_of(u->content);
  if (const auto* a = std::get_if<AssistantMessage>(&m)) {
    for (const auto& block : a->content) {
      if (const auto* t = std::get_if<TextContent>(&block)) line += ":" + t->text;
      if (const auto* c = std::get_if<ToolCall>(&block)) line += ":call " + c->id;
    }
    line += ":" + std::string(to_string(a->stop_reason));
  }
  if (const auto* r = std::get_if<ToolResultMessage>(&m)) line += ":" + r->tool_call_id;
  return line;
}

// The transcript a crash-free child would have written on `ref` for `runs`
// runs: every run the same three steps, call ids from the context's length.
std::vector<std::string> expected_transcript(const std::string& ref, std::size_t runs) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < runs; ++r) {
    const std::size_t user = out.size();
    const std::string first = fmt::format("{}-{}", ref, user + 1);
    const std::string second = fmt::format("{}-{}", ref, user + 4);
    out.push_back("user:" + ref);
    out.push_back(fmt::format("assistant:call {}-echo:call {}-effect:toolUse", first, first));
    out.push_back(fmt::format("toolResult:{}-echo", first));
    out.push_back(fmt::format("toolResult:{}-effect", first));
    out.push_back(fmt::format("assistant:call {}-effect:toolUse", second));
    out.push_back(fmt::format("toolResult:{}-effect", second));
    out.push_back("assistant:done:stop");
  }
  return out;
}

// The invariants of DESIGN.md that a log shows, plus the outside world's.
// `settled`: every suspended operation has been resumed, so none is open and
// every branch holds whole runs. `acknowledged`: operations a child reported
// as finished, which must be in the log, completed (8).
void check_invariants(const Session& session, const fs::path& markers, bool settled,
                      const std::set<std::string>& acknowledged, Tally& tally) {
  tally = Tally{};  // counts of the whole log: the last check's are the run's
  auto log = session.get_log();
  ASSERT_TRUE(log) << log.error().message;
  tally.records = static_cast<std::int64_t>(log->size());
  std::set<std::string> ids;
  std::map<std::string, std::string> started;  // operation id -> ref
  std::map<std::string, int> finished;
  std::map<std::string, std::string> outcomes;  // operation id -> how it finished
  std::set<std::pair<std::string, std::string>> tool_started;  // (tool, call id)
  for (std::size_t i = 0; i < log->size(); ++i) {
    const auto& line = (*log)[i];
    ASSERT_EQ(line.seq, static_cast<std::int64_t>(i)) << "1: seq is not contiguous";
    auto record = decode_record(Json::parse(line.json));
    ASSERT_TRUE(record) << "seq " << i << ": " << record.error().message;
    if (const auto* h = std::get_if<HarnessRecord>(&record->body)) {
      EXPECT_TRUE(ids.insert(h->id).second) << "1: duplicate id " << h->id << " at seq " << i;
      if (std::holds_alternative<OperationStarted>(h->body)) started[h->id] = h->ref;
      if (const auto* f = std::get_if<OperationFinished>(&h->body)) {
        EXPECT_TRUE(started.contains(f->run_id)) << "seq " << i << " finishes " << f->run_id << ", never started";
        EXPECT_EQ(++finished[f->run_id], 1) << "4: " << f->run_id << " finished twice (seq " << i << ")";
        outcomes[f->run_id] = to_string(f->outcome);
      }
      if (const auto* g = std::get_if<GenerationStarted>(&h->body)) {
        EXPECT_LE(g->attempt, testing::scenario::retry_policy().max_attempts) << "7: seq " << i;
      }
      if (const auto* t = std::get_if<ToolStarted>(&h->body)) tool_started.emplace(t->tool_name, t->tool_call_id);
    } else if (const auto* t = std::get_if<TreeEntry>(&record->body)) {
      EXPECT_TRUE(ids.insert(t->id).second) << "1: duplicate id " << t->id << " at seq " << i;
    }
  }
  for (const auto& id : acknowledged) {
    EXPECT_EQ(outcomes[id], "completed") << "8: a child saw " << id << " finish, but the log does not say it completed";
  }
  std::map<std::string, int> open_per_ref;
  for (const auto& [id, ref] : started) open_per_ref[ref] += finished.contains(id) ? 0 : 1;
  for (const auto& [ref, open] : open_per_ref) {
    EXPECT_LE(open, 1) << "3: ref " << ref << " has " << open << " open operations";
    if (settled) { EXPECT_EQ(open, 0) << "4: ref " << ref << " has an unfinished operation after resume"; }
  }
  if (settled) {
    for (const auto& info : session.refs()) {
      EXPECT_FALSE(info.open_operation) << "3: ref " << info.name << " still has " << *info.open_operation;
    }
  }

  // The outside world: the log records every decision before it acts, so no
  // tool ran without its tool_started; a replay-never tool ran at most once.
  for (const auto& entry : fs::directory_iterator(markers)) {
    const std::string name = entry.path().filename().string();
    const auto dash = name.find('-');
    ASSERT_NE(dash, std::string::npos) << name;
    const std::string tool = name.substr(0, dash), call_id = name.substr(dash + 1);
    EXPECT_TRUE(tool_started.contains({tool, call_id})) << tool << " ran for " << call_id << " with no tool_started";
    std::ifstream in(entry.path());
    int lines = 0;
    for (std::string line; std::getline(in, line); ++lines) EXPECT_EQ(line, call_id) << name;
    if (tool == "effect") { EXPECT_LE(lines, 1) << "6: the replay-never tool ran " << lines << " times for " << call_id; }
  }

  // 5: on every branch, each tool call gets exactly one result before the
  // next assistant message; settled, the branch is whole runs, each as a
  // crash-free child would have written it, and the results say what ran.
  for (const auto& info : session.refs()) {
    auto context = session.build_context(info.name);
    ASSERT_TRUE(context) << context.error().message;
    std::multiset<std::string> open;
    std::vector<std::string> transcript;
    for (const auto& m : context->messages) {
      transcript.push_back(line_of(m));
      if (const auto* a = std::get_if<AssistantMessage>(&m)) {
        EXPECT_TRUE(open.empty()) << "5: a request on " << info.name << " was sent with unanswered tool calls";
        open.clear();
        for (const auto& block : a->content) {
          if (const auto* c = std::get_if<ToolCall>(&block)) open.insert(c->id);
        }
      }
      if (const auto* r = std::get_if<ToolResultMessage>(&m)) {
        auto it = open.find(r->tool_call_id);
        EXPECT_NE(it, open.end()) << "5: a result for " << r->tool_call_id << " with no open call, on " << info.name;
        if (it != open.end()) open.erase(it);
        const int ran = testing::scenario::executions(markers, r->tool_name, r->tool_call_id);
        const bool interrupted = r->details && r->details->is_object() && r->details->value("interrupted", false);
        if (interrupted) {
          EXPECT_EQ(r->tool_name, "effect") << "only a replay-never call gets an interrupted result";
          ++tally.interrupted;
        } else {
          EXPECT_FALSE(r->is_error) << r->tool_call_id;
          EXPECT_GE(ran, 1) << "a real result for " << r->tool_call_id << ", but its tool never ran";
          if (r->tool_name == "effect") { EXPECT_EQ(ran, 1) << r->tool_call_id; }
        }
        if (ran > 1) ++tally.replays;
      }
    }
    if (!settled) continue;
    EXPECT_TRUE(open.empty()) << "5: unanswered tool calls at the end of " << info.name;
    // Interrupted results are the only difference from a crash-free log
    // (invariant 10), and a transcript line does not show them.
    const std::size_t runs = transcript.size() / 7;
    EXPECT_EQ(transcript, expected_transcript(info.name, runs)) << "the branch of " << info.name << " is not whole runs";
  }
}

// Where a kill left each ref: the type of the ref's last durable record
// ("idle" after a finished operation), counted over the kills to show that
// they land all over a run, not only in its first step.
void note_landing(const Session& session, std::map<std::string, int>& landings) {
  auto log = session.get_log(std::max<std::int64_t>(-1, session.size() - 80));
  if (!log) return;
  std::map<std::string, std::string> last;
  for (const auto& line : *log) {
    auto record = decode_record(Json::parse(line.json));
    if (!record) return;
    std::string type(to_string(type_of(*record)));
    std::string ref;
    if (const auto* h = std::get_if<HarnessRecord>(&record->body)) ref = h->ref;
    if (const auto* t = std::get_if<TreeEntry>(&record->body)) {
      ref = t->ref.value_or("main");
      if (const auto* m = std::get_if<MessageBody>(&t->body)) type += ":" + std::string(role_of(m->message));
    }
    if (type == "operation_finished" || type == "ref_created") type = "idle";
    last[ref] = type;
  }
  for (const auto& [ref, type] : last) ++landings[type];
}

// The log's last records, to say where an invariant broke.
std::string log_tail(const Session& session, std::size_t count) {
  auto log = session.get_log();
  if (!log) return log.error().message;
  std::string out;
  for (std::size_t i = log->size() > count ? log->size() - count : 0; i < log->size(); ++i) out += (*log)[i].json + "\n";
  return out;
}

std::uint64_t seed_from_env(std::uint64_t fallback) {
  const char* value = std::getenv("CAIRN_HARNESS_CRASH_SEED");
  return value ? std::strtoull(value, nullptr, 10) : fallback;
}

// Counts over every kill, for the summary lines.
struct Totals {
  int kills = 0;
  int runs_finished = 0;   // by the children, before their kill
  int child_resumes = 0;   // suspended operations a child resumed to their end
  int parent_resumes = 0;
  int left_to_child = 0;   // kills after which the parent did not resume
  int interrupted = 0;
  int replays = 0;
  std::int64_t records = 0;
  std::map<std::string, int> landings;

  void add(const Totals& other) {
    kills += other.kills;
    runs_finished += other.runs_finished;
    child_resumes += other.child_resumes;
    parent_resumes += other.parent_resumes;
    left_to_child += other.left_to_child;
    interrupted += other.interrupted;
    replays += other.replays;
    records += other.records;
    for (const auto& [type, n] : other.landings) landings[type] += n;
  }
};

// One session, `kills` kills: spawn, wait a random instant, SIGKILL, then
// reopen as a restarted process would, resume and check.
// Sessions are independent (a file each), so several run at once.
void crash_session(const fs::path& dir, int index, int kills, int window_ms, std::mt19937_64 rng, Totals& totals) {
  const std::string file = (dir / fmt::format("h-{}.db", index)).string();
  const std::string uri = "sqlite:" + file;
  const fs::path markers = dir / fmt::format("markers-{}", index);
  fs::create_directories(markers);
  std::string session_id;
  {
    auto store = open_store(uri);
    ASSERT_TRUE(store) << store.error().message;
    auto session = (*store)->create({.cwd = "/w"});
    ASSERT_TRUE(session) << session.error().message;
    session_id = (*session)->id();
  }
  Tally tally;
  std::set<std::string> acknowledged;
  bool left_last_time = false;
  for (int kill = 0; kill < kills; ++kill) {
    SCOPED_TRACE(fmt::format("session {} ({}), kill {}", index, session_id, kill));
    const int run_ms = std::uniform_int_distribution<int>(0, window_ms)(rng);
    // Now and then the parent leaves the suspended operations to the next
    // child, so that kills also land in a resume. Never twice in a row: the
    // attempts of a request cycle stay within the retry policy. The last kill
    // of a session is always resumed, so every session ends settled.
    const bool leave = !left_last_time && kill + 1 < kills && std::uniform_int_distribution<int>(0, 3)(rng) == 0;
    const auto child = run_and_kill({CAIRN_HARNESS_CRASH_CHILD_PATH, file, session_id, markers.string()}, run_ms);
    ++totals.kills;
    ASSERT_TRUE(child.started) << "the child never opened the harness: " << child.output;
    ASSERT_TRUE(WIFSIGNALED(child.status) && WTERMSIG(child.status) == SIGKILL)
        << "the child ended on its own (status " << child.status << "); its output:\n" << child.output;
    std::istringstream lines(child.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string what, ref, id;
      if (!(fields >> what >> ref >> id)) continue;  // "ready", or a line cut by the kill
      totals.runs_finished += what == "run";
      totals.child_resumes += what == "resumed";
      acknowledged.insert(id);
    }

    // A fresh store, as a restarted process would have; the child's lock
    // went with it.
    auto store = open_store(uri);
    ASSERT_TRUE(store) << store.error().message;
    auto session = (*store)->open(session_id);
    ASSERT_TRUE(session) << "the session does not open after the kill: " << session.error().message;
    note_landing(**session, totals.landings);
    if (leave) {
      ++totals.left_to_child;
      check_invariants(**session, markers, false, acknowledged, tally);
    } else {
      auto created = AgentHarness::create(testing::scenario::options(*session, markers));
      ASSERT_TRUE(created) << created.error().code << ": " << created.error().message << "\n" << log_tail(**session, 40);
      for (const auto& suspended : created->suspended) {
        auto ref = created->harness.ref(suspended.ref);
        ASSERT_TRUE(ref) << suspended.ref;
        auto result = ref->resume();
        EXPECT_EQ(result.outcome, Outcome::ok) << suspended.id << " on " << suspended.ref << ": " << to_string(result.outcome)
                                               << (result.error ? ": " + result.error->message : std::string());
        ++totals.parent_resumes;
      }
      created->harness.close();
      check_invariants(**session, markers, true, acknowledged, tally);
    }
    left_last_time = leave;
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "the log's tail:\n" << log_tail(**session, 40) << "the child's output:\n" << child.output;
      return;
    }
  }
  totals.interrupted += tally.interrupted;
  totals.replays += tally.replays;
  totals.records += tally.records;
}

// How long the child takes from "ready" to its first finished run, on a
// session of its own. A sanitizer build is many times slower than a release
// build: kills timed for the one would all land in the other's first step.
int measure_run_ms(const fs::path& dir) {
  const std::string file = (dir / "calibration.db").string();
  auto store = open_store("sqlite:" + file);
  if (!store) return 0;
  auto session = (*store)->create({.cwd = "/w"});
  if (!session) return 0;
  const std::string id = (*session)->id();
  session->reset();  // the child takes the session's lock
  const fs::path markers = dir / "calibration-markers";
  fs::create_directories(markers);
  const auto child = run_and_kill({CAIRN_HARNESS_CRASH_CHILD_PATH, file, id, markers.string()}, 0, "run ");
  return child.output.find("run ") == std::string::npos ? 0 : static_cast<int>(child.ran.count());
}

TEST(HarnessProcessCrash, SigkillAtRandomInstantsAlwaysResumes) {
  // Several sessions rather than one long one: resuming and checking cost
  // grows with the log, and a short log keeps each kill cheap, so the test
  // affords more of them.
  // Not scaled under the sanitizers (CAIRN_TEST_SCALE): there only about one
  // kill in twenty lands while a replay-never tool runs, and fewer kills
  // could miss them all.
  constexpr int kSessions = 5, kKillsPerSession = 40;
  const std::uint64_t seed = seed_from_env(20261130);
  testing::TempDir dir;
  // Kills come 0–40 ms after the child is ready: about one run of each ref in
  // a release build. A slower build (sanitizers) stretches the window to
  // three quarters of its first run, so its kills do not all land in step one.
  const int run_ms = measure_run_ms(dir.path());
  ASSERT_GT(run_ms, 0) << "the child did not finish a run on its own";
  const int window_ms = std::max(40, run_ms * 3 / 4);
  std::printf("[ crash    ] harness seed %llu (CAIRN_HARNESS_CRASH_SEED to replay it), one run %d ms, kills 0-%d ms after start\n",
              static_cast<unsigned long long>(seed), run_ms, window_ms);
  // Two sessions at a time: each kill waits on a child, so one session
  // alone leaves a core idle, and this test is the longest of the suite.
  // Each session has its own random stream, seeded from `seed` and its index.
  Totals totals;
  std::mutex totals_mu;
  std::atomic<int> next_session{0};
  const auto work = [&] {
    for (int index; (index = next_session++) < kSessions && !::testing::Test::HasFailure();) {
      Totals own;
      crash_session(dir.path(), index, kKillsPerSession, window_ms, std::mt19937_64(seed + static_cast<std::uint64_t>(index)), own);
      const std::lock_guard lock(totals_mu);
      totals.add(own);
    }
  };
  {
    std::jthread second(work);
    work();
  }
  EXPECT_GE(totals.kills, kSessions * kKillsPerSession);
  // Not a vacuous pass: kills did cut runs, and some cut a replay-never tool.
  EXPECT_GT(totals.parent_resumes, 0);
  EXPECT_GT(totals.interrupted, 0) << "no kill landed while a replay-never tool ran";
  std::printf("[ crash    ] harness sqlite sync=full: %d kills, %d runs finished by the children, %d operations resumed "
              "by the parent and %d by the children (%d kills left to the next child), %d interrupted effect calls, "
              "%d echo calls run again, %lld records\n",
              totals.kills, totals.runs_finished, totals.parent_resumes, totals.child_resumes, totals.left_to_child,
              totals.interrupted, totals.replays, static_cast<long long>(totals.records));
  std::string where;
  for (const auto& [type, n] : totals.landings) where += fmt::format(" {}={}", type, n);
  std::printf("[ crash    ] where the kills left the refs:%s\n", where.c_str());
}

}  // namespace
}  // namespace cairn
