// pi session import: the hand-written files in tests/fixtures/pi follow pi's
// format (badlogic/pi-mono, packages/coding-agent/src/core/session-manager.ts).
// Every test states the message list pi's buildSessionContext gives for the
// file — walk from the leaf (the last entry) to the root; with a compaction on
// the path: its summary, the kept entries from firstKeptEntryId up to it, then
// the entries after it — and checks that cairn's context is exactly that.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cairn/store/pi_import.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using RoleText = std::pair<std::string, std::string>;

std::string fixture(const std::string& name) { return std::string(CAIRN_FIXTURES_DIR) + "/pi/" + name; }

std::string content_text(const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) return *text;
  std::string out;
  for (const auto& block : std::get<std::vector<UserBlock>>(content)) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
  }
  return out;
}

// The text pi shows for a message: text blocks (user, assistant, tool
// result), custom content, summaries.
std::string content_text(const AgentMessage& message) {
  if (const auto* m = std::get_if<UserMessage>(&message)) return content_text(m->content);
  if (const auto* m = std::get_if<AssistantMessage>(&message)) {
    std::string out;
    for (const auto& block : m->content) {
      if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
    }
    return out;
  }
  if (const auto* m = std::get_if<ToolResultMessage>(&message)) {
    std::string out;
    for (const auto& block : m->content) {
      if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
    }
    return out;
  }
  if (const auto* m = std::get_if<CustomMessage>(&message)) return content_text(m->content);
  if (const auto* m = std::get_if<BranchSummaryMessage>(&message)) return m->summary;
  if (const auto* m = std::get_if<CompactionSummaryMessage>(&message)) return m->summary;
  return "(unexpected role)";
}

std::vector<RoleText> projected(const SessionContext& context) {
  std::vector<RoleText> out;
  for (const auto& message : context.messages) out.emplace_back(std::string(role_of(message)), content_text(message));
  return out;
}

// The file's parseable lines after the header, in order, as pi keeps them.
std::vector<nlohmann::json> raw_entries(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> entries;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_discarded()) continue;
    if (header) {
      header = false;
      continue;
    }
    entries.push_back(std::move(json));
  }
  return entries;
}

// Every stored record as an unordered JSON value, without its seq.
std::vector<nlohmann::json> stored_without_seq(const Session& session) {
  std::vector<nlohmann::json> out;
  const std::vector<LogLine> lines = session.get_log().value();
  for (const LogLine& line : lines) {
    auto json = nlohmann::json::parse(line.json);
    json.erase("seq");
    json.erase("crc");  // cairn's own, not pi's
    out.push_back(std::move(json));
  }
  return out;
}

struct Imported {
  std::unique_ptr<Store> store;
  PiImportResult result;
};

Imported import_fixture(const std::string& name) {
  Imported imported{make_memory_store(StoreOptions{}), {}};
  auto result = import_pi_session(*imported.store, fixture(name));
  EXPECT_TRUE(result.has_value()) << (result ? "" : result.error().code + ": " + result.error().message);
  if (result) imported.result = std::move(*result);
  return imported;
}

bool mentions_line(const std::vector<std::string>& notes, int line, const std::string& words) {
  for (const auto& note : notes) {
    if (note.starts_with("line " + std::to_string(line) + ":") && note.find(words) != std::string::npos) return true;
  }
  return false;
}

// ---- v3: tool calls, compaction, branch summary, settings, custom entries ---

TEST(PiImport, V3SessionBuildsPisContext) {
  auto imported = import_fixture("v3_session.jsonl");
  ASSERT_TRUE(imported.result.session);
  const Session& session = *imported.result.session;
  EXPECT_EQ(imported.result.version, 3);
  EXPECT_EQ(imported.result.imported, 22);
  EXPECT_TRUE(imported.result.notes.empty());

  // The leaf is the last entry, as pi's _buildIndex leaves it.
  EXPECT_EQ(session.leaf("main"), "a0000016");
  auto context = session.build_context("main");
  ASSERT_TRUE(context) << context.error().message;
  // Path: a0000001 … a000000b (compaction, firstKept a0000006), then the
  // branch a000000e … a0000016. The first branch (a000000c, a000000d) is off it.
  const std::vector<RoleText> expected{
      {"compactionSummary",
       "The user asked to fix a failing parser test. The parser now returns [] for empty input."},
      {"assistant", "Empty input must give an empty list. Editing and running the tests."},
      {"toolResult", "Successfully replaced text in src/parser.ts."},
      {"toolResult", "1 failing: parser handles whitespace"},
      {"assistant", "The empty-input test passes now; one whitespace test still fails."},
      {"branchSummary", "Tried adding a test for empty input; it passed."},
      {"custom", "Remember to run the linter."},
      {"user", "Run the linter please"},
      {"assistant", "The linter is clean."},
  };
  EXPECT_EQ(projected(*context), expected);
  const std::vector<std::string> entry_ids{"a000000b", "a0000006", "a0000007", "a0000008", "a0000009",
                                           "a000000e", "a0000011", "a0000013", "a0000014"};
  EXPECT_EQ(context->entry_ids, entry_ids);
  ASSERT_TRUE(context->model);
  EXPECT_EQ(context->model->provider, "openai");
  EXPECT_EQ(context->model->model_id, "gpt-5");
  EXPECT_EQ(context->thinking_level, ThinkingLevel::high);

  EXPECT_EQ(session.label("a0000003").value(), "bugfix");
  EXPECT_EQ(session.label("a000000d").value(), "first-try");
  EXPECT_EQ(session.name().value(), "parser fix");
  EXPECT_EQ(session.children("a000000b"), (std::vector<std::string>{"a000000c", "a000000e"}));
}

TEST(PiImport, V3ContextAtTheAbandonedBranch) {
  auto imported = import_fixture("v3_session.jsonl");
  ASSERT_TRUE(imported.result.session);
  // pi's buildSessionContext(entries, "a000000d"): the first branch after the compaction.
  auto context = imported.result.session->build_context_at("a000000d");
  ASSERT_TRUE(context) << context.error().message;
  const std::vector<RoleText> expected{
      {"compactionSummary",
       "The user asked to fix a failing parser test. The parser now returns [] for empty input."},
      {"assistant", "Empty input must give an empty list. Editing and running the tests."},
      {"toolResult", "Successfully replaced text in src/parser.ts."},
      {"toolResult", "1 failing: parser handles whitespace"},
      {"assistant", "The empty-input test passes now; one whitespace test still fails."},
      {"user", "Now add a test for empty input"},
      {"assistant", "Added a test for empty input."},
  };
  EXPECT_EQ(projected(*context), expected);
  ASSERT_TRUE(context->model);
  EXPECT_EQ(context->model->provider, "anthropic");
  EXPECT_EQ(context->model->model_id, "claude-sonnet-4-5");
  EXPECT_EQ(context->thinking_level, ThinkingLevel::medium);
}

TEST(PiImport, V3RecordsRoundTripToThePiLines) {
  auto imported = import_fixture("v3_session.jsonl");
  ASSERT_TRUE(imported.result.session);
  EXPECT_EQ(stored_without_seq(*imported.result.session), raw_entries(fixture("v3_session.jsonl")));
}

// ---- v1: no ids, compaction by index ----------------------------------------

TEST(PiImport, V1MigrationAssignsIdsAndResolvesTheCompactionIndex) {
  Json header;
  std::vector<std::string> notes;
  auto entries = read_pi_entries(fixture("v1_session.jsonl"), &header, &notes);
  ASSERT_TRUE(entries) << entries.error().message;
  ASSERT_EQ(entries->size(), 8u);
  EXPECT_FALSE(header.contains("version"));

  std::set<std::string> ids;
  std::optional<std::string> previous;
  const std::regex eight_hex("[0-9a-f]{8}");
  for (const Json& entry : *entries) {
    ASSERT_TRUE(entry["id"].is_string());
    const std::string id = entry["id"].get<std::string>();
    EXPECT_TRUE(std::regex_match(id, eight_hex)) << id;
    EXPECT_TRUE(ids.insert(id).second) << "duplicate id " << id;
    EXPECT_EQ(entry["parentId"], previous ? Json(*previous) : Json(nullptr));
    previous = id;
  }
  // firstKeptEntryIndex 4 counts the header as 0: the user's "Explain closures".
  const Json& compaction = (*entries)[5];
  ASSERT_EQ(compaction["type"], "compaction");
  EXPECT_FALSE(compaction.contains("firstKeptEntryIndex"));
  EXPECT_EQ(compaction["firstKeptEntryId"], (*entries)[3]["id"]);
  EXPECT_TRUE(mentions_line(notes, 7, "firstKeptEntryIndex 4"));
}

TEST(PiImport, V1SessionBuildsPisContext) {
  auto imported = import_fixture("v1_session.jsonl");
  ASSERT_TRUE(imported.result.session);
  EXPECT_EQ(imported.result.version, 1);
  EXPECT_EQ(imported.result.imported, 8);
  auto context = imported.result.session->build_context("main");
  ASSERT_TRUE(context) << context.error().message;
  const std::vector<RoleText> expected{
      {"compactionSummary", "The user greeted the assistant and asked about closures."},
      {"user", "Explain closures"},
      {"assistant", "A closure is a function together with the variables it captured."},
      {"user", "And generators?"},
      {"assistant", "Generators are functions that can pause at yield and resume later."},
  };
  EXPECT_EQ(projected(*context), expected);
  ASSERT_TRUE(context->model);
  EXPECT_EQ(context->model->provider, "anthropic");
  EXPECT_EQ(context->model->model_id, "claude-3-5-sonnet-20241022");
  EXPECT_EQ(context->thinking_level, ThinkingLevel::off);
}

TEST(PiImport, V1RecordsRoundTripToTheMigratedLines) {
  auto imported = import_fixture("v1_session.jsonl");
  ASSERT_TRUE(imported.result.session);
  const auto stored = stored_without_seq(*imported.result.session);
  auto expected = raw_entries(fixture("v1_session.jsonl"));
  ASSERT_EQ(stored.size(), expected.size());
  // pi's migration, spelled out: ids in file order, each entry the child of
  // the one before, the compaction's index (header = 0) turned into an id.
  for (std::size_t i = 0; i < expected.size(); ++i) {
    expected[i]["id"] = stored[i]["id"];
    expected[i]["parentId"] = i == 0 ? nlohmann::json(nullptr) : stored[i - 1]["id"];
    if (expected[i]["type"] == "compaction") {
      const auto index = expected[i]["firstKeptEntryIndex"].get<std::size_t>();
      expected[i].erase("firstKeptEntryIndex");
      expected[i]["firstKeptEntryId"] = stored[index - 1]["id"];
    }
  }
  EXPECT_EQ(stored, expected);
}

TEST(PiImport, V1CompactionIndexNamingTheHeaderKeepsNothing) {
  auto imported = import_fixture("v1_compaction_at_header.jsonl");
  ASSERT_TRUE(imported.result.session);
  // pi leaves firstKeptEntryId unset; no path entry matches it, so only the
  // summary and what follows the compaction remain.
  auto context = imported.result.session->build_context("main");
  ASSERT_TRUE(context) << context.error().message;
  const std::vector<RoleText> expected{
      {"compactionSummary", "The user asked what a monad is."},
      {"user", "Give an example"},
  };
  EXPECT_EQ(projected(*context), expected);
  EXPECT_TRUE(mentions_line(imported.result.notes, 4, "firstKeptEntryIndex 0"));
}

// ---- v2: hookMessage ----------------------------------------------------------

TEST(PiImport, V2HookMessageBecomesCustom) {
  auto imported = import_fixture("v2_hook_message.jsonl");
  ASSERT_TRUE(imported.result.session);
  EXPECT_EQ(imported.result.version, 2);
  auto context = imported.result.session->build_context("main");
  ASSERT_TRUE(context) << context.error().message;
  const std::vector<RoleText> expected{
      {"user", "Commit my changes"},
      {"custom", "On branch main; 2 files changed"},
      {"assistant", "Committed both files."},
  };
  EXPECT_EQ(projected(*context), expected);
  ASSERT_TRUE(context->model);
  EXPECT_EQ(context->model->model_id, "claude-sonnet-4-20250514");
  EXPECT_TRUE(mentions_line(imported.result.notes, 3, "hookMessage"));

  auto expected_lines = raw_entries(fixture("v2_hook_message.jsonl"));
  expected_lines[1]["message"]["role"] = "custom";
  EXPECT_EQ(stored_without_seq(*imported.result.session), expected_lines);
}

// ---- damaged files ------------------------------------------------------------

TEST(PiImport, SkipsWhatPiSkipsAndSaysSo) {
  auto imported = import_fixture("v3_damaged.jsonl");
  ASSERT_TRUE(imported.result.session);
  const Session& session = *imported.result.session;
  const auto& notes = imported.result.notes;
  EXPECT_TRUE(mentions_line(notes, 7, "not valid JSON"));
  EXPECT_TRUE(mentions_line(notes, 4, "future_thing"));
  EXPECT_TRUE(mentions_line(notes, 5, "c0000003"));
  EXPECT_TRUE(mentions_line(notes, 8, "root"));
  EXPECT_EQ(notes.size(), 4u);
  EXPECT_EQ(imported.result.imported, 5);

  // pi walks through the unknown entry to its parent, and stops at the entry
  // whose parent's line did not parse.
  ASSERT_TRUE(session.get_entry("c0000004").value());
  EXPECT_EQ(session.get_entry("c0000004").value()->parent_id, "c0000002");
  ASSERT_TRUE(session.get_entry("c0000006").value());
  EXPECT_EQ(session.get_entry("c0000006").value()->parent_id, std::nullopt);
  auto context = session.build_context("main");
  ASSERT_TRUE(context) << context.error().message;
  const std::vector<RoleText> expected{{"assistant", "Continuing"}, {"user", "Done?"}};
  EXPECT_EQ(projected(*context), expected);
}

TEST(PiImport, RefusesWhatIsNotAPiSession) {
  testing::TempDir dir;
  // A jsonl store: a failed import must let go of the new session's lock
  // before removing it.
  auto opened = make_jsonl_store(dir.str() + "/store", StoreOptions{});
  ASSERT_TRUE(opened) << opened.error().message;
  auto store = std::move(*opened);

  const std::string no_header = dir.str() + "/no_header.jsonl";
  std::ofstream(no_header) << R"({"type":"message","id":"x","parentId":null,"timestamp":"t","message":{}})" << "\n";
  auto refused = import_pi_session(*store, no_header);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "invalid_argument");

  const std::string newer = dir.str() + "/newer.jsonl";
  std::ofstream(newer) << R"({"type":"session","version":4,"id":"s","timestamp":"t","cwd":"/"})" << "\n";
  refused = import_pi_session(*store, newer);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "newer_version");

  // An entry the log refuses (a ref no one created): nothing is left behind.
  const std::string refused_entry = dir.str() + "/refused_entry.jsonl";
  std::ofstream(refused_entry)
      << R"({"type":"session","version":3,"id":"s","timestamp":"2025-12-01T09:00:00.000Z","cwd":"/"})" << "\n"
      << R"({"type":"custom","id":"d0000001","parentId":null,"timestamp":"2025-12-01T09:00:01.000Z","ref":"elsewhere","customType":"x"})"
      << "\n";
  refused = import_pi_session(*store, refused_entry);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "unknown_ref");

  refused = import_pi_session(*store, dir.str() + "/missing.jsonl");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "not_found");

  auto sessions = store->list();
  ASSERT_TRUE(sessions);
  EXPECT_TRUE(sessions->empty());
}

// A line pi could not have written (bytes that are not text, or longer than
// any record) is no skipped line but a file that is not a pi session: the
// import stops there, names the line, and leaves nothing behind.
TEST(PiImport, StopsAtTheFirstLineThatCannotBeAPiRecord) {
  testing::TempDir dir;
  auto opened = make_jsonl_store(dir.str() + "/store", StoreOptions{});
  ASSERT_TRUE(opened) << opened.error().message;
  auto store = std::move(*opened);
  const std::string header = R"({"type":"session","version":3,"id":"s","timestamp":"2025-12-01T09:00:00.000Z","cwd":"/"})";
  const auto entry = [](int n) {
    return fmt::format(R"({{"type":"message","id":"d{:07}","parentId":{},"timestamp":"2025-12-01T09:00:01.000Z",)"
                       R"("message":{{"role":"user","content":"hi","timestamp":1764579601000}}}})",
                       n, n == 1 ? std::string("null") : fmt::format("\"d{:07}\"", n - 1));
  };

  struct Case {
    std::string name;
    std::string third_line;
    std::string said;
  };
  const std::vector<Case> cases = {
      {"binary", std::string("\x7f" "ELF\x02\x01\x01\0\0\xff\xfe", 12), "not text"},
      {"latin1", "{\"type\":\"message\",\"text\":\"caf\xE9\"}", "not text"},
      {"long", std::string(64 * 1024 * 1024 + 1, 'x'), "longer than"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.str() + "/" + c.name + ".jsonl";
    {
      std::ofstream out(path, std::ios::binary);
      // pi would skip the third line and import the other four.
      out << header << "\n" << entry(1) << "\n" << c.third_line << "\n";
      for (int n = 2; n <= 4; ++n) out << entry(n) << "\n";
    }
    auto refused = import_pi_session(*store, path);
    ASSERT_FALSE(refused) << c.name;
    EXPECT_EQ(refused.error().code, "invalid_argument") << c.name;
    EXPECT_NE(refused.error().message.find(path + ": line 3: "), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find(c.said), std::string::npos) << refused.error().message;
  }
  auto sessions = store->list();
  ASSERT_TRUE(sessions);
  EXPECT_TRUE(sessions->empty());
}

TEST(PiImport, RefusesWhatIsNotARegularFile) {
  auto store = make_memory_store(StoreOptions{});
  // (/dev/urandom is the CLI test's: read as a file, it never ends.)
  for (const std::string path : {"/dev/null", "/tmp"}) {
    auto refused = import_pi_session(*store, path);
    ASSERT_FALSE(refused) << path;
    EXPECT_EQ(refused.error().code, "invalid_argument") << path;
    EXPECT_NE(refused.error().message.find("not a regular file"), std::string::npos) << refused.error().message;
  }
}

TEST(PiImport, HeaderRecordsWhereTheSessionCameFrom) {
  auto imported = import_fixture("v3_session.jsonl");
  ASSERT_TRUE(imported.result.session);
  const SessionHeader& header = imported.result.session->header();
  EXPECT_EQ(header.cwd, "/home/dev/parser");
  EXPECT_NE(header.id, "5f0c2a4e-1b2c-4d3e-8f9a-0b1c2d3e4f50");  // a fresh cairn id
  ASSERT_TRUE(header.extra.contains("importedFrom"));
  const Json& from = header.extra["importedFrom"];
  EXPECT_EQ(from["format"], "pi");
  EXPECT_EQ(from["id"], "5f0c2a4e-1b2c-4d3e-8f9a-0b1c2d3e4f50");
  EXPECT_EQ(from["path"], fixture("v3_session.jsonl"));
  EXPECT_EQ(from["timestamp"], "2025-12-01T09:00:00.000Z");
}

}  // namespace
}  // namespace cairn
