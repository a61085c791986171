// One conformance suite, run unchanged against every backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <thread>

#include "cairn/store/store.hpp"
#include "support/follow_reader.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using testing::assistant_entry;
using testing::harness;
using testing::snapshot_reads;
using testing::TempDir;
using testing::tool_result_entry;
using testing::tree;
using testing::user_entry;

class StoreConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    store_ = make();
    ASSERT_NE(store_, nullptr);
  }
  std::unique_ptr<Store> make(SyncPolicy sync = SyncPolicy::none) {
    std::string uri = GetParam();
    if (uri == "jsonl") uri = "jsonl:" + dir_.str() + "/sessions";
    if (uri == "sqlite") uri = "sqlite:" + dir_.str() + "/sessions.db";
    if (uri == "postgres") {
      // One database per test; a second store of the same test shares it.
      if (database_.empty()) {
        std::string why;
        auto* cluster = testing::PgCluster::shared(&why);
        if (cluster) database_ = cluster->new_database(&why);
        if (database_.empty()) {
          ADD_FAILURE() << why;
          return nullptr;
        }
      }
      uri = database_;
    }
    auto store = open_store(uri, StoreOptions{sync});
    EXPECT_TRUE(store.has_value()) << store.error().message;
    return std::move(*store);
  }
  std::shared_ptr<Session> create(std::string id = {}) {
    CreateOptions options;
    options.cwd = "/work/project";
    if (!id.empty()) options.id = id;
    auto session = store_->create(options);
    EXPECT_TRUE(session.has_value()) << session.error().message;
    return *session;
  }
  // Closes the session and opens it again, as a restart would.
  std::shared_ptr<Session> reopen(std::shared_ptr<Session>& session, OpenOptions options = {}) {
    const std::string id = session->id();
    session.reset();
    auto opened = store_->open(id, options);
    EXPECT_TRUE(opened.has_value()) << opened.error().message;
    return *opened;
  }

  TempDir dir_;
  std::string database_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreConformance, CreateListOpenRemove) {
  auto a = create("session-a");
  auto b = create("session-b");
  EXPECT_EQ(a->header().cwd, "/work/project");
  EXPECT_EQ(a->header().version, kLogFormatVersion);
  auto listed = store_->list();
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ(store_->create(CreateOptions{.id = "session-a"}).error().code, "already_exists");
  EXPECT_EQ(store_->open("nope").error().code, "not_found");
  EXPECT_EQ(*store_->resolve_id("session-a"), "session-a");
  EXPECT_EQ(store_->resolve_id("session-").error().code, "ambiguous_id");
  EXPECT_EQ(store_->resolve_id("x").error().code, "not_found");
  b.reset();
  ASSERT_TRUE(store_->remove("session-b"));
  EXPECT_EQ(store_->list()->size(), 1u);
  EXPECT_EQ(store_->open("session-b").error().code, "not_found");
}

// One rule for session ids in every store: a session made in memory (as
// import and fork do first) must be one every store can hold.
TEST_P(StoreConformance, EveryStoreRefusesTheSameSessionIds) {
  for (const std::string& id : std::vector<std::string>{"bad id", "", ".hidden", "a/b", "a\nb", std::string(129, 'x')}) {
    auto created = store_->create(CreateOptions{.id = id});
    ASSERT_FALSE(created) << "'" << id << "' was accepted";
    EXPECT_EQ(created.error().code, "invalid_argument") << id;
    EXPECT_NE(created.error().message.find("not a valid session id"), std::string::npos) << created.error().message;
  }
  for (const std::string& id : std::vector<std::string>{"a", "A-b_c.d", std::string(128, 'y'), "01a2327c-ed59-7a09-a414-8a779a6175f1"}) {
    EXPECT_TRUE(store_->create(CreateOptions{.id = id})) << id;
  }
  EXPECT_EQ(store_->list()->size(), 4u);
}

// Import and fork build a session in memory, then hand its header and lines
// to the store in one step: stored byte for byte, never over another session.
TEST_P(StoreConformance, CreateWithLogStoresTheLinesByteForByte) {
  auto scratch_store = make_memory_store(StoreOptions{});
  auto scratch = scratch_store->create(CreateOptions{.id = "whole", .cwd = "/work/whole"});
  ASSERT_TRUE(scratch) << scratch.error().message;
  ASSERT_TRUE((*scratch)->append({user_entry("hello", std::nullopt, "u1"), assistant_entry("hi", "u1", "a1"),
                                  harness(RefCreated{"side", "a1"}, "side"), user_entry("more", "a1", "u2", "side")}));
  const std::vector<LogLine> lines = (*scratch)->get_log().value();

  auto created = store_->create_with_log((*scratch)->header(), lines);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_FALSE((*created)->read_only());
  EXPECT_EQ((*created)->header().cwd, "/work/whole");
  EXPECT_EQ((*created)->leaf("side"), "u2");
  // Open for writing: it takes appends like any session.
  ASSERT_TRUE((*created)->append(user_entry("after", "u2", "u3", "side")));
  auto reopened = reopen(*created, OpenOptions{.read_only = true});
  const std::vector<LogLine> stored = reopened->get_log().value();
  ASSERT_EQ(stored.size(), lines.size() + 1);
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(stored[i].json, lines[i].json) << "seq " << i;

  // A taken id is refused and the session there is left as it was.
  auto again = store_->create_with_log((*scratch)->header(), lines);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, "already_exists");
  EXPECT_EQ(store_->open("whole", OpenOptions{.read_only = true}).value()->size(), static_cast<std::int64_t>(lines.size() + 1));
  SessionHeader bad = (*scratch)->header();
  bad.id = "bad id";
  EXPECT_EQ(store_->create_with_log(bad, lines).error().code, "invalid_argument");
  EXPECT_EQ(store_->list()->size(), 1u);
  if (GetParam() == "jsonl") {
    // Nothing but the session and its lock: no temporary file stays behind.
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path() / "sessions")) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"whole.jsonl", "whole.lock"}));
  }
}

TEST_P(StoreConformance, AppendAssignsContiguousSeqAndSurvivesReopen) {
  auto session = create();
  auto first = session->append({user_entry("hello", std::nullopt, "u1"), assistant_entry("hi", "u1", "a1")});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->first_seq, 0);
  EXPECT_EQ(first->count, 2);
  auto second = session->append(user_entry("more", "a1", "u2"));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->first_seq, 2);
  const Json before = snapshot_reads(*session);
  auto reopened = reopen(session);
  EXPECT_EQ(snapshot_reads(*reopened), before);
  auto log = reopened->get_log().value();
  ASSERT_EQ(log.size(), 3u);
  for (std::size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].seq, static_cast<std::int64_t>(i));
  EXPECT_EQ(reopened->leaf(), "u2");
  auto entry = reopened->get_entry("a1").value();
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->parent_id, "u1");
  EXPECT_EQ(std::get<AssistantMessage>(std::get<MessageBody>(entry->body).message).model, "faux-1");
}

TEST_P(StoreConformance, RejectedBatchWritesNothing) {
  auto session = create();
  ASSERT_TRUE(session->append(user_entry("hello", std::nullopt, "u1")));
  struct Case {
    std::vector<Record> batch;
    std::string code;
  };
  std::vector<Case> cases;
  cases.push_back({{user_entry("ok", "u1", "u2"), user_entry("dup", "u2", "u1")}, "duplicate_id"});
  cases.push_back({{user_entry("ok", "u1", "u3"), user_entry("orphan", "ghost", "u4")}, "unknown_parent"});
  cases.push_back({{user_entry("ok", "u1", "u5", "nobody")}, "unknown_ref"});
  cases.push_back({{harness(OperationFinished{"run-x", OperationOutcome::completed, std::nullopt})}, "operation_not_open"});
  cases.push_back({{harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "op1"),
                    harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "op2")},
                   "operation_open"});
  cases.push_back({{harness(RefDeleted{"main"})}, "invalid_record"});
  cases.push_back({{tree(Label{"ghost", "x"}, "u1")}, "unknown_parent"});
  cases.push_back({{harness(GenerationStarted{"r", GenerationPurpose::step, 0, ModelRef{"p", "m"}})}, "invalid_record"});
  Record nan = tree(Custom{"state", Json(std::nan(""))}, "u1");
  cases.push_back({{std::move(nan)}, "invalid_record"});
  for (Case& c : cases) {
    auto result = session->append(std::move(c.batch));
    ASSERT_FALSE(result) << "expected " << c.code;
    EXPECT_EQ(result.error().code, c.code) << result.error().message;
    EXPECT_EQ(session->size(), 1);
  }
  EXPECT_EQ(session->append_json({Json{{"type", "mystery"}, {"id", "m1"}}}).error().code, "unknown_type");
  auto reopened = reopen(session);
  EXPECT_EQ(reopened->size(), 1);
  EXPECT_EQ(reopened->leaf(), "u1");
}

TEST_P(StoreConformance, IgnorableUnknownTypesAreKeptAndSkipped) {
  auto session = create();
  ASSERT_TRUE(session->append(user_entry("hello", std::nullopt, "u1")));
  ASSERT_TRUE(session->append_json({Json{{"type", "x-metrics"}, {"ignorable", true}, {"tokens", 12}}}));
  ASSERT_TRUE(session->append(user_entry("again", "u1", "u2")));
  auto reopened = reopen(session);
  ASSERT_EQ(reopened->size(), 3);
  EXPECT_EQ(reopened->get_log().value()[1].type, RecordType::ignorable);
  EXPECT_EQ(Json::parse(reopened->get_log().value()[1].json)["tokens"], 12);
  EXPECT_EQ(reopened->build_context()->messages.size(), 2u);
}

TEST_P(StoreConformance, RefsSharingAnAnchorAreNeverConfused) {
  auto session = create();
  ASSERT_TRUE(session->append({user_entry("root", std::nullopt, "a"), assistant_entry("ok", "a", "b")}));
  ASSERT_TRUE(session->append({harness(RefCreated{"slack:1", "b"}, "slack:1"), harness(RefCreated{"slack:2", "b"}, "slack:2")}));
  ASSERT_TRUE(session->append(user_entry("thread one", "b", "t1", "slack:1")));
  ASSERT_TRUE(session->append(user_entry("thread two", "b", "t2", "slack:2")));
  ASSERT_TRUE(session->append(user_entry("main goes on", "b", "m1", "main")));
  auto check = [](const Session& s) {
    EXPECT_EQ(s.leaf("main"), "m1");
    EXPECT_EQ(s.leaf("slack:1"), "t1");
    EXPECT_EQ(s.leaf("slack:2"), "t2");
    EXPECT_EQ(s.build_context("slack:1")->messages.size(), 3u);
    EXPECT_EQ(s.path_to(s.leaf("slack:2")), (std::vector<std::string>{"a", "b", "t2"}));
  };
  check(*session);
  auto reopened = reopen(session);
  check(*reopened);
  // Navigation moves one ref only.
  ASSERT_TRUE(reopened->append(tree(Leaf{"a"}, "t1", "n1", "slack:1")));
  EXPECT_EQ(reopened->leaf("slack:1"), "a");
  EXPECT_EQ(reopened->leaf("slack:2"), "t2");
  EXPECT_EQ(reopened->append(harness(RefCreated{"slack:1", std::nullopt}, "slack:1")).error().code, "ref_exists");
  ASSERT_TRUE(reopened->append(harness(RefDeleted{"slack:2"}, "slack:2")));
  EXPECT_FALSE(reopened->leaf("slack:2"));
  EXPECT_EQ(reopened->append(user_entry("late", "t2", "z", "slack:2")).error().code, "unknown_ref");
}

TEST_P(StoreConformance, OneOpenOperationPerRef) {
  auto session = create();
  ASSERT_TRUE(session->append(harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "op1")));
  ASSERT_TRUE(session->append(harness(GenerationStarted{"op1", GenerationPurpose::step, 1, ModelRef{"faux", "faux-1"}})));
  EXPECT_EQ(session->append(harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "op2")).error().code,
            "operation_open");
  ASSERT_TRUE(session->append(harness(RefCreated{"other", std::nullopt}, "other")));
  ASSERT_TRUE(session->append(harness(OperationStarted{std::nullopt, RunIntent{}}, "other", "op3")));
  EXPECT_EQ(session->append(harness(RefDeleted{"other"}, "other")).error().code, "operation_open");
  EXPECT_EQ(session->append(harness(GenerationStarted{"op1", GenerationPurpose::step, 1, ModelRef{"f", "m"}}, "other")).error().code,
            "operation_not_open");
  auto reopened = reopen(session);
  auto refs = reopened->refs();
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].open_operation, "op1");
  EXPECT_EQ(refs[1].open_operation, "op3");
  ASSERT_TRUE(reopened->append(harness(OperationFinished{"op1", OperationOutcome::completed, std::nullopt})));
  EXPECT_FALSE(reopened->refs()[0].open_operation);
  auto runs = reopened->find_harness_entries({.run_id = "op1"});
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->items.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<OperationStarted>(runs->items[0].body));
  EXPECT_TRUE(std::holds_alternative<OperationFinished>(runs->items[2].body));
  auto others = reopened->find_harness_entries({.ref = "other"});
  EXPECT_EQ(others->items.size(), 2u);
}

TEST_P(StoreConformance, QueriesPageAndBound) {
  auto session = create();
  std::optional<std::string> parent;
  for (int i = 0; i < 10; ++i) {
    const std::string id = "m" + std::to_string(i);
    ASSERT_TRUE(session->append(i % 2 ? assistant_entry("a", parent, id) : user_entry("u", parent, id)));
    parent = id;
    if (i == 4) {
      ASSERT_TRUE(session->append(tree(Custom{"bookmark", Json{{"i", i}}}, parent, "c1")));
      parent = "c1";
    }
  }
  // Session-wide, newest first by default, paged.
  std::vector<std::string> seen;
  EntryQuery query{.limit = 4};
  for (int pages = 0;; ++pages) {
    auto page = session->find_entries(query);
    ASSERT_TRUE(page);
    for (const auto& entry : page->items) seen.push_back(entry.id);
    if (!page->next_cursor) break;
    query.cursor = page->next_cursor;
    ASSERT_LT(pages, 10);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"m9", "m8", "m7", "m6", "m5", "c1", "m4", "m3", "m2", "m1", "m0"}));
  auto customs = session->find_entries({.type = RecordType::custom, .custom_type = "bookmark"});
  ASSERT_EQ(customs->items.size(), 1u);
  EXPECT_EQ(customs->items[0].id, "c1");
  // Branch-scoped with bounds.
  auto bounded = session->find_entries_on_branch({}, {.start = "m7", .stop_at_type = RecordType::custom});
  ASSERT_TRUE(bounded);
  std::vector<std::string> ids;
  for (const auto& entry : bounded->items) ids.push_back(entry.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"m7", "m6", "m5", "c1"}));
  auto to_id = session->find_entries_on_branch({.order = Order::oldest_first}, {.stop_at_id = "m8"});
  ASSERT_EQ(to_id->items.size(), 2u);
  EXPECT_EQ(to_id->items[0].id, "m8");
  auto paged = session->find_entries_on_branch({.limit = 3}, {});
  ASSERT_TRUE(paged->next_cursor);
  auto rest = session->find_entries_on_branch({.cursor = paged->next_cursor}, {});
  EXPECT_EQ(rest->items.front().id, "m6");
  EXPECT_EQ(rest->items.size(), 8u);
  // The log, after a seq, limited.
  auto log = session->get_log(3, 2).value();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].seq, 4);
  EXPECT_EQ(session->get_log(-5, 1).value().front().seq, 0);
  EXPECT_EQ(session->get_log(9).value().size(), 1u);
  EXPECT_TRUE(session->get_log(10).value().empty());
  EXPECT_TRUE(session->get_log(std::numeric_limits<std::int64_t>::max()).value().empty());
  EXPECT_EQ(session->get_log(-1, std::numeric_limits<std::size_t>::max()).value().size(), 11u);
  EXPECT_EQ(session->children("m4"), (std::vector<std::string>{"c1"}));
  const SessionStats stats = session->stats().value();
  EXPECT_EQ(stats.records, 11);
  EXPECT_EQ(stats.by_type.at("message"), 10);
}

TEST_P(StoreConformance, ContextAppliesCompactionAndSummaries) {
  auto session = create();
  ASSERT_TRUE(session->append({
      user_entry("first", std::nullopt, "u1"),
      assistant_entry("reply", "u1", "a1", {ToolCall{.id = "call1", .name = "read", .arguments = Json{{"path", "x"}}}}),
      tool_result_entry("call1", "read", "contents", "a1", "r1"),
      tree(ModelChange{"anthropic", "claude-sonnet-4-5"}, "r1", "mc"),
      user_entry("second", "mc", "u2"),
      tree(Compaction{"summary of the start", "u2", 5000, std::nullopt, std::nullopt}, "u2", "cp"),
      tree(CustomMessageBody{"note", std::string("remember"), std::nullopt, true}, "cp", "cm"),
      tree(Custom{"state", Json{{"x", 1}}}, "cm", "cs"),
      tree(BranchSummary{"u1", "tried another way", std::nullopt, std::nullopt}, "cs", "bs"),
      tree(ThinkingLevelChange{ThinkingLevel::high}, "bs", "tl"),
  }));
  auto context = session->build_context();
  ASSERT_TRUE(context) << context.error().message;
  ASSERT_EQ(context->messages.size(), 4u);
  EXPECT_EQ(context->entry_ids, (std::vector<std::string>{"cp", "u2", "cm", "bs"}));
  EXPECT_TRUE(std::holds_alternative<CompactionSummaryMessage>(context->messages[0]));
  EXPECT_EQ(std::get<CompactionSummaryMessage>(context->messages[0]).tokens_before, 5000);
  EXPECT_TRUE(std::holds_alternative<CustomMessage>(context->messages[2]));
  EXPECT_TRUE(std::holds_alternative<BranchSummaryMessage>(context->messages[3]));
  EXPECT_EQ(context->thinking_level, ThinkingLevel::high);
  ASSERT_TRUE(context->model);
  EXPECT_EQ(context->model->model_id, "claude-sonnet-4-5");
  auto llm = convert_to_llm(context->messages);
  ASSERT_EQ(llm.size(), 4u);
  for (const auto& message : llm) EXPECT_TRUE(std::holds_alternative<UserMessage>(message));
  const auto& summary = std::get<std::vector<UserBlock>>(std::get<UserMessage>(llm[0]).content);
  EXPECT_EQ(std::get<TextContent>(summary[0]).text,
            std::string(kCompactionSummaryPrefix) + "summary of the start" + kCompactionSummarySuffix);
  // Before the compaction, everything projects.
  auto earlier = session->build_context_at("mc");
  ASSERT_EQ(earlier->messages.size(), 3u);
  EXPECT_EQ(earlier->model->model_id, "claude-sonnet-4-5");
  EXPECT_EQ(session->build_context_at("a1")->model->model_id, "faux-1");
}

TEST_P(StoreConformance, ForkBranchBeforeAtAndTree) {
  auto session = create("source");
  ASSERT_TRUE(session->append({user_entry("a", std::nullopt, "a"), assistant_entry("b", "a", "b"),
                               user_entry("c", "b", "c"), user_entry("c2", "b", "c2", "main")}));
  ASSERT_TRUE(session->append({harness(RefCreated{"side", "c"}, "side"), user_entry("d", "c", "d", "side")}));
  ASSERT_TRUE(session->append(harness(OperationStarted{std::nullopt, RunIntent{}}, "main", "op")));
  session.reset();

  auto at = store_->fork("source", {.entry_id = "c", .position = ForkOptions::Position::at, .id = "fork-at"});
  ASSERT_TRUE(at) << at.error().message;
  EXPECT_EQ(at->session->header().parent_session, "source");
  EXPECT_EQ(at->session->path_to(at->session->leaf()), (std::vector<std::string>{"a", "b", "c"}));
  auto before = store_->fork("source", {.entry_id = "c", .position = ForkOptions::Position::before, .id = "fork-before"});
  ASSERT_TRUE(before);
  EXPECT_EQ(before->session->leaf(), "b");
  auto side = store_->fork("source", {.ref = "side", .id = "fork-side"});
  ASSERT_TRUE(side);
  EXPECT_EQ(side->session->path_to(side->session->leaf()), (std::vector<std::string>{"a", "b", "c", "d"}));
  auto whole = store_->fork("source", {.scope = ForkOptions::Scope::tree, .id = "fork-tree"});
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->session->leaf("main"), "c2");
  EXPECT_EQ(whole->session->leaf("side"), "d");
  EXPECT_EQ(whole->session->stats().value().harness_records, 1);  // ref_created only; the open operation stays behind
  EXPECT_EQ(store_->fork("source", {.entry_id = "ghost"}).error().code, "not_found");
}

TEST_P(StoreConformance, AForkCopiesOnlyClosedHistoryAndSaysSo) {
  auto session = create("busy");
  ASSERT_TRUE(session->append({user_entry("a", std::nullopt, "a"), assistant_entry("b", "a", "b"),
                               user_entry("c", "b", "c")}));
  ASSERT_TRUE(session->append({harness(RefCreated{"side", "b"}, "side")}));
  // main's run is still going: it has appended e and f; side appended d
  // meanwhile, and a ref was created on f.
  ASSERT_TRUE(session->append(harness(OperationStarted{"c", RunIntent{}}, "main", "run1")));
  ASSERT_TRUE(session->append({user_entry("e", "c", "e", "main"), user_entry("d", "b", "d", "side"),
                               assistant_entry("f", "e", "f", {}, "main")}));
  ASSERT_TRUE(session->append(harness(RefCreated{"late", "f"}, "late")));
  session.reset();

  auto branch = store_->fork("busy", {.id = "busy-branch"});
  ASSERT_TRUE(branch) << branch.error().message;
  EXPECT_EQ(branch->session->path_to(branch->session->leaf()), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(branch->left_out.size(), 1u);
  EXPECT_NE(branch->left_out[0].find("ref main: run run1"), std::string::npos) << branch->left_out[0];

  auto whole = store_->fork("busy", {.scope = ForkOptions::Scope::tree, .id = "busy-tree"});
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->session->leaf("main"), "c");
  EXPECT_EQ(whole->session->leaf("side"), "d");  // another ref's closed work is copied
  EXPECT_EQ(whole->session->leaf("late"), "c");  // anchored at the nearest copied ancestor
  EXPECT_FALSE(whole->session->get_entry("e").value());
  EXPECT_FALSE(whole->session->get_entry("f").value());
  EXPECT_EQ(whole->left_out, branch->left_out);

  // A closed point is copied whole, and a source with nothing open says nothing.
  auto closed = store_->fork("busy", {.entry_id = "d", .id = "busy-side"});
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->session->path_to(closed->session->leaf()), (std::vector<std::string>{"a", "b", "d"}));
  auto again = store_->fork("busy-tree", {.scope = ForkOptions::Scope::tree, .id = "quiet"});
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->left_out.empty());
}

TEST_P(StoreConformance, ConcurrentAppendsShareTheLog) {
  auto session = create();
  constexpr int kThreads = 8, kPerThread = 50;
  ASSERT_TRUE(session->append(user_entry("root", std::nullopt, "root")));
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(session->append(harness(RefCreated{"r" + std::to_string(t), "root"}, "r" + std::to_string(t))));
  }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::optional<std::string> parent = "root";
      const std::string ref = "r" + std::to_string(t);
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = ref + "-" + std::to_string(i);
        if (!session->append(user_entry("x", parent, id, ref))) ++failures;
        parent = id;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  auto reopened = reopen(session);
  EXPECT_EQ(reopened->size(), 1 + kThreads + kThreads * kPerThread);
  for (int t = 0; t < kThreads; ++t) {
    const std::string ref = "r" + std::to_string(t);
    EXPECT_EQ(reopened->leaf(ref), ref + "-" + std::to_string(kPerThread - 1));
    EXPECT_EQ(reopened->path_to(reopened->leaf(ref)).size(), static_cast<std::size_t>(kPerThread + 1));
  }
}

TEST_P(StoreConformance, OneWriterAtATime) {
  auto session = create("held");
  auto second = store_->open("held");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, "locked");
  EXPECT_NE(second.error().message.find("held"), std::string::npos);
  auto reader = store_->open("held", {.read_only = true});
  ASSERT_TRUE(reader);
  EXPECT_EQ((*reader)->append(user_entry("x", std::nullopt)).error().code, "read_only");
  // Breaking the lock makes the old writer stale: it appends nothing more.
  auto taker = store_->open("held", {.break_lock = true});
  ASSERT_TRUE(taker) << taker.error().message;
  auto stale = session->append(user_entry("from the old writer", std::nullopt, "old"));
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, "stale_writer");
  ASSERT_TRUE((*taker)->append(user_entry("from the new writer", std::nullopt, "new")));
  session.reset();
  taker->reset();
  auto check = store_->open("held", {.read_only = true});
  ASSERT_TRUE(check);
  ASSERT_EQ((*check)->size(), 1);
  EXPECT_TRUE((*check)->get_entry("new").value());
  EXPECT_FALSE((*check)->get_entry("old").value());
}

TEST_P(StoreConformance, LockTimeoutWaitsForTheHolder) {
  auto session = create("waited");
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    session.reset();
  });
  auto opened = store_->open("waited", {.lock_timeout = std::chrono::milliseconds(5000)});
  releaser.join();
  ASSERT_TRUE(opened) << opened.error().message;
}

TEST_P(StoreConformance, NamesAndLabelsAreLatestWins) {
  auto session = create();
  ASSERT_TRUE(session->append({user_entry("a", std::nullopt, "a"), tree(SessionInfo{"first"}, "a", "n1"),
                               tree(Label{"a", "start"}, "n1", "l1"), tree(SessionInfo{"second"}, "l1", "n2"),
                               tree(Label{"a", std::nullopt}, "n2", "l2")}));
  EXPECT_EQ(session->name().value(), "second");
  EXPECT_FALSE(session->label("a").value());
  ASSERT_TRUE(session->append(tree(Label{"a", "again"}, "l2", "l3")));
  EXPECT_EQ(session->label("a").value(), "again");
}

// A watcher elsewhere (another store on the same URI: another process, or on
// PostgreSQL another machine) follows a session a writer appends to: every
// record, in seq order, byte for byte, woken by the writer's announcements
// or by its own poll.
TEST_P(StoreConformance, AFollowerElsewhereReadsEveryRecordTheWriterAppends) {
  auto session = create("followed");
  std::unique_ptr<Store> other = GetParam() == "memory:" ? nullptr : make();  // a memory store is this process's alone
  Store& follower = other ? *other : *store_;
  testing::FollowReader reader(follower, "followed");
  auto follow = follower.follow("followed", std::chrono::milliseconds(100), [&] { reader.changed(); });
  ASSERT_TRUE(follow) << follow.error().message;
  std::optional<std::string> parent;
  for (int i = 0; i < 10; ++i) {
    auto appended = session->append(user_entry(fmt::format("message {}", i), parent));
    ASSERT_TRUE(appended) << appended.error().message;
    parent = session->leaf();
  }
  ASSERT_TRUE(reader.wait_for(10, std::chrono::seconds(10))) << reader.error();
  const auto written = session->get_log().value();
  const auto seen = reader.lines();
  ASSERT_EQ(seen.size(), written.size());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].seq, static_cast<std::int64_t>(i));
    EXPECT_EQ(seen[i].type, written[i].type);
    EXPECT_EQ(seen[i].json, written[i].json) << "seq " << i;
  }
  auto missing = follower.read_log("nobody", -1, 10);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
  EXPECT_FALSE(follower.follow("followed", std::chrono::milliseconds(0), [] {}));
}

// A log's stamp stays while the log does and moves when it grows, seen from
// the writer's store and from another on the same data.
TEST_P(StoreConformance, ALogsStampMovesWhenItsLogGrows) {
  auto session = create("stamped");
  std::unique_ptr<Store> other = GetParam() == "memory:" ? nullptr : make();
  Store& reader = other ? *other : *store_;
  auto before = reader.log_stamp("stamped");
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_EQ(reader.log_stamp("stamped").value(), *before);
  ASSERT_TRUE(session->append(user_entry("hello", std::nullopt, "u1")));
  auto grown = reader.log_stamp("stamped");
  ASSERT_TRUE(grown) << grown.error().message;
  EXPECT_NE(*grown, *before);
  EXPECT_EQ(reader.log_stamp("stamped").value(), *grown);
  ASSERT_TRUE(session->append(assistant_entry("hi", "u1", "a1")));
  EXPECT_NE(reader.log_stamp("stamped").value(), *grown);
  EXPECT_EQ(reader.log_stamp("nobody").error().code, "not_found");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance, ::testing::Values("memory:", "jsonl", "sqlite", "postgres"),
                         [](const auto& info) {
                           std::string name = info.param;
                           return name == "memory:" ? std::string("memory") : name;
                         });

}  // namespace
}  // namespace cairn
