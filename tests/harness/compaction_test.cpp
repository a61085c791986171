// Compaction's pure decisions: sizes, the threshold, cut points, split turns,
// repeated compactions and refusals.
#include <gtest/gtest.h>

#include "cairn/harness/compaction.hpp"

namespace cairn {
namespace {

TreeEntry tree_entry_of(std::string id, AgentMessage message) {
  return TreeEntry{.id = std::move(id), .body = MessageBody{std::move(message)}};
}

TreeEntry user(std::string id, std::size_t chars) {
  return tree_entry_of(std::move(id), UserMessage{.content = std::string(chars, 'u'), .timestamp = 1});
}

// Built field by field: g++ 12 misreads designated initializers of
// AssistantMessage as leaving a Json uninitialised (-Wmaybe-uninitialized).
AssistantMessage assistant_of(std::vector<AssistantBlock> content, StopReason stop = StopReason::stop,
                           std::int64_t total_tokens = 0) {
  AssistantMessage message;
  message.content = std::move(content);
  message.stop_reason = stop;
  message.usage.total_tokens = total_tokens;
  message.timestamp = 1;
  return message;
}

TreeEntry assistant_text(std::string id, std::size_t chars, std::int64_t total_tokens = 0) {
  return tree_entry_of(std::move(id), assistant_of({TextContent{.text = std::string(chars, 'a')}}, StopReason::stop, total_tokens));
}

TreeEntry assistant_call(std::string id, std::string call_id, std::string tool = "bash", Json args = Json::object()) {
  return tree_entry_of(std::move(id), assistant_of({ToolCall{.id = std::move(call_id), .name = std::move(tool), .arguments = std::move(args)}},
                                        StopReason::tool_use));
}

TreeEntry result(std::string id, std::string call_id, std::size_t chars) {
  return tree_entry_of(std::move(id), ToolResultMessage{.tool_call_id = std::move(call_id), .tool_name = "bash",
                                                .content = {TextContent{.text = std::string(chars, 'r')}},
                                                .timestamp = 1});
}

std::vector<std::string> roles(const std::vector<AgentMessage>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.emplace_back(role_of(m));
  return out;
}

TEST(Compaction, ReasonsKeepTheirSpelling) {
  for (auto [reason, name] : {std::pair{CompactionReason::manual, "manual"}, std::pair{CompactionReason::threshold, "threshold"},
                              std::pair{CompactionReason::overflow, "overflow"}}) {
    EXPECT_EQ(to_string(reason), name);
    EXPECT_EQ(parse_compaction_reason(name), reason);
    EXPECT_EQ(Json(reason), name);  // as event data
  }
  EXPECT_EQ(parse_compaction_reason("auto"), std::nullopt);
}

TEST(Compaction, EstimatesAreCharsOverFourWithImagesAt4800Chars) {
  EXPECT_EQ(estimate_tokens(UserMessage{.content = std::string(10, 'x')}), 3);
  EXPECT_EQ(estimate_tokens(UserMessage{.content = std::vector<UserBlock>{ImageContent{.data = "x", .mime_type = "image/png"}}}),
            1200);
  const AgentMessage call = std::get<MessageBody>(assistant_call("a", "c", "read", Json{{"path", "/x"}}).body).message;
  EXPECT_EQ(estimate_tokens(call), 5);  // "read" + {"path":"/x"}: 17 chars
  EXPECT_EQ(estimate_tokens(BranchSummaryMessage{.summary = std::string(8, 's')}), 2);
}

TEST(Compaction, ContextSizeIsTheLastCountedTotalPlusAnEstimateOfWhatFollows) {
  std::vector<AgentMessage> messages;
  messages.push_back(UserMessage{.content = std::string(400, 'u')});
  messages.push_back(assistant_of({TextContent{.text = "ok"}}, StopReason::stop, 5000));
  messages.push_back(UserMessage{.content = std::string(40, 'u')});
  // A failed response's usage says nothing about the context.
  messages.push_back(assistant_of({TextContent{.text = std::string(400, 'e')}}, StopReason::error, 99999));
  const ContextSize size = measure_context(messages);
  EXPECT_EQ(size.counted, 5000);
  EXPECT_EQ(size.estimated, 10 + 100);
  EXPECT_EQ(size.tokens, 5110);
  EXPECT_TRUE(size.provider_counted());

  messages.erase(messages.begin() + 1);
  const ContextSize estimated = measure_context(messages);
  EXPECT_FALSE(estimated.provider_counted());
  EXPECT_EQ(estimated.tokens, 100 + 10 + 100);
}

TEST(Compaction, AResponseOlderThanTheCompactionCountsNothing) {
  // Kept entries come after the summary in the context but were counted
  // against the context the summary replaced.
  std::vector<AgentMessage> messages;
  messages.push_back(CompactionSummaryMessage{.summary = std::string(400, 's'), .tokens_before = 9000, .timestamp = 10});
  messages.push_back(UserMessage{.content = std::string(40, 'u')});
  AssistantMessage kept = assistant_of({TextContent{.text = "ok"}}, StopReason::stop, 9000);
  kept.timestamp = 5;
  messages.push_back(kept);
  const ContextSize before_any = measure_context(messages);
  EXPECT_FALSE(before_any.provider_counted());
  EXPECT_EQ(before_any.tokens, estimate_tokens(messages[0]) + 10 + 1);

  AssistantMessage fresh = assistant_of({TextContent{.text = "new"}}, StopReason::stop, 700);
  fresh.timestamp = 11;
  messages.push_back(fresh);
  const ContextSize after = measure_context(messages);
  EXPECT_EQ(after.counted, 700);
  EXPECT_EQ(after.estimated, 0);
}

TEST(Compaction, TheThresholdIsTheWindowLessTheReserve) {
  CompactionSettings settings{.reserve_tokens = 1000};
  EXPECT_FALSE(should_compact(9000, 10000, settings));
  EXPECT_TRUE(should_compact(9001, 10000, settings));
  settings.enabled = false;
  EXPECT_FALSE(should_compact(9001, 10000, settings));
}

TEST(Compaction, TheCutNeverSeparatesAToolCallFromItsResult) {
  // u1 a1(call) r1(big) a2 u2: the budget is reached at r1, which is no
  // valid cut: the cut moves forward to a2, and r1 is summarised together
  // with its call.
  const std::vector<TreeEntry> path{user("u1", 40), assistant_call("a1", "c1"), result("r1", "c1", 4000),
                                    assistant_text("a2", 40), user("u2", 40)};
  const CutPoint cut = find_cut_point(path, 0, path.size(), 500);
  EXPECT_EQ(path[cut.first_kept].id, "a2");
  for (std::size_t keep : {1, 20, 25, 30, 1000, 1100, 5000}) {
    const CutPoint any = find_cut_point(path, 0, path.size(), static_cast<std::int64_t>(keep));
    EXPECT_NE(path[any.first_kept].id, "r1") << keep;
  }
}

TEST(Compaction, ACutInsideATurnSummarisesTheTurnsPrefixSeparately) {
  const std::vector<TreeEntry> path{user("u0", 400),        assistant_text("a0", 400), user("u1", 40),
                                    assistant_call("a1", "c1"), result("r1", "c1", 400),   assistant_call("a2", "c2"),
                                    result("r2", "c2", 400),    assistant_text("a3", 40)};
  auto prep = prepare_compaction(path, CompactionSettings{.keep_recent_tokens = 150});
  ASSERT_TRUE(prep) << prep.error().message;
  EXPECT_EQ(prep->first_kept_entry_id, "a2");
  EXPECT_TRUE(prep->split_turn);
  EXPECT_EQ(roles(prep->messages_to_summarize), (std::vector<std::string>{"user", "assistant"}));
  EXPECT_EQ(roles(prep->turn_prefix_messages), (std::vector<std::string>{"user", "assistant", "toolResult"}));
  const auto prefix = turn_prefix_summary_request(*prep, CompactionSettings{});
  EXPECT_NE(prefix.prompt.find("[User]: uuuu"), std::string::npos);
  const std::string summary = compose_summary(*prep, "HISTORY", "PREFIX");
  EXPECT_NE(summary.find("HISTORY"), std::string::npos);
  EXPECT_NE(summary.find("split turn"), std::string::npos);
  EXPECT_NE(summary.find("PREFIX"), std::string::npos);
}

TEST(Compaction, RepeatedCompactionsUpdateThePreviousSummaryAndSummariseWhatItKept) {
  std::vector<TreeEntry> path{user("u1", 400), assistant_text("a1", 400), user("u2", 400), assistant_text("a2", 400)};
  path.push_back(TreeEntry{.id = "c1",
                           .body = Compaction{.summary = "FIRST SUMMARY", .first_kept_entry_id = "u2",
                                              .details = Json{{"readFiles", {"/a"}}, {"modifiedFiles", Json::array()}}}});
  path.push_back(user("u3", 400));
  path.push_back(assistant_call("a3", "c3", "edit", Json{{"path", "/b"}}));
  path.push_back(result("r3", "c3", 40));
  path.push_back(assistant_text("a4", 400));
  auto prep = prepare_compaction(path, CompactionSettings{.keep_recent_tokens = 100});
  ASSERT_TRUE(prep) << prep.error().message;
  EXPECT_EQ(prep->previous_summary, "FIRST SUMMARY");
  // From the first compaction's kept entry (u2), not from after it.
  ASSERT_FALSE(prep->messages_to_summarize.empty());
  EXPECT_EQ(std::get<std::string>(std::get<UserMessage>(prep->messages_to_summarize.front()).content), std::string(400, 'u'));
  EXPECT_EQ(prep->read_files, std::vector<std::string>{"/a"});
  EXPECT_EQ(prep->modified_files, std::vector<std::string>{"/b"});
  const auto request = history_summary_request(*prep, CompactionSettings{}, std::string("the API"));
  EXPECT_NE(request.prompt.find("<previous-summary>\nFIRST SUMMARY\n</previous-summary>"), std::string::npos);
  EXPECT_NE(request.prompt.find("Also focus on: the API"), std::string::npos);
  EXPECT_EQ(request.max_tokens, 16384 * 8 / 10);
}

TEST(Compaction, RefusesWhenItWouldShedNothingOrSplitACallFromItsResult) {
  const std::vector<TreeEntry> small{user("u1", 40), assistant_text("a1", 40)};
  auto nothing = prepare_compaction(small, CompactionSettings{});
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code, "nothing_to_compact");

  std::vector<TreeEntry> compacted = small;
  compacted.push_back(TreeEntry{.id = "c", .body = Compaction{.summary = "s", .first_kept_entry_id = "a1"}});
  auto again = prepare_compaction(compacted, CompactionSettings{.keep_recent_tokens = 1});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "nothing_to_compact");

  // A user message between a call and its result (no harness writes this;
  // an imported log might): the only cut that sheds anything orphans r1.
  const std::vector<TreeEntry> odd{user("u1", 4000), assistant_call("a1", "c1"), user("u2", 40), result("r1", "c1", 40)};
  auto split = prepare_compaction(odd, CompactionSettings{.keep_recent_tokens = 20});
  ASSERT_FALSE(split);
  EXPECT_EQ(split.error().code, "would_split_tool_call");
}

TEST(Compaction, SerialisedTranscriptsNameRolesAndCutLongToolResults) {
  std::vector<LlmMessage> messages{
      UserMessage{.content = "hello"},
      assistant_of({ThinkingContent{.thinking = "hmm"}, TextContent{.text = "hi"},
                 ToolCall{.id = "c", .name = "read", .arguments = Json{{"path", "/x"}}}}),
      ToolResultMessage{.tool_call_id = "c", .content = {TextContent{.text = std::string(2500, 'r')}}}};
  const std::string text = serialize_conversation(messages);
  EXPECT_NE(text.find("[User]: hello"), std::string::npos);
  EXPECT_NE(text.find("[Assistant thinking]: hmm"), std::string::npos);
  EXPECT_NE(text.find("[Assistant]: hi"), std::string::npos);
  EXPECT_NE(text.find("[Assistant tool calls]: read(path=\"/x\")"), std::string::npos);
  EXPECT_NE(text.find("[... 500 more characters truncated]"), std::string::npos);
}

}  // namespace
}  // namespace cairn
