// Refs running at the same time, and watchers attaching while they run.
#include <random>
#include <set>
#include <thread>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

// Answers by the request's own shape: a tool call for each of the first
// `steps` steps, then a text naming the last user message.
std::shared_ptr<FauxProvider> stepping_provider(int steps) {
  return std::make_shared<FauxProvider>([steps](const LlmContext& context) {
    int assistants = 0;
    std::string last_user;
    for (const auto& m : context.messages) {
      if (std::holds_alternative<AssistantMessage>(m)) ++assistants;
      if (const auto* u = std::get_if<UserMessage>(&m)) last_user = std::get<std::string>(u->content);
    }
    if (assistants < steps) {
      const std::string id = "c" + std::to_string(context.messages.size());
      return FauxResponse::tool_call(id, "echo", Json{{"id", id}, {"text", last_user}});
    }
    return FauxResponse::text("done: " + last_user);
  });
}

TEST_F(HarnessTest, SixteenRefsRunConcurrentlyWithToolsAndSteering) {
  auto opts = options();
  opts.models = Models{};
  opts.models.add(FauxProvider::model(), stepping_provider(3));
  // echo steers its own ref once, from the tool's thread, mid-step.
  std::mutex mu;
  std::set<std::string> steered;
  AgentHarness* current = nullptr;
  opts.tools[0].execute = [&](const Json& args, const ToolContext&) {
    const std::string ref = args.value("text", std::string()).substr(0, args.value("text", std::string()).find(' '));
    bool first = false;
    {
      std::lock_guard lock(mu);
      first = steered.insert(ref).second;
    }
    if (first) {
      EXPECT_TRUE(current->ref(ref)->steer(ref + " steer").ok());
    }
    return ToolResult::text("ok");
  };
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  auto& harness = created->harness;
  current = &harness;
  std::vector<std::string> names;
  for (int i = 0; i < 16; ++i) {
    names.push_back(i == 0 ? "main" : "ref" + std::to_string(i));
    if (i > 0) {
      ASSERT_TRUE(harness.create_ref(names.back(), std::nullopt));
    }
  }
  std::vector<std::optional<RunResult>> results(names.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < names.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = harness.ref(names[i])->prompt(names[i] + " go"); });
    }
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSERT_TRUE(results[i] && results[i]->ok()) << names[i];
    // prompt, then 3 steps (assistant + result), the steering message, and the answer
    auto context = session_->build_context(names[i]);
    ASSERT_TRUE(context);
    int users = 0;
    for (const auto& m : context->messages) users += std::holds_alternative<UserMessage>(m);
    EXPECT_EQ(users, 2) << names[i];
    const auto& last = std::get<AssistantMessage>(context->messages.back());
    EXPECT_EQ(std::get<TextContent>(last.content[0]).text, "done: " + names[i] + " steer");
  }
  EXPECT_EQ(session_->refs().size(), 16u);
  for (const auto& info : session_->refs()) EXPECT_FALSE(info.open_operation);
}

TEST_F(HarnessTest, WatchersSeeEveryEntryExactlyOnce) {
  auto opts = options();
  opts.models = Models{};
  opts.models.add(FauxProvider::model(), stepping_provider(12));
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  auto& harness = created->harness;

  struct Seen {
    explicit Seen(RefWatch w) : watch(std::move(w)) {}
    RefWatch watch;
    std::mutex mu;
    std::vector<std::string> ids;  // the snapshot's transcript, then every entry announced
  };
  std::vector<std::unique_ptr<Seen>> watchers;
  std::atomic<bool> done{false};
  std::atomic<int> attached{0};
  std::jthread attacher([&] {
    std::mt19937 rng(7);
    while (!done) {
      auto watch = harness.main().watch();
      ASSERT_TRUE(watch);
      auto seen = std::make_unique<Seen>(std::move(*watch));
      for (const auto& entry : seen->watch.snapshot().transcript) seen->ids.push_back(entry.id);
      Seen* raw = seen.get();
      raw->watch.start([raw](const Event& e) {
        std::lock_guard lock(raw->mu);
        if (e.type == EventType::message_end) raw->ids.push_back(e.data["entryId"].get<std::string>());
        if (e.type == EventType::entry_added) raw->ids.push_back(e.data["entry"]["id"].get<std::string>());
      });
      watchers.push_back(std::move(seen));
      ++attached;
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    }
  });
  // Runs go on until watchers have attached during them (a run of 12 steps
  // takes well under a millisecond, which an attaching thread can miss).
  for (int run = 0; run < 3 || (attached < 8 && run < 10000); ++run) {
    ASSERT_TRUE(harness.main().prompt("run " + std::to_string(run)).ok());
  }
  done = true;
  attacher.join();

  auto branch = session_->find_entries_on_branch(EntryQuery{.order = Order::oldest_first}, {}, "main");
  ASSERT_TRUE(branch);
  std::vector<std::string> expected;
  for (const auto& entry : branch->items) expected.push_back(entry.id);
  ASSERT_GT(watchers.size(), 3u);
  for (auto& seen : watchers) {
    std::lock_guard lock(seen->mu);
    EXPECT_EQ(seen->ids, expected);
  }
}

TEST_F(HarnessTest, AWatchSnapshotShowsTheRunningToolAndTheQueues) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "slow", Json{{"id", "s1"}}));
  std::atomic<bool> in_tool{false};
  auto sub = harness.on_event([&](const Event& e) {
    if (e.type == EventType::tool_start) in_tool = true;
  });
  RunResult ran;
  std::thread runner([&] { ran = harness.main().prompt("wait"); });
  while (!in_tool) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(harness.main().steer("later").ok());
  auto watch = harness.main().watch();
  ASSERT_TRUE(watch);
  const auto& snapshot = watch->snapshot();
  ASSERT_TRUE(snapshot.run);
  EXPECT_EQ(snapshot.run->status, OperationStatus::running);
  ASSERT_EQ(snapshot.run->running_tools.size(), 1u);
  EXPECT_EQ(snapshot.run->running_tools[0].tool_name, "slow");
  EXPECT_EQ(snapshot.steer.size(), 1u);
  EXPECT_EQ(snapshot.transcript.size(), 2u);  // the prompt and the assistant's call
  std::vector<std::string> types;
  watch->start([&](const Event& e) { types.push_back(std::string(to_string(e.type))); });
  EXPECT_TRUE(harness.main().abort().ok());
  runner.join();
  EXPECT_EQ(ran.outcome, Outcome::aborted);
  ASSERT_FALSE(types.empty());
  EXPECT_EQ(types.front(), "run_cancel");
  EXPECT_EQ(types.back(), "run_end");
  auto session_watch = harness.watch_session();
  ASSERT_EQ(session_watch.snapshot().refs.size(), 1u);
  EXPECT_FALSE(session_watch.snapshot().refs[0].status.run);
}

}  // namespace
}  // namespace cairn::testing
