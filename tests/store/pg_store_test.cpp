// What the PostgreSQL store adds to the conformance suite: secrets kept out of
// what it shows, the schema's version, the shape of the fenced append (and the
// interleaving that shows why), leases, and writers that survive a killed
// connection or a restarted server without losing or doubling a record.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "store/lease_holder.hpp"
#include "store/pg_conn.hpp"
#include "store/pg_medium.hpp"
#include "support/crash_record.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using testing::crash_record;
using testing::PgCluster;

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    cluster_ = PgCluster::shared(&why);
    ASSERT_NE(cluster_, nullptr) << why;
    uri_ = cluster_->new_database(&why);
    ASSERT_FALSE(uri_.empty()) << why;
  }
  std::unique_ptr<Store> open(std::chrono::milliseconds ttl = std::chrono::milliseconds(15000)) {
    auto store = open_store(uri_, {.sync = SyncPolicy::full, .lease_ttl = ttl});
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  pg::Connection connect() {
    auto connection = pg::Connection::connect(uri_);
    EXPECT_TRUE(connection) << connection.error().message;
    return std::move(*connection);
  }

  // Changes a record's bytes behind the store's back (a crash_record's
  // text): the session's open is then refused, naming the record's seq.
  void damage_and_expect_refusal(Store& store, const std::string& session, std::int64_t seq) {
    auto db = connect();
    ASSERT_TRUE(db.run(fmt::format("UPDATE cairn_records SET payload = replace(payload, 'quick', 'QUICK') "
                                   "WHERE session_id = '{}' AND seq = {}",
                                   session, seq)));
    auto refused = store.open(session);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, "corrupt_log");
    EXPECT_NE(refused.error().message.find(fmt::format("seq {}:", seq)), std::string::npos) << refused.error().message;
  }

  PgCluster* cluster_ = nullptr;
  std::string uri_;
};

TEST_F(PgStoreTest, TheStoreNeverShowsThePassword) {
  // Trust authentication ignores the password; a store opened with one must
  // still never show it.
  const auto name_at = uri_.find(":///") + 4;
  const std::string database = uri_.substr(name_at, uri_.find('?') - name_at);
  const std::string with_password =
      fmt::format("postgresql://cairn:s3cret-pw@/{}?host={}&port={}", database, cluster_->socket_dir(), cluster_->port());
  auto store = open_store(with_password, {});
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ((*store)->uri().find("s3cret"), std::string::npos) << (*store)->uri();
  auto missing = (*store)->open("no-such-session");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.find("s3cret"), std::string::npos) << missing.error().message;
  // A server that is not there: the error names the store, not the secret.
  for (const std::string& uri : {std::string("postgresql://u:s3cret-pw@/db?host=/nonexistent-dir&port=1"),
                                 std::string("postgres:///db?host=/nonexistent-dir&password=s3cret-pw&port=1")}) {
    auto refused = open_store(uri, {});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message.find("s3cret"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("nonexistent-dir"), std::string::npos) << refused.error().message;
  }
  EXPECT_EQ(pg::redact("postgresql://u:pw@h:5/db?password=x&sslmode=require"), "postgresql://u@h:5/db?sslmode=require");
  EXPECT_EQ(pg::redact("host=h password=x dbname=d"), "host=h dbname=d");
}

TEST_F(PgStoreTest, ADatabaseWithANewerSchemaIsRefused) {
  ASSERT_TRUE(open());
  auto db = connect();
  ASSERT_TRUE(db.run("UPDATE cairn_meta SET value = '99' WHERE key = 'schema_version'"));
  auto store = open_store(uri_, {});
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, "newer_version");
  EXPECT_NE(store.error().message.find("schema version 99"), std::string::npos) << store.error().message;
}

// The interleaving behind the append's shape. A writer of generation 1 runs
// its append statement; 150 ms into it, another writer's takeover (generation
// 2) commits; then the statement finishes (the pg_sleep stands for a slow
// network or a paused process).
//   - Fenced by a plain read of the generation (no row lock): the statement
//     read the row as it was when it began, and its stale record commits
//     after the takeover. This is the bug the append must not have.
//   - Fenced by an UPDATE of the session row guarded by generation and head,
//     as the store's append is: the UPDATE waits for the row, READ COMMITTED
//     re-checks the guard against the takeover's row, and nothing is inserted.
TEST_F(PgStoreTest, AnUnlockedFencedInsertCommitsAStaleRecordAndTheRowGuardedAppendDoesNot) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store).create({.id = "fenced", .cwd = "/w"}));
  auto takeover_midway = [&](const std::string& statement) -> std::int64_t {
    auto writer = connect();
    auto stealer = connect();
    EXPECT_TRUE(stealer.run("UPDATE cairn_sessions SET generation = 1, owner = 'old', head_seq = -1 WHERE id = 'fenced'"));
    std::int64_t inserted = -1;
    std::thread old_writer([&] {
      auto rows = writer.exec(statement);
      if (rows) inserted = rows->affected();
      else ADD_FAILURE() << rows.error().message;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    EXPECT_TRUE(stealer.run("UPDATE cairn_sessions SET generation = generation + 1, owner = 'new' WHERE id = 'fenced'"));
    old_writer.join();
    return inserted;
  };
  // Both statements fence on generation 1 and insert one record at seq 0.
  const std::int64_t unlocked = takeover_midway(
      "INSERT INTO cairn_records (session_id, seq, id, type, ref, run_id, payload) "
      "SELECT 'fenced', 0, 'stale', 'message', 'main', NULL, '{}' FROM cairn_sessions "
      "WHERE id = 'fenced' AND generation = 1 AND owner = 'old' AND pg_sleep(0.5) IS NOT NULL");
  EXPECT_EQ(unlocked, 1) << "the unlocked form was expected to commit a stale record";
  auto db = connect();
  ASSERT_TRUE(db.run("DELETE FROM cairn_records WHERE session_id = 'fenced'"));
  const std::int64_t guarded = takeover_midway(
      "WITH head AS (UPDATE cairn_sessions SET head_seq = 0 WHERE id = 'fenced' AND generation = 1 AND owner = 'old' "
      "AND head_seq = -1 AND pg_sleep(0.5) IS NOT NULL RETURNING 1) "
      "INSERT INTO cairn_records (session_id, seq, id, type, ref, run_id, payload) "
      "SELECT 'fenced', 0, 'stale', 'message', 'main', NULL, '{}' FROM head");
  EXPECT_EQ(guarded, 0);
  auto count = db.exec("SELECT count(*) FROM cairn_records WHERE session_id = 'fenced'");
  ASSERT_TRUE(count);
  EXPECT_EQ(count->int64(0, 0), 0);
}

TEST_F(PgStoreTest, ALeaseIsRenewedWhileHeldAndLetGoOnClose) {
  auto store = open(std::chrono::milliseconds(300));
  ASSERT_TRUE(store);
  auto session = store->create({.id = "leased", .cwd = "/w"});
  ASSERT_TRUE(session) << session.error().message;
  // Three lease lifetimes later it is still ours: renewed every 100 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  auto other = open(std::chrono::milliseconds(300));
  auto second = other->open("leased");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, "locked");
  EXPECT_NE(second.error().message.find(fmt::format("pid {}", ::getpid())), std::string::npos) << second.error().message;
  EXPECT_EQ(second.error().message.find('#'), std::string::npos) << "the owner's nonce is not for people";
  ASSERT_TRUE((*session)->append(crash_record("a", std::nullopt, "main")));
  session->reset();
  // Let go, not expired: the next writer takes it at once.
  auto third = other->open("leased");
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ((*third)->size(), 1);
}

TEST_F(PgStoreTest, AWriterWhoseLeaseWasTakenSaysWhichGenerationTookOver) {
  auto store = open();
  auto session = store->create({.id = "taken", .cwd = "/w"});
  ASSERT_TRUE(session);
  ASSERT_TRUE((*session)->append(crash_record("a", std::nullopt, "main")));
  auto other = open();
  auto taker = other->open("taken", {.break_lock = true});
  ASSERT_TRUE(taker) << taker.error().message;
  auto stale = (*session)->append(crash_record("b", "a", "main"));
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, "stale_writer");
  EXPECT_NE(stale.error().message.find("generation 2 took over"), std::string::npos) << stale.error().message;
  ASSERT_TRUE((*taker)->append(crash_record("c", "a", "main")));
}

// A damaged row (someone edited the table) refuses the session, naming the
// seq; repair keeps every intact record, puts a placeholder in the damaged
// one's place and keeps the original rows in cairn_repair_backups.
TEST_F(PgStoreTest, ADamagedRecordIsRefusedByNameAndRepairedWithABackup) {
  auto store = open();
  {
    auto session = store->create({.id = "damaged", .cwd = "/w"});
    ASSERT_TRUE(session);
    ASSERT_TRUE((*session)->append(crash_record("a", std::nullopt, "main")));
    ASSERT_TRUE((*session)->append(crash_record("b", "a", "main")));
    ASSERT_TRUE((*session)->append(crash_record("c", "b", "main")));
  }
  ASSERT_NO_FATAL_FAILURE(damage_and_expect_refusal(*store, "damaged", 1));
  auto db = connect();
  auto report = store->repair("damaged");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->records, 3);
  EXPECT_EQ(report->intact, 2);
  ASSERT_EQ(report->replaced.size(), 1u);
  ASSERT_TRUE(report->backup);
  auto kept = db.exec("SELECT count(*) FROM cairn_repair_backups WHERE session_id = 'damaged'");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->int64(0, 0), 3);
  auto reopened = store->open("damaged");
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_EQ((*reopened)->size(), 3);
  EXPECT_TRUE((*reopened)->get_entry("c").value());
  ASSERT_TRUE((*reopened)->append(crash_record("d", "c", "main")));
}

// The open reads the records a page at a time: a log of several pages opens
// whole, its tree linked across the pages' seams, and damage on a later page
// is named by its seq like damage on the first.
TEST_F(PgStoreTest, ALogOfManyPagesOpensWholeAndItsDamageIsNamedWhereverItIs) {
  auto store = open();
  constexpr int kRecords = 9000;  // over two of the open's pages (4096)
  {
    auto session = store->create({.id = "long", .cwd = "/w"});
    ASSERT_TRUE(session);
    std::vector<Record> batch;
    for (int i = 0; i < kRecords; ++i) {
      batch.push_back(crash_record(fmt::format("e{}", i), i == 0 ? std::nullopt : std::optional(fmt::format("e{}", i - 1)), "main"));
      if (batch.size() == 500) {
        ASSERT_TRUE((*session)->append(std::exchange(batch, {})));
      }
    }
  }
  {
    auto opened = store->open("long", OpenOptions{.read_only = true});
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ((*opened)->size(), kRecords);
    EXPECT_EQ((*opened)->leaf("main"), fmt::format("e{}", kRecords - 1));
    auto seam = (*opened)->get_entry("e4096");
    ASSERT_TRUE(seam && *seam);
    EXPECT_EQ((**seam).parent_id, "e4095");
    auto context = (*opened)->build_context("main");
    ASSERT_TRUE(context) << context.error().message;
    EXPECT_EQ(context->messages.size(), static_cast<std::size_t>(kRecords));
  }
  damage_and_expect_refusal(*store, "long", 8500);
}

// ---- the index columns (schema 3) ---------------------------------------------------

// A random log of at least `records` records, with every kind the
// generator makes (refs, labels, harness records, ignorable ones).
void append_random_log(Session& session, std::uint64_t seed, std::int64_t records) {
  testing::RandomLog generator(seed);
  while (generator.appended() < records) {
    auto appended = session.append(generator.next_batch());
    ASSERT_TRUE(appended) << "at seq " << generator.appended() << ": " << appended.error().message;
  }
}

// Sessions longer than this are opened from their columns (a session of one
// page of the open's reads is read whole).
constexpr std::int64_t kOnePage = 4096;

// The index columns of every row of `session`, as text, in seq order.
std::vector<std::string> index_columns(pg::Connection& db, const std::string& session) {
  auto rows = db.exec(fmt::format("SELECT seq, type, id, parent_id, ref, run_id, target_id, name, custom_type, role "
                                  "FROM cairn_records WHERE session_id = '{}' ORDER BY seq",
                                  session));
  EXPECT_TRUE(rows) << rows.error().message;
  std::vector<std::string> out;
  for (int row = 0; rows && row < rows->size(); ++row) {
    std::string text;
    for (int column = 0; column < 10; ++column) {
      text += rows->is_null(row, column) ? std::string("NULL") : fmt::format("'{}'", rows->text(row, column));
      text += ' ';
    }
    out.push_back(std::move(text));
  }
  return out;
}

// A read-only open reads the index columns alone: a payload is read when a
// query needs it, and checked then. Damage behind the store's back is named
// by the query that meets it, and the open for writing, which checks every
// payload, refuses the session.
TEST_F(PgStoreTest, AReadOnlyOpenReadsThePayloadsAQueryNeedsAndChecksThemThen) {
  auto store = open();
  auto db = connect();
  // A random log reads back as it was written.
  for (const std::uint64_t seed : {14}) {
    const std::string id = fmt::format("random-{}", seed);
    Json whole;
    {
      auto session = store->create({.id = id, .cwd = "/w"});
      ASSERT_TRUE(session);
      ASSERT_NO_FATAL_FAILURE(append_random_log(**session, seed, kOnePage + 500));
      whole = testing::snapshot_reads(**session);
    }
    auto opened = store->open(id, {.read_only = true});
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(testing::snapshot_reads(**opened), whole) << "seed " << seed;
  }
  Json whole;
  {
    auto session = store->create({.id = "narrow", .cwd = "/w"});
    ASSERT_TRUE(session);
    ASSERT_NO_FATAL_FAILURE(append_random_log(**session, 11, kOnePage + 500));
    whole = testing::snapshot_reads(**session);
  }
  auto unindexed = db.exec("SELECT count(*) FROM cairn_records WHERE session_id = 'narrow' AND NOT indexed");
  ASSERT_TRUE(unindexed && unindexed->size() == 1);
  EXPECT_EQ(unindexed->int64(0, 0), 0) << "every row this build writes has its columns";
  {
    auto opened = store->open("narrow", {.read_only = true});
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(testing::snapshot_reads(**opened), whole);
  }
  // A tree entry's payload damaged: the open that reads only columns takes
  // the session; the read of that entry names it.
  auto entry = db.exec("SELECT seq, id FROM cairn_records WHERE session_id = 'narrow' AND type = 'message' "
                       "ORDER BY seq DESC LIMIT 1");
  ASSERT_TRUE(entry && entry->size() == 1);
  const std::int64_t seq = entry->int64(0, 0);
  const std::string id(entry->text(0, 1));
  ASSERT_TRUE(db.run(fmt::format("UPDATE cairn_records SET payload = replace(payload, '\"role\"', '\"Role\"') "
                                 "WHERE session_id = 'narrow' AND seq = {}",
                                 seq)));
  auto opened = store->open("narrow", {.read_only = true});
  ASSERT_TRUE(opened) << opened.error().message;
  auto read = (*opened)->get_entry(id);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, "corrupt_log");
  EXPECT_NE(read.error().message.find(fmt::format("seq {}", seq)), std::string::npos) << read.error().message;
  opened->reset();
  auto refused = store->open("narrow");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "corrupt_log");
  EXPECT_NE(refused.error().message.find(fmt::format("seq {}:", seq)), std::string::npos) << refused.error().message;
}

// A database of schema 2 (no index columns) is upgraded when a store opens
// it, at once whatever it holds: its rows are read from their payloads
// until their session's first open for writing gives them their columns,
// which are then those an append writes.
TEST_F(PgStoreTest, RowsWrittenWithoutTheirColumnsAreReadFromTheirPayloadsAndGainThemAtAWritableOpen) {
  Json whole;
  std::vector<std::string> written;
  {
    auto store = open();
    auto session = store->create({.id = "old", .cwd = "/w"});
    ASSERT_TRUE(session);
    ASSERT_NO_FATAL_FAILURE(append_random_log(**session, 12, kOnePage + 500));
    whole = testing::snapshot_reads(**session);
  }
  {
    auto db = connect();
    written = index_columns(db, "old");
    ASSERT_GT(written.size(), static_cast<std::size_t>(kOnePage));
    // Back to schema 2, as a build of then left it.
    ASSERT_TRUE(db.run("ALTER TABLE cairn_records DROP COLUMN parent_id, DROP COLUMN target_id, DROP COLUMN name, "
                       "DROP COLUMN custom_type, DROP COLUMN role, DROP COLUMN indexed"));
    ASSERT_TRUE(db.run("UPDATE cairn_meta SET value = '2' WHERE key = 'schema_version'"));
  }
  auto store = open();
  auto db = connect();
  auto version = db.exec("SELECT value FROM cairn_meta WHERE key = 'schema_version'");
  ASSERT_TRUE(version && version->size() == 1);
  EXPECT_EQ(version->text(0, 0), "3");
  EXPECT_NE(index_columns(db, "old"), written) << "the upgrade fills no row";
  {
    auto opened = store->open("old", {.read_only = true});
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(testing::snapshot_reads(**opened), whole);
  }
  EXPECT_NE(index_columns(db, "old"), written) << "a read-only open writes nothing";
  {
    auto opened = store->open("old");
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(testing::snapshot_reads(**opened), whole);
  }
  EXPECT_EQ(index_columns(db, "old"), written);
  auto unindexed = db.exec("SELECT count(*) FROM cairn_records WHERE session_id = 'old' AND NOT indexed");
  ASSERT_TRUE(unindexed && unindexed->size() == 1);
  EXPECT_EQ(unindexed->int64(0, 0), 0);
  {
    auto opened = store->open("old", {.read_only = true});
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(testing::snapshot_reads(**opened), whole);
  }
  // A process of the older build still running when the database was
  // upgraded appends rows without their columns: they are read from their
  // payloads among the others, and given their columns at the next open
  // for writing.
  ASSERT_TRUE(db.run("UPDATE cairn_records SET indexed = false, parent_id = NULL, target_id = NULL, name = NULL, "
                     "custom_type = NULL, role = NULL WHERE session_id = 'old' AND seq % 7 = 3"));
  {
    auto opened = store->open("old", {.read_only = true});
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(testing::snapshot_reads(**opened), whole);
  }
  {
    auto opened = store->open("old");
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(testing::snapshot_reads(**opened), whole);
  }
  EXPECT_EQ(index_columns(db, "old"), written);
}

// One append of more records than a statement has parameters for (65,535;
// eleven a record): each column goes as one array, quotes, backslashes and
// all, and the records are those a memory store holds.
TEST_F(PgStoreTest, AnAppendOfThousandsOfRecordsLandsWholeInOneStatement) {
  auto store = open();
  auto memory = make_memory_store({SyncPolicy::none});
  auto session = store->create({.id = "big", .cwd = "/w"});
  auto expected = memory->create({.id = "big", .cwd = "/w"});
  ASSERT_TRUE(session && expected);
  testing::RandomLog generator(13);
  std::vector<Record> batch;
  while (batch.size() < 7000) {
    for (Record& record : generator.next_batch()) batch.push_back(std::move(record));
  }
  // Index columns that need quoting in an array: every custom type.
  int customs = 0;
  for (Record& record : batch) {
    auto* entry = std::get_if<TreeEntry>(&record.body);
    if (auto* custom = entry ? std::get_if<CustomMessageBody>(&entry->body) : nullptr) {
      custom->custom_type = "a \"quoted\" \\ type, {braces}, NULL and é";
      ++customs;
    }
  }
  ASSERT_GT(customs, 0);
  ASSERT_TRUE((*expected)->append(batch));
  auto appended = (*session)->append(batch);
  ASSERT_TRUE(appended) << appended.error().message;
  const Json whole = testing::snapshot_reads(**expected);
  EXPECT_EQ(testing::snapshot_reads(**session), whole);
  session->reset();
  auto opened = store->open("big", {.read_only = true});
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_EQ(testing::snapshot_reads(**opened), whole);
}

// The same statement applying inbox items: the items are marked applied at
// the batch's first seq, which the arrays form takes from its seq array.
TEST_F(PgStoreTest, AnAppendOfManyRecordsThatAppliesInboxItemsMarksThemAtItsFirstSeq) {
  auto store = open();
  auto session = store->create({.id = "applying", .cwd = "/w"});
  ASSERT_TRUE(session);
  ASSERT_TRUE((*session)->append(crash_record("first", std::nullopt, "main")));
  auto db = connect();
  auto item = db.exec("INSERT INTO cairn_inbox (session_id, request, state) VALUES ('applying', '{}', 'applying') RETURNING id");
  ASSERT_TRUE(item && item->size() == 1);
  const std::int64_t item_id = item->int64(0, 0);
  auto row = db.exec("SELECT generation FROM cairn_sessions WHERE id = 'applying'");
  ASSERT_TRUE(row && row->size() == 1);
  constexpr std::size_t kCount = 100;  // past the prepared sizes: the arrays form
  std::vector<pg::Param> params{"applying", std::to_string(row->int64(0, 0)), pg::this_owner(),
                                std::to_string(kCount), "0", "0"};
  std::vector<pg::Param> rows;
  for (std::size_t i = 0; i < kCount; ++i) {
    const std::string id = fmt::format("r{}", i);
    Record record = crash_record(id, i == 0 ? std::string("first") : fmt::format("r{}", i - 1), "main");
    record.seq = static_cast<std::int64_t>(i) + 1;
    const std::string line = encode(record).dump();
    auto meta = scan_line(line);
    ASSERT_TRUE(meta) << meta.error().message;
    pg::add_record_params(rows, *meta, line);
  }
  pg::add_column_arrays(params, rows, pg::kRecordParams);
  params.emplace_back(fmt::format("{{{}}}", item_id));
  auto appended = db.exec(pg::append_statement(kCount, /*applying=*/true), params);
  ASSERT_TRUE(appended) << appended.error().message;
  EXPECT_EQ(appended->affected(), static_cast<std::int64_t>(kCount));
  auto applied = db.exec(fmt::format("SELECT state, applied_seq FROM cairn_inbox WHERE id = {}", item_id));
  ASSERT_TRUE(applied && applied->size() == 1);
  EXPECT_EQ(applied->text(0, 0), "applied");
  EXPECT_EQ(applied->int64(0, 1), 1);
}

// Claims: what a worker may take, and what it leaves.
TEST_F(PgStoreTest, ClaimsTakeOnlySessionsWithOpenOperationsAndNoLiveWriterEachOnce) {
  using testing::harness;
  auto store = open(std::chrono::milliseconds(300));
  auto with_open_operation = [&](const std::string& id, CreateOptions options = {}) {
    options.id = id;
    options.cwd = "/w";
    auto session = store->create(options);
    EXPECT_TRUE(session) << session.error().message;
    EXPECT_TRUE((*session)->append(harness(OperationStarted{std::nullopt, RunIntent{}}, "main", id + "-op")));
    return *session;
  };
  auto idle = store->create({.id = "idle", .cwd = "/w"});
  ASSERT_TRUE(idle);
  idle->reset();
  auto held = with_open_operation("held");  // its writer lives
  auto finished = with_open_operation("finished");
  ASSERT_TRUE(finished->append(harness(OperationFinished{"finished-op", OperationOutcome::completed, std::nullopt})));
  finished.reset();
  with_open_operation("child", {.header_extra = Json{{"child", {{"parentRef", "main"}}}}}).reset();
  with_open_operation("a").reset();
  with_open_operation("b").reset();

  // Two workers claiming at once get the two claimable sessions, one each.
  auto other = open(std::chrono::milliseconds(300));
  std::optional<std::shared_ptr<Session>> first, second;
  std::thread racer([&] { first = other->claim({}).value(); });
  second = store->claim({}).value();
  racer.join();
  ASSERT_TRUE(first && *first && second && *second);
  EXPECT_NE((*first)->id(), (*second)->id());
  std::set<std::string> claimed{(*first)->id(), (*second)->id()};
  EXPECT_EQ(claimed, (std::set<std::string>{"a", "b"}));
  EXPECT_FALSE(store->claim({}).value()) << "nothing else is claimable: idle, held, finished, child";
  // A claim holds the session like any writer.
  EXPECT_EQ(store->open("a").error().code, "locked");

  // A session whose claims keep failing is left alone after max_claims; one
  // that waits for a human is skipped until its log grows.
  ASSERT_TRUE(store->end_claim("a", ClaimEnd::failed, "model gone"));
  ASSERT_TRUE(store->end_claim("b", ClaimEnd::waiting, ""));
  first->reset();
  second->reset();
  for (int claim = 2; claim <= 3; ++claim) {
    auto again = store->claim({.max_claims = 3}).value();
    ASSERT_TRUE(again) << "claim " << claim;
    ASSERT_EQ((*again)->id(), "a");
    ASSERT_TRUE(store->end_claim("a", ClaimEnd::failed, "model gone"));
  }
  EXPECT_FALSE(store->claim({.max_claims = 3}).value()) << "a: claimed 3 times; b: waits until its log grows";
  auto db = connect();
  auto error = db.exec("SELECT claim_error, claims FROM cairn_sessions WHERE id = 'a'");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->text(0, 0), "model gone");
  EXPECT_EQ(error->int64(0, 1), 3);
  // b's log grows (an answer came): claimable again; finishing its
  // operation makes it unclaimable for good.
  {
    auto b = store->open("b");
    ASSERT_TRUE(b) << b.error().message;
    ASSERT_TRUE((*b)->append(harness(GenerationStarted{"b-op", GenerationPurpose::step, 1, ModelRef{"faux", "faux-1"}})));
  }
  auto b = store->claim({}).value();
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)->id(), "b");
  ASSERT_TRUE((*b)->append(harness(OperationFinished{"b-op", OperationOutcome::completed, std::nullopt})));
  b->reset();
  EXPECT_FALSE(store->claim({}).value());
  held.reset();
  // One writer's store cannot claim at all.
  auto memory = make_memory_store({});
  EXPECT_EQ(memory->claim({}).error().code, "invalid_argument");
}

// Writers append to their own sessions while something cuts their
// connections; each writer that fails drops its session and opens it again
// (taking its own lease back once it has expired). In the end every
// acknowledged record is in its session, in order, each once.
void load_with_interruptions(const std::string& uri, const std::function<void()>& interrupt, int* faults,
                             std::set<std::string>* reasons) {
  constexpr int kWriters = 4;
  constexpr auto kTtl = std::chrono::milliseconds(500);
  std::atomic<bool> stop{false};
  std::vector<std::vector<std::string>> acknowledged(kWriters);
  std::atomic<int> failed{0};
  std::mutex reasons_mu;
  auto note = [&](const Error& error) {
    ++failed;
    std::lock_guard lock(reasons_mu);
    if (reasons->size() < 4) reasons->insert(error.code + ": " + error.message);
  };
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      auto store = open_store(uri, {.sync = SyncPolicy::full, .lease_ttl = kTtl});
      ASSERT_TRUE(store) << store.error().message;
      const std::string id = fmt::format("load-{}", w);
      ASSERT_TRUE((*store)->create({.id = id, .cwd = "/w"}));
      std::shared_ptr<Session> session;
      for (int n = 0; !stop; ++n) {
        if (!session) {
          auto opened = (*store)->open(id, {.lock_timeout = std::chrono::seconds(30)});
          if (!opened) {
            note(opened.error());  // the server may still be down: try again
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
          }
          session = *opened;
        }
        const std::string record = fmt::format("w{}n{}", w, n);
        auto appended = session->append(crash_record(record, session->leaf(), "main"));
        if (!appended) {
          note(appended.error());
          session.reset();
          continue;
        }
        acknowledged[w].push_back(record);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  interrupt();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  stop = true;
  for (auto& writer : writers) writer.join();
  *faults = failed;

  auto store = open_store(uri, {});
  ASSERT_TRUE(store) << store.error().message;
  for (int w = 0; w < kWriters; ++w) {
    auto session = (*store)->open(fmt::format("load-{}", w), {.read_only = true});
    ASSERT_TRUE(session) << session.error().message;
    auto log = (*session)->get_log().value();
    ASSERT_GT(acknowledged[w].size(), 10u);
    std::map<std::string, std::int64_t> seq_of;
    for (const LogLine& line : log) {
      const Json json = Json::parse(line.json);
      ASSERT_TRUE(seq_of.emplace(json["id"].get<std::string>(), line.seq).second) << "a record twice: " << line.json;
    }
    // Every acknowledged record, in the order it was acknowledged; a record
    // whose append failed may be there (it committed as the connection
    // went) but then only once, and before the next acknowledged one.
    std::int64_t previous = -1;
    for (const std::string& record : acknowledged[w]) {
      auto it = seq_of.find(record);
      ASSERT_NE(it, seq_of.end()) << "acknowledged record " << record << " lost";
      EXPECT_GT(it->second, previous);
      previous = it->second;
    }
  }
}

TEST_F(PgStoreTest, ConnectionsKilledMidAppendLoseNothingAndDoubleNothing) {
  int faults = 0;
  std::set<std::string> reasons;
  load_with_interruptions(uri_, [&] {
    auto killer = connect();
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(killer.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND pid <> pg_backend_pid()"));
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }, &faults, &reasons);
  std::printf("[ pg       ] 20 rounds of pg_terminate_backend under 4 writers: %d appends or opens failed and were "
              "retried by reopening\n", faults);
  for (const std::string& reason : reasons) std::printf("[ pg       ]   e.g. %s\n", reason.c_str());
}

TEST_F(PgStoreTest, AServerRestartedMidAppendLosesNothingAndDoublesNothing) {
  int faults = 0;
  std::set<std::string> reasons;
  load_with_interruptions(uri_, [&] { ASSERT_TRUE(cluster_->pg_ctl(fmt::format("restart -m immediate -w -t 60 -l {}/server.log", cluster_->socket_dir()))); }, &faults,
                          &reasons);
  std::printf("[ pg       ] the server restarted in immediate mode under 4 writers: %d appends or opens failed and "
              "were retried by reopening\n", faults);
  for (const std::string& reason : reasons) std::printf("[ pg       ]   e.g. %s\n", reason.c_str());
}

}  // namespace
}  // namespace cairn
