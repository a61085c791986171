// Check 21 of `cairn verify` (verify_children): a parent's finished run
// whose subagent session still has an open operation fails, naming the
// child; once the child's operation ends, or for a child a crash kept from
// being created, it holds.
#include <gtest/gtest.h>

#include "cairn/store/verify.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using testing::harness;

class VerifyChildrenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = make_memory_store(StoreOptions{});
    auto parent = store_->create(CreateOptions{.id = "parent"});
    ASSERT_TRUE(parent);
    parent_ = *parent;
  }

  // A run of the parent that started a task call for `child`, and ended.
  void parent_run(const std::string& run, const std::string& child) {
    ASSERT_TRUE(parent_->append(harness(OperationStarted{.intent = RunIntent{}}, "main", run)));
    ASSERT_TRUE(parent_->append(harness(ToolStarted{.run_id = run, .assistant_entry_id = "a-" + run, .tool_call_id = "t-" + run,
                                                    .tool_name = "task", .result_entry_id = "r-" + run,
                                                    .replay = Replay::resume, .child_session = child})));
    ASSERT_TRUE(parent_->append(harness(OperationFinished{.run_id = run, .outcome = OperationOutcome::aborted})));
  }

  VerifyCheck check() {
    auto checked = verify_children(*store_, *parent_);
    EXPECT_TRUE(checked) << checked.error().message;
    return checked ? *checked : VerifyCheck{};
  }

  std::unique_ptr<Store> store_;
  std::shared_ptr<Session> parent_;
};

TEST_F(VerifyChildrenTest, AFinishedRunsChildWithAnOpenOperationFailsUntilItEnds) {
  auto child = store_->create(CreateOptions{.id = "kid", .parent_session = "parent"});
  ASSERT_TRUE(child);
  ASSERT_TRUE((*child)->append(harness(OperationStarted{.intent = RunIntent{}}, "main", "kid-run")));
  parent_run("run-1", "kid");

  VerifyCheck open = check();
  ASSERT_EQ(open.failures.size(), 1u);
  EXPECT_NE(open.failures[0].find("run run-1 finished, but its subagent session kid"), std::string::npos)
      << open.failures[0];
  EXPECT_NE(open.name.find("21 "), std::string::npos);

  ASSERT_TRUE((*child)->append(harness(OperationFinished{.run_id = "kid-run", .outcome = OperationOutcome::aborted})));
  VerifyCheck ended = check();
  EXPECT_TRUE(ended.ok()) << ended.failures[0];
  EXPECT_EQ(ended.notes, std::vector<std::string>{"1 subagent session read"});
}

TEST_F(VerifyChildrenTest, AChildThatWasNeverCreatedAndAnOpenParentRunAreNotFailures) {
  parent_run("run-1", "never-created");
  // The parent's run still open: its child may be open too.
  auto child = store_->create(CreateOptions{.id = "kid", .parent_session = "parent"});
  ASSERT_TRUE(child);
  ASSERT_TRUE((*child)->append(harness(OperationStarted{.intent = RunIntent{}}, "main", "kid-run")));
  ASSERT_TRUE(parent_->append(harness(OperationStarted{.intent = RunIntent{}}, "main", "run-2")));
  ASSERT_TRUE(parent_->append(harness(ToolStarted{.run_id = "run-2", .assistant_entry_id = "a2", .tool_call_id = "t2",
                                                  .tool_name = "task", .result_entry_id = "r2", .replay = Replay::resume,
                                                  .child_session = "kid"})));
  VerifyCheck held = check();
  EXPECT_TRUE(held.ok()) << held.failures[0];
  EXPECT_EQ(held.notes, std::vector<std::string>{"0 subagent sessions read"});
}

}  // namespace
}  // namespace cairn
