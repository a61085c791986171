// The spans of a run: the tree the design document draws (run → step →
// generation → provider request, tool; checkpoints, hooks, compaction,
// appends), their attributes and status, what they leave out unless
// content is captured, and the resumed run's tree after a crash.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "cairn/trace.hpp"
#include "cairn/trace_sinks.hpp"
#include "harness/harness_support.hpp"
#include "llm/provider_test_support.hpp"
#include "support/http_test_server.hpp"
#include "support/test_support.hpp"
#include "trace/span_collector.hpp"

namespace cairn::testing {
namespace {

constexpr std::string_view kKey = "sk-trace-test-0123456789abcdef";

// A collector: answers every export 200 and keeps what it received.
class OtlpReceiver {
 public:
  OtlpReceiver()
      : server_([this](const ReceivedRequest& request) {
          {
            std::lock_guard lock(mu_);
            std::string raw = request.method + " " + request.target + "\n";
            for (const auto& [name, value] : request.headers) raw += name + ": " + value + "\n";
            raw_ += raw + request.body + "\n";
            if (request.target == "/v1/traces") bodies_.push_back(Json::parse(request.body));
          }
          return ScriptedResponse{.headers = {{"Content-Type", "application/json"}}, .body = {{.bytes = "{}"}},
                                  .framing = ScriptedResponse::Framing::content_length};
        }) {}
  trace::OtlpOptions options() const {
    return trace::OtlpOptions{.traces_url = server_.url("/v1/traces"), .metrics_url = server_.url("/v1/metrics"),
                              .max_queue = 100000};
  }
  std::vector<Json> bodies() const {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  std::string all_bytes() const {
    std::lock_guard lock(mu_);
    return raw_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Json> bodies_;
  std::string raw_;
  HttpTestServer server_;  // last: destroyed first, while what it writes to lives
};

class SpanTreeTest : public HarnessTest {
 protected:
  ~SpanTreeTest() override { trace::set_capture_content(false); }

  // A model whose context overflows once on demand, served by a script: a
  // summary request is answered "SUMMARY", a step takes the next of `steps_`.
  AgentHarness& scripted_harness() {
    script_ = std::make_shared<FauxProvider>([this](const LlmContext& context) {
      if (is_summary_request(context)) return FauxResponse::text("SUMMARY");
      std::lock_guard lock(mu_);
      if (steps_.empty()) return FauxResponse::text("nothing scripted");
      FauxResponse next = steps_.front();
      steps_.erase(steps_.begin());
      return next;
    });
    HarnessOptions opts = options();
    opts.models = Models{};
    opts.models.add(FauxProvider::model(), script_);
    opts.compaction = CompactionSettings{.keep_recent_tokens = 3};
    opts.secrets = Secrets({std::string(kKey)});
    listener_.reset();
    harness_.reset();
    auto created = AgentHarness::create(std::move(opts));
    EXPECT_TRUE(created.has_value());
    if (!created) std::abort();
    harness_.emplace(std::move(created->harness));
    suspended_ = std::move(created->suspended);
    return *harness_;
  }

  void script(std::vector<FauxResponse> steps) {
    std::lock_guard lock(mu_);
    steps_ = std::move(steps);
  }

  // History for the compaction to shed, then the scenario: a retry, two
  // tool steps and an overflow that compacts; the run's spans, collected.
  std::vector<trace::SpanEvent> traced_run(SpanCollector& collector) {
    auto& h = scripted_harness();
    for (int i = 0; i < 2; ++i) {
      script({FauxResponse::text(std::string(200, 'a'))});
      EXPECT_TRUE(h.main().prompt(std::string(200, 'q')).ok());
    }
    auto hook = h.hooks().before_tool([](const HookContext&, const BeforeToolEvent&) { return std::nullopt; });
    FauxResponse overflow = FauxResponse::failure("prompt is too long", false);
    overflow.context_overflow = true;
    FauxResponse answer = FauxResponse::text(fmt::format("the final answer, with the key {}", kKey));
    answer.usage.input = 120;
    answer.usage.output = 30;
    script({overflow, FauxResponse::failure("overloaded", true),
            FauxResponse::tool_call("c1", "echo", args("e1", fmt::format("tool-argument-text {}", kKey))),
            FauxResponse::tool_call("c2", "echo", args("e2", "tool-argument-text two")), answer});
    collector.start();
    RunResult result = h.main().prompt("prompt-text-of-the-user");
    collector.stop();
    EXPECT_TRUE(result.ok()) << (result.error ? result.error->message : "");
    run_id_ = result.run_id;
    return collector.events();
  }

  std::shared_ptr<FauxProvider> script_;
  std::mutex mu_;
  std::vector<FauxResponse> steps_;
  std::string run_id_;
};

TEST_F(SpanTreeTest, ARunWithToolsARetryAndACompactionMakesTheDesignsTree) {
  SpanCollector collector;
  const auto events = traced_run(collector);
  const SpanForest forest = SpanForest::from_events(events);
  ASSERT_TRUE(forest.problems.empty()) << forest.problems.front();

  // Appends and checkpoints are everywhere: checked apart, below. Attempt
  // numbers are generation_started's: the summary's counts on from the
  // step's overflowed attempt, in the log's count of the cycle.
  EXPECT_EQ(forest.render({"cairn.session.append", "cairn.harness.checkpoint"}),
            "cairn.harness.run\n"
            "  cairn.harness.step\n"
            "    cairn.harness.generation attempt=1 purpose=step again=true\n"
            "      cairn.llm.request ERROR context_overflow\n"
            "      cairn.harness.compaction reason=overflow\n"
            "        cairn.harness.generation attempt=2 purpose=compaction\n"
            "          cairn.llm.request\n"
            "    cairn.harness.generation attempt=1 purpose=step ERROR provider_error\n"
            "      cairn.llm.request ERROR provider_error\n"
            "    cairn.harness.generation attempt=2 purpose=step\n"
            "      cairn.llm.request\n"
            "    cairn.harness.hook hook=before_tool\n"
            "    cairn.harness.tool gen_ai.tool.name=echo\n"
            "  cairn.harness.step\n"
            "    cairn.harness.generation attempt=1 purpose=step\n"
            "      cairn.llm.request\n"
            "    cairn.harness.hook hook=before_tool\n"
            "    cairn.harness.tool gen_ai.tool.name=echo\n"
            "  cairn.harness.step\n"
            "    cairn.harness.generation attempt=1 purpose=step\n"
            "      cairn.llm.request\n");

  const auto& run = forest.only("cairn.harness.run");
  EXPECT_TRUE(run.parent.empty());
  EXPECT_EQ(run.attributes.at("runId"), run_id_);
  EXPECT_EQ(run.attributes.at("sessionId"), session_id_);
  EXPECT_EQ(run.attributes.at("gen_ai.operation.name"), "invoke_agent");
  EXPECT_EQ(run.attributes.at("gen_ai.conversation.id"), session_id_);
  EXPECT_EQ(run.attributes.at("recovery"), false);
  EXPECT_EQ(run.attributes.at("outcome"), "ok");
  EXPECT_FALSE(run.error);

  const auto requests = forest.named("cairn.llm.request");
  const auto& last = *requests.back();
  EXPECT_EQ(last.attributes.at("gen_ai.operation.name"), "chat");
  EXPECT_EQ(last.attributes.at("gen_ai.provider.name"), "faux");
  EXPECT_EQ(last.attributes.at("gen_ai.request.model"), "faux-1");
  EXPECT_EQ(last.attributes.at("gen_ai.usage.input_tokens"), 120);
  EXPECT_EQ(last.attributes.at("gen_ai.usage.output_tokens"), 30);
  EXPECT_EQ(last.attributes.at("gen_ai.response.finish_reasons"), Json::array({"stop"}));

  const auto tools = forest.named("cairn.harness.tool");
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0]->attributes.at("gen_ai.operation.name"), "execute_tool");
  EXPECT_EQ(tools[0]->attributes.at("gen_ai.tool.call.id"), "c1");
  EXPECT_EQ(tools[0]->attributes.at("toolCallId"), "c1");
  EXPECT_EQ(tools[0]->attributes.at("replay"), "safe");
  EXPECT_EQ(tools[0]->attributes.at("isError"), false);

  // Every record the run appended has its append span: operation_started
  // at acceptance, before the run's span opens (beside it, in the caller's
  // trace); all the others inside the run.
  const auto appends = forest.named("cairn.session.append");
  // (The run's records are those from its operation_started on.)
  std::set<std::int64_t> run_seqs;
  for (const auto& record : records()) {
    const auto* harness_record = std::get_if<HarnessRecord>(&record.body);
    if (!run_seqs.empty() || (harness_record && harness_record->id == run_id_)) run_seqs.insert(record.seq);
  }
  std::set<std::int64_t> appended;
  for (const auto* append : appends) {
    const bool accepted = append->attributes.at("entryType") == "operation_started";
    EXPECT_EQ(forest.descends_from(*append, run), !accepted) << append->attributes.dump();
    appended.insert(append->attributes.at("seq").get<std::int64_t>());
  }
  EXPECT_EQ(appended, run_seqs);
  EXPECT_GE(forest.named("cairn.harness.checkpoint").size(), 3u);

  // No content: neither the prompt, the tool's arguments nor the answer.
  for (const auto& event : events) {
    const std::string bytes = trace::to_json(event).dump();
    EXPECT_EQ(bytes.find("prompt-text-of-the-user"), std::string::npos) << bytes;
    EXPECT_EQ(bytes.find("tool-argument-text"), std::string::npos) << bytes;
    EXPECT_EQ(bytes.find("the final answer"), std::string::npos) << bytes;
    EXPECT_EQ(bytes.find(kKey), std::string::npos) << bytes;
  }
}

// The same run through the OTLP exporter: the collector receives the same
// tree, with the same attributes and statuses, and no content.
TEST_F(SpanTreeTest, ACollectorReceivesTheSameTreeOverOtlp) {
  no_proxy_for_the_test_server();
  OtlpReceiver receiver;
  SpanCollector collector;
  {
    trace::OtlpExporter exporter(receiver.options());
    (void)traced_run(collector);
    ASSERT_TRUE(exporter.flush(std::chrono::seconds(10)));
    EXPECT_EQ(exporter.stats().dropped, 0u);
  }
  const SpanForest direct = SpanForest::from_events(collector.events());
  // (The collector also got the spans of the exchanges before: the history.)
  const SpanForest received = SpanForest::from_otlp(receiver.bodies(), direct.trace_ids());
  ASSERT_TRUE(received.problems.empty()) << received.problems.front();
  EXPECT_EQ(received.render({}), direct.render({}));
  ASSERT_EQ(received.spans.size(), direct.spans.size());
  for (const auto& span : direct.spans) {
    const auto found = std::find_if(received.spans.begin(), received.spans.end(),
                                    [&](const TestSpan& other) { return other.id == span.id; });
    ASSERT_NE(found, received.spans.end()) << span.name;
    EXPECT_EQ(found->parent, span.parent) << span.name;
    EXPECT_EQ(found->attributes, span.attributes) << span.name;
    EXPECT_EQ(found->error.has_value(), span.error.has_value()) << span.name;
  }
  const std::string bytes = receiver.all_bytes();
  EXPECT_EQ(bytes.find("prompt-text-of-the-user"), std::string::npos);
  EXPECT_EQ(bytes.find("tool-argument-text"), std::string::npos);
  EXPECT_EQ(bytes.find("the final answer"), std::string::npos);
  EXPECT_EQ(bytes.find(kKey), std::string::npos);
}

TEST_F(SpanTreeTest, CapturedContentReachesTheCollectorAndTheKeyNever) {
  no_proxy_for_the_test_server();
  trace::set_capture_content(true);
  OtlpReceiver receiver;
  SpanCollector collector;
  {
    trace::OtlpExporter exporter(receiver.options());
    (void)traced_run(collector);
    ASSERT_TRUE(exporter.flush(std::chrono::seconds(10)));
  }
  const std::string bytes = receiver.all_bytes();  // every byte received: headers, bodies, metrics
  EXPECT_NE(bytes.find("prompt-text-of-the-user"), std::string::npos);
  EXPECT_NE(bytes.find("tool-argument-text two"), std::string::npos);
  EXPECT_NE(bytes.find("the final answer"), std::string::npos);
  EXPECT_EQ(bytes.find(kKey), std::string::npos);
}

TEST_F(SpanTreeTest, CapturedContentIsThereAndTheKeyIsNot) {
  trace::set_capture_content(true);
  SpanCollector collector;
  const auto events = traced_run(collector);
  std::string all;
  for (const auto& event : events) all += trace::to_json(event).dump() + "\n";
  EXPECT_NE(all.find("prompt-text-of-the-user"), std::string::npos);
  EXPECT_NE(all.find("tool-argument-text two"), std::string::npos);
  EXPECT_NE(all.find("the final answer"), std::string::npos);
  EXPECT_NE(all.find("gen_ai.input.messages"), std::string::npos);
  EXPECT_NE(all.find("gen_ai.tool.call.result"), std::string::npos);
  EXPECT_EQ(all.find(kKey), std::string::npos);
  EXPECT_NE(all.find(Secrets::kMark), std::string::npos);  // it was there, and redacted
}

TEST_F(SpanTreeTest, ARunCrashedMidToolResumesUnderAResumeSpan) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::tool_call("call-1", "effect", args("x1")));
  memory_store_fail_after(*store_, 5);  // dies right after tool_started
  EXPECT_EQ(harness.main().prompt("go").outcome, Outcome::faulted);
  reopen();
  auto& again = make_harness();
  faux_->push(FauxResponse::text("done"));
  SpanCollector collector;
  collector.start();
  ASSERT_TRUE(again.main().resume().ok());
  collector.stop();
  const SpanForest forest = SpanForest::from_events(collector.events());
  ASSERT_TRUE(forest.problems.empty()) << forest.problems.front();
  // The replay-never call is answered "interrupted" without running, so
  // it has no tool span; the run goes on to the next step.
  EXPECT_EQ(forest.render({"cairn.session.append", "cairn.harness.checkpoint"}),
            "cairn.harness.resume recovery=true\n"
            "  cairn.harness.run recovery=true\n"
            "    cairn.harness.step\n"
            "      cairn.harness.generation attempt=1 purpose=step\n"
            "        cairn.llm.request\n");
  const auto& resume = forest.only("cairn.harness.resume");
  EXPECT_TRUE(resume.parent.empty());  // nothing of the dead process
  EXPECT_EQ(resume.attributes.at("outcome"), "ok");
  EXPECT_EQ(effects_->count("effect", "x1"), 1);
}

TEST_F(SpanTreeTest, ManualCompactionAndNavigationAreOperationsOfTheirOwn) {
  auto& h = scripted_harness();
  for (int i = 0; i < 3; ++i) {
    script({FauxResponse::text(std::string(200, 'a'))});
    ASSERT_TRUE(h.main().prompt(std::string(200, 'q')).ok());
  }
  auto context = session_->build_context("main");
  ASSERT_TRUE(context);
  const std::string target = context->entry_ids.at(1);
  SpanCollector collector;
  collector.start();
  ASSERT_TRUE(h.main().compact().ok());
  ASSERT_TRUE(h.main().navigate_tree(target, NavigateOptions{.summarize = true}).ok());
  collector.stop();
  const SpanForest forest = SpanForest::from_events(collector.events());
  ASSERT_TRUE(forest.problems.empty()) << forest.problems.front();
  EXPECT_EQ(forest.render({"cairn.session.append"}),
            "cairn.harness.compaction\n"
            "  cairn.harness.generation attempt=1 purpose=compaction\n"
            "    cairn.llm.request\n"  // the history's summary
            "    cairn.llm.request\n"  // the split turn's prefix: one generation, two requests
            "cairn.harness.navigation\n"
            "  cairn.harness.generation attempt=1 purpose=branch_summary\n"
            "    cairn.llm.request\n");
  EXPECT_EQ(forest.named("cairn.harness.navigation").front()->attributes.at("outcome"), "ok");
}

TEST_F(SpanTreeTest, AFailedRunIsAnErrorSpanAndTheCallerSeesAResultNotAnException) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::failure("bad request", false));
  SpanCollector collector;
  collector.start();
  RunResult result = harness.main().prompt("go");
  collector.stop();
  EXPECT_EQ(result.outcome, Outcome::failed);
  const SpanForest forest = SpanForest::from_events(collector.events());
  const auto& run = forest.only("cairn.harness.run");
  ASSERT_TRUE(run.error);
  EXPECT_EQ(run.error->name, "provider_error");
  EXPECT_EQ(run.attributes.at("outcome"), "failed");
  EXPECT_EQ(run.attributes.at("error.type"), "provider_error");
  EXPECT_TRUE(forest.named("cairn.llm.request").front()->error);
}

TEST_F(SpanTreeTest, EverySpanCarriesTheCallersUserContextOnEveryThread) {
  auto& harness = make_harness();
  // Two calls of a parallel tool: they run on worker threads.
  faux_->push(FauxResponse::tool_call("c1", "echo", args("e1")).then_tool_call("c2", "echo", args("e2")));
  faux_->push(FauxResponse::text("done"));
  SpanCollector collector;
  collector.start();
  RunResult result = trace::run_with_context(Json{{"userId", "alice"}}, [&] { return harness.main().prompt("go"); });
  collector.stop();
  ASSERT_TRUE(result.ok());
  const auto events = collector.events();
  ASSERT_FALSE(events.empty());
  for (const auto& event : events) {
    ASSERT_TRUE(event.context) << event.name;
    EXPECT_EQ(*event.context, (Json{{"userId", "alice"}})) << event.name;
  }
  const SpanForest forest = SpanForest::from_events(events);
  EXPECT_EQ(forest.named("cairn.harness.tool").size(), 2u);
  for (const auto* tool : forest.named("cairn.harness.tool")) {
    EXPECT_EQ(forest.parent_of(*tool).name, "cairn.harness.step");
  }
  // Outside the scope the context is gone.
  EXPECT_FALSE(trace::current().user);
}

TEST_F(SpanTreeTest, NobodyListeningMeansNoSpans) {
  auto& harness = make_harness();
  faux_->push(FauxResponse::text("done"));
  ASSERT_FALSE(trace::has_subscribers());
  std::optional<std::string> parent;
  {
    trace::Span span("outside");
    EXPECT_FALSE(span);
    parent = trace::traceparent();
  }
  EXPECT_EQ(parent, "");
  ASSERT_TRUE(harness.main().prompt("go").ok());
}

TEST(TraceContext, TraceparentRoundTripsAndMalformedHeadersAreRefused) {
  SpanCollector collector;
  collector.start();
  const auto parent = trace::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(parent);
  EXPECT_TRUE(parent->remote);
  {
    trace::ContextScope scope(*parent);
    trace::Span span("child");
    const std::string header = trace::traceparent();
    EXPECT_TRUE(header.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
    EXPECT_EQ(header.size(), 55u);
    EXPECT_EQ(trace::parse_traceparent(header)->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  }
  collector.stop();
  const auto events = collector.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].parent_span_id, "00f067aa0ba902b7");
  EXPECT_TRUE(events[0].remote_parent);
  for (const char* bad : {"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                          "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                          "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                          "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
                          "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}) {
    EXPECT_FALSE(trace::parse_traceparent(bad)) << bad;
  }
  // A later version may add fields.
  EXPECT_TRUE(trace::parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"));
}

TEST(TraceListeners, AnUnsubscribedListenerIsNeverCalledAgainAndAThrowingOneHarmsNothing) {
  std::atomic<int> calls{0};
  {
    auto throwing = trace::subscribe([](const trace::SpanEvent&) { throw std::runtime_error("listener bug"); });
    auto counting = trace::subscribe([&](const trace::SpanEvent&) { ++calls; });
    EXPECT_TRUE(trace::has_subscribers());
    trace::Span span("one");
    EXPECT_TRUE(span);
  }
  EXPECT_EQ(calls.load(), 2);  // its start and end, despite the other listener throwing
  EXPECT_FALSE(trace::has_subscribers());
  { trace::Span span("two"); }
  EXPECT_EQ(calls.load(), 2);
}

}  // namespace
}  // namespace cairn::testing
