// Tool batches: each call's tool_started is appended when the call starts and
// its result when it ends, the context lists results in the order of their
// calls, and a crash or an abort in the middle of a batch keeps what ended,
// runs (resume) or aborts (abort) what never started, and settles and
// interrupts only what was running.
#include <condition_variable>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

using Types = std::vector<std::string>;

// The arguments of these tests' tools: only the id their schema asks for.
Json id_args(std::string id) { return Json{{"id", std::move(id)}}; }

const Json kSchema = {{"type", "object"}, {"properties", {{"id", {{"type", "string"}}}}}, {"required", {"id"}}};

bool has_detail(const ToolResultMessage& result, const char* key) {
  return result.details && result.details->is_object() && result.details->value(key, false);
}

std::string text_of(const ToolResultMessage& result) {
  std::string out;
  for (const auto& block : result.content) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
  }
  return out;
}

// The ids of the tool results in `messages`, in order.
template <class Message>
std::vector<std::string> result_ids(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) {
    if (const auto* r = std::get_if<ToolResultMessage>(&m)) out.push_back(r->tool_call_id);
  }
  return out;
}

std::set<std::string> started_calls(const std::vector<Record>& log) {
  std::set<std::string> out;
  for (const auto& record : log) {
    if (const auto* h = std::get_if<HarnessRecord>(&record.body)) {
      if (const auto* t = std::get_if<ToolStarted>(&h->body)) out.insert(t->tool_call_id);
    }
  }
  return out;
}

// The seq of the result entry answering `call_id`.
std::int64_t result_seq(const std::vector<Record>& log, const std::string& call_id) {
  for (const auto& record : log) {
    const auto* entry = std::get_if<TreeEntry>(&record.body);
    const auto* body = entry ? std::get_if<MessageBody>(&entry->body) : nullptr;
    const auto* result = body ? std::get_if<ToolResultMessage>(&body->message) : nullptr;
    if (result && result->tool_call_id == call_id) return record.seq;
  }
  return -1;
}

TEST_F(HarnessTest, ASequentialBatchRecordsEachCallWhenItStartsAndWhenItEnds) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("c1", "serial", id_args("s1"))
                  .then_tool_call("c2", "serial", id_args("s2"))
                  .then_tool_call("c3", "serial", id_args("s3")));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness.main().prompt("go").ok());
  EXPECT_EQ(record_types(),
            (Types{"operation_started", "message:user", "generation_started", "message:assistant", "tool_started",
                   "message:toolResult", "tool_started", "message:toolResult", "tool_started", "message:toolResult",
                   "generation_started", "message:assistant", "operation_finished"}));
  // Events follow the records: each call starts, ends and is recorded before the next starts.
  std::vector<std::string> tool_events;
  for (const auto& e : events_.all()) {
    if (e.type == EventType::tool_start || e.type == EventType::tool_end) tool_events.push_back(std::string(to_string(e.type)) + ":" + e.data["toolCallId"].get<std::string>());
  }
  EXPECT_EQ(tool_events, (Types{"tool_start:c1", "tool_end:c1", "tool_start:c2", "tool_end:c2", "tool_start:c3",
                                "tool_end:c3"}));
  expect_every_call_answered_once(records());
}

// A parallel batch whose first call ends only once the second call's result
// is durable: possible only if results are recorded as calls end.
TEST_F(HarnessTest, AParallelBatchRecordsEachResultAsItsCallEndsAndTheContextKeepsCallOrder) {
  std::mutex mu;
  std::condition_variable cv;
  bool second_recorded = false;
  auto opts = options();
  opts.tools.push_back(Tool{.name = "waiter", .description = "waits for the quick call's result", .parameters = kSchema,
                            .replay = Replay::safe,
                            .execute = [&](const Json&, const ToolContext&) {
                              std::unique_lock lock(mu);
                              const bool saw = cv.wait_for(lock, std::chrono::seconds(3), [&] { return second_recorded; });
                              return ToolResult::text(saw ? "after c2" : "timed out");
                            }});
  opts.tools.push_back(Tool{.name = "quick", .description = "returns at once", .parameters = kSchema,
                            .replay = Replay::safe,
                            .execute = [](const Json&, const ToolContext&) { return ToolResult::text("quick"); }});
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created);
  harness_.emplace(std::move(created->harness));
  opts.session.reset();  // the harness holds it; reopen() must be able to let it go
  auto& harness = *harness_;
  auto listener = harness.on_event([&](const Event& e) {
    if (e.type != EventType::message_end || !e.message) return;
    const auto* result = std::get_if<ToolResultMessage>(e.message.get());
    if (!result || result->tool_call_id != "c2") return;
    std::lock_guard lock(mu);
    second_recorded = true;
    cv.notify_all();
  });
  faux_->push(FauxResponse::tool_call("c1", "waiter", id_args("w1")).then_tool_call("c2", "quick", id_args("q2")));
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness.main().prompt("go").ok());

  const auto log = records();
  ASSERT_EQ(results_for(log, "c1").size(), 1u);
  EXPECT_EQ(text_of(results_for(log, "c1")[0]), "after c2");
  EXPECT_LT(result_seq(log, "c2"), result_seq(log, "c1"));  // the log holds them as they ended
  expect_every_call_answered_once(log);

  // Every reader lists them in the order of the calls: the request the run
  // built from its context cache, the context built from the log, and the
  // context of a session reopened from the store.
  const auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(result_ids(requests[1].messages), (Types{"c1", "c2"}));
  auto context = session_->build_context("main");
  ASSERT_TRUE(context);
  EXPECT_EQ(result_ids(context->messages), (Types{"c1", "c2"}));
  std::vector<LlmMessage> expected = convert_to_llm(context->messages);
  expected.pop_back();  // the final answer came after the request
  ASSERT_EQ(expected.size(), requests[1].messages.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(encode(expected[i]), encode(requests[1].messages[i])) << i;
  // The entry ids move with their messages.
  for (std::size_t i = 0; i < context->messages.size(); ++i) {
    auto entry = session_->get_entry(context->entry_ids[i]);
    ASSERT_TRUE(entry && *entry);
    EXPECT_EQ(encode(std::get<MessageBody>((*entry)->body).message), encode(context->messages[i])) << i;
  }
  listener.reset();
  reopen();
  auto reopened = session_->build_context("main");
  ASSERT_TRUE(reopened);
  EXPECT_EQ(result_ids(reopened->messages), (Types{"c1", "c2"}));
}

// The case: a batch of never-replay calls killed in the middle.
class BatchKillTest : public HarnessTest {
 protected:
  static constexpr int kCalls = 6;

  HarnessOptions batch_options() {
    auto opts = options();
    opts.tools.push_back(Tool{.name = "once", .description = "has an effect", .parameters = kSchema,
                              .replay = Replay::never, .parallel = false,
                              .execute = [effects = effects_](const Json& a, const ToolContext&) {
                                effects->note("once", a);
                                return ToolResult::text("done");
                              },
                              .settle = [this](const ToolContext& context) {
                                std::lock_guard lock(settled_mu_);
                                settled_.push_back(context.run_id + ":" + context.tool_call_id);
                              }});
    return opts;
  }
  void open() {
    listener_.reset();
    harness_.reset();
    auto created = AgentHarness::create(batch_options());
    ASSERT_TRUE(created) << created.error().message;
    harness_.emplace(std::move(created->harness));
    suspended_ = std::move(created->suspended);
  }
  // Runs the batch and stops the store at the third call's result: two
  // calls ended, the third ran, three never started.
  std::string crash() {
    open();
    FauxResponse batch;
    for (int i = 1; i <= kCalls; ++i) batch.then_tool_call(fmt::format("c{}", i), "once", id_args(fmt::format("o{}", i)));
    faux_->push(batch);
    // operation_started, user, generation_started, assistant, then a
    // tool_started and a result per call: c3's result is the one that fails.
    memory_store_fail_after(*store_, 4 + 2 * 2 + 1);
    auto result = harness_->main().prompt("go");
    EXPECT_EQ(result.outcome, Outcome::faulted);
    for (int i = 1; i <= kCalls; ++i) EXPECT_EQ(effects_->count("once", fmt::format("o{}", i)), i <= 3 ? 1 : 0) << i;
    reopen();
    open();
    EXPECT_EQ(suspended_.size(), 1u);
    return result.run_id;
  }
  std::mutex settled_mu_;
  std::vector<std::string> settled_;
};

TEST_F(BatchKillTest, ResumeKeepsFinishedResultsInterruptsTheRunningCallAndRunsTheRest) {
  const std::string run_id = crash();
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(harness_->main().resume().ok());
  const auto log = records();
  expect_every_call_answered_once(log);
  for (int i = 1; i <= kCalls; ++i) {
    SCOPED_TRACE(i);
    const auto results = results_for(log, fmt::format("c{}", i));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(effects_->count("once", fmt::format("o{}", i)), 1);  // exactly once, whatever happened
    EXPECT_EQ(has_detail(results[0], "interrupted"), i == 3);
    if (i != 3) {
      EXPECT_EQ(text_of(results[0]), "done");
    }
  }
  EXPECT_EQ(settled_, std::vector<std::string>{run_id + ":c3"});  // settled before it was called interrupted
}

TEST_F(BatchKillTest, AbortKeepsFinishedResultsInterruptsTheRunningCallAndAbortsTheRest) {
  const std::string run_id = crash();
  ASSERT_TRUE(harness_->main().abort().ok());
  const auto log = records();
  expect_every_call_answered_once(log);
  for (int i = 1; i <= kCalls; ++i) {
    SCOPED_TRACE(i);
    const auto results = results_for(log, fmt::format("c{}", i));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(effects_->count("once", fmt::format("o{}", i)), i <= 3 ? 1 : 0);
    EXPECT_EQ(has_detail(results[0], "interrupted"), i == 3);
    EXPECT_EQ(has_detail(results[0], "aborted"), i > 3);
    if (i < 3) {
      EXPECT_EQ(text_of(results[0]), "done");
    }
  }
  EXPECT_EQ(started_calls(log), (std::set<std::string>{"c1", "c2", "c3"}));
  EXPECT_EQ(settled_, std::vector<std::string>{run_id + ":c3"});
}

TEST_F(HarnessTest, AnAbortMidParallelBatchLetsRunningCallsEndAndAbortsTheOnesNotStarted) {
  // More calls than run at once: the ones waiting for a free slot never start.
  constexpr int kCalls = 20;
  auto& harness = make_harness();
  FauxResponse batch;
  for (int i = 0; i < kCalls; ++i) batch.then_tool_call(fmt::format("c{}", i), "slow", id_args(fmt::format("s{}", i)));
  faux_->push(batch);
  std::mutex mu;
  std::condition_variable cv;
  int starts = 0;
  auto listener = harness.on_event([&](const Event& e) {
    if (e.type != EventType::tool_start) return;
    std::lock_guard lock(mu);
    ++starts;
    cv.notify_all();
  });
  std::optional<RunResult> result;
  std::thread runner([&] { result = harness.main().prompt("go"); });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return starts >= 16; }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // no 17th starts while 16 run
  ASSERT_TRUE(harness.main().abort().ok());
  runner.join();
  EXPECT_EQ(result->outcome, Outcome::aborted);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(starts, 16);
  }
  listener.reset();

  const auto log = records();
  expect_every_call_answered_once(log);
  const auto started = started_calls(log);
  EXPECT_EQ(started.size(), 16u);
  for (int i = 0; i < kCalls; ++i) {
    const std::string id = fmt::format("c{}", i);
    const auto results = results_for(log, id);
    ASSERT_EQ(results.size(), 1u) << id;
    if (started.contains(id)) {
      EXPECT_EQ(text_of(results[0]), "stopped") << id;  // its own result: it ended
      EXPECT_EQ(effects_->count("slow", fmt::format("s{}", i)), 1);
    } else {
      EXPECT_TRUE(has_detail(results[0], "aborted")) << id;
      EXPECT_EQ(effects_->count("slow", fmt::format("s{}", i)), 0);
    }
  }
}

// Every crash point of a batch of four calls (two replay never, two replay
// safe), run call by call or in parallel, then resumed or aborted.
struct BatchCrashCase {
  bool parallel;
  bool abort;
};

class BatchCrashPointTest : public HarnessTest, public ::testing::WithParamInterface<BatchCrashCase> {
 protected:
  std::shared_ptr<FauxProvider> provider() {
    return std::make_shared<FauxProvider>([](const LlmContext& context) {
      const bool answered = std::any_of(context.messages.begin(), context.messages.end(),
                                        [](const LlmMessage& m) { return std::holds_alternative<AssistantMessage>(m); });
      if (answered) return FauxResponse::text("done");
      return FauxResponse::tool_call("c1", "once", id_args("c1"))
          .then_tool_call("c2", "again", id_args("c2"))
          .then_tool_call("c3", "once", id_args("c3"))
          .then_tool_call("c4", "again", id_args("c4"));
    });
  }
  void open(const std::shared_ptr<FauxProvider>& provider) {
    harness_.reset();
    auto opts = options();
    opts.models = Models{};
    opts.models.add(FauxProvider::model(), provider);
    for (auto [name, replay] : {std::pair{"once", Replay::never}, std::pair{"again", Replay::safe}}) {
      opts.tools.push_back(Tool{.name = name, .description = name, .parameters = kSchema, .replay = replay,
                                .parallel = GetParam().parallel,
                                .execute = [effects = effects_, name = std::string(name)](const Json& a, const ToolContext&) {
                                  effects->note(name, a);
                                  return ToolResult::text("done");
                                }});
    }
    auto created = AgentHarness::create(opts);
    ASSERT_TRUE(created) << created.error().message;
    harness_.emplace(std::move(created->harness));
    suspended_ = std::move(created->suspended);
  }
  static std::string tool_of(const std::string& call) { return call == "c1" || call == "c3" ? "once" : "again"; }
};

TEST_P(BatchCrashPointTest, EveryCallEndsOnceAndOnlyWhatRanIsInterrupted) {
  const auto provider = this->provider();
  open(provider);
  ASSERT_TRUE(harness_->main().prompt("go").ok());
  const auto appends = static_cast<std::int64_t>(records().size());

  for (std::int64_t k = 1; k < appends; ++k) {
    SCOPED_TRACE(fmt::format("crash after {} appends", k));
    store_ = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
    session_ = *store_->create(CreateOptions{.cwd = "/work"});
    session_id_ = session_->id();
    effects_ = std::make_shared<ToolEffects>();
    open(provider);
    memory_store_fail_after(*store_, k);
    ASSERT_EQ(harness_->main().prompt("go").outcome, Outcome::faulted);
    reopen();
    open(provider);
    ASSERT_EQ(suspended_.size(), 1u);
    const auto outcome = GetParam().abort ? harness_->main().abort().outcome : harness_->main().resume().outcome;
    ASSERT_EQ(outcome, Outcome::ok);

    const auto log = records();
    expect_every_call_answered_once(log);
    if (results_for(log, "c1").empty() && GetParam().abort) continue;  // aborted before the model asked for the batch
    const auto started = started_calls(log);
    int interrupted = 0;
    for (const std::string call : {"c1", "c2", "c3", "c4"}) {
      SCOPED_TRACE(call);
      const auto results = results_for(log, call);
      ASSERT_EQ(results.size(), 1u);
      const int runs = effects_->count(tool_of(call), call);
      if (has_detail(results[0], "interrupted")) {
        ++interrupted;
        EXPECT_TRUE(started.contains(call));
        EXPECT_EQ(runs, 1);  // it was running: it had started, for real
      } else if (has_detail(results[0], "aborted")) {
        EXPECT_TRUE(GetParam().abort);
        EXPECT_FALSE(started.contains(call));
        EXPECT_EQ(runs, 0);  // it never started
      } else {
        EXPECT_EQ(text_of(results[0]), "done");
        if (tool_of(call) == "once") {
          EXPECT_EQ(runs, 1);
        } else {
          EXPECT_GE(runs, 1);
          EXPECT_LE(runs, 2);  // run again on resume only if it was running
        }
      }
      if (!GetParam().abort && tool_of(call) == "once") {
        EXPECT_EQ(runs, 1);
      }
    }
    // One call at a time: at most the one that was running is interrupted.
    if (!GetParam().parallel) {
      EXPECT_LE(interrupted, 1);
    }
    if (::testing::Test::HasFailure()) break;
  }
}

INSTANTIATE_TEST_SUITE_P(Batches, BatchCrashPointTest,
                         ::testing::Values(BatchCrashCase{false, false}, BatchCrashCase{false, true},
                                           BatchCrashCase{true, false}, BatchCrashCase{true, true}),
                         [](const auto& info) {
                           return std::string(info.param.parallel ? "Parallel" : "Sequential") +
                                  (info.param.abort ? "ThenAbort" : "ThenResume");
                         });

}  // namespace
}  // namespace cairn::testing
