// The harness's option and view surface: the tool context, the system prompt
// as a fixed text, a ref's SessionTree view, the queue-mode getters.
#include <any>
#include <thread>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

TEST_F(HarnessTest, ToolsGetTheirCallAndTheApplicationsContext) {
  struct Seen {
    std::string ref, run_id, call_id, app;
  };
  auto seen = std::make_shared<std::vector<Seen>>();
  int made = 0;
  HarnessOptions opts = options();
  opts.tool_context = [&made] {
    ++made;
    return std::any(std::string("workspace-") + std::to_string(made));
  };
  opts.tools.push_back(Tool{.name = "probe", .description = "Reports its context", .parameters = {{"type", "object"}},
                            .replay = Replay::safe, .parallel = false,
                            .execute = [seen](const Json&, const ToolContext& context) {
                              const auto* app = std::any_cast<std::string>(&context.app);
                              seen->push_back({context.ref, context.run_id, context.tool_call_id, app ? *app : "none"});
                              return ToolResult::text("probed");
                            }});
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  faux_->push(FauxResponse::tool_call("p1", "probe", Json::object()).then_tool_call("p2", "probe", Json::object()));
  faux_->push(FauxResponse::text("done"));
  RunResult result = created->harness.main().prompt("probe twice");
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(seen->size(), 2u);
  EXPECT_EQ((*seen)[0].ref, "main");
  EXPECT_EQ((*seen)[0].run_id, result.run_id);
  EXPECT_EQ((*seen)[0].call_id, "p1");
  EXPECT_EQ((*seen)[1].call_id, "p2");
  // Made once per call.
  EXPECT_EQ((*seen)[0].app, "workspace-1");
  EXPECT_EQ((*seen)[1].app, "workspace-2");
}

TEST_F(HarnessTest, AToolContextThatThrowsFailsTheCallNotTheRun) {
  HarnessOptions opts = options();
  opts.tool_context = []() -> std::any { throw std::runtime_error("no workspace"); };
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  faux_->push(FauxResponse::tool_call("e1", "echo", Json{{"id", "e1"}}));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(created->harness.main().prompt("go").ok());
  EXPECT_EQ(effects_->count("echo", "e1"), 0);
  const auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  const auto& result = std::get<ToolResultMessage>(requests[1].messages.back());
  EXPECT_TRUE(result.is_error);
  EXPECT_NE(std::get<TextContent>(result.content.at(0)).text.find("no workspace"), std::string::npos);
}

TEST_F(HarnessTest, ASystemPromptMayBeAFixedText) {
  HarnessOptions opts = options();
  opts.system_prompt = "You are terse.";
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  faux_->push(FauxResponse::text("ok"));
  ASSERT_TRUE(created->harness.main().prompt("hi").ok());
  EXPECT_EQ(faux_->requests().at(0).system_prompt, "You are terse.");
}

TEST_F(HarnessTest, QueueModesReadBackWhatWasSet) {
  auto& harness = make_harness();
  EXPECT_EQ(harness.steering_mode(), QueueMode::one_at_a_time);
  harness.set_steering_mode(QueueMode::all);
  harness.set_follow_up_mode(QueueMode::all);
  EXPECT_EQ(harness.steering_mode(), QueueMode::all);
  EXPECT_EQ(harness.follow_up_mode(), QueueMode::all);
}

TEST_F(HarnessTest, ARefsSessionViewReadsItsBranchAndWritesAtItsLeaf) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::text("on main"));
  ASSERT_TRUE(harness.main().prompt("first").ok());
  const std::string fork_point = *harness.main().leaf_id();
  auto side = harness.create_ref("side", fork_point);
  ASSERT_TRUE(side);
  faux_->push(FauxResponse::text("on main again"));
  ASSERT_TRUE(harness.main().prompt("second").ok());

  SessionTree view = side->session();
  EXPECT_EQ(view.leaf_id(), fork_point);
  auto id = view.append_custom_entry("bookmark", Json{{"n", 1}});
  ASSERT_TRUE(id);
  EXPECT_EQ(view.leaf_id(), *id);
  EXPECT_EQ(harness.main().session().leaf_id(), harness.main().leaf_id());  // main did not move

  // Branch reads start at the view's ref: side sees the first exchange and
  // its bookmark, not main's second prompt.
  auto branch = view.find_entries_on_branch(EntryQuery{.order = Order::oldest_first});
  ASSERT_TRUE(branch);
  std::vector<std::string> ids;
  for (const auto& entry : branch->items) ids.push_back(entry.id);
  EXPECT_EQ(ids.back(), *id);
  EXPECT_EQ(ids.size(), 3u);  // user, assistant, bookmark
  auto newest_message = view.find_entry_on_branch(EntryQuery{.type = RecordType::message});
  ASSERT_TRUE(newest_message && *newest_message);
  EXPECT_EQ((*newest_message)->id, fork_point);
  auto anywhere = view.find_entry(EntryQuery{.type = RecordType::message});  // every branch: main's newest
  ASSERT_TRUE(anywhere && *anywhere);
  EXPECT_EQ((*anywhere)->id, *harness.main().leaf_id());

  ASSERT_TRUE(view.set_name("exploration"));
  EXPECT_EQ(*view.name(), "exploration");
  ASSERT_TRUE(view.set_label(fork_point, "before the fork"));
  EXPECT_EQ(*harness.main().session().label(fork_point), "before the fork");
  auto missing = view.set_label("no-such-entry", "x");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
}

TEST_F(HarnessTest, SessionViewWritesDeferWhileTheRefRuns) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("s1", "slow", Json{{"id", "s1"}, {"ms", 200}}));
  faux_->push(FauxResponse::text("done"));
  std::atomic<bool> in_tool{false};
  auto sub = harness.on_event([&](const Event& e) {
    if (e.type == EventType::tool_start) in_tool = true;
  });
  std::thread runner([&] { EXPECT_TRUE(harness.main().prompt("wait").ok()); });
  while (!in_tool) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  SessionTree view = harness.main().session();
  const auto leaf_before = view.leaf_id();
  auto label = view.set_label(*leaf_before, "mid-run");
  ASSERT_TRUE(label);
  EXPECT_EQ(view.leaf_id(), leaf_before);  // not applied yet
  ASSERT_EQ(view.pending_writes().size(), 1u);
  EXPECT_EQ(view.pending_writes()[0].id, *label);
  runner.join();
  EXPECT_TRUE(view.pending_writes().empty());
  auto applied = view.get_entry(*label);
  ASSERT_TRUE(applied && *applied);
  EXPECT_EQ(*view.label(*leaf_before), "mid-run");
}

TEST_F(HarnessTest, AForkTakenMidRunCopiesOnlyClosedHistory) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::text("first answer"));
  ASSERT_TRUE(harness.main().prompt("first").ok());
  const auto closed_leaf = harness.main().leaf_id();
  faux_->push(FauxResponse::tool_call("s1", "slow", Json{{"id", "s1"}, {"ms", 5000}}));
  faux_->push(FauxResponse::text("done"));
  std::atomic<bool> in_tool{false};
  auto sub = harness.on_event([&](const Event& e) {
    if (e.type == EventType::tool_start) in_tool = true;
  });
  RunResult second;
  std::thread runner([&] { second = harness.main().prompt("second"); });
  while (!in_tool) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // The run has appended "second" and the tool call; the fork stops before them.
  auto busy = harness.main().fork(*store_, ForkOptions{.id = "mid-run"});
  ASSERT_TRUE(busy) << busy.error().message;
  ASSERT_EQ(busy->left_out.size(), 1u);
  EXPECT_NE(busy->left_out[0].find("ref main: run "), std::string::npos) << busy->left_out[0];
  EXPECT_EQ(busy->session->leaf(), closed_leaf);
  EXPECT_EQ(busy->session->header().parent_session, session_id_);
  ASSERT_TRUE(harness.main().abort().ok());
  runner.join();
  EXPECT_EQ(second.outcome, Outcome::aborted);

  // Idle, everything is closed history.
  auto calm = harness.main().fork(*store_, ForkOptions{.id = "after-run"});
  ASSERT_TRUE(calm) << calm.error().message;
  EXPECT_TRUE(calm->left_out.empty());
  EXPECT_EQ(calm->session->leaf(), harness.main().leaf_id());
}

}  // namespace
}  // namespace cairn::testing
