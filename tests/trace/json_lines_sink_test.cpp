// The JSON-lines sink: one event per line in the design's shape, written
// off the caller's thread; a file that cannot be opened or written is said
// once, clearly, and never stops the caller.
#include <fstream>

#include <gtest/gtest.h>

#include "cairn/trace_sinks.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {
namespace {

std::vector<Json> read_lines(const std::filesystem::path& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

TEST(JsonLinesSink, WritesEachEventAsOneLineInTheDesignsShape) {
  TempDir dir;
  const auto path = dir.path() / "trace.jsonl";
  auto sink = trace::JsonLinesSink::open(path);
  ASSERT_TRUE(sink) << sink.error().message;
  trace::run_with_context(Json{{"userId", "bob"}}, [] {
    trace::Span outer("outer", [] { return Json{{"runId", "r1"}}; });
    trace::Span inner("inner");
    inner.fail("tool_error", "it broke");
  });
  ASSERT_TRUE((*sink)->flush(std::chrono::seconds(5)));
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["type"], "start");
  EXPECT_EQ(lines[0]["name"], "outer");
  EXPECT_EQ(lines[0]["payload"], (Json{{"runId", "r1"}}));
  EXPECT_EQ(lines[0]["context"], (Json{{"userId", "bob"}}));
  EXPECT_EQ(lines[0]["traceId"].get<std::string>().size(), 32u);
  EXPECT_FALSE(lines[0].contains("parentSpanId"));
  EXPECT_EQ(lines[1]["parentSpanId"], lines[0]["spanId"]);
  EXPECT_EQ(lines[2]["type"], "error");
  EXPECT_EQ(lines[2]["error"], (Json{{"name", "tool_error"}, {"message", "it broke"}}));
  EXPECT_EQ(lines[2]["payload"]["error.type"], "tool_error");
  EXPECT_TRUE(lines[2]["durationMs"].is_number());
  EXPECT_EQ(lines[3]["type"], "end");
  EXPECT_EQ(lines[3]["spanId"], lines[0]["spanId"]);
  EXPECT_GE(lines[3]["timestamp"].get<double>(), lines[0]["timestamp"].get<double>());
  EXPECT_EQ((*sink)->dropped(), 0u);
}

TEST(JsonLinesSink, AFileThatCannotBeOpenedIsAnErrorNamingIt) {
  TempDir dir;
  const auto path = dir.path() / "missing" / "trace.jsonl";
  auto sink = trace::JsonLinesSink::open(path);
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().code, "io_error");
  EXPECT_NE(sink.error().message.find(path.string()), std::string::npos);
}

TEST(JsonLinesSink, AFullDiskIsReportedOnceAndTheCallerGoesOn) {
  std::vector<std::string> reports;
  std::mutex mu;
  {
    auto sink = trace::JsonLinesSink::open("/dev/full", {.report = [&](const std::string& message) {
                                                           std::lock_guard lock(mu);
                                                           reports.push_back(message);
                                                         }});
    ASSERT_TRUE(sink) << sink.error().message;
    for (int i = 0; i < 100; ++i) {
      trace::Span span("spam");
    }
    EXPECT_TRUE((*sink)->flush(std::chrono::seconds(5)));
    EXPECT_EQ((*sink)->dropped(), 200u);
  }
  std::lock_guard lock(mu);
  ASSERT_EQ(reports.size(), 2u);  // the failure, once; the count, at the end
  EXPECT_NE(reports[0].find("/dev/full"), std::string::npos);
  EXPECT_NE(reports[0].find("No space left on device"), std::string::npos);
  EXPECT_NE(reports[1].find("200 events were not written"), std::string::npos);
}

}  // namespace
}  // namespace cairn::testing
