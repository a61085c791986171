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
  std::string thinking_level = "off";
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

}  // namespace
}  // namespace cairn
