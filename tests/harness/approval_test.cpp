// Durable human-in-the-loop (DESIGN.md, "Input requests"; invariant 13): a
// call the approval policy says to ask about waits, parked, until an answer
// is in the log; the answer is what happens (allow, edited, remembered,
// denied, a question answered), exactly once, across crashes.
#include <set>

#include <fmt/format.h>

#include "cairn/store/verify.hpp"
#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

using Types = std::vector<std::string>;

Tool question_tool() {
  return Tool{.name = "ask_user",
              .description = "Asks the user",
              .parameters = {{"type", "object"},
                             {"properties", {{"question", {{"type", "string"}}}, {"choices", {{"type", "array"}}}}},
                             {"required", {"question"}}},
              .replay = Replay::safe,
              .asks_user = true};
}

std::string result_text(const ToolResultMessage& result) {
  std::string out;
  for (const auto& block : result.content) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
  }
  return out;
}

InputResponse allowing() { return InputResponse{.decision = InputResponse::Decision::allow}; }
InputResponse denying(std::string reason) {
  return InputResponse{.decision = InputResponse::Decision::deny, .reason = std::move(reason)};
}
InputResponse answering(std::string text) {
  return InputResponse{.decision = InputResponse::Decision::answer, .answer = std::move(text)};
}

class ApprovalTest : public HarnessTest {
 protected:
  // `effect` asks, everything else is allowed; ask_user is configured too.
  AgentHarness& make(ApprovalPolicy policy = ask_effect()) {
    auto opts = options();
    opts.tools.push_back(question_tool());
    for (auto& tool : opts.tools) {
      if (tool.name == "effect") tool.approval_subject = "text";
    }
    opts.approval = std::move(policy);
    return make_harness_with(std::move(opts));
  }
  static ApprovalPolicy ask_effect() {
    return ApprovalPolicy{.rules = {ApprovalRule{.tool = "effect", .decision = ApprovalDecision::ask}}};
  }

  template <class Body>
  std::vector<Body> bodies() const {
    std::vector<Body> out;
    for (const auto& record : records()) {
      if (const auto* h = std::get_if<HarnessRecord>(&record.body)) {
        if (const auto* b = std::get_if<Body>(&h->body)) out.push_back(*b);
      }
    }
    return out;
  }
  std::vector<ToolResultMessage> results(const std::string& call_id) const { return results_for(records(), call_id); }
  void expect_verified() {
    auto report = verify(*session_);
    ASSERT_TRUE(report) << report.error().message;
    for (const auto& check : report->checks) {
      EXPECT_TRUE(check.ok()) << check.name << ": " << (check.ok() ? "" : check.failures.front());
    }
  }
};

TEST_F(ApprovalTest, AnAskedCallWaitsParkedAndRunsOnceAfterTheAllow) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1", "rm -rf build")));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_EQ(run.awaiting_input.size(), 1u);
  const PendingInput asked = run.awaiting_input[0];
  EXPECT_EQ(asked.kind, InputKind::approval);
  EXPECT_EQ(asked.tool_call_id, "c1");
  EXPECT_EQ(asked.rule, "effect");
  EXPECT_EQ(asked.arguments, args("x1", "rm -rf build"));
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "input_requested"}));
  EXPECT_EQ(effects_->count("effect", "x1"), 0);
  // Parked: the caller's thread is back, the ref is idle but not free.
  harness.main().wait_for_idle();
  EXPECT_EQ(harness.refs()[0].run->status, OperationStatus::awaiting_input);
  EXPECT_EQ(harness.main().prompt("another").error->code, "busy");
  auto watched = harness.main().watch();
  ASSERT_TRUE(watched && watched->snapshot().run);
  EXPECT_EQ(watched->snapshot().run->status, OperationStatus::awaiting_input);
  ASSERT_TRUE(watched->snapshot().run->suspended);
  EXPECT_EQ(watched->snapshot().run->suspended->awaiting_input.size(), 1u);
  // The event announces the durable request.
  const auto requested = events_.all();
  auto it = std::find_if(requested.begin(), requested.end(), [](const Event& e) { return e.type == EventType::input_requested; });
  ASSERT_NE(it, requested.end());
  EXPECT_EQ(it->seq, asked.seq);
  EXPECT_EQ(it->data["requestId"], asked.id);

  // Resuming before the answer asks nothing and appends nothing.
  const auto before = records().size();
  EXPECT_EQ(harness.main().resume().outcome, Outcome::awaiting_input);
  EXPECT_EQ(records().size(), before);

  auto answered = harness.main().respond(asked.id, allowing());
  ASSERT_TRUE(answered.ok()) << answered.error->message;
  EXPECT_TRUE(harness.main().pending_inputs().empty());
  auto resumed = harness.main().resume();
  ASSERT_TRUE(resumed.ok()) << to_string(resumed.outcome);
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "input_requested", "input_resolved", "tool_started", "message:toolResult",
                                   "generation_started", "message:assistant", "operation_finished"}));
  EXPECT_EQ(effects_->count("effect", "x1"), 1);
  // Event by event: the run parks after input_requested with no run_end;
  // the answer is announced, and the resumed run goes on from the call.
  EXPECT_EQ(events_.types(), (Types{"run_start", "message_start", "message_end", "step_start", "message_start",
                                    "message_end", "context_usage", "input_requested", "input_resolved",
                                    "run_resume", "tool_start", "tool_end", "message_start", "message_end",
                                    "step_end", "step_start", "message_start", "message_end", "context_usage",
                                    "step_end", "run_end"}));
  expect_verified();
}

TEST_F(ApprovalTest, ADenialIsTheResultTheModelReadsAndTheRunGoesOn) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1")));
  faux_->push(FauxResponse::text("understood"));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, denying("not on main")).ok());
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "input_requested", "input_resolved", "message:toolResult", "generation_started",
                                   "message:assistant", "operation_finished"}));
  EXPECT_EQ(effects_->count("effect", "x1"), 0);
  EXPECT_EQ(bodies<InputResolved>()[0].reason, "not on main");
  ASSERT_EQ(results("c1").size(), 1u);
  EXPECT_TRUE(results("c1")[0].is_error);
  EXPECT_NE(result_text(results("c1")[0]).find("not on main"), std::string::npos);
  expect_verified();
}

TEST_F(ApprovalTest, EditedArgumentsAreWhatRunsAndWhatTheLogShows) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1", "rm -rf /")));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  InputResponse edited = allowing();
  edited.arguments = args("x2", "rm -rf build");
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, edited).ok());
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_EQ(effects_->count("effect", "x1"), 0);
  EXPECT_EQ(effects_->count("effect", "x2"), 1);
  const auto started = bodies<ToolStarted>();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].effective_args, args("x2", "rm -rf build"));
  EXPECT_EQ(bodies<InputResolved>()[0].arguments, args("x2", "rm -rf build"));
}

TEST_F(ApprovalTest, EditedArgumentsThatBreakTheSchemaAreRefusedNotRun) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1")));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  InputResponse edited = allowing();
  edited.arguments = Json{{"text", "no id"}};
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, edited).ok());
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_TRUE(bodies<ToolStarted>().empty());
  ASSERT_EQ(results("c1").size(), 1u);
  EXPECT_TRUE(results("c1")[0].is_error);
}

TEST_F(ApprovalTest, ARememberedRuleStopsTheNextMatchingCallFromAsking) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1", "npm test")));
  faux_->push(FauxResponse::tool_call("c2", "effect", args("x2", "npm test -- --watch")));
  faux_->push(FauxResponse::tool_call("c3", "effect", args("x3", "git push")));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  InputResponse always = allowing();
  always.remember = "effect(npm test*)";
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, always).ok());
  run = harness.main().resume();
  // c2 matched the remembered rule and ran unasked; c3 does not match it.
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_EQ(run.awaiting_input.size(), 1u);
  EXPECT_EQ(run.awaiting_input[0].tool_call_id, "c3");
  EXPECT_EQ(effects_->count("effect", "x2"), 1);
  EXPECT_EQ(bodies<InputRequested>().size(), 2u);

  // The rule is the session's: a new harness over it reads it back.
  reopen();
  auto& again = make();
  ASSERT_EQ(suspended_.size(), 1u);
  ASSERT_EQ(suspended_[0].awaiting_input.size(), 1u);
  ASSERT_TRUE(again.main().respond(suspended_[0].awaiting_input[0].id, allowing()).ok());
  ASSERT_TRUE(again.main().resume().ok());
  faux_->push(FauxResponse::tool_call("c4", "effect", args("x4", "npm test")));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(again.main().prompt("again").ok());
  EXPECT_EQ(effects_->count("effect", "x4"), 1);
  EXPECT_EQ(bodies<InputRequested>().size(), 2u);
  expect_verified();
}

TEST_F(ApprovalTest, ARememberedRuleNeverOverridesADeny) {
  ApprovalPolicy policy{.rules = {ApprovalRule{.tool = "effect", .pattern = "*push*", .decision = ApprovalDecision::deny}},
                        .fallback = ApprovalDecision::ask};
  auto& harness = make(policy);
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1", "git status")));
  faux_->push(FauxResponse::tool_call("c2", "effect", args("x2", "git push")));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  InputResponse always = allowing();
  always.remember = "effect";
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, always).ok());
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_EQ(effects_->count("effect", "x2"), 0);
  ASSERT_EQ(results("c2").size(), 1u);
  EXPECT_NE(result_text(results("c2")[0]).find("denied by the approval policy"), std::string::npos);
}

TEST_F(ApprovalTest, AQuestionIsAskedDurablyAndTheAnswerIsTheResult) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("q1", "ask_user", Json{{"question", "Which colour?"}, {"choices", {"red", "blue"}}}));
  faux_->push(FauxResponse::text("blue it is"));
  auto run = harness.main().prompt("paint it");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  const PendingInput asked = run.awaiting_input[0];
  EXPECT_EQ(asked.kind, InputKind::question);
  EXPECT_EQ(asked.question, "Which colour?");
  EXPECT_EQ(asked.choices, (std::vector<std::string>{"red", "blue"}));
  EXPECT_FALSE(asked.rule);
  // A question is answered, not allowed.
  auto wrong = harness.main().respond(asked.id, allowing());
  EXPECT_EQ(wrong.outcome, Outcome::rejected);
  EXPECT_EQ(wrong.error->code, "invalid_response");
  ASSERT_TRUE(harness.main().respond(asked.id, answering("blue")).ok());
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "input_requested", "input_resolved", "message:toolResult", "generation_started",
                                   "message:assistant", "operation_finished"}));
  ASSERT_EQ(results("q1").size(), 1u);
  EXPECT_EQ(result_text(results("q1")[0]), "blue");
  EXPECT_FALSE(results("q1")[0].is_error);
  expect_verified();
}

TEST_F(ApprovalTest, RespondRejectsUnknownAndAnsweredRequestsAndAppendsNothing) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1")));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  const std::string id = run.awaiting_input.at(0).id;
  auto unknown = harness.main().respond("no-such-request", allowing());
  EXPECT_EQ(unknown.outcome, Outcome::rejected);
  EXPECT_EQ(unknown.error->code, "unknown_input");
  InputResponse bad_rule = allowing();
  bad_rule.remember = "effect(unclosed";
  EXPECT_EQ(harness.main().respond(id, bad_rule).error->code, "invalid_response");
  InputResponse not_object = allowing();
  not_object.arguments = Json::array();
  EXPECT_EQ(harness.main().respond(id, not_object).error->code, "invalid_response");
  const auto before = records().size();
  ASSERT_TRUE(harness.main().respond(id, allowing()).ok());
  EXPECT_EQ(records().size(), before + 1);
  auto twice = harness.main().respond(id, denying("changed my mind"));
  EXPECT_EQ(twice.outcome, Outcome::rejected);
  EXPECT_EQ(twice.error->code, "already_resolved");
  EXPECT_EQ(records().size(), before + 1);
}

TEST_F(ApprovalTest, AbortWhileWaitingEndsTheRunAndTheAskedCallNeverRuns) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1")).then_tool_call("c2", "echo", args("e1")));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  auto aborted = harness.main().abort();
  ASSERT_TRUE(aborted.ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "input_requested", "operation_cancelled", "message:toolResult",
                                   "message:toolResult", "message:assistant", "operation_finished"}));
  EXPECT_EQ(effects_->count("effect", "x1"), 0);
  ASSERT_EQ(results("c1").size(), 1u);
  EXPECT_TRUE(results("c1")[0].is_error);
  EXPECT_EQ(harness.main().respond(run.awaiting_input[0].id, allowing()).error->code, "unknown_input");
  EXPECT_FALSE(harness.refs()[0].run);
  expect_verified();
}

TEST_F(ApprovalTest, SteeringWhileWaitingIsQueuedAndReadAfterTheAnswer) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1")));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_TRUE(harness.main().steer("use the other disk").ok());
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, allowing()).ok());
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "input_requested", "queue_enqueued", "input_resolved", "tool_started",
                                   "message:toolResult", "message:user", "generation_started", "message:assistant",
                                   "operation_finished"}));
}

TEST_F(ApprovalTest, TwoRefsWaitAtOnceAndEachAnswerGoesToItsOwn) {
  auto& harness = make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("m1")));
  faux_->push(FauxResponse::tool_call("c2", "effect", args("b1")));
  auto b = harness.create_ref("b", std::nullopt);
  ASSERT_TRUE(b);
  auto on_main = harness.main().prompt("main work");
  auto on_b = b->prompt("b work");
  ASSERT_EQ(on_main.outcome, Outcome::awaiting_input);
  ASSERT_EQ(on_b.outcome, Outcome::awaiting_input);
  // A ref answers only its own requests.
  EXPECT_EQ(b->respond(on_main.awaiting_input[0].id, allowing()).error->code, "unknown_input");
  ASSERT_TRUE(b->respond(on_b.awaiting_input[0].id, denying("not now")).ok());
  ASSERT_TRUE(harness.main().respond(on_main.awaiting_input[0].id, allowing()).ok());
  faux_->push(FauxResponse::text("b done"));
  ASSERT_TRUE(b->resume().ok());
  faux_->push(FauxResponse::text("main done"));
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_EQ(effects_->count("effect", "m1"), 1);
  EXPECT_EQ(effects_->count("effect", "b1"), 0);
  expect_verified();
}

TEST_F(ApprovalTest, AWaitSurvivesACrashAndAnAnswerGivenWhileNothingRunsIsPickedUp) {
  make();
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1")));
  auto run = harness_->main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  // The process dies; another one answers (no run is going on anywhere).
  reopen();
  auto& answering = make();
  ASSERT_EQ(suspended_.size(), 1u);
  ASSERT_EQ(suspended_[0].awaiting_input.size(), 1u);
  EXPECT_EQ(answering.refs()[0].run->status, OperationStatus::awaiting_input);
  ASSERT_TRUE(answering.main().respond(suspended_[0].awaiting_input[0].id, allowing()).ok());
  // And dies too; a third resumes.
  reopen();
  auto& resuming = make();
  ASSERT_EQ(suspended_.size(), 1u);
  EXPECT_TRUE(suspended_[0].awaiting_input.empty());
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(resuming.main().resume().ok());
  EXPECT_EQ(effects_->count("effect", "x1"), 1);
  expect_verified();
}

TEST_F(ApprovalTest, ACallbackDecidesFirstAndOneThatThrowsAsks) {
  ApprovalPolicy policy{.decide = [](const ApprovalCall& call) -> std::optional<ApprovalVerdict> {
                          if (call.subject == "boom") throw std::runtime_error("policy service down");
                          if (call.tool_name == "effect") return ApprovalVerdict{ApprovalDecision::allow, "app"};
                          return std::nullopt;
                        },
                        .rules = {ApprovalRule{.tool = "*", .decision = ApprovalDecision::ask}}};
  auto& harness = make(policy);
  faux_->push(FauxResponse::tool_call("c1", "effect", args("x1", "fine")).then_tool_call("c2", "effect", args("x2", "boom")));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  EXPECT_EQ(effects_->count("effect", "x1"), 1);
  ASSERT_EQ(run.awaiting_input.size(), 1u);
  EXPECT_EQ(run.awaiting_input[0].tool_call_id, "c2");
  EXPECT_EQ(events_.count(EventType::handler_error), 1u);
}

TEST(ApprovalRuleTest, ParsesMatchesAndPrintsRules) {
  auto rule = ApprovalRule::parse("bash(npm run test:*)", ApprovalDecision::allow);
  ASSERT_TRUE(rule);
  EXPECT_EQ(rule->tool, "bash");
  EXPECT_EQ(rule->text(), "bash(npm run test:*)");
  EXPECT_TRUE(rule->matches("bash", std::string("npm run test:unit")));
  EXPECT_FALSE(rule->matches("bash", std::string("npm run build")));
  EXPECT_FALSE(rule->matches("bash", std::nullopt));
  EXPECT_FALSE(rule->matches("edit", std::string("npm run test:unit")));
  EXPECT_TRUE(ApprovalRule::parse("edit", ApprovalDecision::ask)->matches("edit", std::nullopt));
  EXPECT_FALSE(ApprovalRule::parse("bash(git status", ApprovalDecision::ask));
  EXPECT_FALSE(ApprovalRule::parse("(x)", ApprovalDecision::ask));
  EXPECT_FALSE(ApprovalRule::parse("ba sh", ApprovalDecision::ask));
  EXPECT_TRUE(glob_match("rm -rf *", "rm -rf /"));
  EXPECT_TRUE(glob_match("a\\*b", "a*b"));
  EXPECT_FALSE(glob_match("a\\*b", "axb"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("git status", "git status; rm -rf /"));
  // A hostile pattern of many stars stays fast (no exponential backtracking).
  EXPECT_FALSE(glob_match(std::string(5000, '*') + "b", std::string(20000, 'a')));
}

}  // namespace
}  // namespace cairn::testing

namespace cairn::testing {
namespace {

// Invariant 10 with a human in the loop: in a run with an approval, a denial
// and a question, the process dies after every append in turn (the answers'
// appends included); reopened, answered where still needed and resumed, the
// log keeps every invariant and the transcript is the crash-free one.
class ApprovalCrashTest : public ApprovalTest {
 protected:
  std::shared_ptr<FauxProvider> scripted() {
    return std::make_shared<FauxProvider>([](const LlmContext& context) {
      int assistants = 0;
      for (const auto& m : context.messages) assistants += std::holds_alternative<AssistantMessage>(m);
      switch (assistants) {
        case 0: return FauxResponse::tool_call("c1", "effect", args("x1", "make"));
        case 1: return FauxResponse::tool_call("c2", "effect", args("x2", "rm -rf /"));
        case 2: return FauxResponse::tool_call("q1", "ask_user", Json{{"question", "Colour?"}});
        default: return FauxResponse::text("done");
      }
    });
  }
  void open() {
    faux_ = scripted();
    make();
  }
  void crash() {
    reopen();
    open();
  }

  // Drives the scenario to its end; the store fails after `crash_at` appends.
  std::vector<std::string> run(std::int64_t crash_at) {
    open();
    if (crash_at >= 0) memory_store_fail_after(*store_, crash_at);
    bool accepted = false;
    for (int guard = 0; guard < 40; ++guard) {
      RunResult result;
      if (!accepted) {
        result = harness_->main().prompt("go");
        accepted = !result.run_id.empty();
      } else if (harness_->refs()[0].run) {
        result = harness_->main().resume();
      } else {
        break;  // finished
      }
      if (result.outcome == Outcome::faulted) {
        crash();
        continue;
      }
      if (result.outcome == Outcome::ok) break;
      EXPECT_EQ(result.outcome, Outcome::awaiting_input) << to_string(result.outcome);
      bool crashed = false;
      for (const auto& input : result.awaiting_input) {
        InputResponse response = input.tool_call_id == "c1"   ? allowing()
                                 : input.tool_call_id == "c2" ? denying("never on this machine")
                                                              : answering("blue");
        auto answered = harness_->main().respond(input.id, response);
        if (answered.outcome == Outcome::faulted) {
          crashed = true;
          break;
        }
        EXPECT_TRUE(answered.ok()) << answered.error->message;
      }
      if (crashed) crash();
    }
    memory_store_fail_after(*store_, -1);
    EXPECT_FALSE(harness_->refs()[0].run) << "the run did not finish";
    expect_verified();
    EXPECT_LE(effects_->count("effect", "x1"), 1);
    EXPECT_EQ(effects_->count("effect", "x2"), 0);
    // Every allow is before its call's start, every request answered once.
    std::set<std::string> answered;
    for (const auto& r : bodies<InputResolved>()) EXPECT_TRUE(answered.insert(r.request_id).second);
    EXPECT_EQ(answered.size(), bodies<InputRequested>().size());
    auto context = session_->build_context("main");
    EXPECT_TRUE(context);
    std::vector<std::string> transcript;
    for (const auto& m : context->messages) {
      std::string line(role_of(m));
      if (const auto* a = std::get_if<AssistantMessage>(&m)) {
        for (const auto& block : a->content) {
          if (const auto* c = std::get_if<ToolCall>(&block)) line += ":call " + c->id;
          if (const auto* t = std::get_if<TextContent>(&block)) line += ":" + t->text;
        }
      }
      if (const auto* r = std::get_if<ToolResultMessage>(&m)) {
        line += ":" + r->tool_call_id;
        // The denial and the answer are what the model reads, crash or not.
        if (r->tool_call_id != "c1") line += ":" + result_text(*r);
      }
      transcript.push_back(line);
    }
    return transcript;
  }
};

TEST_F(ApprovalCrashTest, EveryCrashPointConvergesToTheCrashFreeTranscript) {
  const auto reference = run(-1);
  EXPECT_EQ(effects_->count("effect", "x1"), 1);
  ASSERT_EQ(reference.size(), 8u);
  EXPECT_EQ(reference[6], "toolResult:q1:blue");
  const auto appends = static_cast<std::int64_t>(records().size());
  EXPECT_EQ(bodies<InputRequested>().size(), 3u);
  for (std::int64_t k = 0; k < appends; ++k) {
    SCOPED_TRACE(fmt::format("crash after {} appends", k));
    store_ = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
    session_ = *store_->create(CreateOptions{.cwd = "/work"});
    session_id_ = session_->id();
    effects_ = std::make_shared<ToolEffects>();
    events_.clear();
    EXPECT_EQ(run(k), reference);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace cairn::testing
