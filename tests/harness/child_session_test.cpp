// Child sessions (make_child_session_tool): the timelines — one child, two
// at once, a failing child, the parent aborted mid-child — and the crash
// property over all three logs: stop durably accepting after every append
// of any of them, reopen, resume the parent, and every child's work is done
// exactly once and the parent's transcript is the crash-free one.
#include <condition_variable>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cairn/overloaded.hpp"
#include "cairn/tools/child_session.hpp"
#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

std::string user_text(const UserMessage& message) {
  if (const auto* text = std::get_if<std::string>(&message.content)) return *text;
  std::string out;
  for (const auto& block : std::get<std::vector<UserBlock>>(message.content)) {
    if (const auto* t = std::get_if<TextContent>(&block)) out += t->text;
  }
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + 1) {
    out.push_back(text.substr(start, at - start));
  }
  out.push_back(text.substr(start));
  return out;
}

FauxResponse with_usage(FauxResponse response, std::int64_t input, std::int64_t output) {
  response.usage.input = input;
  response.usage.output = output;
  response.usage.total_tokens = input + output;
  return response;
}

// One stateless script for parent and children, so that a resumed run gets
// the answer the crash-free one got. The parent's prompt "go:P1|P2" asks for
// one task per P; a child's prompt "work ID" calls effect (replay never),
// "meet ID" waits for a second child inside meet, "slow ID" waits until
// cancelled, "fail ID" gets a failure no retry helps; each child answers
// "answer ID" after its tool's result, the parent "parent done" after its
// tasks'. Every response costs: the parent's 100 in, 50 out; a child's 10, 5.
FauxResponse script(const LlmContext& context) {
  const bool child = context.system_prompt.starts_with("child");
  std::string prompt;
  for (const auto& message : context.messages) {
    if (const auto* user = std::get_if<UserMessage>(&message)) {
      prompt = user_text(*user);
      break;
    }
  }
  const bool answered = !context.messages.empty() && std::holds_alternative<ToolResultMessage>(context.messages.back());
  if (!child) {
    if (answered) return with_usage(FauxResponse::text("parent done"), 100, 50);
    const auto tasks = split(prompt.substr(prompt.find(':') + 1), '|');
    FauxResponse response = FauxResponse::tool_call("task-0", "task", Json{{"prompt", tasks[0]}});
    for (std::size_t i = 1; i < tasks.size(); ++i) {
      response.then_tool_call(fmt::format("task-{}", i), "task", Json{{"prompt", tasks[i]}});
    }
    return with_usage(std::move(response), 100, 50);
  }
  const auto words = split(prompt, ' ');
  const std::string& verb = words[0];
  const std::string id = words.size() > 1 ? words[1] : "";
  if (answered) return with_usage(FauxResponse::text("answer " + id), 10, 5);
  if (verb == "fail") return FauxResponse::failure("the child's model is down", false);
  const std::string tool = verb == "work" ? "effect" : verb;
  return with_usage(FauxResponse::tool_call("c-" + id, tool, Json{{"id", id}}), 10, 5);
}

class ChildSessionTest : public HarnessTest {
 protected:
  ChildSessionTest() {
    faux_ = std::make_shared<FauxProvider>(script);
    faux_->record_requests(false);
  }

  HarnessOptions options() {
    HarnessOptions options = HarnessTest::options();
    options.tools.push_back(child_tool());
    options.system_prompt = "parent";
    return options;
  }

  Tool child_tool() {
    ChildSessionToolOptions tool;
    tool.store = std::shared_ptr<Store>(std::shared_ptr<Store>{}, store_.get());  // the fixture owns it
    tool.cwd = "/work";
    tool.configure = [this](const ChildSpawn& spawn) -> Result<HarnessOptions> {
      {
        std::lock_guard lock(spawn_mu_);
        spawns_.push_back(spawn);
      }
      HarnessOptions child;
      child.models.add(FauxProvider::model(), faux_);
      child.model = FauxProvider::model();
      child.tools = test_tools(effects_);
      child.tools.push_back(meet_tool());
      child.retry = retry_;
      child.system_prompt = "child";
      child.approval = child_approval_;
      return child;
    };
    return make_child_session_tool(std::move(tool));
  }

  // Two children meet here: each call waits (up to 10 s) until the other is
  // inside too, so the result says whether they ran at the same time.
  Tool meet_tool() {
    return Tool{.name = "meet", .description = "Waits for another", .replay = Replay::never,
                .execute = [this](const Json& args, const ToolContext&) {
                  effects_->note("meet", args);
                  std::unique_lock lock(meet_mu_);
                  ++inside_;
                  meet_cv_.notify_all();
                  const bool met = meet_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return inside_ >= 2; });
                  return ToolResult::text(met ? "met" : "alone", !met);
                }};
  }

  AgentHarness& make() { return make_harness_with(options()); }

  // The child sessions in the store (every session but the parent).
  std::vector<SessionHeader> children() {
    std::vector<SessionHeader> out;
    auto listed = store_->list();
    EXPECT_TRUE(listed.has_value());
    for (auto& header : *listed) {
      if (header.id != session_id_) out.push_back(std::move(header));
    }
    return out;
  }

  std::vector<Record> log_of(const std::string& id) {
    auto session = store_->open(id, OpenOptions{.read_only = true});
    EXPECT_TRUE(session.has_value()) << id;
    std::vector<Record> out;
    if (!session) return out;
    auto lines = (*session)->get_log();
    EXPECT_TRUE(lines.has_value());
    for (const auto& line : *lines) out.push_back(*decode_record(Json::parse(line.json)));
    return out;
  }

  std::vector<Record> parent_log() { return log_of(session_id_); }

  // The parent's transcript on main: role and text of each message.
  std::vector<std::string> transcript() {
    std::vector<std::string> out;
    auto context = session_->build_context("main");
    EXPECT_TRUE(context.has_value());
    for (const auto& message : context->messages) {
      std::visit(Overloaded{[&](const UserMessage& m) { out.push_back("user: " + user_text(m)); },
                            [&](const AssistantMessage& m) {
                              std::string line = "assistant:";
                              for (const auto& block : m.content) {
                                if (const auto* t = std::get_if<TextContent>(&block)) line += " " + t->text;
                                if (const auto* c = std::get_if<ToolCall>(&block)) line += " call " + c->id;
                              }
                              out.push_back(line);
                            },
                            [&](const ToolResultMessage& m) {
                              std::string line = fmt::format("result {}{}:", m.tool_call_id, m.is_error ? " (error)" : "");
                              for (const auto& block : m.content) {
                                if (const auto* t = std::get_if<TextContent>(&block)) line += " " + t->text;
                              }
                              out.push_back(line);
                            },
                            [&](const auto&) { out.push_back("other"); }},
                 message);
    }
    return out;
  }

  ApprovalPolicy child_approval_;
  std::mutex spawn_mu_;
  std::vector<ChildSpawn> spawns_;
  std::mutex meet_mu_;
  std::condition_variable meet_cv_;
  int inside_ = 0;
};

template <class Body>
std::vector<Body> bodies_of(const std::vector<Record>& log) {
  std::vector<Body> out;
  for (const auto& record : log) {
    const auto* harness = std::get_if<HarnessRecord>(&record.body);
    if (const auto* body = harness ? std::get_if<Body>(&harness->body) : nullptr) out.push_back(*body);
  }
  return out;
}

const ToolResultMessage* result_of(const std::vector<Record>& log, const std::string& call_id) {
  for (const auto& record : log) {
    const auto* entry = std::get_if<TreeEntry>(&record.body);
    const auto* body = entry ? std::get_if<MessageBody>(&entry->body) : nullptr;
    const auto* result = body ? std::get_if<ToolResultMessage>(&body->message) : nullptr;
    if (result && result->tool_call_id == call_id) return result;
  }
  return nullptr;
}

std::string child_result_text(const ToolResultMessage& result) {
  std::string out;
  for (const auto& block : result.content) {
    if (const auto* t = std::get_if<TextContent>(&block)) out += t->text;
  }
  return out;
}

TEST_F(ChildSessionTest, OneChildAnswersTheParentsCallFromItsOwnSession) {
  auto& harness = make();
  auto result = harness.main().prompt("go:work a");
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(effects_->count("effect", "a"), 1);

  // The parent's tool_started provisioned the child; the result is its answer.
  const auto log = parent_log();
  const auto started = bodies_of<ToolStarted>(log);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].replay, Replay::resume);
  ASSERT_TRUE(started[0].child_session);
  const std::string child_id = *started[0].child_session;
  const ToolResultMessage* answer = result_of(log, "task-0");
  ASSERT_NE(answer, nullptr);
  EXPECT_FALSE(answer->is_error);
  EXPECT_EQ(child_result_text(*answer), "answer a");
  ASSERT_TRUE(answer->details);
  EXPECT_EQ((*answer->details)["childSession"], child_id);
  EXPECT_EQ((*answer->details)["outcome"], "ok");
  EXPECT_EQ((*answer->details)["spend"]["input"], 20);
  EXPECT_EQ((*answer->details)["spend"]["output"], 10);

  // The child: its own log, its header naming the parent, the call and the depth.
  const auto kids = children();
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_EQ(kids[0].id, child_id);
  EXPECT_EQ(kids[0].parent_session, session_id_);
  EXPECT_EQ(kids[0].extra["child"]["toolCallId"], "task-0");
  EXPECT_EQ(kids[0].extra["child"]["parentRef"], "main");
  EXPECT_EQ(kids[0].extra["child"]["parentRunId"], result.run_id);
  EXPECT_EQ(kids[0].extra["child"]["depth"], 1);
  const auto child_log = log_of(child_id);
  const auto finished = bodies_of<OperationFinished>(child_log);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].outcome, OperationOutcome::completed);
  EXPECT_EQ(bodies_of<ToolStarted>(child_log).at(0).tool_name, "effect");

  // Its events reached the parent's observers, linked, without a parent seq.
  std::set<std::string> inner_types;
  std::int64_t last_child_seq = -1;
  for (const auto& event : events_.all()) {
    if (event.type != EventType::child_session_event) continue;
    EXPECT_FALSE(event.seq);
    EXPECT_EQ(event.ref, "main");
    EXPECT_EQ(event.run_id, result.run_id);
    EXPECT_EQ(event.data["child"]["session"], child_id);
    EXPECT_EQ(event.data["child"]["toolCallId"], "task-0");
    EXPECT_EQ(event.data["child"]["depth"], 1);
    const Json& inner = event.data["event"];
    inner_types.insert(inner["type"].get<std::string>());
    if (inner.contains("seq")) {
      EXPECT_GT(inner["seq"].get<std::int64_t>(), last_child_seq) << "child seqs in order";
      last_child_seq = inner["seq"].get<std::int64_t>();
    }
  }
  EXPECT_TRUE(inner_types.count("run_start"));
  EXPECT_TRUE(inner_types.count("tool_end"));
  EXPECT_TRUE(inner_types.count("run_end"));

  // The child's spend is in the parent operation's: 2 × (100, 50) + 2 × (10, 5).
  std::optional<Json> spend;
  for (const auto& event : events_.all()) {
    if (event.type == EventType::context_usage) spend = event.data["operationSpend"];
  }
  ASSERT_TRUE(spend);
  EXPECT_EQ((*spend)["input"], 220);
  EXPECT_EQ((*spend)["output"], 110);
}

TEST_F(ChildSessionTest, TwoChildrenOfOneResponseRunAtTheSameTime) {
  auto& harness = make();
  auto result = harness.main().prompt("go:meet a|meet b");
  ASSERT_TRUE(result.ok()) << result.error->message;
  const auto log = parent_log();
  for (const std::string call : {"task-0", "task-1"}) {
    const ToolResultMessage* answer = result_of(log, call);
    ASSERT_NE(answer, nullptr) << call;
    EXPECT_FALSE(answer->is_error) << child_result_text(*answer);
  }
  EXPECT_EQ(child_result_text(*result_of(log, "task-0")), "answer a");
  EXPECT_EQ(child_result_text(*result_of(log, "task-1")), "answer b");
  for (const auto& kid : children()) {
    for (const auto& r : log_of(kid.id)) {
      const auto* entry = std::get_if<TreeEntry>(&r.body);
      const auto* body = entry ? std::get_if<MessageBody>(&entry->body) : nullptr;
      const auto* tool = body ? std::get_if<ToolResultMessage>(&body->message) : nullptr;
      if (tool) {
        EXPECT_EQ(child_result_text(*tool), "met") << "the two children were not inside at the same time";
      }
    }
  }
  EXPECT_EQ(children().size(), 2u);
  const auto started = bodies_of<ToolStarted>(log);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_NE(started[0].child_session, started[1].child_session);
}

TEST_F(ChildSessionTest, AFailingChildGivesAnErrorResultAndTheParentGoesOn) {
  auto& harness = make();
  auto result = harness.main().prompt("go:fail x");
  ASSERT_TRUE(result.ok()) << result.error->message;
  ASSERT_TRUE(result.final_message);
  const auto log = parent_log();
  const ToolResultMessage* answer = result_of(log, "task-0");
  ASSERT_NE(answer, nullptr);
  EXPECT_TRUE(answer->is_error);
  EXPECT_NE(child_result_text(*answer).find("failed"), std::string::npos) << child_result_text(*answer);
  EXPECT_NE(child_result_text(*answer).find("the child's model is down"), std::string::npos) << child_result_text(*answer);
  EXPECT_EQ((*answer->details)["outcome"], "failed");
  EXPECT_EQ(transcript().back(), "assistant: parent done");
  const auto kids = children();
  ASSERT_EQ(kids.size(), 1u);
  EXPECT_EQ(bodies_of<OperationFinished>(log_of(kids[0].id)).at(0).outcome, OperationOutcome::failed);
}

TEST_F(ChildSessionTest, AbortingTheParentMidChildAbortsTheChildDurably) {
  auto& harness = make();
  std::thread aborter([&] {
    for (int i = 0; i < 2000 && effects_->count("slow", "s") == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(harness.main().abort().ok());
  });
  const auto start = std::chrono::steady_clock::now();
  auto result = harness.main().prompt("go:slow s");
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(result.outcome, Outcome::aborted);
  const auto kids = children();
  ASSERT_EQ(kids.size(), 1u);
  const auto child_log = log_of(kids[0].id);
  EXPECT_EQ(bodies_of<OperationCancelled>(child_log).size(), 1u);
  ASSERT_EQ(bodies_of<OperationFinished>(child_log).size(), 1u);
  EXPECT_EQ(bodies_of<OperationFinished>(child_log)[0].outcome, OperationOutcome::aborted);
  const auto log = parent_log();
  const ToolResultMessage* answer = result_of(log, "task-0");
  ASSERT_NE(answer, nullptr);
  EXPECT_TRUE(answer->is_error);
  ASSERT_TRUE(answer->details) << child_result_text(*answer);
  EXPECT_EQ((*answer->details)["outcome"], "aborted") << child_result_text(*answer);
}

TEST_F(ChildSessionTest, AParentAbortedAfterACrashAbortsItsSuspendedChild) {
  auto& harness = make();
  // parent: operation_started, user, generation_started, assistant, tool_started;
  // child: operation_started, user, generation_started, assistant, tool_started (slow)
  memory_store_fail_after(*store_, 10);
  auto crashed = harness.main().prompt("go:work w");
  EXPECT_EQ(crashed.outcome, Outcome::faulted);
  reopen();
  auto& again = make();
  ASSERT_EQ(suspended_.size(), 1u);
  EXPECT_TRUE(again.main().abort().ok());
  again.main().wait_for_idle();
  const auto kids = children();
  ASSERT_EQ(kids.size(), 1u);
  const auto child_log = log_of(kids[0].id);
  ASSERT_EQ(bodies_of<OperationFinished>(child_log).size(), 1u);
  EXPECT_EQ(bodies_of<OperationFinished>(child_log)[0].outcome, OperationOutcome::aborted);
  EXPECT_EQ(effects_->count("effect", "w"), 1);
  const auto log = parent_log();
  const ToolResultMessage* answer = result_of(log, "task-0");
  ASSERT_NE(answer, nullptr);
  EXPECT_TRUE(answer->is_error);
}

TEST_F(ChildSessionTest, AResumedParentPicksTheChildUpWhereItsLogIs) {
  auto& harness = make();
  memory_store_fail_after(*store_, 10);  // the child's tool_started (effect) is the last durable append
  EXPECT_EQ(harness.main().prompt("go:work r").outcome, Outcome::faulted);
  EXPECT_EQ(effects_->count("effect", "r"), 1);
  reopen();
  auto& again = make();
  ASSERT_EQ(suspended_.size(), 1u);
  auto resumed = again.main().resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error->message;
  EXPECT_EQ(effects_->count("effect", "r"), 1);  // replay never, in the child: not run again
  ASSERT_EQ(children().size(), 1u);               // not created again
  // Configured for the first run, then at the restore (its input requests
  // are listed) and for the resumed call: always the same child.
  ASSERT_GE(spawns_.size(), 2u);
  EXPECT_FALSE(spawns_[0].recovery);
  for (std::size_t i = 1; i < spawns_.size(); ++i) {
    EXPECT_TRUE(spawns_[i].recovery);
    EXPECT_EQ(spawns_[i].child_session, spawns_[0].child_session);
  }
  const auto child_log = log_of(children()[0].id);
  EXPECT_EQ(bodies_of<OperationStarted>(child_log).size(), 1u);  // the same run, resumed
  EXPECT_EQ(child_result_text(*result_of(parent_log(), "task-0")), "answer r");
  EXPECT_EQ(transcript().back(), "assistant: parent done");
}

TEST_F(ChildSessionTest, AChildAskingForApprovalParksTheParentAndIsAnsweredFromItsRef) {
  child_approval_ = ApprovalPolicy{.rules = {ApprovalRule{.tool = "effect", .decision = ApprovalDecision::ask}}};
  auto& harness = make();
  auto parked = harness.main().prompt("go:work q");
  ASSERT_EQ(parked.outcome, Outcome::awaiting_input) << (parked.error ? parked.error->message : "");
  ASSERT_EQ(parked.awaiting_input.size(), 1u);
  const PendingInput asked = parked.awaiting_input[0];
  EXPECT_EQ(asked.kind, InputKind::approval);
  EXPECT_EQ(asked.tool_name, "effect");
  ASSERT_EQ(children().size(), 1u);
  EXPECT_EQ(asked.child_session, children()[0].id);
  EXPECT_EQ(effects_->count("effect", "q"), 0);
  EXPECT_EQ(harness.refs()[0].run->status, OperationStatus::awaiting_input);
  ASSERT_EQ(harness.main().pending_inputs().size(), 1u);
  EXPECT_EQ(harness.main().pending_inputs()[0].id, asked.id);
  bool relayed = false;
  for (const auto& event : events_.all()) {
    relayed = relayed || (event.type == EventType::child_session_event && event.data["event"]["type"] == "input_requested");
  }
  EXPECT_TRUE(relayed);
  EXPECT_TRUE(result_of(parent_log(), "task-0") == nullptr);  // the call is open, not answered

  // Resuming before the answer changes nothing.
  EXPECT_EQ(harness.main().resume().outcome, Outcome::awaiting_input);
  // The answer, given through the parent's ref, is durable in the child's log.
  auto answered = harness.main().respond(asked.id, InputResponse{.decision = InputResponse::Decision::allow, .by = "tester"});
  ASSERT_TRUE(answered.ok()) << answered.error->message;
  EXPECT_TRUE(harness.main().pending_inputs().empty());
  EXPECT_EQ(bodies_of<InputResolved>(log_of(asked.child_session.value())).size(), 1u);
  EXPECT_TRUE(bodies_of<InputResolved>(parent_log()).empty());
  auto again = harness.main().respond(asked.id, InputResponse{.decision = InputResponse::Decision::allow, .by = "tester"});
  EXPECT_EQ(again.outcome, Outcome::rejected);

  auto resumed = harness.main().resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error->message;
  EXPECT_EQ(effects_->count("effect", "q"), 1);
  const auto log = parent_log();
  ASSERT_NE(result_of(log, "task-0"), nullptr);
  EXPECT_EQ(child_result_text(*result_of(log, "task-0")), "answer q");
  EXPECT_EQ(transcript().back(), "assistant: parent done");
  EXPECT_EQ(children().size(), 1u);
  EXPECT_EQ(bodies_of<OperationStarted>(log_of(asked.child_session.value())).size(), 1u);
}

TEST_F(ChildSessionTest, AChildsQuestionSurvivesARestartOfTheParent) {
  child_approval_ = ApprovalPolicy{.rules = {ApprovalRule{.tool = "effect", .decision = ApprovalDecision::ask}}};
  ASSERT_EQ(make().main().prompt("go:work z").outcome, Outcome::awaiting_input);
  reopen();
  auto& restarted = make();
  ASSERT_EQ(suspended_.size(), 1u);
  ASSERT_EQ(suspended_[0].awaiting_input.size(), 1u);
  const PendingInput asked = suspended_[0].awaiting_input[0];
  EXPECT_TRUE(asked.child_session);
  EXPECT_EQ(restarted.refs()[0].run->status, OperationStatus::awaiting_input);
  EXPECT_EQ(restarted.main().resume().outcome, Outcome::awaiting_input);
  ASSERT_TRUE(restarted.main().respond(asked.id, InputResponse{.decision = InputResponse::Decision::deny,
                                                               .reason = "not now", .by = "tester"}).ok());
  reopen();
  auto& again = make();
  ASSERT_EQ(suspended_.size(), 1u);
  EXPECT_TRUE(suspended_[0].awaiting_input.empty());
  auto resumed = again.main().resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error->message;
  EXPECT_EQ(effects_->count("effect", "z"), 0);  // denied
  EXPECT_EQ(child_result_text(*result_of(parent_log(), "task-0")), "answer z");
}

TEST_F(ChildSessionTest, AbortingAParentThatWaitsForItsChildsAnswerAbortsTheChild) {
  child_approval_ = ApprovalPolicy{.rules = {ApprovalRule{.tool = "effect", .decision = ApprovalDecision::ask}}};
  auto& harness = make();
  ASSERT_EQ(harness.main().prompt("go:work k").outcome, Outcome::awaiting_input);
  ASSERT_TRUE(harness.main().abort().ok());
  harness.main().wait_for_idle();
  EXPECT_TRUE(harness.main().pending_inputs().empty());
  const auto kids = children();
  ASSERT_EQ(kids.size(), 1u);
  const auto finished = bodies_of<OperationFinished>(log_of(kids[0].id));
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].outcome, OperationOutcome::aborted);
  EXPECT_EQ(bodies_of<OperationFinished>(parent_log()).at(0).outcome, OperationOutcome::aborted);
  EXPECT_EQ(effects_->count("effect", "k"), 0);
}

// Stop durably accepting after the n-th append of any of the three logs, for
// every n of the crash-free run; reopen and resume the parent until it is done.
TEST_F(ChildSessionTest, ACrashAfterAnyAppendOfAnyLogLosesNoChildWorkAndRepeatsNone) {
  std::vector<std::string> expected;
  std::int64_t total_appends = 0;
  {
    // The crash-free run, in a store of its own.
    auto& harness = make();
    auto result = harness.main().prompt("go:work a|work b");
    ASSERT_TRUE(result.ok()) << result.error->message;
    expected = transcript();
    auto listed = store_->list();
    ASSERT_TRUE(listed.has_value());
    for (const auto& header : *listed) total_appends += static_cast<std::int64_t>(log_of(header.id).size());
  }
  ASSERT_EQ(expected.back(), "assistant: parent done");
  ASSERT_GE(total_appends, 25);

  for (std::int64_t crash = 0; crash < total_appends; ++crash) {
    SCOPED_TRACE(fmt::format("crash after append {}", crash));
    listener_.reset();
    harness_.reset();
    session_.reset();
    store_ = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
    session_ = *store_->create(CreateOptions{.cwd = "/work"});
    session_id_ = session_->id();
    effects_ = std::make_shared<ToolEffects>();
    spawns_.clear();

    memory_store_fail_after(*store_, crash);
    auto crashed = make().main().prompt("go:work a|work b");
    EXPECT_EQ(crashed.outcome, Outcome::faulted);
    for (int round = 0; round < 4; ++round) {
      reopen();
      auto& again = make();
      if (suspended_.empty()) {
        if (bodies_of<OperationFinished>(parent_log()).empty()) {
          ASSERT_TRUE(again.main().prompt("go:work a|work b").ok());
        }
        break;
      }
      auto resumed = again.main().resume();
      ASSERT_TRUE(resumed.ok()) << resumed.error->message;
    }
    EXPECT_EQ(transcript(), expected);
    EXPECT_EQ(effects_->count("effect", "a"), 1);
    EXPECT_EQ(effects_->count("effect", "b"), 1);
    const auto kids = children();
    EXPECT_EQ(kids.size(), 2u);  // none created twice
    for (const auto& kid : kids) {
      const auto child_log = log_of(kid.id);
      EXPECT_EQ(bodies_of<OperationStarted>(child_log).size(), 1u) << kid.id;
      ASSERT_EQ(bodies_of<OperationFinished>(child_log).size(), 1u) << kid.id;
      EXPECT_EQ(bodies_of<OperationFinished>(child_log)[0].outcome, OperationOutcome::completed);
      expect_every_call_answered_once(child_log);
    }
    expect_every_call_answered_once(parent_log());
    if (HasFailure()) break;
  }
}

TEST(ChildSessionRecord, AResumeCallMustNameItsChildAndOnlyItMay) {
  auto record = [](Replay replay, std::optional<std::string> child) {
    return Record{.seq = 0, .body = HarnessRecord{.id = "h1", .ref = "main", .timestamp = "2026-01-01T00:00:00.000Z",
                                                 .body = ToolStarted{.run_id = "r", .assistant_entry_id = "a",
                                                                     .tool_call_id = "c", .tool_name = "task",
                                                                     .result_entry_id = "e", .replay = replay,
                                                                     .child_session = std::move(child)}}};
  };
  EXPECT_TRUE(decode_record(encode(record(Replay::resume, "kid"))).has_value());
  EXPECT_EQ(encode(record(Replay::resume, "kid"))["childSession"], "kid");
  auto missing = decode_record(encode(record(Replay::resume, std::nullopt)));
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("childSession"), std::string::npos) << missing.error().message;
  EXPECT_FALSE(decode_record(encode(record(Replay::never, "kid"))).has_value());
}

}  // namespace
}  // namespace cairn::testing
