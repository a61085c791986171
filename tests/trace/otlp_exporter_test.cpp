// The OTLP/HTTP exporter against a collector played by HttpTestServer:
// what arrives (spans, resource, headers, metrics), retries and giving up,
// and that neither a dead, a silent nor a failing collector slows the
// threads that make spans or holds up the exporter's destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/trace.hpp"
#include "cairn/trace_sinks.hpp"
#include "support/http_test_server.hpp"
#include "trace/otlp_spans.hpp"

namespace cairn::trace {
namespace {

using namespace std::chrono_literals;
using cairn::testing::HttpTestServer;
using cairn::testing::ReceivedRequest;
using cairn::testing::ScriptedResponse;
using OtlpTestClock = std::chrono::steady_clock;

ScriptedResponse otlp_answer(int status, std::string reason = "OK") {
  ScriptedResponse response;
  response.status = status;
  response.reason = std::move(reason);
  response.headers = {{"Content-Type", "application/json"}};
  response.body = {{.bytes = "{}"}};
  response.framing = ScriptedResponse::Framing::content_length;
  return response;
}

// What the exporter reported, kept for the assertions.
struct OtlpReports {
  std::mutex mu;
  std::vector<std::string> messages;
  Report sink() {
    return [this](const std::string& message) {
      std::lock_guard lock(mu);
      messages.push_back(message);
    };
  }
  std::vector<std::string> all() {
    std::lock_guard lock(mu);
    return messages;
  }
};

OtlpOptions otlp_test_options(const HttpTestServer& server, OtlpReports& reports) {
  OtlpOptions options;
  options.traces_url = server.url("/v1/traces");
  options.schedule_delay = 20ms;
  options.export_timeout = 2000ms;
  options.flush_timeout = 2000ms;
  options.metrics_interval = std::chrono::hours(1);  // metrics go with the flushes only
  options.retry_backoff = 20ms;
  options.report = reports.sink();
  return options;
}

std::vector<ReceivedRequest> otlp_requests_to(const HttpTestServer& server, const std::string& target) {
  std::vector<ReceivedRequest> out;
  for (const ReceivedRequest& request : server.requests()) {
    if (request.target == target) out.push_back(request);
  }
  return out;
}

// Every span of every trace request, in the order they arrived.
std::vector<Json> otlp_received_spans(const HttpTestServer& server) {
  std::vector<Json> spans;
  for (const ReceivedRequest& request : otlp_requests_to(server, "/v1/traces")) {
    const Json body = Json::parse(request.body);
    for (const Json& span : body["resourceSpans"][0]["scopeSpans"][0]["spans"]) spans.push_back(span);
  }
  return spans;
}

const Json* otlp_find(const std::vector<Json>& items, const std::string& field, const std::string& value) {
  for (const Json& item : items) {
    if (item.value(field, std::string()) == value) return &item;
  }
  return nullptr;
}

// The AnyValue of attribute `key` in a KeyValue list; null if absent.
Json otlp_attribute(const Json& attributes, const std::string& key) {
  for (const Json& attribute : attributes) {
    if (attribute["key"] == key) return attribute["value"];
  }
  return nullptr;
}

void otlp_emit_llm_request(int input_tokens, int output_tokens) {
  Span llm("cairn.llm.request", [] {
    return Json{{"gen_ai.operation.name", "chat"}, {"gen_ai.provider.name", "openai"}, {"gen_ai.request.model", "gpt-x"}};
  });
  llm.set("gen_ai.response.model", "gpt-x-0613");
  llm.set("gen_ai.usage.input_tokens", input_tokens);
  llm.set("gen_ai.usage.output_tokens", output_tokens);
}

void otlp_emit_tool(const std::string& name, bool failed) {
  Span tool("cairn.harness.tool", [&] { return Json{{"gen_ai.tool.name", name}}; });
  if (failed) tool.fail("tool_error", "exit status 1");
}

void otlp_expect_stats(const OtlpExporter& exporter, std::uint64_t exported, std::uint64_t dropped,
                       std::uint64_t failed_requests) {
  const OtlpExporter::Stats stats = exporter.stats();
  EXPECT_EQ(stats.exported, exported);
  EXPECT_EQ(stats.dropped, dropped);
  EXPECT_EQ(stats.failed_requests, failed_requests);
}

TEST(OtlpExporter, SpansArriveWithNamesParentsKindsAttributesStatusResourceAndHeaders) {
  HttpTestServer server([](const ReceivedRequest&) { return otlp_answer(200); });
  OtlpReports reports;
  OtlpOptions options = otlp_test_options(server, reports);
  options.service_name = "svc-test";
  options.resource_attributes = {{"deployment.environment", "test"}};
  options.headers = {{"Authorization", "Bearer secret-token"}, {"X-Both", "common"}};
  options.traces_headers = {{"x-both", "traces"}};
  OtlpExporter exporter(options);

  run_with_context(Json{{"user", "u1"}, {"n", 3}, {"obj", {{"a", 1}}}}, [] {
    Span llm("cairn.llm.request", [] { return Json{{"gen_ai.request.model", "gpt-x"}}; });
    {
      Span tool("cairn.harness.tool", [] {
        return Json{{"gen_ai.tool.name", "bash"}, {"list", {1, 2}}, {"flag", true}, {"ratio", 0.5}};
      });
      tool.fail("tool_error", "exit status 1");
    }
    llm.set("gen_ai.usage.input_tokens", 100);
  });
  ASSERT_TRUE(exporter.flush(2s));

  const std::vector<Json> spans = otlp_received_spans(server);
  ASSERT_EQ(spans.size(), 2u);
  const Json* llm = otlp_find(spans, "name", "cairn.llm.request");
  const Json* tool = otlp_find(spans, "name", "cairn.harness.tool");
  ASSERT_TRUE(llm && tool);
  EXPECT_EQ((*llm)["kind"], 3);
  EXPECT_EQ((*tool)["kind"], 1);
  EXPECT_EQ((*llm)["traceId"].get<std::string>().size(), 32u);
  EXPECT_EQ((*llm)["spanId"].get<std::string>().size(), 16u);
  EXPECT_FALSE(llm->contains("parentSpanId"));
  EXPECT_EQ((*tool)["parentSpanId"], (*llm)["spanId"]);
  EXPECT_EQ((*tool)["traceId"], (*llm)["traceId"]);
  for (const Json* span : {llm, tool}) {
    const auto start = std::stoll((*span)["startTimeUnixNano"].get<std::string>());
    const auto end = std::stoll((*span)["endTimeUnixNano"].get<std::string>());
    EXPECT_GT(start, 1'600'000'000'000'000'000LL);
    EXPECT_LE(start, end);
  }

  const Json& tool_attributes = (*tool)["attributes"];
  EXPECT_EQ(otlp_attribute(tool_attributes, "gen_ai.tool.name"), Json({{"stringValue", "bash"}}));
  EXPECT_EQ(otlp_attribute(tool_attributes, "flag"), Json({{"boolValue", true}}));
  EXPECT_EQ(otlp_attribute(tool_attributes, "ratio"), Json({{"doubleValue", 0.5}}));
  EXPECT_EQ(otlp_attribute(tool_attributes, "list"),
            Json::parse(R"({"arrayValue":{"values":[{"intValue":"1"},{"intValue":"2"}]}})"));
  EXPECT_EQ(otlp_attribute(tool_attributes, "error.type"), Json({{"stringValue", "tool_error"}}));
  EXPECT_EQ(otlp_attribute(tool_attributes, "cairn.context.user"), Json({{"stringValue", "u1"}}));
  EXPECT_EQ(otlp_attribute(tool_attributes, "cairn.context.n"), Json({{"intValue", "3"}}));
  EXPECT_EQ(otlp_attribute(tool_attributes, "cairn.context.obj"), Json({{"stringValue", R"({"a":1})"}}));
  EXPECT_EQ((*tool)["status"], Json::parse(R"({"code":2,"message":"exit status 1"})"));

  // The start's attributes and the end's together.
  EXPECT_EQ(otlp_attribute((*llm)["attributes"], "gen_ai.request.model"), Json({{"stringValue", "gpt-x"}}));
  EXPECT_EQ(otlp_attribute((*llm)["attributes"], "gen_ai.usage.input_tokens"), Json({{"intValue", "100"}}));
  EXPECT_EQ((*llm)["status"]["code"], 0);

  const std::vector<ReceivedRequest> requests = otlp_requests_to(server, "/v1/traces");
  ASSERT_FALSE(requests.empty());
  const Json body = Json::parse(requests[0].body);
  const Json& resource = body["resourceSpans"][0]["resource"]["attributes"];
  EXPECT_EQ(otlp_attribute(resource, "service.name"), Json({{"stringValue", "svc-test"}}));
  EXPECT_EQ(otlp_attribute(resource, "deployment.environment"), Json({{"stringValue", "test"}}));
  EXPECT_EQ(otlp_attribute(resource, "telemetry.sdk.name"), Json({{"stringValue", "cairn"}}));
  EXPECT_EQ(otlp_attribute(resource, "telemetry.sdk.language"), Json({{"stringValue", "cpp"}}));
  EXPECT_FALSE(otlp_attribute(resource, "telemetry.sdk.version").is_null());
  EXPECT_EQ(body["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"], "cairn");

  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  EXPECT_EQ(requests[0].header("authorization"), "Bearer secret-token");
  EXPECT_EQ(requests[0].header("x-both"), "traces");  // the signal's header wins

  otlp_expect_stats(exporter, 2u, 0u, 0u);
  EXPECT_TRUE(reports.all().empty());
}

TEST(OtlpExporter, MetricsAreCumulativeHistogramsOfTheSpans) {
  HttpTestServer server([](const ReceivedRequest&) { return otlp_answer(200); });
  OtlpReports reports;
  OtlpOptions options = otlp_test_options(server, reports);
  options.metrics_url = server.url("/v1/metrics");
  options.metrics_headers = {{"X-Signal", "metrics"}};
  OtlpExporter exporter(options);

  otlp_emit_llm_request(100, 20);
  otlp_emit_llm_request(3000, 20);
  otlp_emit_tool("bash", true);
  otlp_emit_tool("read", false);
  { Span append("cairn.session.append"); }
  ASSERT_TRUE(exporter.flush(2s));

  auto last_metrics = [&] {
    const std::vector<ReceivedRequest> requests = otlp_requests_to(server, "/v1/metrics");
    EXPECT_FALSE(requests.empty());
    EXPECT_EQ(requests.back().header("x-signal"), "metrics");
    return Json::parse(requests.back().body)["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
  };
  const Json first = last_metrics();
  std::vector<Json> metrics(first.begin(), first.end());
  ASSERT_EQ(metrics.size(), 4u);

  const Json* tokens = otlp_find(metrics, "name", "gen_ai.client.token.usage");
  ASSERT_TRUE(tokens);
  EXPECT_EQ((*tokens)["unit"], "{token}");
  EXPECT_EQ((*tokens)["histogram"]["aggregationTemporality"], 2);
  const Json& token_points = (*tokens)["histogram"]["dataPoints"];
  ASSERT_EQ(token_points.size(), 2u);
  for (const Json& point : token_points) {
    const Json type = otlp_attribute(point["attributes"], "gen_ai.token.type");
    EXPECT_EQ(otlp_attribute(point["attributes"], "gen_ai.request.model"), Json({{"stringValue", "gpt-x"}}));
    EXPECT_EQ(otlp_attribute(point["attributes"], "gen_ai.response.model"), Json({{"stringValue", "gpt-x-0613"}}));
    EXPECT_EQ(otlp_attribute(point["attributes"], "gen_ai.provider.name"), Json({{"stringValue", "openai"}}));
    EXPECT_EQ(otlp_attribute(point["attributes"], "gen_ai.operation.name"), Json({{"stringValue", "chat"}}));
    EXPECT_EQ(point["count"], "2");
    EXPECT_EQ(point["explicitBounds"].size(), 14u);
    std::vector<std::string> buckets(15, "0");
    if (type == Json({{"stringValue", "input"}})) {
      EXPECT_EQ(point["sum"], 3100);
      EXPECT_EQ(point["min"], 100);
      EXPECT_EQ(point["max"], 3000);
      buckets[4] = "1";  // 100 is in (64, 256]
      buckets[6] = "1";  // 3000 in (1024, 4096]
    } else {
      EXPECT_EQ(type, Json({{"stringValue", "output"}}));
      EXPECT_EQ(point["sum"], 40);
      buckets[3] = "2";  // 20 in (16, 64]
    }
    EXPECT_EQ(point["bucketCounts"], Json(buckets));
  }

  const Json* duration = otlp_find(metrics, "name", "gen_ai.client.operation.duration");
  ASSERT_TRUE(duration);
  EXPECT_EQ((*duration)["unit"], "s");
  ASSERT_EQ((*duration)["histogram"]["dataPoints"].size(), 1u);
  const Json& duration_point = (*duration)["histogram"]["dataPoints"][0];
  EXPECT_EQ(duration_point["count"], "2");
  EXPECT_EQ(duration_point["bucketCounts"][0], "2");  // both well under 10 ms

  const Json* tools = otlp_find(metrics, "name", "cairn.tool.duration");
  ASSERT_TRUE(tools);
  const Json& tool_points = (*tools)["histogram"]["dataPoints"];
  ASSERT_EQ(tool_points.size(), 2u);
  int failed_points = 0;
  for (const Json& point : tool_points) {
    EXPECT_EQ(point["count"], "1");
    const Json error = otlp_attribute(point["attributes"], "error.type");
    if (!error.is_null()) {
      ++failed_points;
      EXPECT_EQ(error, Json({{"stringValue", "tool_error"}}));
      EXPECT_EQ(otlp_attribute(point["attributes"], "gen_ai.tool.name"), Json({{"stringValue", "bash"}}));
    }
  }
  EXPECT_EQ(failed_points, 1);

  const Json* appends = otlp_find(metrics, "name", "cairn.session.append.duration");
  ASSERT_TRUE(appends);
  EXPECT_EQ((*appends)["histogram"]["dataPoints"][0]["count"], "1");
  EXPECT_EQ((*appends)["histogram"]["dataPoints"][0]["explicitBounds"].size(), 13u);

  // Cumulative: the next export counts from the same start.
  otlp_emit_llm_request(1, 1);
  ASSERT_TRUE(exporter.flush(2s));
  const Json second = last_metrics();
  std::vector<Json> later(second.begin(), second.end());
  const Json* later_duration = otlp_find(later, "name", "gen_ai.client.operation.duration");
  ASSERT_TRUE(later_duration);
  const Json& later_point = (*later_duration)["histogram"]["dataPoints"][0];
  EXPECT_EQ(later_point["count"], "3");
  EXPECT_EQ(later_point["startTimeUnixNano"], duration_point["startTimeUnixNano"]);
  EXPECT_GE(std::stoll(later_point["timeUnixNano"].get<std::string>()),
            std::stoll(duration_point["timeUnixNano"].get<std::string>()));
  EXPECT_TRUE(reports.all().empty());
}

TEST(OtlpExporter, MetricsWithoutPointsAreNotSent) {
  HttpTestServer server([](const ReceivedRequest&) { return otlp_answer(200); });
  OtlpReports reports;
  OtlpOptions options = otlp_test_options(server, reports);
  options.metrics_url = server.url("/v1/metrics");
  OtlpExporter exporter(options);
  { Span other("cairn.harness.run"); }
  ASSERT_TRUE(exporter.flush(2s));
  EXPECT_EQ(otlp_received_spans(server).size(), 1u);
  EXPECT_TRUE(otlp_requests_to(server, "/v1/metrics").empty());
}

TEST(OtlpExporter, ABatchRefusedWith503TwiceIsRetriedAndDelivered) {
  std::atomic<int> answered{0};
  HttpTestServer server([&](const ReceivedRequest&) {
    if (answered.fetch_add(1) < 2) {
      ScriptedResponse busy = otlp_answer(503, "Service Unavailable");
      busy.headers.emplace_back("Retry-After", "0");
      return busy;
    }
    return otlp_answer(200);
  });
  OtlpReports reports;
  OtlpExporter exporter(otlp_test_options(server, reports));
  otlp_emit_tool("bash", false);
  ASSERT_TRUE(exporter.flush(2s));
  EXPECT_EQ(otlp_requests_to(server, "/v1/traces").size(), 3u);
  EXPECT_EQ(otlp_received_spans(server).size(), 3u);  // the same span, three times
  otlp_expect_stats(exporter, 1u, 0u, 2u);
  EXPECT_TRUE(reports.all().empty());
}

TEST(OtlpExporter, ABatchRefusedWith400IsGivenUpCountedAndReportedOnce) {
  HttpTestServer server([](const ReceivedRequest&) { return otlp_answer(400, "Bad Request"); });
  OtlpReports reports;
  {
    OtlpOptions options = otlp_test_options(server, reports);
    options.traces_url = server.url("/v1/traces?api-key=query-secret");
    options.headers = {{"Authorization", "Bearer header-secret"}};
    OtlpExporter exporter(options);
    for (int i = 0; i < 3; ++i) otlp_emit_tool("secret-tool-name", false);
    EXPECT_FALSE(exporter.flush(2s));
    EXPECT_EQ(server.requests().size(), 1u);  // not retried
    otlp_emit_tool("secret-tool-name", false);
    otlp_emit_tool("secret-tool-name", false);
    EXPECT_FALSE(exporter.flush(2s));
    otlp_expect_stats(exporter, 0u, 5u, 2u);

    const std::vector<std::string> messages = reports.all();
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_NE(messages[0].find("400"), std::string::npos) << messages[0];
    EXPECT_NE(messages[0].find(server.url("/v1/traces")), std::string::npos) << messages[0];
  }
  const std::vector<std::string> messages = reports.all();
  ASSERT_EQ(messages.size(), 2u);  // and the destructor's total
  EXPECT_NE(messages[1].find("5 spans"), std::string::npos) << messages[1];
  for (const std::string& message : messages) {
    EXPECT_EQ(message.find("query-secret"), std::string::npos) << message;
    EXPECT_EQ(message.find("header-secret"), std::string::npos) << message;
    EXPECT_EQ(message.find("secret-tool-name"), std::string::npos) << message;
  }
}

TEST(OtlpExporter, SpansAPartialSuccessRejectsAreCountedAsDropped) {
  HttpTestServer server([](const ReceivedRequest&) {
    ScriptedResponse partial = otlp_answer(200);
    partial.body = {{.bytes = R"({"partialSuccess":{"rejectedSpans":"1","errorMessage":"span too large"}})"}};
    return partial;
  });
  OtlpReports reports;
  OtlpExporter exporter(otlp_test_options(server, reports));
  otlp_emit_tool("bash", false);
  otlp_emit_tool("read", false);
  EXPECT_FALSE(exporter.flush(2s));
  otlp_expect_stats(exporter, 1u, 1u, 0u);
  const std::vector<std::string> messages = reports.all();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("refused 1 of 2 spans"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0].find("span too large"), std::string::npos) << messages[0];
}

// The destructor's report: "<n> spans were dropped ...".
std::optional<long> otlp_dropped_in_all(const std::vector<std::string>& messages) {
  for (const std::string& message : messages) {
    if (message.find("dropped in all") != std::string::npos) return std::stol(message);
  }
  return std::nullopt;
}

// Emits 2000 spans on this thread with an exporter sending to `url`, then
// destroys the exporter: neither may wait on the collector.
void otlp_expect_never_blocks(const std::string& url) {
  constexpr int kSpans = 2000;
  OtlpReports reports;
  OtlpOptions options;
  options.traces_url = url;
  options.max_batch = 64;
  options.schedule_delay = 5ms;
  options.export_timeout = 10s;   // longer than the test: only the stop can cut a silent collector
  options.flush_timeout = 300ms;
  options.report = reports.sink();
  auto exporter = std::make_unique<OtlpExporter>(options);

  const auto emit_start = OtlpTestClock::now();
  for (int i = 0; i < kSpans; ++i) {
    Span span("cairn.harness.step", [i] { return Json{{"index", i}}; });
  }
  const auto emitted = OtlpTestClock::now() - emit_start;
  // 2000 spans take a few milliseconds as released and about half a second
  // under ThreadSanitizer on a loaded two-core machine; an emitter that
  // waited on the collector would take far longer than the bound: forever
  // on the silent one, 15 s of retries a batch on the dead one, 32 batches
  // of 200 ms on the failing one.
  EXPECT_LT(emitted / 1.0s, 2.0) << "emitting took " << emitted / 1ms << " ms";

  const auto destroy_start = OtlpTestClock::now();
  exporter.reset();
  const auto destroyed = OtlpTestClock::now() - destroy_start;
  EXPECT_LT(destroyed, options.flush_timeout + 1s) << "the destructor took " << destroyed / 1ms << " ms";

  // Nothing was accepted, so every span is counted, once.
  EXPECT_EQ(otlp_dropped_in_all(reports.all()).value_or(-1), kSpans);
  const std::vector<std::string> messages = reports.all();
  EXPECT_LE(messages.size(), 2u);  // the first trouble, and the destructor's total
}

TEST(OtlpExporter, ADeadCollectorNeverBlocksTheEmitterOrTheDestructor) {
  otlp_expect_never_blocks(fmt::format("http://127.0.0.1:{}/v1/traces", HttpTestServer::closed_port()));
}

TEST(OtlpExporter, ASilentCollectorNeverBlocksTheEmitterOrTheDestructor) {
  ScriptedResponse silent = otlp_answer(200);
  silent.stall_before_response = true;
  HttpTestServer server(silent);
  otlp_expect_never_blocks(server.url("/v1/traces"));
}

TEST(OtlpExporter, AFailingCollectorNeverBlocksTheEmitterOrTheDestructor) {
  ScriptedResponse failing = otlp_answer(500, "Internal Server Error");
  failing.body[0].delay = std::chrono::milliseconds(200);  // slow to fail: waiting on it would show
  HttpTestServer server(failing);
  otlp_expect_never_blocks(server.url("/v1/traces"));
}

// Nothing listening where the collector should be (a shell's variable, no
// collector running): each batch is tried once, not retried, and the exit
// does not wait for it. Before, a refused batch was retried for the whole
// flush timeout.
TEST(OtlpExporter, ARefusedConnectionIsNotRetriedAndHoldsUpNoExit) {
  OtlpReports reports;
  OtlpOptions options;
  options.traces_url = fmt::format("http://127.0.0.1:{}/v1/traces", HttpTestServer::closed_port());
  options.schedule_delay = 5ms;
  options.retry_backoff = 1s;   // a retry would show in the flush's time
  options.flush_timeout = 10s;  // and in the destructor's
  options.report = reports.sink();
  auto exporter = std::make_unique<OtlpExporter>(options);
  otlp_emit_tool("bash", false);
  const auto flush_start = OtlpTestClock::now();
  EXPECT_FALSE(exporter->flush(5s));
  const auto flushed = OtlpTestClock::now() - flush_start;
  EXPECT_LT(flushed, 900ms) << "the flush took " << flushed / 1ms << " ms: the refused batch was retried";
  otlp_expect_stats(*exporter, 0u, 1u, 1u);  // one request, its span dropped

  otlp_emit_tool("read", false);
  const auto destroy_start = OtlpTestClock::now();
  exporter.reset();
  const auto destroyed = OtlpTestClock::now() - destroy_start;
  EXPECT_LT(destroyed, options.down_flush_timeout + 400ms) << "the destructor took " << destroyed / 1ms << " ms";
  EXPECT_EQ(otlp_dropped_in_all(reports.all()).value_or(-1), 2);
  const std::vector<std::string> messages = reports.all();
  ASSERT_EQ(messages.size(), 2u);  // the first trouble, and the destructor's total
  EXPECT_NE(messages[0].find("connect_failed"), std::string::npos) << messages[0];
}

TEST(OtlpExporter, PastTheQueueBoundEventsAreDroppedCountedAndReportedOnce) {
  ScriptedResponse silent = otlp_answer(200);
  silent.stall_before_response = true;
  HttpTestServer server(silent);
  OtlpReports reports;
  OtlpOptions options = otlp_test_options(server, reports);
  options.max_queue = 8;
  options.max_batch = 4;
  options.flush_timeout = 300ms;
  auto exporter = std::make_unique<OtlpExporter>(options);
  // The first batch goes out and hangs; what comes after it fills the queue.
  for (int i = 0; i < 4; ++i) otlp_emit_tool("bash", false);
  const auto sent_by = OtlpTestClock::now() + 2s;
  while (server.requests().empty() && OtlpTestClock::now() < sent_by) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(server.requests().size(), 1u);
  for (int i = 0; i < 100; ++i) otlp_emit_tool("bash", false);

  EXPECT_GE(exporter->stats().dropped, 90u);  // at most 8 events, 4 spans, wait in the queue
  const auto destroy_start = OtlpTestClock::now();
  exporter.reset();
  EXPECT_LT(OtlpTestClock::now() - destroy_start, options.flush_timeout + 1s);
  // The worker, stuck on the silent collector, never got to report the
  // overflow itself: the destructor's total is the one message.
  const std::vector<std::string> messages = reports.all();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(otlp_dropped_in_all(messages).value_or(-1), 104);
}

TEST(OtlpSpanAssembler, PairsStartsWithEndsAndForgetsTheOldestPastItsBound) {
  OtlpSpanAssembler assembler(2);
  auto event = [](SpanEventType type, std::string id, Json payload) {
    SpanEvent e;
    e.type = type;
    e.name = "cairn.test";
    e.trace_id = std::string(32, 'a');
    e.span_id = std::move(id);
    e.timestamp_ns = type == SpanEventType::start ? 1000 : 5000;
    if (type != SpanEventType::start) e.duration_ms = 0.004;
    e.payload = std::move(payload);
    return e;
  };
  EXPECT_FALSE(assembler.add(event(SpanEventType::start, "1", {{"a", 1}})).finished);
  EXPECT_FALSE(assembler.add(event(SpanEventType::start, "2", {{"a", 2}})).finished);
  EXPECT_FALSE(assembler.add(event(SpanEventType::start, "3", {{"a", 3}})).finished);  // forgets "1"
  EXPECT_EQ(assembler.pending(), 2u);
  EXPECT_TRUE(assembler.add(event(SpanEventType::end, "1", Json::object())).dropped);

  SpanEvent failed = event(SpanEventType::error, "3", {{"b", 4}, {"error.type", "x"}});
  failed.error = SpanError{"x", "went wrong"};
  auto outcome = assembler.add(std::move(failed));
  ASSERT_TRUE(outcome.finished);
  EXPECT_EQ(outcome.finished->attributes, Json({{"a", 3}, {"b", 4}, {"error.type", "x"}}));
  EXPECT_EQ(outcome.finished->start_ns, 1000);
  EXPECT_EQ(outcome.finished->end_ns, 5000);
  ASSERT_TRUE(outcome.finished->error);
  EXPECT_EQ(outcome.finished->error->message, "went wrong");
  EXPECT_EQ(assembler.pending(), 1u);
}

// ---- from_environment ----------------------------------------------------------

// Clears the OpenTelemetry variables for a test and puts them back after.
class OtlpEnvironment {
 public:
  OtlpEnvironment() {
    for (const char* name : kNames) {
      if (const char* value = std::getenv(name)) saved_.emplace_back(name, value);
      ::unsetenv(name);
    }
  }
  ~OtlpEnvironment() {
    for (const char* name : kNames) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void set(const char* name, const char* value) { ::setenv(name, value, 1); }
  void unset(const char* name) { ::unsetenv(name); }

 private:
  static constexpr const char* kNames[] = {
      "OTEL_EXPORTER_OTLP_ENDPOINT",        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
      "OTEL_EXPORTER_OTLP_TRACES_HEADERS",  "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
      "OTEL_EXPORTER_OTLP_TIMEOUT",         "OTEL_SERVICE_NAME",
      "OTEL_RESOURCE_ATTRIBUTES",           "OTEL_TRACES_EXPORTER",
      "OTEL_METRICS_EXPORTER",              "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
  };
  std::vector<std::pair<std::string, std::string>> saved_;
};

using OtlpPairList = std::vector<std::pair<std::string, std::string>>;

TEST(OtlpOptionsFromEnvironment, NothingWithoutAnEndpoint) {
  OtlpEnvironment env;
  auto options = OtlpOptions::from_environment();
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_FALSE(*options);
}

TEST(OtlpOptionsFromEnvironment, TheBaseEndpointGetsTheSignalPathsWithOneSlash) {
  OtlpEnvironment env;
  for (const char* base : {"http://collector:4318", "http://collector:4318/"}) {
    env.set("OTEL_EXPORTER_OTLP_ENDPOINT", base);
    auto options = OtlpOptions::from_environment();
    ASSERT_TRUE(options && *options);
    EXPECT_EQ((*options)->traces_url, "http://collector:4318/v1/traces");
    EXPECT_EQ((*options)->metrics_url, "http://collector:4318/v1/metrics");
    EXPECT_EQ((*options)->service_name, "cairn");
  }
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector/base/");
  auto options = OtlpOptions::from_environment();
  ASSERT_TRUE(options && *options);
  EXPECT_EQ((*options)->traces_url, "https://collector/base/v1/traces");
}

TEST(OtlpOptionsFromEnvironment, SignalEndpointsAreUsedVerbatimAndNoneTurnsASignalOff) {
  OtlpEnvironment env;
  env.set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:1/custom/");
  env.set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:2/m");
  auto options = OtlpOptions::from_environment();
  ASSERT_TRUE(options && *options);
  EXPECT_EQ((*options)->traces_url, "http://traces:1/custom/");
  EXPECT_EQ((*options)->metrics_url, "http://metrics:2/m");

  env.set("OTEL_METRICS_EXPORTER", "none");
  options = OtlpOptions::from_environment();
  ASSERT_TRUE(options && *options);
  EXPECT_EQ((*options)->metrics_url, "");

  env.set("OTEL_TRACES_EXPORTER", "none");
  options = OtlpOptions::from_environment();
  ASSERT_TRUE(options);
  EXPECT_FALSE(*options);
}

TEST(OtlpOptionsFromEnvironment, HeadersTimeoutServiceAndResourceAttributes) {
  OtlpEnvironment env;
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", " Authorization = Bearer%20tok%3D ,x-a=b,");
  env.set("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-t=1");
  env.set("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-m=2");
  env.set("OTEL_EXPORTER_OTLP_TIMEOUT", "2500");
  env.set("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes,deployment.environment=prod%2Deu");
  auto options = OtlpOptions::from_environment();
  ASSERT_TRUE(options && *options) << (options ? "" : options.error().message);
  EXPECT_EQ((*options)->headers, (OtlpPairList{{"Authorization", "Bearer tok="}, {"x-a", "b"}}));
  EXPECT_EQ((*options)->traces_headers, (OtlpPairList{{"x-t", "1"}}));
  EXPECT_EQ((*options)->metrics_headers, (OtlpPairList{{"x-m", "2"}}));
  EXPECT_EQ((*options)->export_timeout, 2500ms);
  EXPECT_EQ((*options)->service_name, "from-attributes");
  EXPECT_EQ((*options)->resource_attributes, (OtlpPairList{{"deployment.environment", "prod-eu"}}));

  env.set("OTEL_SERVICE_NAME", "from-service-name");
  options = OtlpOptions::from_environment();
  ASSERT_TRUE(options && *options);
  EXPECT_EQ((*options)->service_name, "from-service-name");
}

TEST(OtlpOptionsFromEnvironment, OnlyHttpJsonIsSpoken) {
  OtlpEnvironment env;
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
  EXPECT_TRUE(OtlpOptions::from_environment());

  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
  auto options = OtlpOptions::from_environment();
  ASSERT_FALSE(options);
  EXPECT_TRUE(options.error().is(Errc::invalid_argument));
  EXPECT_NE(options.error().message.find("OTEL_EXPORTER_OTLP_PROTOCOL"), std::string::npos);
  EXPECT_NE(options.error().message.find("grpc"), std::string::npos);
  EXPECT_NE(options.error().message.find("http/json"), std::string::npos);

  env.unset("OTEL_EXPORTER_OTLP_PROTOCOL");
  env.set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf");
  options = OtlpOptions::from_environment();
  ASSERT_FALSE(options);
  EXPECT_NE(options.error().message.find("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf"), std::string::npos);
}

TEST(OtlpOptionsFromEnvironment, MalformedValuesAreErrorsThatNeverShowAHeaderValue) {
  OtlpEnvironment env;
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
  for (const char* headers : {"Authorization=Bearer%zzsupersecret", "supersecret-without-equals", "=supersecret"}) {
    env.set("OTEL_EXPORTER_OTLP_HEADERS", headers);
    auto options = OtlpOptions::from_environment();
    ASSERT_FALSE(options) << headers;
    EXPECT_NE(options.error().message.find("OTEL_EXPORTER_OTLP_HEADERS"), std::string::npos);
    EXPECT_EQ(options.error().message.find("supersecret"), std::string::npos) << options.error().message;
  }
  env.unset("OTEL_EXPORTER_OTLP_HEADERS");

  env.set("OTEL_EXPORTER_OTLP_TIMEOUT", "soon");
  auto options = OtlpOptions::from_environment();
  ASSERT_FALSE(options);
  EXPECT_NE(options.error().message.find("OTEL_EXPORTER_OTLP_TIMEOUT"), std::string::npos);
  env.unset("OTEL_EXPORTER_OTLP_TIMEOUT");

  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318");
  options = OtlpOptions::from_environment();
  ASSERT_FALSE(options);
  EXPECT_NE(options.error().message.find("OTEL_EXPORTER_OTLP_ENDPOINT"), std::string::npos);
}

}  // namespace
}  // namespace cairn::trace
