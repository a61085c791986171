// The sandbox policy in the harness: every tool_started records the policy
// the call runs under and the tool is handed it; a run keeps the policy its
// first call recorded across a resume with another configuration; a resume
// on a machine that cannot enforce the recorded policy is refused.
#include "harness/harness_support.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

// A tool that notes the policy each call was handed.
Tool policy_spy(std::vector<std::optional<SandboxRecord>>& seen) {
  Tool tool;
  tool.name = "spy";
  tool.parameters = Json{{"type", "object"}};
  tool.execute = [&seen](const Json&, const ToolContext& context) {
    seen.push_back(context.sandbox);
    return ToolResult::text("seen");
  };
  return tool;
}

std::vector<SandboxRecord> recorded_policies(const std::vector<Record>& log) {
  std::vector<SandboxRecord> out;
  for (const auto& record : log) {
    const auto* harness = std::get_if<HarnessRecord>(&record.body);
    const auto* started = harness ? std::get_if<ToolStarted>(&harness->body) : nullptr;
    if (started) out.push_back(started->sandbox.value_or(SandboxRecord{.mode = SandboxMode::off, .network = true}));
  }
  return out;
}

const SandboxRecord kWorkspaceWrite{.mode = SandboxMode::workspace_write};

TEST_F(HarnessTest, ARunKeepsItsRecordedSandboxAcrossAResumeWithAnotherPolicy) {
  std::vector<std::optional<SandboxRecord>> seen;
  auto first = options();
  first.tools.push_back(policy_spy(seen));
  first.sandbox = kWorkspaceWrite;
  auto& harness = make_harness_with(std::move(first));
  faux_->push(FauxResponse::tool_call("call-1", "spy", Json::object()));
  memory_store_fail_after(*store_, 5);  // operation_started, user, generation_started, assistant, tool_started
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], kWorkspaceWrite);
  reopen();

  auto second = options();
  second.tools.push_back(policy_spy(seen));
  second.sandbox = SandboxRecord{.mode = SandboxMode::off};
  std::vector<SandboxRecord> checked;
  second.sandbox_check = [&checked](const SandboxRecord& policy) {
    checked.push_back(policy);
    return std::string();
  };
  auto& again = make_harness_with(std::move(second));
  faux_->push(FauxResponse::tool_call("call-2", "spy", Json::object()));
  faux_->push(FauxResponse::text("done"));
  auto resumed = again.main().resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error->message;
  ASSERT_EQ(checked.size(), 1u);
  EXPECT_EQ(checked[0], kWorkspaceWrite);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], kWorkspaceWrite);  // not the resuming process's "off"
  EXPECT_EQ(recorded_policies(records()), (std::vector<SandboxRecord>{kWorkspaceWrite, kWorkspaceWrite}));

  // The next run is this process's own: its policy is recorded.
  faux_->push(FauxResponse::tool_call("call-3", "spy", Json::object()));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(again.main().prompt("again").ok());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2], SandboxRecord{.mode = SandboxMode::off});
}

TEST_F(HarnessTest, AResumeThatCannotEnforceTheRecordedSandboxIsRefused) {
  std::vector<std::optional<SandboxRecord>> seen;
  auto first = options();
  first.tools.push_back(policy_spy(seen));
  first.sandbox = kWorkspaceWrite;
  auto& harness = make_harness_with(std::move(first));
  faux_->push(FauxResponse::tool_call("call-1", "spy", Json::object()));
  memory_store_fail_after(*store_, 5);
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();

  auto second = options();
  second.tools.push_back(policy_spy(seen));
  second.sandbox_check = [](const SandboxRecord&) { return std::string("the kernel has no Landlock"); };
  auto& again = make_harness_with(std::move(second));
  auto resumed = again.main().resume();
  EXPECT_EQ(resumed.outcome, Outcome::rejected);
  ASSERT_TRUE(resumed.error);
  EXPECT_EQ(resumed.error->code, "sandbox_unavailable");
  EXPECT_NE(resumed.error->message.find("workspaceWrite"), std::string::npos) << resumed.error->message;
  EXPECT_NE(resumed.error->message.find("the kernel has no Landlock"), std::string::npos) << resumed.error->message;
  EXPECT_EQ(seen.size(), 1u);  // nothing ran
  // Abort still ends it.
  EXPECT_TRUE(again.main().abort().ok());
}

// A spy that, like bash, takes a "network" wish.
Tool networked_spy(std::vector<std::optional<SandboxRecord>>& seen) {
  Tool tool = policy_spy(seen);
  tool.network_argument = "network";
  return tool;
}

// A harness under workspace-write whose spy wants the network; `asks`: the
// approval policy asks about every call (else it allows every call).
HarnessOptions networked_options(HarnessOptions opts, std::vector<std::optional<SandboxRecord>>& seen, bool asks) {
  opts.tools.push_back(networked_spy(seen));
  opts.sandbox = kWorkspaceWrite;
  if (asks) opts.approval = ApprovalPolicy{.fallback = ApprovalDecision::ask};
  return opts;
}

TEST_F(HarnessTest, ANetworkAskedForIsGrantedToTheCallAHumanAllowedAndToNoOther) {
  std::vector<std::optional<SandboxRecord>> seen;
  auto& harness = make_harness_with(networked_options(options(), seen, /*asks=*/true));
  faux_->push(FauxResponse::tool_call("c1", "spy", Json{{"network", true}}));
  faux_->push(FauxResponse::tool_call("c2", "spy", Json::object()));
  faux_->push(FauxResponse::text("done"));
  const SandboxRecord granted{.mode = SandboxMode::workspace_write, .network = true, .network_granted = true};

  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_EQ(run.awaiting_input.size(), 1u);
  EXPECT_EQ(run.awaiting_input[0].sandbox, granted);  // what the person allows is shown to them
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, InputResponse{.decision = InputDecision::allow}).ok());
  run = harness.main().resume();
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_EQ(run.awaiting_input.size(), 1u);
  EXPECT_EQ(run.awaiting_input[0].sandbox, kWorkspaceWrite);  // c2 asks for nothing more
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, InputResponse{.decision = InputDecision::allow}).ok());
  ASSERT_TRUE(harness.main().resume().ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], granted);
  EXPECT_EQ(seen[1], kWorkspaceWrite);  // the run's policy is not the grant
  EXPECT_EQ(recorded_policies(records()), (std::vector<SandboxRecord>{granted, kWorkspaceWrite}));
}

// The grant is read from the log: a process that stops between the answer
// and the call's start leaves it to whoever resumes, who grants the same.
TEST_F(HarnessTest, ANetworkGrantSurvivesAStopBetweenTheAllowAndTheCall) {
  std::vector<std::optional<SandboxRecord>> seen;
  auto& harness = make_harness_with(networked_options(options(), seen, /*asks=*/true));
  faux_->push(FauxResponse::tool_call("c1", "spy", Json{{"network", true}}));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_TRUE(harness.main().respond(run.awaiting_input[0].id, InputResponse{.decision = InputDecision::allow}).ok());
  reopen();  // nothing ran: the allow is the log's last word

  auto opts = networked_options(options(), seen, /*asks=*/true);
  opts.sandbox = SandboxRecord{.mode = SandboxMode::read_only};  // another configuration resumes
  auto& again = make_harness_with(std::move(opts));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(again.main().resume().ok());
  const SandboxRecord granted{.mode = SandboxMode::workspace_write, .network = true, .network_granted = true};
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], granted);
  EXPECT_EQ(recorded_policies(records()), (std::vector<SandboxRecord>{granted}));
}

TEST_F(HarnessTest, ANetworkAskedForWithoutAHumanIsNotGranted) {
  std::vector<std::optional<SandboxRecord>> seen;
  auto& harness = make_harness_with(networked_options(options(), seen, /*asks=*/false));  // nobody is asked
  faux_->push(FauxResponse::tool_call("c1", "spy", Json{{"network", true}}));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], kWorkspaceWrite);
}

TEST_F(HarnessTest, ADeniedNetworkCallRunsNothing) {
  std::vector<std::optional<SandboxRecord>> seen;
  auto& harness = make_harness_with(networked_options(options(), seen, /*asks=*/true));
  faux_->push(FauxResponse::tool_call("c1", "spy", Json{{"network", true}}));
  faux_->push(FauxResponse::text("done"));
  auto run = harness.main().prompt("go");
  ASSERT_EQ(run.outcome, Outcome::awaiting_input);
  ASSERT_TRUE(harness.main()
                  .respond(run.awaiting_input[0].id, InputResponse{.decision = InputDecision::deny, .reason = "no"})
                  .ok());
  ASSERT_TRUE(harness.main().resume().ok());
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(recorded_policies(records()).empty());
}

TEST_F(HarnessTest, WithoutAPolicyNothingIsRecorded) {
  std::vector<std::optional<SandboxRecord>> seen;
  auto opts = options();
  opts.tools.push_back(policy_spy(seen));
  auto& harness = make_harness_with(std::move(opts));
  faux_->push(FauxResponse::tool_call("call-1", "spy", Json::object()));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(seen[0].has_value());
  EXPECT_EQ(recorded_policies(records()), (std::vector<SandboxRecord>{SandboxRecord{.mode = SandboxMode::off, .network = true}}));
}

}  // namespace
}  // namespace cairn::testing
