// The timelines of durable-harness-design.txt, each checked record by record
// and event by event.
#include <thread>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

using Types = std::vector<std::string>;

std::string text_of_reply(const AssistantMessage& message) {
  std::string out;
  for (const auto& block : message.content) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
  }
  return out;
}

TEST_F(HarnessTest, NormalRunRecordsEveryDecisionBeforeItsEffect) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "echo", args("e1", "hello")));
  faux_->push(FauxResponse::text("done"));

  auto result = harness.main().prompt("fix the bug");
  ASSERT_TRUE(result.ok()) << result.error->message;
  ASSERT_TRUE(result.final_message);
  EXPECT_EQ(text_of_reply(*result.final_message), "done");

  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "tool_started", "message:toolResult", "generation_started", "message:assistant",
                                   "operation_finished"}));
  // context_usage (cairn's own, not the design document's) follows each
  // committed response.
  EXPECT_EQ(events_.types(), (Types{"run_start", "message_start", "message_end", "step_start", "message_start",
                                    "message_end", "context_usage", "tool_start", "tool_end", "message_start",
                                    "message_end", "step_end", "step_start", "message_start", "message_end",
                                    "context_usage", "step_end", "run_end"}));

  // Events that announce a record carry its seq; every event carries the ref
  // and the run.
  const auto log = records();
  for (const auto& e : events_.all()) {
    EXPECT_EQ(e.ref, "main");
    EXPECT_EQ(e.run_id, result.run_id) << e.type;
    if (e.type == EventType::message_update || e.type == EventType::tool_update || e.type == EventType::step_start || e.type == EventType::step_end) {
      EXPECT_FALSE(e.seq) << e.type;
    }
    if (e.type == EventType::message_end) {
      ASSERT_TRUE(e.seq);
      const auto& entry = std::get<TreeEntry>(log[*e.seq].body);
      EXPECT_EQ(entry.id, e.data["entryId"]);
    }
  }
  EXPECT_EQ(events_.count(EventType::message_update), 10u);  // start, 3 per block, done; twice
  EXPECT_EQ(events_.count(EventType::tool_update), 1u);

  // The request saw the system prompt, the tools and the conversation.
  auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].system_prompt, "You are a test. Tools: 4");
  EXPECT_EQ(requests[0].tools.size(), 4u);
  EXPECT_EQ(requests[1].messages.size(), 3u);  // user, assistant, tool result

  // The tool_started record holds the effective args and the provisioned result id.
  const auto& started = std::get<ToolStarted>(std::get<HarnessRecord>(log[4].body).body);
  EXPECT_EQ(started.tool_name, "echo");
  EXPECT_EQ(started.replay, Replay::safe);
  EXPECT_EQ(started.effective_args, args("e1", "hello"));
  EXPECT_EQ(std::get<TreeEntry>(log[5].body).id, started.result_entry_id);
  EXPECT_EQ(effects_->count("echo", "e1"), 1);
  EXPECT_EQ(session_->leaf("main"), std::get<TreeEntry>(log[7].body).id);
}

TEST_F(HarnessTest, SteeringIsDurableMidStepAndConsumedAtTheCheckpoint) {
  auto& harness = make_harness();
  std::optional<QueueResult> steered;
  ASSERT_TRUE(harness.set_tools([&] {
    auto tools = test_tools(effects_);
    tools[0].execute = [&](const Json&, const ToolContext&) {
      steered = harness.main().steer("focus on tests");
      return ToolResult::text("ran");
    };
    return tools;
  }()));
  faux_->push(FauxResponse::tool_call("call-1", "echo", args("e1")));
  faux_->push(FauxResponse::text("ok, tests"));

  auto result = harness.main().prompt("fix the bug");
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(steered && steered->ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "tool_started", "queue_enqueued", "message:toolResult", "message:user",
                                   "generation_started", "message:assistant", "operation_finished"}));
  auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  ASSERT_EQ(requests[1].messages.size(), 4u);
  const auto& steering = std::get<UserMessage>(requests[1].messages[3]);
  EXPECT_EQ(std::get<std::string>(steering.content), "focus on tests");
  EXPECT_EQ(events_.count(EventType::queue_update), 2u);  // accepted, consumed
}

// A step works with the configuration its checkpoint took: tools replaced
// while a batch runs leave the batch as it began (its second call still
// finds its tool), and the next step's request offers the new set.
TEST_F(HarnessTest, ASettingChangedWhileAStepRunsAppliesFromTheNextCheckpoint) {
  auto& harness = make_harness();
  Status replaced;
  auto tools = test_tools(effects_);
  tools[3].execute = [&, effects = effects_](const Json& args, const ToolContext&) {
    effects->note("serial", args);
    if (effects->count("serial", "s1") == 1 && effects->count("serial", "s2") == 0) {
      auto fewer = test_tools(effects);
      fewer.pop_back();  // without "serial"
      replaced = harness.set_tools(std::move(fewer));
    }
    return ToolResult::text("serial");
  };
  ASSERT_TRUE(harness.set_tools(tools));
  faux_->push(FauxResponse::tool_call("call-1", "serial", args("s1")).then_tool_call("call-2", "serial", args("s2")));
  faux_->push(FauxResponse::text("done"));

  auto result = harness.main().prompt("twice, one at a time");
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(replaced);
  EXPECT_EQ(effects_->count("serial", "s1"), 1);
  EXPECT_EQ(effects_->count("serial", "s2"), 1);  // the batch kept the tools it began with
  auto log = records();
  for (const char* id : {"call-1", "call-2"}) {
    auto answers = results_for(log, id);
    ASSERT_EQ(answers.size(), 1u) << id;
    EXPECT_FALSE(answers[0].is_error) << id;
  }
  auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].tools.size(), 4u);
  EXPECT_EQ(requests[1].tools.size(), 3u);  // the next step offers the new set
  EXPECT_EQ(requests[1].system_prompt, "You are a test. Tools: 3");
}

TEST_F(HarnessTest, FollowUpFromBeforeRunEndContinuesTheSameRun) {
  auto& harness = make_harness();
  int calls = 0;
  auto sub = harness.hooks().before_run_end([&](const HookContext&, const BeforeRunEndEvent& e) -> std::optional<BeforeRunEndResult> {
    if (calls++ == 0) {
      EXPECT_EQ(e.messages.size(), 2u);
      return BeforeRunEndResult{.follow_up = "now write tests"};
    }
    return std::nullopt;
  });
  faux_->push(FauxResponse::text("fixed"));
  faux_->push(FauxResponse::text("tests written"));

  auto result = harness.main().prompt("fix the bug");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(text_of_reply(*result.final_message), "tests written");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "queue_enqueued", "message:user", "generation_started", "message:assistant",
                                   "operation_finished"}));
  EXPECT_EQ(events_.count(EventType::run_start), 1u);
  EXPECT_EQ(events_.count(EventType::run_end), 1u);
}

TEST_F(HarnessTest, RetryRecordsEveryAttemptDurably) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::failure("overloaded", true));
  faux_->push(FauxResponse::text("hello"));

  auto result = harness.main().prompt("hi");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "generation_started",
                                   "message:assistant", "operation_finished"}));
  const auto log = records();
  EXPECT_EQ(std::get<GenerationStarted>(std::get<HarnessRecord>(log[2].body).body).attempt, 1);
  EXPECT_EQ(std::get<GenerationStarted>(std::get<HarnessRecord>(log[3].body).body).attempt, 2);
  EXPECT_EQ(events_.types(), (Types{"run_start", "message_start", "message_end", "step_start", "message_start",
                                    "retry_scheduled", "retry_start", "message_start", "message_end", "retry_end",
                                    "context_usage", "step_end", "run_end"}));
  for (const auto& e : events_.all()) {
    if (e.type == EventType::retry_end) {
      EXPECT_EQ(e.data["success"], true);
    }
    if (e.type == EventType::retry_scheduled) {
      EXPECT_EQ(e.data["maxAttempts"], 3);
    }
  }
}

TEST_F(HarnessTest, RetriesExhaustedRecordsAnErrorMessageAndFailsTheRun) {
  auto& harness = make_harness();
  for (int i = 0; i < 3; ++i) faux_->push(FauxResponse::failure("overloaded", true));

  auto result = harness.main().prompt("hi");
  EXPECT_EQ(result.outcome, Outcome::failed);
  ASSERT_TRUE(result.error);
  EXPECT_EQ(result.error->code, "retries_exhausted");
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "generation_started",
                                   "generation_started", "message:assistant", "operation_finished"}));
  const auto log = records();
  const auto& finished = std::get<OperationFinished>(std::get<HarnessRecord>(log.back().body).body);
  EXPECT_EQ(finished.outcome, OperationOutcome::failed);
  ASSERT_TRUE(finished.error);
  EXPECT_EQ(finished.error->code, "retries_exhausted");
  const auto& error = std::get<AssistantMessage>(std::get<MessageBody>(std::get<TreeEntry>(log[5].body).body).message);
  EXPECT_EQ(error.stop_reason, StopReason::error);
  EXPECT_EQ(events_.count(EventType::run_end), 1u);
}

TEST_F(HarnessTest, NonRetryableFailureFailsAtOnce) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::failure("invalid api key", false));
  auto result = harness.main().prompt("hi");
  EXPECT_EQ(result.outcome, Outcome::failed);
  EXPECT_EQ(result.error->code, "provider_error");
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "operation_finished"}));
  // The next prompt does not send the failed response back to the model.
  faux_->push(FauxResponse::text("hello"));
  ASSERT_TRUE(harness.main().prompt("again").ok());
  auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].messages.size(), 2u);  // the two user messages
}

TEST_F(HarnessTest, AbortDuringAToolRecordsTheCancellationBeforeSignallingIt) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "slow", args("s1")));
  std::atomic<bool> tool_started{false};
  auto sub = harness.on_event([&](const Event& e) {
    if (e.type == EventType::tool_start) tool_started = true;
  });
  std::optional<RunResult> result;
  std::thread runner([&] { result = harness.main().prompt("wait"); });
  while (!tool_started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(harness.main().steer("queued steer").ok());
  auto aborted = harness.main().abort();
  runner.join();

  ASSERT_TRUE(aborted.ok());
  EXPECT_EQ(aborted.run_id, result->run_id);
  ASSERT_EQ(aborted.cleared_steer.size(), 1u);
  EXPECT_EQ(result->outcome, Outcome::aborted);
  ASSERT_TRUE(result->final_message);
  EXPECT_EQ(result->final_message->stop_reason, StopReason::aborted);
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "tool_started", "queue_enqueued", "operation_cancelled", "message:toolResult",
                                   "message:assistant", "operation_finished"}));
  const auto log = records();
  EXPECT_EQ(std::get<OperationFinished>(std::get<HarnessRecord>(log.back().body).body).outcome, OperationOutcome::aborted);
  const auto types = events_.types();
  EXPECT_EQ(std::count(types.begin(), types.end(), "run_cancel"), 1);
  EXPECT_EQ(types.back(), "run_end");
}

TEST_F(HarnessTest, AbortDuringAStreamKeepsThePartialResponseAsTheClosure) {
  auto& harness = make_harness();
  FauxResponse stalled = FauxResponse::text("partial answer");
  stalled.then_tool_call("call-1", "echo", args("e1"));
  stalled.stall = true;
  faux_->push(stalled);
  // Abort once the text has streamed: an abort between the response's start
  // and its first text would rightly keep nothing.
  std::atomic<bool> streaming{false};
  auto sub = harness.on_event([&](const Event& e) {
    if (e.type == EventType::message_update && e.data["assistantMessageEvent"].value("type", "") == "text_end") streaming = true;
  });
  std::optional<RunResult> result;
  std::thread runner([&] { result = harness.main().prompt("talk"); });
  while (!streaming) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(harness.main().abort().ok());
  runner.join();
  EXPECT_EQ(result->outcome, Outcome::aborted);
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "operation_cancelled",
                                   "message:assistant", "operation_finished"}));
  const auto& closure = *result->final_message;
  EXPECT_EQ(closure.stop_reason, StopReason::aborted);
  EXPECT_EQ(text_of_reply(closure), "partial answer");
  EXPECT_EQ(closure.content.size(), 1u);  // the unanswered tool call is not kept
}

TEST_F(HarnessTest, DeferredWriteDuringARequestLandsAfterTheStepsMessages) {
  auto& harness = make_harness();
  std::optional<Result<std::string>> deferred;
  auto sub = harness.hooks().before_payload([&](const HookContext&, const Model&, const Json&) -> std::optional<Json> {
    if (!deferred) {
      deferred = harness.main().session().append_message(CustomMessage{.custom_type = "note", .content = std::string("M"), .timestamp = 1});
    }
    return std::nullopt;
  });
  faux_->push(FauxResponse::tool_call("call-1", "echo", args("e1")));
  faux_->push(FauxResponse::text("done"));
  auto result = harness.main().prompt("go");
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(deferred && deferred->has_value());
  // before_payload runs inside the request, after its generation_started.
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "write_deferred",
                                   "message:assistant", "tool_started", "message:toolResult", "message:custom",
                                   "generation_started", "message:assistant", "operation_finished"}));
  const auto log = records();
  EXPECT_EQ(std::get<TreeEntry>(log[7].body).id, **deferred);
  // The second request's context: [user, assistant, toolResult, M]: the prefix is intact.
  auto requests = faux_->requests();
  EXPECT_EQ(requests[1].messages.size(), 4u);
  const auto types = events_.types();
  EXPECT_NE(std::find(types.begin(), types.end(), "write_pending"), types.end());
}

TEST_F(HarnessTest, ParallelRefsRunConcurrentlyOnTheirOwnBranches) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::text("base"));
  ASSERT_TRUE(harness.main().prompt("start").ok());
  const auto anchor = session_->leaf("main");
  auto thread_ref = harness.create_ref("slack:t1", anchor);
  ASSERT_TRUE(thread_ref.has_value());

  // Each request answers by its own last user message, so the order of the
  // two runs' requests does not matter.
  auto scripted = std::make_shared<FauxProvider>([](const LlmContext& context) {
    const auto& last = std::get<UserMessage>(context.messages.back());
    return FauxResponse::text("re: " + std::get<std::string>(last.content));
  });
  auto opts = options();
  opts.models = Models{};
  opts.models.add(FauxProvider::model(), scripted);
  listener_.reset();
  harness_.reset();
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  auto& h = created->harness;
  std::optional<RunResult> a, b;
  std::thread ta([&] { a = h.main().prompt("fix the bug"); });
  std::thread tb([&] { b = h.ref("slack:t1")->prompt("summarize this thread"); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a->ok());
  ASSERT_TRUE(b->ok());
  EXPECT_EQ(text_of_reply(*a->final_message), "re: fix the bug");
  EXPECT_EQ(text_of_reply(*b->final_message), "re: summarize this thread");
  // Each ref's branch: the shared base, then its own two messages.
  auto main_ctx = session_->build_context("main");
  auto t1_ctx = session_->build_context("slack:t1");
  ASSERT_TRUE(main_ctx && t1_ctx);
  EXPECT_EQ(main_ctx->messages.size(), 4u);
  EXPECT_EQ(t1_ctx->messages.size(), 4u);
  EXPECT_EQ(main_ctx->entry_ids[1], *anchor);
  EXPECT_EQ(t1_ctx->entry_ids[1], *anchor);
  EXPECT_NE(main_ctx->entry_ids[2], t1_ctx->entry_ids[2]);
}

TEST_F(HarnessTest, WrongStateCallsAreRejectedWithTheirCodes) {
  auto& harness = make_harness();
  EXPECT_EQ(harness.main().steer("x").error->code, "no_active_run");
  EXPECT_EQ(harness.main().follow_up("x").error->code, "no_active_run");
  EXPECT_EQ(harness.main().resume().error->code, "not_suspended");
  EXPECT_EQ(harness.delete_ref("main").error().code, "main_ref");
  EXPECT_EQ(harness.delete_ref("nope").error().code, "unknown_ref");
  EXPECT_EQ(harness.main().set_active_tools({"echo", "nope"}).error().code, "unknown_tool");
  EXPECT_EQ(harness.main().set_model("faux", "nope").error().code, "unknown_model");
  EXPECT_EQ(harness.create_ref("t", "no-such-entry").error().code, "unknown_entry");
  const AgentMessage not_a_prompt = ToolResultMessage{.tool_call_id = "c", .tool_name = "t"};
  EXPECT_EQ(harness.main().prompt(std::vector<AgentMessage>{not_a_prompt}).error->code, "invalid_message");
  EXPECT_EQ(record_types(), Types{});  // nothing reached the log

  // prompt on a busy ref
  faux_->push(FauxResponse::tool_call("call-1", "slow", args("s1")));
  std::atomic<bool> busy{false};
  auto sub = harness.on_event([&](const Event& e) {
    if (e.type == EventType::tool_start) busy = true;
  });
  RunResult ran;
  std::thread runner([&] { ran = harness.main().prompt("wait"); });
  while (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(harness.main().prompt("again").error->code, "busy");
  ASSERT_TRUE(harness.create_ref("t", std::nullopt).has_value());
  EXPECT_TRUE(harness.main().abort().ok());
  runner.join();
  EXPECT_EQ(ran.outcome, Outcome::aborted);
  EXPECT_TRUE(harness.delete_ref("t").has_value());
  EXPECT_FALSE(harness.ref("t"));
}

TEST_F(HarnessTest, ConfigIsBranchAnchoredAndDeferredWhileRunning) {
  auto& harness = make_harness();
  ASSERT_TRUE(harness.main().set_thinking_level(ThinkingLevel::high).has_value());
  ASSERT_TRUE(harness.main().set_active_tools({"echo"}).has_value());
  EXPECT_EQ(harness.main().thinking_level(), ThinkingLevel::high);
  EXPECT_EQ(harness.main().active_tools(), std::vector<std::string>{"echo"});
  ASSERT_TRUE(harness.create_ref("other", std::nullopt).has_value());
  EXPECT_EQ(harness.ref("other")->thinking_level(), ThinkingLevel::off);  // its branch has no config entries
  EXPECT_EQ(harness.ref("other")->active_tools().size(), 4u);

  faux_->push(FauxResponse::tool_call("call-1", "effect", args("x1")));  // not active on main
  faux_->push(FauxResponse::text("ok"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  EXPECT_EQ(effects_->count("effect", "x1"), 0);
  auto requests = faux_->requests();
  EXPECT_EQ(requests[0].tools.size(), 1u);
  const auto log = records();
  const auto& result = std::get<ToolResultMessage>(std::get<MessageBody>(std::get<TreeEntry>(log[log.size() - 4].body).body).message);
  EXPECT_TRUE(result.is_error);
}

TEST_F(HarnessTest, InvalidArgumentsAndBlockedCallsGetErrorResultsWithoutToolStarted) {
  auto& harness = make_harness();
  auto sub = harness.hooks().before_tool([](const HookContext&, const BeforeToolEvent& e) -> std::optional<BeforeToolResult> {
    if (e.tool_name == "effect") return BeforeToolResult{.block = "not allowed"};
    return std::nullopt;
  });
  FauxResponse calls = FauxResponse::tool_call("c1", "echo", Json{{"text", "no id"}});
  calls.then_tool_call("c2", "effect", args("x1"));
  calls.then_tool_call("c3", "echo", args("e3"));
  faux_->push(calls);
  faux_->push(FauxResponse::text("ok"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  // A call that cannot start is answered at once; only c3 starts.
  EXPECT_EQ(record_types(), (Types{"operation_started", "message:user", "generation_started", "message:assistant",
                                   "message:toolResult", "message:toolResult", "tool_started", "message:toolResult",
                                   "generation_started", "message:assistant", "operation_finished"}));
  const auto log = records();
  auto result_at = [&](std::size_t i) {
    return std::get<ToolResultMessage>(std::get<MessageBody>(std::get<TreeEntry>(log[i].body).body).message);
  };
  EXPECT_EQ(result_at(4).tool_call_id, "c1");
  EXPECT_TRUE(result_at(4).is_error);
  EXPECT_NE(std::get<TextContent>(result_at(4).content[0]).text.find("id"), std::string::npos);
  EXPECT_EQ(result_at(5).tool_call_id, "c2");
  EXPECT_EQ(std::get<TextContent>(result_at(5).content[0]).text, "Tool call blocked: not allowed");
  EXPECT_EQ(result_at(7).tool_call_id, "c3");
  EXPECT_FALSE(result_at(7).is_error);
  EXPECT_EQ(effects_->count("effect", "x1"), 0);
}

TEST_F(HarnessTest, ThrowingHooksAndListenersBecomeHandlerErrors) {
  auto& harness = make_harness();
  auto hook = harness.hooks().transform_context([](const HookContext&, const TransformContextEvent&) -> std::optional<std::vector<AgentMessage>> {
    throw std::runtime_error("hook bug");
  });
  auto listener = harness.on_event([](const Event& e) {
    if (e.type == EventType::step_start) throw std::runtime_error("listener bug");
  });
  faux_->push(FauxResponse::text("fine"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  std::vector<std::string> kinds;
  for (const auto& e : events_.all()) {
    if (e.type == EventType::handler_error) kinds.push_back(e.data["kind"].get<std::string>());
  }
  // step_start is delivered before transform_context runs.
  EXPECT_EQ(kinds, (std::vector<std::string>{"event", "hook"}));
}

TEST_F(HarnessTest, NextRunItemsAreConsumedByTheNextRunAndSurviveARestart) {
  auto& harness = make_harness();
  ASSERT_TRUE(harness.main().next_run("also check the links").ok());
  reopen();
  auto& again = make_harness();
  faux_->push(FauxResponse::text("ok"));
  ASSERT_TRUE(again.main().prompt("go").ok());
  EXPECT_EQ(record_types(), (Types{"queue_enqueued", "operation_started", "message:user", "message:user",
                                   "generation_started", "message:assistant", "operation_finished"}));
  auto requests = faux_->requests();
  ASSERT_EQ(requests[0].messages.size(), 2u);
  EXPECT_EQ(std::get<std::string>(std::get<UserMessage>(requests[0].messages[0]).content), "also check the links");
}

}  // namespace
}  // namespace cairn::testing

namespace cairn::testing {
namespace {

TEST(PromptTemplates, SubstitutePositionalAndAllArguments) {
  EXPECT_EQ(expand_template("fix $1 in $2", {"the bug", "main.cpp"}), "fix the bug in main.cpp");
  EXPECT_EQ(expand_template("args: $@ / $ARGUMENTS", {"a", "b"}), "args: a b / a b");
  EXPECT_EQ(expand_template("missing $3, cost $ 5", {"a"}), "missing , cost $ 5");
}

TEST_F(HarnessTest, SkillsAndTemplatesBecomePrompts) {
  auto& harness = make_harness();
  harness.set_resources(Resources{.skills = {Skill{.name = "review", .content = "Review carefully.", .location = "/s/review/SKILL.md"}},
                                  .prompt_templates = {PromptTemplate{.name = "fix", .content = "Fix $1."}}});
  faux_->push(FauxResponse::text("reviewed"));
  faux_->push(FauxResponse::text("fixed"));
  ASSERT_TRUE(harness.main().skill("review", "Focus on errors.").ok());
  ASSERT_TRUE(harness.main().prompt_from_template("fix", {"the parser"}).ok());
  auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(std::get<std::string>(std::get<UserMessage>(requests[0].messages[0]).content),
            "<skill name=\"review\" location=\"/s/review/SKILL.md\">\nReview carefully.\n</skill>\n\nFocus on errors.");
  EXPECT_EQ(std::get<std::string>(std::get<UserMessage>(requests[1].messages.back()).content), "Fix the parser.");
  EXPECT_EQ(harness.main().skill("nope").error->code, "unknown_skill");
  EXPECT_EQ(harness.main().prompt_from_template("nope").error->code, "unknown_template");
}

}  // namespace
}  // namespace cairn::testing
