// Tree navigation as a durable operation: the leaf moves once, by a leaf
// entry; a branch summary and a label follow it; a user-message target comes
// back for editing; hooks may cancel or supply the summary; and every crash
// point resumes to the same end.
#include <set>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

class NavigationTest : public HarnessTest {
 protected:
  // main: q1 a1 q2 a2; returns the ids of q1, a1, q2, a2.
  std::vector<std::string> two_exchanges(AgentHarness& h) {
    for (const char* q : {"first question", "second question"}) {
      faux_->push(FauxResponse::text(std::string("answer to ") + q));
      EXPECT_TRUE(h.main().prompt(q).ok());
    }
    auto context = session_->build_context("main");
    EXPECT_TRUE(context);
    return context->entry_ids;
  }

  std::vector<TreeEntry> entries_of_type(RecordType type) {
    std::vector<TreeEntry> out;
    for (const auto& record : records()) {
      if (const auto* t = std::get_if<TreeEntry>(&record.body); t && type_of(record) == type) out.push_back(*t);
    }
    return out;
  }

  std::vector<Event> events_of(EventType type) {
    std::vector<Event> out;
    for (const auto& e : events_.all()) {
      if (e.type == type) out.push_back(e);
    }
    return out;
  }
};

TEST_F(NavigationTest, TheLeafMovesOnceAndTheContextIsTheDestinationsBranch) {
  auto& h = make_harness();
  const auto ids = two_exchanges(h);
  const auto old_leaf = h.main().leaf_id();
  events_.clear();
  RunResult result = h.main().navigate_tree(ids[1]);  // a1
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.kind, OperationKind::navigation);
  EXPECT_EQ(result.new_leaf_id, ids[1]);
  EXPECT_FALSE(result.editor_text);
  EXPECT_EQ(h.main().leaf_id(), ids[1]);
  EXPECT_EQ(entries_of_type(RecordType::leaf).size(), 1u);
  EXPECT_EQ(events_.types(), (std::vector<std::string>{"navigation_start", "entry_added", "context_usage", "navigation_end"}));
  const Event end = events_of(EventType::navigation_end).at(0);
  EXPECT_EQ(end.data["outcome"], "completed");
  EXPECT_EQ(end.data["oldLeafId"], *old_leaf);
  EXPECT_EQ(end.data["newLeafId"], ids[1]);

  // The next prompt branches off a1: the model sees q1 a1 and the new prompt.
  faux_->push(FauxResponse::text("on the new branch"));
  ASSERT_TRUE(h.main().prompt("instead").ok());
  EXPECT_EQ(faux_->requests().back().messages.size(), 3u);
}

TEST_F(NavigationTest, AUserMessageTargetMovesToItsParentAndComesBackForEditing) {
  auto& h = make_harness();
  const auto ids = two_exchanges(h);
  RunResult result = h.main().navigate_tree(ids[2]);  // q2
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result.new_leaf_id, ids[1]);
  EXPECT_EQ(result.editor_text, "second question");
  EXPECT_EQ(h.main().leaf_id(), ids[1]);
  // To before the first entry.
  RunResult root = h.main().navigate_tree(ids[0]);
  ASSERT_TRUE(root.ok());
  EXPECT_FALSE(root.new_leaf_id);
  EXPECT_FALSE(h.main().leaf_id());
}

TEST_F(NavigationTest, WithSummarizeTheAbandonedBranchIsSummarisedAtTheNewLeaf) {
  auto& h = make_harness();
  const auto ids = two_exchanges(h);
  faux_->push(FauxResponse::text("BRANCH SUMMARY"));
  RunResult result = h.main().navigate_tree(ids[1], NavigateOptions{.summarize = true, .label = "fork point"});
  ASSERT_TRUE(result.ok()) << result.error->message;
  ASSERT_TRUE(result.entry);
  const auto& summary = std::get<BranchSummary>(result.entry->body);
  EXPECT_NE(summary.summary.find("BRANCH SUMMARY"), std::string::npos);
  EXPECT_EQ(result.entry->parent_id, ids[1]);  // a child of the destination
  // The label record chains on the summary, as pi's label changes do, and
  // is the new leaf; context building passes over it.
  const auto leaf = session_->get_entry(*h.main().leaf_id());
  ASSERT_TRUE(leaf && *leaf);
  EXPECT_TRUE(std::holds_alternative<Label>((*leaf)->body));
  EXPECT_EQ((*leaf)->parent_id, result.entry->id);
  // The summary request saw exactly the abandoned part: q2 and a2.
  const auto request = faux_->requests().back();
  ASSERT_TRUE(is_summary_request(request));
  const std::string prompt = std::get<TextContent>(std::get<std::vector<UserBlock>>(std::get<UserMessage>(request.messages.at(0)).content).at(0)).text;
  EXPECT_NE(prompt.find("[User]: second question"), std::string::npos);
  EXPECT_NE(prompt.find("[Assistant]: answer to second question"), std::string::npos);
  EXPECT_EQ(prompt.find("first question"), std::string::npos);
  EXPECT_EQ(*session_->label(ids[1]), "fork point");
  // The next request carries the summary as a user message after a1.
  faux_->push(FauxResponse::text("ok"));
  ASSERT_TRUE(h.main().prompt("go on").ok());
  const auto next = faux_->requests().back();
  ASSERT_EQ(next.messages.size(), 4u);  // q1 a1 summary go-on
  const auto* user = std::get_if<UserMessage>(&next.messages[2]);
  ASSERT_TRUE(user);
}

TEST_F(NavigationTest, BeforeNavigationMayCancelOrSupplyTheSummary) {
  auto& h = make_harness();
  const auto ids = two_exchanges(h);
  const auto old_leaf = h.main().leaf_id();
  bool cancel = true;
  Subscription hook = h.hooks().before_navigation(
      [&](const HookContext&, const BeforeNavigationEvent& e) -> std::optional<BeforeNavigationResult> {
        EXPECT_EQ(e.target_id, ids[1]);
        EXPECT_EQ(e.preparation.messages.size(), 2u);
        if (cancel) return BeforeNavigationResult{.cancel = true};
        return BeforeNavigationResult{.summary = SuppliedSummary{.summary = "HOOK SUMMARY"}};
      });
  RunResult cancelled = h.main().navigate_tree(ids[1], NavigateOptions{.summarize = true});
  EXPECT_EQ(cancelled.outcome, Outcome::cancelled);
  EXPECT_EQ(h.main().leaf_id(), old_leaf);
  EXPECT_TRUE(entries_of_type(RecordType::leaf).empty());

  cancel = false;
  const std::size_t requests = faux_->requests().size();
  RunResult supplied = h.main().navigate_tree(ids[1], NavigateOptions{.summarize = true});
  ASSERT_TRUE(supplied.ok());
  EXPECT_EQ(faux_->requests().size(), requests);
  const auto& body = std::get<BranchSummary>(supplied.entry->body);
  EXPECT_EQ(body.summary, "HOOK SUMMARY");
  EXPECT_TRUE(body.from_hook.value_or(false));
}

TEST_F(NavigationTest, UnknownTargetsAreRejectedAndBusyRefsRefuse) {
  auto& h = make_harness();
  RunResult unknown = h.main().navigate_tree("no-such-entry");
  EXPECT_EQ(unknown.outcome, Outcome::rejected);
  EXPECT_EQ(unknown.error->code, "unknown_entry");
  EXPECT_TRUE(records().empty());
}

// Every k: the store stops after k appends of a navigation with a summary
// and a label; reopen, resume: one leaf entry, one summary, one label, and
// the same context as without a crash.
TEST_F(NavigationTest, EveryCrashPointOfANavigationWithSummaryResumesToTheSameEnd) {
  auto script = [](const LlmContext& context) {
    return is_summary_request(context) ? FauxResponse::text("THE BRANCH") : FauxResponse::text("an answer");
  };
  auto run_once = [&](std::int64_t crash_at) {
    faux_ = std::make_shared<FauxProvider>(script);
    store_ = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
    {
      auto session = store_->create(CreateOptions{.cwd = "/work"});
      EXPECT_TRUE(session);
      session_ = *session;
    }
    session_id_ = session_->id();
    auto& h = make_harness();
    for (const char* q : {"one", "two", "three"}) EXPECT_TRUE(h.main().prompt(q).ok());
    const auto ids = session_->build_context("main")->entry_ids;
    const std::string target = ids.at(1);
    if (crash_at >= 0) memory_store_fail_after(*store_, crash_at);
    RunResult result = h.main().navigate_tree(target, NavigateOptions{.summarize = true, .label = "here"});
    if (result.outcome == Outcome::faulted) {
      reopen();
      auto& again = make_harness();
      if (result.run_id.empty()) {
        EXPECT_TRUE(suspended_.empty());
        EXPECT_TRUE(again.main().navigate_tree(target, NavigateOptions{.summarize = true, .label = "here"}).ok());
      } else {
        EXPECT_EQ(suspended_.size(), 1u);
        RunResult resumed = again.main().resume();
        EXPECT_TRUE(resumed.ok()) << (resumed.error ? resumed.error->message : "");
        EXPECT_TRUE(resumed.entry);
      }
    } else {
      EXPECT_TRUE(result.ok());
    }
    EXPECT_EQ(entries_of_type(RecordType::leaf).size(), 1u) << "crash at " << crash_at;
    EXPECT_EQ(entries_of_type(RecordType::branch_summary).size(), 1u) << "crash at " << crash_at;
    EXPECT_EQ(entries_of_type(RecordType::label).size(), 1u) << "crash at " << crash_at;
    std::set<std::string> started, finished;
    for (const auto& record : records()) {
      if (const auto* hr = std::get_if<HarnessRecord>(&record.body)) {
        if (std::holds_alternative<OperationStarted>(hr->body)) started.insert(hr->id);
        if (const auto* f = std::get_if<OperationFinished>(&hr->body)) {
          EXPECT_TRUE(finished.insert(f->run_id).second);
        }
      }
    }
    EXPECT_EQ(started, finished);
    std::vector<std::string> context;
    const auto built = session_->build_context("main");
    EXPECT_TRUE(built);
    for (const auto& m : built->messages) context.emplace_back(role_of(m));
    return context;
  };
  const auto reference = run_once(-1);
  EXPECT_EQ(reference, (std::vector<std::string>{"user", "assistant", "branchSummary"}));
  // operation_started, generation_started, leaf, branch_summary, label, operation_finished.
  for (std::int64_t k = 0; k <= 6; ++k) EXPECT_EQ(run_once(k), reference) << "crash at " << k;
}

}  // namespace
}  // namespace cairn::testing
