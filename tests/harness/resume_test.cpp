// Crash and resume: the crash timelines of the design document, and the
// exhaustive property — stop durably accepting after every append of a
// scenario, reopen, resume, and the log converges to the crash-free one.
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/harness_support.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

using Types = std::vector<std::string>;


const ToolResultMessage& tool_result(const Record& record) {
  return std::get<ToolResultMessage>(std::get<MessageBody>(std::get<TreeEntry>(record.body).body).message);
}

TEST_F(HarnessTest, CrashMidToolWithReplayNeverGetsAnInterruptedResult) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "effect", args("x1")));
  memory_store_fail_after(*store_, 5);  // operation_started, user, generation_started, assistant, tool_started
  auto crashed = harness.main().prompt("go");
  EXPECT_EQ(crashed.outcome, Outcome::faulted);
  EXPECT_FALSE(crashed.run_id.empty());
  EXPECT_TRUE(harness.faulted());
  EXPECT_EQ(events_.count(EventType::fault), 1u);
  EXPECT_EQ(events_.count(EventType::run_end), 0u);
  EXPECT_EQ(harness.main().prompt("more").outcome, Outcome::faulted);
  EXPECT_EQ(effects_->count("effect", "x1"), 1);

  reopen();
  std::optional<BeforeResumeEvent> seen;
  auto& again = make_harness();
  auto hook = again.hooks().before_resume([&](const HookContext&, const BeforeResumeEvent& e) { seen = e; });
  ASSERT_EQ(suspended_.size(), 1u);
  EXPECT_EQ(suspended_[0].ref, "main");
  EXPECT_EQ(suspended_[0].kind, OperationKind::run);
  EXPECT_EQ(suspended_[0].id, crashed.run_id);
  ASSERT_EQ(suspended_[0].prompt.size(), 1u);
  EXPECT_EQ(std::get<TextContent>(suspended_[0].prompt[0]).text, "go");
  EXPECT_EQ(again.refs()[0].run->status, OperationStatus::suspended);

  events_.clear();
  faux_->push(FauxResponse::text("done"));
  auto resumed = again.main().resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error->message;
  EXPECT_EQ(resumed.run_id, crashed.run_id);
  ASSERT_TRUE(seen);
  EXPECT_EQ(effects_->count("effect", "x1"), 1);  // never executed again
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "tool_started", "message:toolResult", "generation_started", "message:assistant",
                                   "operation_finished"}));
  const auto log = records();
  EXPECT_TRUE(tool_result(log[5]).is_error);
  EXPECT_EQ(tool_result(log[5]).details, (Json{{"interrupted", true}}));
  EXPECT_EQ(std::get<TreeEntry>(log[5].body).id, std::get<ToolStarted>(std::get<HarnessRecord>(log[4].body).body).result_entry_id);
  const auto types = events_.types();
  ASSERT_FALSE(types.empty());
  EXPECT_EQ(types.front(), "run_resume");
  EXPECT_EQ(types.back(), "run_end");
  // The synthetic result's events say they are recovery.
  for (const auto& e : events_.all()) {
    if (e.type == EventType::message_end && e.seq == 5) {
      EXPECT_EQ(e.data.value("recovery", false), true);
    }
  }
}

TEST_F(HarnessTest, CrashMidToolWithReplaySafeRunsItAgain) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "echo", args("e1", "again")));
  memory_store_fail_after(*store_, 5);
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto& again = make_harness();
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(again.main().resume().ok());
  EXPECT_EQ(effects_->count("echo", "e1"), 2);
  const auto log = records();
  EXPECT_FALSE(tool_result(log[5]).is_error);
  EXPECT_EQ(std::get<TextContent>(tool_result(log[5]).content[0]).text, "again");
}

// Tools that come from outside (an MCP server) may be gone when a session is
// resumed: a replay-safe call of one does not make resuming refused (the
// application describes the tool); it gets an error result with what the
// application says of the tool, and so does a new call of it.
TEST_F(HarnessTest, AToolGoneAtResumeGetsAnErrorResultSayingWhy) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "echo", args("e1", "again")));
  memory_store_fail_after(*store_, 5);
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto gone = options();
  std::erase_if(gone.tools, [](const Tool& tool) { return tool.name == "echo"; });
  std::vector<std::string> asked;
  gone.describe_missing_tool = [&](std::string_view name) -> std::optional<std::string> {
    asked.emplace_back(name);
    return std::string("its server is not running");
  };
  auto created = AgentHarness::create(std::move(gone));
  ASSERT_TRUE(created) << created.error().message;
  faux_->push(FauxResponse::tool_call("call-2", "echo", args("e2")));
  faux_->push(FauxResponse::text("done"));
  auto resumed = created->harness.main().resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error->message;
  EXPECT_EQ(effects_->count("echo", "e1"), 1);
  const auto log = records();
  EXPECT_TRUE(tool_result(log[5]).is_error);
  EXPECT_EQ(std::get<TextContent>(tool_result(log[5]).content[0]).text,
            "Tool echo is not available to run again: its server is not running");
  const auto second = results_for(log, "call-2");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(std::get<TextContent>(second[0].content[0]).text, "Tool echo not found: its server is not running");
  EXPECT_FALSE(asked.empty());
  for (const auto& name : asked) EXPECT_EQ(name, "echo");  // asked only of the tool that is gone
}

TEST_F(HarnessTest, CrashMidStreamResumesWithTheNextAttempt) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::text("lost"));
  memory_store_fail_after(*store_, 3);  // operation_started, user, generation_started
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto& again = make_harness();
  faux_->push(FauxResponse::text("found"));
  ASSERT_TRUE(again.main().resume().ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "generation_started",
                                   "message:assistant", "operation_finished"}));
  EXPECT_EQ(std::get<GenerationStarted>(std::get<HarnessRecord>(records()[3].body).body).attempt, 2);
}

TEST_F(HarnessTest, AttemptsAreBoundedAcrossRestarts) {
  // Every attempt dies mid-stream: after max_attempts crashes the run fails
  // instead of asking again (invariant 7).
  make_harness();
  for (int crash = 0; crash < 3; ++crash) {
    memory_store_fail_after(*store_, crash == 0 ? 3 : 1);
    faux_->push(FauxResponse::text("lost"));
    auto result = crash == 0 ? harness_->main().prompt("go") : harness_->main().resume();
    EXPECT_EQ(result.outcome, Outcome::faulted);
    reopen();
    make_harness();
  }
  auto result = harness_->main().resume();
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_EQ(result.error->code, "retries_exhausted");
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "generation_started",
                                   "generation_started", "message:assistant", "operation_finished"}));
}

TEST_F(HarnessTest, AbortOfASuspendedRunCompletesTheCancellation) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "effect", args("x1")).then_tool_call("call-2", "echo", args("e2")));
  memory_store_fail_after(*store_, 5);
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto& again = make_harness();
  ASSERT_EQ(suspended_.size(), 1u);
  auto aborted = again.main().abort();
  ASSERT_TRUE(aborted.ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "tool_started", "operation_cancelled", "message:toolResult", "message:toolResult",
                                   "message:assistant", "operation_finished"}));
  const auto log = records();
  EXPECT_EQ(tool_result(log[6]).details, (Json{{"interrupted", true}}));
  EXPECT_EQ(tool_result(log[7]).details, (Json{{"aborted", true}}));
  EXPECT_TRUE(again.refs()[0].run == std::nullopt);
  EXPECT_EQ(effects_->count("echo", "e2"), 0);
}

// The process dies again while it aborts (after its operation_cancelled):
// abort, asked once more, finishes that cancellation — it does not take the
// operation for "already cancelling" and leave it open for ever.
TEST_F(HarnessTest, AbortOfARunCancelledBeforeItsProcessDiedFinishesTheCancellation) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "effect", args("x1")).then_tool_call("call-2", "echo", args("e2")));
  memory_store_fail_after(*store_, 5);
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto& aborting = make_harness();
  memory_store_fail_after(*store_, 1);  // the operation_cancelled, then nothing
  EXPECT_EQ(aborting.main().abort().outcome, Outcome::faulted);
  reopen();
  auto& again = make_harness();
  ASSERT_EQ(suspended_.size(), 1u);
  ASSERT_TRUE(suspended_[0].cancelled);
  auto aborted = again.main().abort();
  ASSERT_TRUE(aborted.ok()) << (aborted.error ? aborted.error->message : "");
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "tool_started", "operation_cancelled", "message:toolResult", "message:toolResult",
                                   "message:assistant", "operation_finished"}));
  EXPECT_EQ(std::get<OperationFinished>(std::get<HarnessRecord>(records().back().body).body).outcome, OperationOutcome::aborted);
  EXPECT_TRUE(again.refs()[0].run == std::nullopt);
  EXPECT_EQ(effects_->count("echo", "e2"), 0);
}

TEST_F(HarnessTest, ResumeWithMissingIdentitiesIsRejected) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "echo", args("e1")));
  memory_store_fail_after(*store_, 5);
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto opts = options();
  opts.tools.erase(opts.tools.begin());  // no echo any more
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->suspended.size(), 1u);
  EXPECT_EQ(created->suspended[0].missing.tools, std::vector<std::string>{"echo"});
  auto resumed = created->harness.main().resume();
  EXPECT_EQ(resumed.outcome, Outcome::rejected);
  EXPECT_EQ(resumed.error->code, "missing_identities");
  EXPECT_EQ(created->harness.delete_ref("main").error().code, "main_ref");
}

TEST_F(HarnessTest, ACorruptTailIsRefusedNotGuessed) {
  // A tool_started for a batch that does not exist is not a log the harness
  // could have written.
  const auto started = session_->append(cairn::testing::harness(OperationStarted{.intent = RunIntent{}}, "main", "op-1"));
  ASSERT_TRUE(started);
  ASSERT_TRUE(session_->append(cairn::testing::harness(ToolStarted{.run_id = "op-1", .assistant_entry_id = "nope", .tool_call_id = "c",
                                                   .tool_name = "echo", .result_entry_id = "r", .replay = Replay::safe})));
  auto created = AgentHarness::create(options());
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, "corrupt_log");
  EXPECT_NE(created.error().message.find("seq 1"), std::string::npos);
}

// ---- exhaustive crash points ---------------------------------------------------

// A scenario whose every response is a function of the request, so a
// resumed run asks the same questions and gets the same answers:
//   main: prompt → [echo e1 (safe), effect x1 (never)] in parallel → [serial s1,
//   steerer st1 (never; steers "focus")] → the first request of the third
//   step fails once (retryable) → "done" → before_run_end follows up once →
//   "tests done"; then ref r2: prompt → [aborter a1 (safe), which aborts r2's run].
class CrashScenario {
 public:
  explicit CrashScenario(HarnessTest& test) : test_(test) {}

  struct Outcome {
    std::map<std::string, std::vector<std::string>> transcripts;  // per ref
    bool steer_accepted = false;
  };
  std::shared_ptr<FauxProvider> provider() {
    return std::make_shared<FauxProvider>([this](const LlmContext& context) {
      int assistants = 0;
      bool follow_up_seen = false;
      for (const auto& m : context.messages) assistants += std::holds_alternative<AssistantMessage>(m);
      for (const auto& m : context.messages) {
        if (const auto* u = std::get_if<UserMessage>(&m)) {
          if (const auto* text = std::get_if<std::string>(&u->content); text && *text == "and tests") follow_up_seen = true;
          if (const auto* text = std::get_if<std::string>(&u->content); text && *text == "other") {
            return assistants == 0 ? FauxResponse::tool_call("a1", "aborter", args("a1"))
                                   : FauxResponse::text("not reached: the run was aborted");
          }
        }
      }
      switch (assistants) {
        case 0: return FauxResponse::tool_call("c1", "echo", args("e1")).then_tool_call("c2", "effect", args("x1"));
        case 1: return FauxResponse::tool_call("c3", "serial", args("s1")).then_tool_call("c4", "steerer", args("st1"));
        default:
          if (!failed_once_.exchange(true)) return FauxResponse::failure("overloaded", true);
          return FauxResponse::text(follow_up_seen ? "tests done" : "done");
      }
    });
  }

  std::atomic<bool> failed_once_{false};
  std::atomic<bool> steer_accepted_{false};
  HarnessTest& test_;
};

}  // namespace

class CrashPointTest : public HarnessTest {
 protected:
  HarnessOptions scenario_options(CrashScenario& scenario, std::shared_ptr<FauxProvider> provider) {
    auto opts = options();
    opts.models = Models{};
    opts.models.add(FauxProvider::model(), provider);
    Tool steerer{.name = "steerer", .description = "steers", .parameters = {{"type", "object"}}, .replay = Replay::never,
                 .execute = [this, &scenario](const Json& a, const ToolContext&) {
                   effects_->note("steerer", a);
                   if (harness_ && harness_->main().steer("focus").ok()) scenario.steer_accepted_ = true;
                   return ToolResult::text("steered");
                 }};
    opts.tools.push_back(steerer);
    // Aborts its own run from inside the tool; replay safe, so a crash before
    // the abort was durable runs it (and the abort) again.
    opts.tools.push_back(Tool{.name = "aborter", .description = "aborts", .parameters = {{"type", "object"}},
                              .replay = Replay::safe,
                              .execute = [this](const Json&, const ToolContext&) {
                                // What the abort answers is not this test's: the log it leaves,
                                // crash or not, is (an injected crash faults it).
                                if (harness_) (void)harness_->ref("r2")->abort();
                                return ToolResult::text("aborted the run");
                              }});
    return opts;
  }

  void open_harness(CrashScenario& scenario, std::shared_ptr<FauxProvider> provider) {
    listener_.reset();
    harness_.reset();
    auto created = AgentHarness::create(scenario_options(scenario, provider));
    ASSERT_TRUE(created) << created.error().message;
    harness_.emplace(std::move(created->harness));
    suspended_ = std::move(created->suspended);
    listener_ = harness_->on_event([this](const Event& e) { events_.add(e); });
    hook_ = harness_->hooks().before_run_end([](const HookContext& c, const BeforeRunEndEvent& e) -> std::optional<BeforeRunEndResult> {
      if (c.ref != "main") return std::nullopt;
      for (const auto& m : e.messages) {
        if (const auto* u = std::get_if<UserMessage>(&m)) {
          if (const auto* text = std::get_if<std::string>(&u->content); text && *text == "and tests") return std::nullopt;
        }
      }
      return BeforeRunEndResult{.follow_up = "and tests"};
    });
  }

  // Reopens after a crash and resumes every suspended operation; `resume_crash`
  // stops the store again after that many appends of the resume (once).
  void recover(CrashScenario& scenario, std::shared_ptr<FauxProvider> provider, std::int64_t resume_crash) {
    for (int round = 0; round < 4; ++round) {
      reopen();
      open_harness(scenario, provider);
      if (round == 0 && resume_crash >= 0) memory_store_fail_after(*store_, resume_crash);
      bool crashed = false;
      for (const auto& s : suspended_) {
        auto result = harness_->ref(s.ref)->resume();
        if (result.outcome == Outcome::faulted) {
          crashed = true;
          break;
        }
        EXPECT_TRUE(result.outcome == Outcome::ok || result.outcome == Outcome::aborted) << to_string(result.outcome);
      }
      memory_store_fail_after(*store_, -1);
      if (!crashed) return;
    }
    ADD_FAILURE() << "recovery did not converge";
  }

  // Runs the scenario; the store stops accepting after `crash_at` appends
  // (negative: never). Returns the per-ref transcripts.
  CrashScenario::Outcome run(std::int64_t crash_at, std::int64_t resume_crash = -1) {
    CrashScenario scenario(*this);
    auto provider = scenario.provider();
    open_harness(scenario, provider);
    if (crash_at >= 0) memory_store_fail_after(*store_, crash_at);

    // The driver: each step is redone after a crash unless it was accepted.
    bool main_done = false, r2_created = false, r2_done = false;
    for (int guard = 0; guard < 10 && !(main_done && r2_created && r2_done); ++guard) {
      bool crashed = false;
      if (!main_done) {
        auto result = harness_->main().prompt("go");
        if (result.outcome == Outcome::faulted) {
          crashed = true;
          main_done = !result.run_id.empty();  // accepted: recovery finishes it
        } else {
          main_done = true;
        }
      }
      if (!crashed && !r2_created) {
        auto created = harness_->create_ref("r2", std::nullopt);
        crashed = !created && harness_->faulted();
        r2_created = created.has_value();
      }
      if (!crashed && !r2_done) {
        auto result = harness_->ref("r2")->prompt("other");
        crashed = result.outcome == Outcome::faulted;
        r2_done = !crashed || !result.run_id.empty();
      }
      if (crashed) {
        recover(scenario, provider, resume_crash);
        r2_created = r2_created || harness_->ref("r2").has_value();
      }
    }
    EXPECT_TRUE(main_done && r2_created && r2_done);
    check_invariants(scenario);

    CrashScenario::Outcome outcome;
    outcome.steer_accepted = scenario.steer_accepted_;
    for (const std::string ref : {"main", "r2"}) {
      auto context = session_->build_context(ref);
      EXPECT_TRUE(context.has_value());
      for (const auto& m : context->messages) {
        std::string line(role_of(m));
        if (const auto* u = std::get_if<UserMessage>(&m)) line += ":" + std::get<std::string>(u->content);
        if (const auto* a = std::get_if<AssistantMessage>(&m)) {
          for (const auto& block : a->content) {
            if (const auto* t = std::get_if<TextContent>(&block)) line += ":" + t->text;
            if (const auto* c = std::get_if<ToolCall>(&block)) line += ":call " + c->id;
          }
          line += ":" + std::string(to_string(a->stop_reason));
        }
        if (const auto* r = std::get_if<ToolResultMessage>(&m)) line += ":" + r->tool_call_id;
        outcome.transcripts[ref].push_back(line);
      }
    }
    return outcome;
  }

  void check_invariants(CrashScenario&) {
    const auto log = records();
    std::set<std::string> ids;
    std::map<std::string, int> started, finished;
    for (std::size_t i = 0; i < log.size(); ++i) {
      EXPECT_EQ(log[i].seq, static_cast<std::int64_t>(i));  // 1: contiguous
      if (const auto* h = std::get_if<HarnessRecord>(&log[i].body)) {
        EXPECT_TRUE(ids.insert(h->id).second) << h->id;
        if (std::holds_alternative<OperationStarted>(h->body)) ++started[h->id];
        if (const auto* f = std::get_if<OperationFinished>(&h->body)) ++finished[f->run_id];
        if (const auto* g = std::get_if<GenerationStarted>(&h->body)) {
          EXPECT_LE(g->attempt, retry_.max_attempts);  // 7
        }
      } else if (const auto* t = std::get_if<TreeEntry>(&log[i].body)) {
        EXPECT_TRUE(ids.insert(t->id).second) << t->id;
      }
    }
    EXPECT_EQ(started, finished);  // 4: every operation finished exactly once
    for (const auto& info : session_->refs()) EXPECT_FALSE(info.open_operation) << info.name;  // 3
    // 5: every tool call is answered exactly once before the next request.
    for (const std::string ref : {"main", "r2"}) {
      auto context = session_->build_context(ref);
      ASSERT_TRUE(context);
      std::multiset<std::string> open;
      for (const auto& m : context->messages) {
        if (const auto* a = std::get_if<AssistantMessage>(&m)) {
          EXPECT_TRUE(open.empty()) << "a request was sent with unanswered tool calls on " << ref;
          for (const auto& block : a->content) {
            if (const auto* c = std::get_if<ToolCall>(&block)) open.insert(c->id);
          }
        }
        if (const auto* r = std::get_if<ToolResultMessage>(&m)) {
          auto it = open.find(r->tool_call_id);
          EXPECT_NE(it, open.end()) << "a second result for " << r->tool_call_id;
          if (it != open.end()) open.erase(it);
        }
      }
      EXPECT_TRUE(open.empty());
    }
    // 6: never-replay tools ran at most once.
    EXPECT_LE(effects_->count("effect", "x1"), 1);
    EXPECT_LE(effects_->count("steerer", "st1"), 1);
    // 4: one run_end per run that ended, across every harness instance.
    std::map<std::string, int> ends;
    for (const auto& e : events_.all()) {
      if (e.type == EventType::run_end) ++ends[*e.run_id];
    }
    for (const auto& [id, n] : finished) EXPECT_EQ(ends[id], 1) << id;
  }

  Subscription hook_;
};

TEST_F(CrashPointTest, EveryCrashPointConvergesToTheCrashFreeLog) {
  const auto reference = run(-1);
  ASSERT_TRUE(reference.steer_accepted);
  const auto appends = static_cast<std::int64_t>(records().size());
  ASSERT_GE(appends, 30);
  EXPECT_EQ(reference.transcripts.at("main").back(), "assistant:tests done:stop");
  EXPECT_EQ(reference.transcripts.at("r2"),
            (std::vector<std::string>{"user:other", "assistant:call a1:toolUse", "toolResult:a1", "assistant:aborted"}));

  for (std::int64_t k = 0; k < appends; ++k) {
    SCOPED_TRACE(fmt::format("crash after {} appends", k));
    // A fresh session and a fresh outside world for each crash point.
    store_ = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
    session_ = *store_->create(CreateOptions{.cwd = "/work"});
    session_id_ = session_->id();
    effects_ = std::make_shared<ToolEffects>();
    events_.clear();
    const auto crashed = run(k);
    auto expected = reference.transcripts;
    if (!crashed.steer_accepted) {
      // The steer's acceptance was the append that failed: it was never
      // accepted, so it is rightly absent.
      std::erase(expected["main"], "user:focus");
    }
    EXPECT_EQ(crashed.transcripts, expected);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST_F(CrashPointTest, CrashesDuringResumeConvergeToo) {
  const auto reference = run(-1);
  const auto appends = static_cast<std::int64_t>(records().size());
  for (std::int64_t k = 1; k < appends; k += 3) {
    for (std::int64_t j = 0; j < 4; ++j) {
      SCOPED_TRACE(fmt::format("crash after {} appends, then {} appends into the resume", k, j));
      store_ = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
      session_ = *store_->create(CreateOptions{.cwd = "/work"});
      session_id_ = session_->id();
      effects_ = std::make_shared<ToolEffects>();
      events_.clear();
      const auto crashed = run(k, j);
      auto expected = reference.transcripts;
      if (!crashed.steer_accepted) std::erase(expected["main"], "user:focus");
      EXPECT_EQ(crashed.transcripts, expected);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace cairn::testing

namespace cairn::testing {
namespace {

TEST_F(HarnessTest, BeforeRunOutputIsPersistedAndHandedToBeforeResume) {
  auto& harness = make_harness();
  auto hook = harness.hooks().before_run([](const HookContext&, const BeforeRunEvent& e) -> std::optional<BeforeRunResult> {
    EXPECT_EQ(std::get<TextContent>(e.prompt[0]).text, "go");
    EXPECT_EQ(e.system_prompt, "You are a test. Tools: 4");
    return BeforeRunResult{.messages = {CustomMessage{.custom_type = "context", .content = std::string("AGENTS.md says hi"), .timestamp = 1}},
                           .system_prompt = "overridden",
                           .resume_data = Json{{"ext", {{"job", 42}}}}};
  });
  faux_->push(FauxResponse::text("lost"));
  memory_store_fail_after(*store_, 4);  // operation_started, user, custom, generation_started
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto& again = make_harness();
  std::optional<BeforeResumeEvent> seen;
  auto resume_hook = again.hooks().before_resume([&](const HookContext&, const BeforeResumeEvent& e) { seen = e; });
  faux_->push(FauxResponse::text("found"));
  ASSERT_TRUE(again.main().resume().ok());
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->system_prompt_override, "overridden");
  EXPECT_EQ(seen->resume_data, (Json{{"ext", {{"job", 42}}}}));
  auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].system_prompt, "overridden");  // fixed for the run, resume included
  EXPECT_EQ(requests[1].messages.size(), 2u);          // the prompt and the injected message
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "message:custom", "generation_started",
                                   "generation_started", "message:assistant", "operation_finished"}));
}

}  // namespace
}  // namespace cairn::testing
