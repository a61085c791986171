// The projection from a branch to model messages, checked against a plain
// reading of pi's rules: walk the whole path from the root, take the last
// setting of each kind, and after the last compaction its summary, the kept
// entries (from firstKeptEntryId, if it is on the path) and everything after.
// The index builds the same thing without walking the whole branch; random
// trees with branches, compactions (kept entries on and off the path) and
// setting changes check that the shortcut changes nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "cairn/store/store.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

struct Expected {
  std::vector<std::string> entry_ids;
  ThinkingLevel thinking_level = ThinkingLevel::off;
  std::optional<std::string> model;  // "provider/id"
  std::optional<std::vector<std::string>> tools;
};

bool projects(const TreeEntry& entry) {
  if (std::holds_alternative<MessageBody>(entry.body) || std::holds_alternative<CustomMessageBody>(entry.body)) {
    return true;
  }
  const auto* summary = std::get_if<BranchSummary>(&entry.body);
  return summary != nullptr && !summary->summary.empty();
}

Expected reference_context(const Session& session, const std::string& leaf) {
  std::vector<TreeEntry> path;
  for (const std::string& id : session.path_to(leaf)) path.push_back(*session.get_entry(id).value());
  Expected expected;
  std::optional<std::size_t> compaction;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const TreeEntry& entry = path[i];
    if (const auto* thinking = std::get_if<ThinkingLevelChange>(&entry.body)) expected.thinking_level = thinking->thinking_level;
    if (const auto* tools = std::get_if<ActiveToolsChange>(&entry.body)) expected.tools = tools->active_tool_names;
    if (const auto* model = std::get_if<ModelChange>(&entry.body)) expected.model = model->provider + "/" + model->model_id;
    if (const auto* message = std::get_if<MessageBody>(&entry.body)) {
      if (const auto* assistant = std::get_if<AssistantMessage>(&message->message)) {
        expected.model = assistant->provider + "/" + assistant->model;
      }
    }
    if (std::holds_alternative<Compaction>(entry.body)) compaction = i;
  }
  std::size_t from = 0;
  if (compaction) {
    expected.entry_ids.push_back(path[*compaction].id);
    const std::string& kept = std::get<Compaction>(path[*compaction].body).first_kept_entry_id;
    for (std::size_t i = 0; i < *compaction; ++i) {
      if (path[i].id != kept) continue;
      for (std::size_t j = i; j < *compaction; ++j) {
        if (projects(path[j])) expected.entry_ids.push_back(path[j].id);
      }
    }
    from = *compaction + 1;
  }
  for (std::size_t i = from; i < path.size(); ++i) {
    if (projects(path[i])) expected.entry_ids.push_back(path[i].id);
  }
  return expected;
}

TEST(Context, MatchesAWalkOfTheWholeBranchOnRandomTrees) {
  std::size_t compared = 0, with_compaction = 0, with_kept = 0;
  for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(cairn::testing::scaled(12)); ++seed) {
    auto store = open_store("memory:");
    ASSERT_TRUE(store) << store.error().message;
    auto session = (*store)->create({.cwd = "/work"});
    ASSERT_TRUE(session) << session.error().message;
    testing::RandomLog generator(seed);
    for (int batch = 0; batch < 150; ++batch) {
      auto appended = (*session)->append(generator.next_batch());
      ASSERT_TRUE(appended) << "seed " << seed << ", batch " << batch << ": " << appended.error().message;
    }
    auto page = (*session)->find_entries({});
    ASSERT_TRUE(page) << page.error().message;
    for (const TreeEntry& leaf : page->items) {
      const Expected expected = reference_context(**session, leaf.id);
      auto built = (*session)->build_context_at(leaf.id);
      ASSERT_TRUE(built) << built.error().message;
      EXPECT_EQ(built->entry_ids, expected.entry_ids) << "seed " << seed << ", leaf " << leaf.id;
      EXPECT_EQ(built->messages.size(), built->entry_ids.size());
      EXPECT_EQ(built->thinking_level, expected.thinking_level) << "seed " << seed << ", leaf " << leaf.id;
      EXPECT_EQ(built->active_tool_names, expected.tools) << "seed " << seed << ", leaf " << leaf.id;
      EXPECT_EQ(built->model ? std::optional(built->model->provider + "/" + built->model->model_id) : std::nullopt,
                expected.model)
          << "seed " << seed << ", leaf " << leaf.id;
      ++compared;
      if (expected.entry_ids.empty() ||
          !std::holds_alternative<Compaction>((*session)->get_entry(expected.entry_ids[0]).value()->body)) {
        continue;
      }
      ++with_compaction;
      // Kept entries: the second message comes from before the compaction.
      if (expected.entry_ids.size() > 1) {
        const std::vector<std::string> path = (*session)->path_to(leaf.id);
        const auto position = [&](const std::string& id) { return std::find(path.begin(), path.end(), id) - path.begin(); };
        if (position(expected.entry_ids[1]) < position(expected.entry_ids[0])) ++with_kept;
      }
    }
  }
  // The random trees must exercise what the shortcut skips.
  EXPECT_GT(compared, 1000u);
  EXPECT_GT(with_compaction, 100u);
  EXPECT_GT(with_kept, 20u);
}

// What stream_context hands over, collected.
SessionContext streamed(const Session& session, std::string_view ref) {
  SessionContext out;
  auto settings = session.stream_context(ref, [&](AgentMessage&& message, std::string&& id) {
    out.messages.push_back(std::move(message));
    out.entry_ids.push_back(std::move(id));
  });
  EXPECT_TRUE(settings) << settings.error().message;
  EXPECT_TRUE(settings->messages.empty());
  return out;
}

std::string encoded(const std::vector<AgentMessage>& messages) {
  std::string out;
  for (const auto& message : messages) out += encode(message).dump() + "\n";
  return out;
}

TEST(Context, StreamedIsBuiltOnRandomTrees) {
  for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(cairn::testing::scaled(12)); ++seed) {
    auto store = open_store("memory:");
    auto session = (*store)->create({.cwd = "/work"});
    ASSERT_TRUE(session) << session.error().message;
    testing::RandomLog generator(seed);
    for (int batch = 0; batch < 150; ++batch) ASSERT_TRUE((*session)->append(generator.next_batch()));
    for (const RefInfo& ref : (*session)->refs()) {
      auto built = (*session)->build_context(ref.name);
      ASSERT_TRUE(built) << built.error().message;
      const SessionContext stream = streamed(**session, ref.name);
      EXPECT_EQ(stream.entry_ids, built->entry_ids) << "seed " << seed << ", ref " << ref.name;
      EXPECT_EQ(encoded(stream.messages), encoded(built->messages)) << "seed " << seed << ", ref " << ref.name;
    }
  }
}

// A branch longer than a decoding batch, reopened from a file (the SQLite
// index reads its lines a range at a time), with each response's results appended
// out of their calls' order, and runs of results cut by the batch boundary.
TEST(Context, ALongBranchIsBuiltAndStreamedInItsCallsOrder) {
  for (const std::string kind : {"jsonl", "sqlite"}) {
    SCOPED_TRACE(kind);
    testing::TempDir dir;
    const std::string uri = kind == "jsonl" ? "jsonl:" + dir.str() : "sqlite:" + (dir.path() / "s.db").string();
    std::string id;
    std::vector<std::string> expected;
    {
      auto store = open_store(uri, {SyncPolicy::none});
      ASSERT_TRUE(store) << store.error().message;
      auto session = (*store)->create({.cwd = "/work"});
      ASSERT_TRUE(session) << session.error().message;
      id = (*session)->id();
      std::vector<Record> batch;
      std::optional<std::string> leaf;
      auto push = [&](Record record, std::string entry_id) {
        std::get<TreeEntry>(record.body).id = entry_id;
        leaf = entry_id;
        batch.push_back(std::move(record));
      };
      // 5 messages a turn: 16,500, past the batch of 16,384, which ends
      // between the second and the third result of turn 3276.
      for (int turn = 0; turn < 3300; ++turn) {
        const std::string t = std::to_string(turn);
        push(testing::user_entry("do " + t, leaf), "u" + t);
        std::vector<ToolCall> calls;
        for (int c = 0; c < 3; ++c) calls.push_back(ToolCall{.id = t + "c" + std::to_string(c), .name = "read"});
        push(testing::assistant_entry("ok", leaf, {}, calls), "a" + t);
        for (int c : {2, 0, 1}) {
          const std::string call = t + "c" + std::to_string(c);
          push(testing::tool_result_entry(call, "read", "r", leaf), "r" + call);
        }
        for (const char* order : {"u", "a"}) expected.push_back(order + t);
        for (int c : {0, 1, 2}) expected.push_back("r" + t + "c" + std::to_string(c));
        if (batch.size() >= 1000) {
          ASSERT_TRUE((*session)->append(std::move(batch)));
          batch.clear();
        }
      }
      ASSERT_TRUE((*session)->append(std::move(batch)));
    }
    auto store = open_store(uri);
    auto session = (*store)->open(id, {.read_only = true});
    ASSERT_TRUE(session) << session.error().message;
    auto built = (*session)->build_context();
    ASSERT_TRUE(built) << built.error().message;
    EXPECT_EQ(built->entry_ids, expected);
    const SessionContext stream = streamed(**session, "main");
    EXPECT_EQ(stream.entry_ids, expected);
    EXPECT_EQ(encoded(stream.messages), encoded(built->messages));
  }
}

}  // namespace
}  // namespace cairn
