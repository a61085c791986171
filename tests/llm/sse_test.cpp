#include "llm/sse.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace cairn {
namespace {

using namespace std::string_literals;

bool operator_eq(const SseEvent& a, const SseEvent& b) {
  return a.event == b.event && a.data == b.data && a.id == b.id && a.retry_ms == b.retry_ms;
}

std::vector<SseEvent> parse_pieces(const std::vector<std::string>& pieces, SseParser& parser) {
  std::vector<SseEvent> events;
  for (const auto& piece : pieces) {
    auto status = parser.feed(piece, [&](const SseEvent& event) { events.push_back(event); });
    EXPECT_TRUE(status) << status.error().message;
  }
  return events;
}

// Parses `stream` whole, byte by byte and in random pieces, checks that all
// three agree, and returns the events.
std::vector<SseEvent> parse_events(const std::string& stream) {
  SseParser whole_parser;
  std::vector<SseEvent> whole = parse_pieces({stream}, whole_parser);

  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  SseParser byte_parser;
  std::vector<SseEvent> by_byte = parse_pieces(bytes, byte_parser);

  std::mt19937 rng(42);
  std::vector<std::string> random_pieces;
  for (std::size_t at = 0; at < stream.size();) {
    std::size_t length = std::uniform_int_distribution<std::size_t>(0, 7)(rng);
    random_pieces.push_back(stream.substr(at, length));
    at += length;
  }
  SseParser random_parser;
  std::vector<SseEvent> by_random = parse_pieces(random_pieces, random_parser);

  EXPECT_EQ(whole.size(), by_byte.size());
  EXPECT_EQ(whole.size(), by_random.size());
  for (std::size_t i = 0; i < whole.size() && i < by_byte.size() && i < by_random.size(); ++i) {
    EXPECT_TRUE(operator_eq(whole[i], by_byte[i])) << "event " << i << " differs when fed byte by byte";
    EXPECT_TRUE(operator_eq(whole[i], by_random[i])) << "event " << i << " differs when fed in random pieces";
  }
  return whole;
}

TEST(SseParser, DispatchesOnBlankLine) {
  auto events = parse_events("data: hello\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "message");
  EXPECT_EQ(events[0].data, "hello");
  EXPECT_FALSE(events[0].id);
  EXPECT_FALSE(events[0].retry_ms);
}

TEST(SseParser, AnEventWithoutItsBlankLineIsNotDispatched) {
  EXPECT_TRUE(parse_events("data: hello\n").empty());
  EXPECT_TRUE(parse_events("data: hello").empty());
}

TEST(SseParser, EventTypeAppliesToItsEventOnly) {
  auto events = parse_events("event: content_block_delta\ndata: {\"a\":1}\n\ndata: plain\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "content_block_delta");
  EXPECT_EQ(events[0].data, "{\"a\":1}");  // colons inside the value stay
  EXPECT_EQ(events[1].event, "message");
}

TEST(SseParser, DataLinesAreJoinedWithNewlines) {
  auto events = parse_events("data: a\ndata: b\ndata:\ndata: c\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "a\nb\n\nc");
}

TEST(SseParser, CommentsAreIgnored) {
  auto events = parse_events(": keep-alive\ndata: a\n: between\ndata: b\n\n:\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "a\nb");
}

TEST(SseParser, EveryLineEndingIsOne) {
  auto events = parse_events("data: lf\n\ndata: cr\r\rdata: crlf\r\n\r\ndata: mixed\r\n\n");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].data, "lf");
  EXPECT_EQ(events[1].data, "cr");
  EXPECT_EQ(events[2].data, "crlf");
  EXPECT_EQ(events[3].data, "mixed");
}

TEST(SseParser, CrlfSplitBetweenPiecesIsOneLineBreak) {
  SseParser parser;
  std::vector<SseEvent> events = parse_pieces({"data: a\r", "\ndata: b\r", "\n\r", "\n"}, parser);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "a\nb");
}

TEST(SseParser, CrThenCrIsABlankLine) {
  SseParser parser;
  std::vector<SseEvent> events = parse_pieces({"data: a\r", "\r", "data: b\r", "\r"}, parser);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, "a");
  EXPECT_EQ(events[1].data, "b");
}

TEST(SseParser, FieldWithoutColonHasAnEmptyValue) {
  auto events = parse_events("data\n\nevent\ndata: x\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, "");
  EXPECT_EQ(events[1].event, "message");  // an empty type is the default one
  EXPECT_EQ(events[1].data, "x");
}

TEST(SseParser, OnlyOneLeadingSpaceIsStripped) {
  auto events = parse_events("data:x\n\ndata:  two\n\ndata: \n\ndata:\t tab\n\n");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].data, "x");
  EXPECT_EQ(events[1].data, " two");
  EXPECT_EQ(events[2].data, "");
  EXPECT_EQ(events[3].data, "\t tab");
}

TEST(SseParser, OneLeadingBomIsSkipped) {
  auto events = parse_events("\xEF\xBB\xBF" "data: after bom\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "after bom");

  // A second BOM belongs to the first field's name, which is then unknown.
  EXPECT_TRUE(parse_events("\xEF\xBB\xBF\xEF\xBB\xBF" "data: x\n\n").empty());
  // Bytes that only begin like a BOM are kept.
  EXPECT_TRUE(parse_events("\xEF\xBB" "data: x\n\n").empty());
  auto kept = parse_events("\xEF\xBB\n" "data: x\n\n");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].data, "x");
  // A BOM later in the stream is just bytes.
  auto later = parse_events("data: \xEF\xBB\xBF" "x\n\n");
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].data, "\xEF\xBB\xBF" "x");
}

TEST(SseParser, BlockWithoutDataDispatchesNothingAndResetsTheType) {
  auto events = parse_events("event: ping\n\nid: 7\n\ndata: x\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "message");
  EXPECT_EQ(events[0].id, "7");  // the id of a dataless block still counts
}

TEST(SseParser, IdLastsAcrossEventsUntilReset) {
  SseParser parser;
  auto events = parse_pieces({"data: a\n\nid: 1\ndata: b\n\ndata: c\n\nid\ndata: d\n\nid: x\0y\ndata: e\n\n"s}, parser);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_FALSE(events[0].id);
  EXPECT_EQ(events[1].id, "1");
  EXPECT_EQ(events[2].id, "1");
  EXPECT_EQ(events[3].id, "");   // "id" alone sets it empty
  EXPECT_EQ(events[4].id, "");   // an id holding NUL is ignored
  EXPECT_EQ(parser.last_event_id(), "");
}

TEST(SseParser, RetryTakesDigitsOnly) {
  SseParser parser;
  auto events = parse_pieces({"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry: -1\ndata: c\n\n"
                              "retry:\ndata: d\n\nretry: 99999999999999\ndata: e\n\nretry: 20\n\n"},
                             parser);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].retry_ms, 1500);
  EXPECT_FALSE(events[1].retry_ms);
  EXPECT_FALSE(events[2].retry_ms);
  EXPECT_FALSE(events[3].retry_ms);
  EXPECT_FALSE(events[4].retry_ms);  // too large for an int
  EXPECT_EQ(parser.reconnection_time_ms(), 20);  // a dataless block's retry still counts
}

TEST(SseParser, UnknownFieldsAreIgnored) {
  auto events = parse_events("data: a\nfoo: bar\nDATA: shouted\ndata : spaced name\ndata: b\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "a\nb");
}

TEST(SseParser, ARealisticStreamIsTheSameInAnyPieces) {
  std::string stream =
      "\xEF\xBB\xBF: hello\r\n"
      "event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n"
      "event: ping\ndata: {}\n\n"
      "id: 42\rretry: 3000\revent: delta\rdata: {\"text\":\"li\r\r"
      "data: ne one\ndata: line two\n\n"
      "data: [DONE]\n\n"
      "data: tail without blank line";
  auto events = parse_events(stream);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[2].event, "delta");
  EXPECT_EQ(events[2].id, "42");
  EXPECT_EQ(events[2].retry_ms, 3000);
  EXPECT_EQ(events[3].data, "ne one\nline two");
  EXPECT_EQ(events[3].id, "42");
  EXPECT_FALSE(events[3].retry_ms);
  EXPECT_EQ(events[4].data, "[DONE]");
}

TEST(SseParser, ALineLongerThanTheLimitFailsTheParser) {
  SseParser parser(SseParserOptions{.max_line_bytes = 16});
  int dispatched = 0;
  auto count = [&](const SseEvent&) { ++dispatched; };
  ASSERT_TRUE(parser.feed("data: 0123456789\n\n", count));  // exactly 16 bytes
  EXPECT_EQ(dispatched, 1);
  // In pieces, none of them long: the limit is on the line.
  ASSERT_TRUE(parser.feed("data: 01234", count));
  ASSERT_TRUE(parser.feed("56789", count));
  auto status = parser.feed("X", count);
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, "sse_line_too_long");
  // It stays failed.
  auto again = parser.feed("\n\ndata: ok\n\n", count);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "sse_line_too_long");
  EXPECT_EQ(dispatched, 1);
}

TEST(SseParser, ALongLineInOnePieceFails) {
  SseParser parser(SseParserOptions{.max_line_bytes = 16});
  auto status = parser.feed("data: " + std::string(100, 'x') + "\n\n", [](const SseEvent&) { FAIL(); });
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, "sse_line_too_long");
}

TEST(SseParser, ManyShortDataLinesCannotExceedTheLimit) {
  SseParser parser(SseParserOptions{.max_line_bytes = 16});
  std::string stream;
  for (int i = 0; i < 10; ++i) stream += "data: abc\n";
  auto status = parser.feed(stream, [](const SseEvent&) { FAIL(); });
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, "sse_line_too_long");
}

TEST(SseParser, TheDefaultLimitIsSixteenMebibytes) {
  EXPECT_EQ(SseParserOptions{}.max_line_bytes, 16u * 1024 * 1024);
}

}  // namespace
}  // namespace cairn
