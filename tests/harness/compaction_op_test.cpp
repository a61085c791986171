// Compaction as a durable operation: manual, at the threshold inside a run,
// and on a context overflow; refusals and hooks; repeated compactions; and
// every crash point of a manual compaction.
#include <set>

#include "harness/harness_support.hpp"

namespace cairn::testing {
namespace {

using Types = std::vector<std::string>;

std::string user_text(const LlmMessage& message) {
  const auto* user = std::get_if<UserMessage>(&message);
  if (!user) return {};
  if (const auto* text = std::get_if<std::string>(&user->content)) return *text;
  std::string out;
  for (const auto& block : std::get<std::vector<UserBlock>>(user->content)) {
    if (const auto* t = std::get_if<TextContent>(&block)) out += t->text;
  }
  return out;
}

FauxResponse with_usage(FauxResponse response, std::int64_t total) {
  response.usage.total_tokens = total;
  return response;
}

class CompactionOpTest : public HarnessTest {
 protected:
  // `window`: the model's context window; small ones reach the threshold
  // within a few messages.
  AgentHarness& harness(CompactionSettings settings, std::int64_t window = 200000) {
    Model model = FauxProvider::model("sized");
    model.context_window = window;
    HarnessOptions opts = options();
    opts.models = Models{};
    opts.models.add(model, faux_);
    opts.model = model;
    opts.compaction = settings;
    return make_harness_with(std::move(opts));
  }

  // Two exchanges of `chars` characters each way.
  void converse(AgentHarness& h, std::size_t chars, int exchanges = 2) {
    for (int i = 0; i < exchanges; ++i) {
      faux_->push(FauxResponse::text(std::string(chars, 'a')));
      ASSERT_TRUE(h.main().prompt(std::string(chars, 'q')).ok());
    }
  }

  // Record types from `from` on, compaction entries and generation purposes named.
  Types types_from(std::size_t from) {
    Types out;
    const auto log = records();
    for (std::size_t i = from; i < log.size(); ++i) {
      if (const auto* h = std::get_if<HarnessRecord>(&log[i].body)) {
        std::string type(to_string(type_of(log[i])));
        if (const auto* g = std::get_if<GenerationStarted>(&h->body)) (type += ":") += to_string(g->purpose);
        if (const auto* f = std::get_if<OperationFinished>(&h->body)) (type += ":") += to_string(f->outcome);
        out.push_back(type);
      } else if (const auto* t = std::get_if<TreeEntry>(&log[i].body)) {
        std::string type(to_string(type_of(log[i])));
        if (const auto* body = std::get_if<MessageBody>(&t->body)) type += ":" + std::string(role_of(body->message));
        out.push_back(type);
      }
    }
    return out;
  }

  std::vector<TreeEntry> compactions() {
    std::vector<TreeEntry> out;
    for (const auto& record : records()) {
      if (const auto* t = std::get_if<TreeEntry>(&record.body); t && std::holds_alternative<Compaction>(t->body)) out.push_back(*t);
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

TEST_F(CompactionOpTest, ManualCompactionSummarisesTheOldContextAndTheNextRequestStartsAtTheSummary) {
  auto& h = harness(CompactionSettings{.keep_recent_tokens = 60});
  converse(h, 200, 3);
  const std::size_t before = records().size();
  const auto kept_context = session_->build_context("main");
  events_.clear();

  faux_->push(FauxResponse::text("SUMMARY-ONE"));
  RunResult result = h.main().compact("keep the names");
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.kind, OperationKind::compaction);
  ASSERT_TRUE(result.entry);
  const auto& compaction = std::get<Compaction>(result.entry->body);
  EXPECT_TRUE(compaction.summary.starts_with("SUMMARY-ONE"));
  EXPECT_FALSE(compaction.from_hook.value_or(false));
  EXPECT_EQ(types_from(before), (Types{"operation_started", "generation_started:compaction", "compaction",
                                       "operation_finished:completed"}));
  EXPECT_EQ(events_.types(), (Types{"compaction_start", "entry_added", "context_usage", "compaction_end"}));
  const Event end = events_of(EventType::compaction_end).at(0);
  EXPECT_EQ(end.data["outcome"], "completed");
  EXPECT_EQ(end.data["reason"], "manual");
  EXPECT_EQ(end.data["entry"]["id"], result.entry->id);

  // The summary request: the summariser's system prompt, the transcript in
  // tags, the custom instructions.
  const auto request = faux_->requests().back();
  ASSERT_TRUE(is_summary_request(request));
  const std::string prompt = user_text(request.messages.at(0));
  EXPECT_NE(prompt.find("<conversation>\n[User]: qqq"), std::string::npos);
  EXPECT_NE(prompt.find("Also focus on: keep the names"), std::string::npos);

  // Every entry is still in the log; the next request starts at the summary
  // and carries the kept entries verbatim.
  faux_->push(FauxResponse::text("after"));
  ASSERT_TRUE(h.main().prompt("next").ok());
  const auto next = faux_->requests().back();
  ASSERT_GE(next.messages.size(), 2u);
  EXPECT_NE(user_text(next.messages[0]).find("SUMMARY-ONE"), std::string::npos);
  EXPECT_LT(next.messages.size(), kept_context->messages.size() + 1);
  EXPECT_EQ(user_text(next.messages.back()), "next");
  const auto log = session_->get_log();
  ASSERT_TRUE(log);
  EXPECT_GT(log->size(), before);
}

TEST_F(CompactionOpTest, ContextUsageReportsTheContextApartFromWhatWasSpent) {
  auto& h = harness(CompactionSettings{.enabled = false, .keep_recent_tokens = 60}, 1000);
  // A step: the response counts the whole context (500); the run spent 500
  // plus a failed, retried attempt's 30.
  FauxResponse failed = FauxResponse::failure("busy", /*retryable=*/true);
  failed.usage.total_tokens = 30;
  faux_->push(failed);
  faux_->push(with_usage(FauxResponse::text(std::string(400, 'a')), 500));
  ASSERT_TRUE(h.main().prompt(std::string(400, 'q')).ok());
  auto usage = events_of(EventType::context_usage);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].data["context"]["tokens"], 500);
  EXPECT_EQ(usage[0].data["context"]["measured"], "provider");
  EXPECT_EQ(usage[0].data["context"]["contextWindow"], 1000);
  EXPECT_DOUBLE_EQ(usage[0].data["context"]["percent"].get<double>(), 50.0);
  EXPECT_EQ(usage[0].data["operationSpend"]["totalTokens"], 530);

  // A second run: its spend starts again; the context is the new count.
  events_.clear();
  faux_->push(with_usage(FauxResponse::text("b"), 620));
  ASSERT_TRUE(h.main().prompt("more").ok());
  usage = events_of(EventType::context_usage);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].data["context"]["tokens"], 620);
  EXPECT_EQ(usage[0].data["operationSpend"]["totalTokens"], 620);

  // After a compaction no response has counted the context: it is estimated,
  // and smaller; the compaction spent its summary's tokens.
  events_.clear();
  faux_->push(with_usage(FauxResponse::text("SUMMARY"), 45));
  ASSERT_TRUE(h.main().compact().ok());
  usage = events_of(EventType::context_usage);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].data["context"]["measured"], "estimated");
  EXPECT_EQ(usage[0].data["context"]["providerCountedTokens"], 0);
  EXPECT_LT(usage[0].data["context"]["tokens"].get<std::int64_t>(), 620);
  EXPECT_EQ(usage[0].data["operationSpend"]["totalTokens"], 45);
  EXPECT_EQ(events_.types().back(), "compaction_end");  // reported before the operation ends
}

TEST_F(CompactionOpTest, TheThresholdCompactsAtTheCheckpointAndTheNextStepSeesTheSummary) {
  auto& h = harness(CompactionSettings{.reserve_tokens = 200, .keep_recent_tokens = 2}, 1000);
  converse(h, 40);
  const std::size_t before = records().size();
  events_.clear();
  faux_->push(with_usage(FauxResponse::tool_call("c1", "echo", Json{{"id", "e1"}}), 900));  // 900 > 1000 - 200
  faux_->push(FauxResponse::text("HISTORY"));  // the summary of the older exchanges
  faux_->push(FauxResponse::text("PREFIX"));   // the split turn's prefix (the prompt)
  faux_->push(FauxResponse::text("done"));
  ASSERT_TRUE(h.main().prompt("work").ok());

  EXPECT_EQ(types_from(before),
            (Types{"operation_started", "message:user", "generation_started:step", "message:assistant", "tool_started",
                   "message:toolResult", "generation_started:compaction", "compaction", "generation_started:step",
                   "message:assistant", "operation_finished:completed"}));
  EXPECT_EQ(events_.types(),
            (Types{"run_start", "message_start", "message_end", "step_start", "message_start", "message_end",
                   "context_usage", "tool_start", "tool_end", "message_start", "message_end", "step_end",
                   "compaction_start", "entry_added", "compaction_end", "context_usage", "step_start", "message_start",
                   "message_end", "context_usage", "step_end", "run_end"}));
  EXPECT_EQ(events_of(EventType::compaction_start).at(0).data["reason"], "threshold");
  const auto compaction = std::get<Compaction>(compactions().at(0).body);
  EXPECT_NE(compaction.summary.find("HISTORY"), std::string::npos);
  EXPECT_NE(compaction.summary.find("split turn"), std::string::npos);
  EXPECT_NE(compaction.summary.find("PREFIX"), std::string::npos);

  // The step after: the summary, then the kept part of the turn (the tool
  // call and its result), and nothing older.
  const auto last = faux_->requests().back();
  ASSERT_EQ(last.messages.size(), 3u);
  EXPECT_NE(user_text(last.messages[0]).find("HISTORY"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<AssistantMessage>(last.messages[1]));
  EXPECT_TRUE(std::holds_alternative<ToolResultMessage>(last.messages[2]));
}

TEST_F(CompactionOpTest, AnOverflowCompactsAndRetriesTheStepOnceWithoutLoggingTheFailure) {
  // Keeping 3 tokens keeps just the new prompt: no split turn, one summary request.
  auto& h = harness(CompactionSettings{.keep_recent_tokens = 3});
  converse(h, 200);
  const std::size_t before = records().size();
  FauxResponse overflow = FauxResponse::failure("prompt is too long", false);
  overflow.context_overflow = true;
  faux_->push(overflow);
  faux_->push(FauxResponse::text("SUMMARY"));
  faux_->push(FauxResponse::text("fits now"));
  RunResult result = h.main().prompt("big question");
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(types_from(before),
            (Types{"operation_started", "message:user", "generation_started:step", "generation_started:compaction",
                   "compaction", "generation_started:step", "message:assistant", "operation_finished:completed"}));
  EXPECT_EQ(events_of(EventType::compaction_start).at(0).data["reason"], "overflow");

  // A second overflow in the same run is not compacted again: the run fails.
  faux_->push(overflow);
  faux_->push(FauxResponse::text("SUMMARY 2"));
  faux_->push(overflow);
  RunResult again = h.main().prompt("even bigger");
  EXPECT_EQ(again.outcome, Outcome::failed);
  EXPECT_EQ(again.error->code, "context_overflow");
}

TEST_F(CompactionOpTest, RefusalsAndFailuresAreReportedAndChangeNoContext) {
  auto& h = harness(CompactionSettings{});
  converse(h, 10);
  const auto context_before = session_->build_context("main");
  RunResult nothing = h.main().compact();
  EXPECT_EQ(nothing.outcome, Outcome::failed);
  EXPECT_EQ(nothing.error->code, "nothing_to_compact");
  const Event end = events_of(EventType::compaction_end).back();
  EXPECT_EQ(end.data["outcome"], "failed");
  EXPECT_EQ(end.data["error"]["code"], "nothing_to_compact");
  EXPECT_TRUE(compactions().empty());
  EXPECT_EQ(session_->build_context("main")->messages.size(), context_before->messages.size());

  // The summary request fails for good: failed, with the cause, no entry.
  auto& small = harness(CompactionSettings{.keep_recent_tokens = 1});
  faux_->push(FauxResponse::failure("invalid request", false));
  RunResult failed = small.main().compact();
  EXPECT_EQ(failed.outcome, Outcome::failed);
  EXPECT_EQ(failed.error->code, "compaction_failed");
  EXPECT_NE(failed.error->message.find("invalid request"), std::string::npos);
  EXPECT_TRUE(compactions().empty());
  // The ref is idle again and takes a prompt.
  faux_->push(FauxResponse::text("still here"));
  EXPECT_TRUE(small.main().prompt("hello?").ok());
}

TEST_F(CompactionOpTest, BeforeCompactionMayCancelOrSupplyTheSummary) {
  auto& h = harness(CompactionSettings{.keep_recent_tokens = 20});
  converse(h, 200);
  bool cancel = true;
  Subscription hook = h.hooks().before_compaction(
      [&](const HookContext&, const BeforeCompactionEvent& e) -> std::optional<BeforeCompactionResult> {
        EXPECT_EQ(e.reason, CompactionReason::manual);
        EXPECT_FALSE(e.preparation.messages_to_summarize.empty());
        if (cancel) return BeforeCompactionResult{.cancel = true};
        return BeforeCompactionResult{.compaction = SuppliedSummary{.summary = "FROM THE HOOK", .details = Json{{"x", 1}}}};
      });
  const std::size_t requests = faux_->requests().size();
  RunResult cancelled = h.main().compact();
  EXPECT_EQ(cancelled.outcome, Outcome::cancelled);
  EXPECT_TRUE(compactions().empty());
  EXPECT_EQ(events_of(EventType::compaction_end).back().data["outcome"], "cancelled");

  cancel = false;
  RunResult supplied = h.main().compact();
  ASSERT_TRUE(supplied.ok());
  EXPECT_EQ(faux_->requests().size(), requests);  // no model request at all
  const auto& body = std::get<Compaction>(supplied.entry->body);
  EXPECT_EQ(body.summary, "FROM THE HOOK");
  EXPECT_TRUE(body.from_hook.value_or(false));
  EXPECT_EQ(events_of(EventType::compaction_end).back().data["fromHook"], true);
  for (const auto& record : records()) {
    if (const auto* hr = std::get_if<HarnessRecord>(&record.body)) {
      EXPECT_FALSE(std::holds_alternative<GenerationStarted>(hr->body) &&
                   std::get<GenerationStarted>(hr->body).purpose == GenerationPurpose::compaction);
    }
  }
}

TEST_F(CompactionOpTest, RepeatedCompactionsBuildOnThePreviousSummary) {
  auto& h = harness(CompactionSettings{.keep_recent_tokens = 60});
  for (int round = 1; round <= 3; ++round) {
    converse(h, 200);
    faux_->push(FauxResponse::text("SUMMARY-" + std::to_string(round)));
    ASSERT_TRUE(h.main().compact().ok()) << round;
    const std::string prompt = user_text(faux_->requests().back().messages.at(0));
    if (round == 1) {
      EXPECT_EQ(prompt.find("<previous-summary>"), std::string::npos);
    } else {
      EXPECT_NE(prompt.find("<previous-summary>\nSUMMARY-" + std::to_string(round - 1)), std::string::npos) << round;
    }
  }
  EXPECT_EQ(compactions().size(), 3u);
  auto context = session_->build_context("main");
  ASSERT_TRUE(context);
  const auto* summary = std::get_if<CompactionSummaryMessage>(&context->messages.at(0));
  ASSERT_TRUE(summary);
  EXPECT_TRUE(summary->summary.starts_with("SUMMARY-3"));
  // Every original entry is still in the log: six prompts, six answers.
  int messages = 0;
  for (const auto& record : records()) {
    if (const auto* t = std::get_if<TreeEntry>(&record.body)) messages += std::holds_alternative<MessageBody>(t->body);
  }
  EXPECT_EQ(messages, 12);
}

// ---- crash points ------------------------------------------------------------

// Every k: the store stops after k appends of a manual compaction; reopen,
// resume, and the log ends as the crash-free one does: one compaction entry,
// the same context, every operation finished once.
TEST_F(CompactionOpTest, EveryCrashPointOfAManualCompactionResumesToTheSameEnd) {
  auto script = [](const LlmContext& context) {
    return is_summary_request(context) ? FauxResponse::text("THE SUMMARY") : FauxResponse::text(std::string(200, 'a'));
  };
  auto run_once = [&](std::int64_t crash_at) {
    faux_ = std::make_shared<FauxProvider>(script);
    store_ = make_memory_store(StoreOptions{.sync = SyncPolicy::none});
    {
      auto session = store_->create(CreateOptions{.cwd = "/work"});
      EXPECT_TRUE(session);
      session_ = *session;  // the only holder: reopen() drops it
    }
    session_id_ = session_->id();
    auto& h = harness(CompactionSettings{.keep_recent_tokens = 60});
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(h.main().prompt(std::string(200, 'q')).ok());
    if (crash_at >= 0) memory_store_fail_after(*store_, crash_at);
    RunResult result = h.main().compact();
    if (result.outcome == Outcome::faulted) {
      reopen();
      auto& again = harness(CompactionSettings{.keep_recent_tokens = 60});
      if (result.run_id.empty()) {
        EXPECT_TRUE(suspended_.empty());
        EXPECT_TRUE(again.main().compact().ok());  // never accepted: the caller asks again
      } else {
        EXPECT_EQ(suspended_.size(), 1u);
        EXPECT_EQ(suspended_.at(0).kind, OperationKind::compaction);
        RunResult resumed = again.main().resume();
        EXPECT_TRUE(resumed.ok()) << (resumed.error ? resumed.error->message : "");
        EXPECT_TRUE(resumed.entry);
        EXPECT_TRUE(again.main().resume().outcome == Outcome::rejected);  // nothing left to resume
      }
    } else {
      EXPECT_TRUE(result.ok());
    }
    std::vector<std::string> context;
    const auto built = session_->build_context("main");
    EXPECT_TRUE(built);
    for (const auto& m : built->messages) context.emplace_back(role_of(m));
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
    EXPECT_EQ(compactions().size(), 1u) << "crash at " << crash_at;
    return context;
  };
  const auto reference = run_once(-1);
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(reference.front(), "compactionSummary");
  // operation_started, generation_started, compaction, operation_finished.
  for (std::int64_t k = 0; k <= 4; ++k) EXPECT_EQ(run_once(k), reference) << "crash at " << k;
}

}  // namespace
}  // namespace cairn::testing
