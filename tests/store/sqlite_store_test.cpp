// The SQLite store: schema, locking and fencing, refusal of damaged or newer
// sessions, and repair. Damage is made with raw SQL on the database file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cairn/store/store.hpp"
#include "store/sqlite_db.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using testing::harness;
using testing::TempDir;
using testing::tree;
using testing::user_entry;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = make(); }

  std::unique_ptr<Store> make(SyncPolicy sync = SyncPolicy::none) {
    auto store = make_sqlite_store(file_, StoreOptions{sync});
    EXPECT_TRUE(store.has_value()) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  std::shared_ptr<Session> create(const std::string& id) {
    auto session = store_->create({.id = id, .cwd = "/work/project"});
    EXPECT_TRUE(session.has_value()) << session.error().message;
    return session ? *session : nullptr;
  }
  // A session with `count` messages in one chain, closed again.
  void write_chain(const std::string& id, int count) {
    auto session = create(id);
    std::optional<std::string> parent;
    for (int i = 0; i < count; ++i) {
      const std::string entry_id = "e" + std::to_string(i);
      ASSERT_TRUE(session->append(user_entry("text " + std::to_string(i), parent, entry_id)));
      parent = entry_id;
    }
  }

  // Raw SQL on the store's file, as another program (or a disk) would.
  void sql(const std::string& statement) {
    auto db = sqlite::Database::open(file_);
    ASSERT_TRUE(db) << db.error().message;
    db->set_busy_timeout(5000);
    auto ran = db->exec(statement.c_str());
    ASSERT_TRUE(ran) << statement << ": " << ran.error().message;
  }
  std::string query(const std::string& statement) {
    auto db = sqlite::Database::open(file_);
    EXPECT_TRUE(db) << db.error().message;
    if (!db) return {};
    db->set_busy_timeout(5000);
    auto text = db->query_text(statement.c_str());
    EXPECT_TRUE(text) << statement << ": " << text.error().message;
    return text ? *text : std::string();
  }

  TempDir dir_;
  std::string file_ = dir_.str() + "/sessions.db";
  std::unique_ptr<Store> store_;
};

TEST_F(SqliteStoreTest, CreateOpenListRemove) {
  EXPECT_EQ(store_->uri(), "sqlite:" + file_);
  EXPECT_EQ(store_->sync_policy(), SyncPolicy::none);
  auto older = create("older");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto newer = store_->create({.id = "newer", .cwd = "/elsewhere", .parent_session = "older"});
  ASSERT_TRUE(newer) << newer.error().message;
  EXPECT_EQ((*newer)->header().parent_session, "older");
  EXPECT_FALSE((*newer)->read_only());

  auto listed = store_->list();
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, "newer");  // newest first
  EXPECT_EQ((*listed)[0].cwd, "/elsewhere");
  EXPECT_EQ((*listed)[0].parent_session, "older");
  EXPECT_EQ((*listed)[1].id, "older");
  EXPECT_EQ((*listed)[1].version, kLogFormatVersion);

  auto taken = store_->create({.id = "older"});
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, "already_exists");
  EXPECT_TRUE(contains(taken.error().message, "older") && contains(taken.error().message, file_));
  EXPECT_EQ(store_->create({.id = "../escape"}).error().code, "invalid_argument");
  auto missing = store_->open("missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
  EXPECT_TRUE(contains(missing.error().message, file_));

  // A held session cannot be removed; a released one can, lock file and all.
  auto refused = store_->remove("older");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "locked");
  ASSERT_TRUE(older->append(user_entry("hello", std::nullopt, "u1")));
  older.reset();
  EXPECT_TRUE(std::filesystem::exists(file_ + ".older.lock"));
  ASSERT_TRUE(store_->remove("older"));
  EXPECT_FALSE(std::filesystem::exists(file_ + ".older.lock"));
  EXPECT_EQ(store_->open("older").error().code, "not_found");
  EXPECT_EQ(store_->remove("older").error().code, "not_found");
  EXPECT_EQ(store_->list()->size(), 1u);
  EXPECT_EQ(query("SELECT count(*) FROM session_entries WHERE session_id = 'older'"), "0");

  // Another store on the same file sees the same sessions.
  auto other = make();
  ASSERT_TRUE(other);
  EXPECT_EQ(other->list()->front().id, "newer");
}

TEST_F(SqliteStoreTest, ReopenSeesTheSameRecords) {
  store_ = make(SyncPolicy::full);
  auto session = create("random");
  testing::RandomLog generator(7);
  for (int batch = 0; batch < 300; ++batch) {
    auto appended = session->append(generator.next_batch());
    ASSERT_TRUE(appended) << "batch " << batch << ": " << appended.error().message;
  }
  // An operation with its intent kind, for the op_kind column.
  ASSERT_TRUE(session->append(harness(RefCreated{"ops", std::nullopt}, "ops")));
  ASSERT_TRUE(session->append(harness(OperationStarted{std::nullopt, RunIntent{}}, "ops", "op-kind")));
  const auto log = session->get_log().value();
  const Json reads = testing::snapshot_reads(*session);
  session.reset();

  for (bool read_only : {true, false}) {
    auto reopened = store_->open("random", {.read_only = read_only});
    ASSERT_TRUE(reopened) << reopened.error().message;
    EXPECT_EQ((*reopened)->read_only(), read_only);
    const auto again = (*reopened)->get_log().value();
    ASSERT_EQ(again.size(), log.size());
    for (std::size_t i = 0; i < log.size(); ++i) {
      EXPECT_EQ(again[i].seq, log[i].seq);
      EXPECT_EQ(again[i].type, log[i].type) << "seq " << i;
      EXPECT_EQ(again[i].json, log[i].json) << "seq " << i;
    }
    EXPECT_EQ(testing::snapshot_reads(**reopened), reads);
  }

  // Every record is in the table of its kind, its payload the stored line.
  const auto count = [&](const char* table) {
    return std::stoll(query(std::string("SELECT count(*) FROM ") + table + " WHERE session_id = 'random'"));
  };
  std::int64_t tree = 0, harness_records = 0, ignorable = 0;
  for (const auto& line : log) {
    if (line.type == RecordType::ignorable) ++ignorable;
    else if (is_tree_type(line.type)) ++tree;
    else ++harness_records;
  }
  EXPECT_GT(ignorable, 0);
  EXPECT_EQ(count("session_entries"), tree);
  EXPECT_EQ(count("harness_entries"), harness_records);
  EXPECT_EQ(count("ignorable_entries"), ignorable);
  EXPECT_EQ(query("SELECT payload FROM session_entries WHERE session_id = 'random' AND seq = 0"), log[0].json);
  EXPECT_EQ(query("SELECT op_kind FROM harness_entries WHERE id = 'op-kind'"), "run");
  EXPECT_EQ(query("SELECT run_id FROM harness_entries WHERE id = 'op-kind'"), "op-kind");
  EXPECT_EQ(query("SELECT journal_mode FROM pragma_journal_mode"), "wal");

  // Nothing in a healthy log looks like damage to repair.
  auto repair = store_->repair("random");
  ASSERT_TRUE(repair) << repair.error().message;
  EXPECT_FALSE(repair->changed()) << repair->replaced.front();
  EXPECT_EQ(repair->intact, static_cast<std::int64_t>(log.size()));
  EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'schema_version'"), "2");
}

// Opening indexes the columns alone; a payload is read when a query needs it.
// Old and new records read alike after appends, and a record that changed or
// vanished under an open session is an error naming its seq, never a silently
// different answer.
TEST_F(SqliteStoreTest, PayloadsAreReadWhenUsedAndAChangedRowIsAnError) {
  write_chain("lazy", 4);
  {
    auto session = store_->open("lazy", {});
    ASSERT_TRUE(session) << session.error().message;
    ASSERT_TRUE((*session)->append(user_entry("text 4", "e3", "e4")));
    const auto log = (*session)->get_log().value();
    ASSERT_EQ(log.size(), 5u);
    std::int64_t bytes = 0;
    for (std::size_t i = 0; i < log.size(); ++i) {
      EXPECT_EQ(Json::parse(log[i].json)["id"], "e" + std::to_string(i));
      bytes += static_cast<std::int64_t>(log[i].json.size());
    }
    EXPECT_EQ((*session)->stats().value().bytes, bytes);
    EXPECT_EQ((*session)->get_log(2, 2).value().size(), 2u);
    auto context = (*session)->build_context();
    ASSERT_TRUE(context) << context.error().message;
    EXPECT_EQ(context->messages.size(), 5u);
  }

  auto opened = store_->open("lazy", {.read_only = true});
  ASSERT_TRUE(opened) << opened.error().message;
  const Session& session = **opened;
  sql("UPDATE session_entries SET payload = replace(payload, 'text 0', 'TEXT 0') WHERE seq = 0");
  // The same length, still valid JSON, the same id: only the record's checksum can tell.
  auto first = session.get_entry("e0");
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, "corrupt_log");
  EXPECT_TRUE(contains(first.error().message, "seq 0")) << first.error().message;
  EXPECT_TRUE(contains(first.error().message, "checksum")) << first.error().message;

  sql("UPDATE session_entries SET id = 'x2' WHERE seq = 2");
  auto changed = session.get_entry("e2");
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code, "corrupt_log");
  EXPECT_TRUE(contains(changed.error().message, "seq 2")) << changed.error().message;
  EXPECT_TRUE(contains(changed.error().message, "'x2'")) << changed.error().message;
  ASSERT_FALSE(session.get_log());
  EXPECT_EQ(session.get_log().error().code, "corrupt_log");
  EXPECT_FALSE(session.build_context());
  EXPECT_TRUE(session.get_log(2).has_value()) << "records after the changed one still read";

  sql("DELETE FROM session_entries WHERE seq = 3");
  auto gone = session.get_record(3);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, "corrupt_log");
  EXPECT_TRUE(contains(gone.error().message, "seq 3")) << gone.error().message;
  ASSERT_FALSE(session.get_log(2));
  EXPECT_TRUE(contains(session.get_log(2).error().message, "seq 3")) << session.get_log(2).error().message;
}

TEST_F(SqliteStoreTest, SecondWriterIsRefusedWithTheHolder) {
  auto session = create("held");
  EXPECT_EQ(query("SELECT generation FROM sessions WHERE id = 'held'"), "1");
  auto second = store_->open("held");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, "locked");
  const std::string& message = second.error().message;
  EXPECT_TRUE(contains(message, "session held")) << message;
  EXPECT_TRUE(contains(message, file_)) << message;
  EXPECT_TRUE(contains(message, "pid " + std::to_string(::getpid()))) << message;
  EXPECT_TRUE(contains(message, "(generation 1)")) << message;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_TRUE(contains(message, std::string(" on ") + host + " since ")) << message;

  // A reader is welcome; the holder column goes once the writer lets go.
  ASSERT_TRUE(store_->open("held", {.read_only = true}));
  session.reset();
  EXPECT_EQ(query("SELECT holder IS NULL FROM sessions WHERE id = 'held'"), "1");
  auto next = store_->open("held");
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(query("SELECT generation FROM sessions WHERE id = 'held'"), "2");
}

TEST_F(SqliteStoreTest, AnotherProcessIsRefused) {
  auto session = create("shared");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child: its own store on the same file, its own flock.
    auto store = make_sqlite_store(file_, {});
    if (!store) ::_exit(2);
    auto opened = (*store)->open("shared");
    if (opened) ::_exit(3);
    const bool named = opened.error().code == "locked" &&
                       contains(opened.error().message, "pid " + std::to_string(::getppid()));
    auto reader = (*store)->open("shared", {.read_only = true});
    ::_exit(named && reader ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SqliteStoreTest, LockTimeoutWaitsThenFails) {
  auto session = create("busy");
  const auto start = std::chrono::steady_clock::now();
  auto opened = store_->open("busy", {.lock_timeout = std::chrono::milliseconds(150)});
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, "locked");
  EXPECT_GE(waited, std::chrono::milliseconds(150));
  EXPECT_LT(waited, std::chrono::milliseconds(2000));
  EXPECT_TRUE(contains(opened.error().message, "waited")) << opened.error().message;

  // Zero fails at once.
  const auto again = std::chrono::steady_clock::now();
  EXPECT_EQ(store_->open("busy").error().code, "locked");
  EXPECT_LT(std::chrono::steady_clock::now() - again, std::chrono::milliseconds(100));

  // A holder that lets go within the timeout hands the session over.
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    session.reset();
  });
  auto waited_for = store_->open("busy", {.lock_timeout = std::chrono::milliseconds(5000)});
  releaser.join();
  ASSERT_TRUE(waited_for) << waited_for.error().message;
}

TEST_F(SqliteStoreTest, BreakLockMakesTheOldWriterStale) {
  auto old_writer = create("taken");
  ASSERT_TRUE(old_writer->append(user_entry("before", std::nullopt, "u1")));
  auto new_writer = store_->open("taken", {.break_lock = true});
  ASSERT_TRUE(new_writer) << new_writer.error().message;
  EXPECT_EQ(query("SELECT generation FROM sessions WHERE id = 'taken'"), "2");

  auto stale = old_writer->append({user_entry("lost", "u1", "u2"), user_entry("lost too", "u2", "u3")});
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, "stale_writer");
  const std::string& message = stale.error().message;
  EXPECT_TRUE(contains(message, "session taken")) << message;
  EXPECT_TRUE(contains(message, file_)) << message;
  EXPECT_TRUE(contains(message, "generation 1 is stale")) << message;
  EXPECT_TRUE(contains(message, "at generation 2")) << message;
  EXPECT_TRUE(contains(message, "seq 1..2")) << message;
  EXPECT_EQ(query("SELECT count(*) FROM session_entries WHERE session_id = 'taken'"), "1");

  ASSERT_TRUE((*new_writer)->append(user_entry("after", "u1", "n1")));
  // The old writer letting go leaves the new holder's description alone.
  old_writer.reset();
  EXPECT_TRUE(contains(query("SELECT holder FROM sessions WHERE id = 'taken'"), "\"generation\":2"));
  new_writer->reset();
  auto check = store_->open("taken", {.read_only = true});
  ASSERT_TRUE(check);
  EXPECT_EQ((*check)->size(), 2);
  EXPECT_TRUE((*check)->get_entry("n1").value());
  EXPECT_FALSE((*check)->get_entry("u2").value());
}

TEST_F(SqliteStoreTest, NewerVersionsAreRefused) {
  write_chain("future", 2);
  sql("UPDATE sessions SET version = 99, header = json_set(header, '$.version', 99) WHERE id = 'future'");
  auto opened = store_->open("future", {.read_only = true});
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, "newer_version");
  EXPECT_TRUE(contains(opened.error().message, "99") && contains(opened.error().message, "future") &&
              contains(opened.error().message, file_))
      << opened.error().message;
  EXPECT_EQ(store_->list()->size(), 1u);  // still listed

  // A file whose schema is newer than this build's is refused whole.
  sql("UPDATE meta SET value = '3' WHERE key = 'schema_version'");
  auto newer = make_sqlite_store(file_, {});
  ASSERT_FALSE(newer);
  EXPECT_EQ(newer.error().code, "newer_version");
  EXPECT_TRUE(contains(newer.error().message, file_));
}

// A file of schema 1 (with a unique index on entry ids) is moved to 2 when a
// writer opens it: the index goes, the records stay, and a duplicate id is
// still refused by the session's writer.
TEST_F(SqliteStoreTest, SchemaOneIsMovedToTwoKeepingEveryRecord) {
  write_chain("old", 5);
  store_.reset();
  sql("CREATE UNIQUE INDEX idx_entries_session_id ON session_entries(session_id, id); "
      "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  const std::string index_count =
      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_entries_session_id'";
  ASSERT_EQ(query(index_count), "1");

  store_ = make();
  ASSERT_TRUE(store_);
  EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'schema_version'"), "2");
  EXPECT_EQ(query(index_count), "0");
  auto session = store_->open("old", {});
  ASSERT_TRUE(session) << session.error().message;
  EXPECT_EQ((*session)->size(), 5);
  auto duplicate = (*session)->append(user_entry("again", "e4", "e2"));
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, "duplicate_id") << duplicate.error().message;
  EXPECT_TRUE((*session)->append(user_entry("next", "e4", "e5")));
  EXPECT_EQ(query("SELECT count(*) FROM session_entries WHERE session_id = 'old'"), "6");
}

// SQLite's "database disk image is malformed" names neither the file nor a
// way out: every layer that meets it says the file is damaged, and how to
// recover what it still holds.
TEST_F(SqliteStoreTest, ADamagedFileIsCorruptLogNamingTheFileAndTheRecovery) {
  write_chain("damaged", 300);
  store_.reset();
  ASSERT_FALSE(std::filesystem::exists(file_ + "-wal"));
  const std::string recover = "sqlite3 " + file_ + " .recover | sqlite3 ";
  const auto expect_damage_named = [&](const Error& error, const std::string& what) {
    EXPECT_EQ(error.code, "corrupt_log") << what << ": " << error.message;
    EXPECT_TRUE(contains(error.message, file_ + " is damaged")) << what << ": " << error.message;
    EXPECT_TRUE(contains(error.message, recover)) << what << ": " << error.message;
  };

  // Pages missing at the end: the schema still reads, the sessions do not.
  std::filesystem::resize_file(file_, std::filesystem::file_size(file_) * 3 / 4);
  auto store = make_sqlite_store(file_, {});
  if (!store) {
    expect_damage_named(store.error(), "opening the store");
  } else {
    auto listed = (*store)->list();
    auto opened = (*store)->open("damaged", {.read_only = true});
    EXPECT_TRUE(!listed || !opened) << "a quarter of the file is gone and nothing noticed";
    if (!listed) expect_damage_named(listed.error(), "list");
    if (!opened) expect_damage_named(opened.error(), "open");
  }

  // Not a database at all.
  std::ofstream(file_, std::ios::trunc) << std::string(8192, 'z');
  std::filesystem::remove(file_ + "-shm");
  auto garbage = make_sqlite_store(file_, {});
  ASSERT_FALSE(garbage);
  expect_damage_named(garbage.error(), "a file of z");
}

TEST_F(SqliteStoreTest, SeqGapsAndUnknownTypesAreRefused) {
  write_chain("gap", 4);
  sql("DELETE FROM session_entries WHERE session_id = 'gap' AND seq = 2");
  auto opened = store_->open("gap");
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, "corrupt_log");
  EXPECT_TRUE(contains(opened.error().message, "seq gap: expected 2, found 3")) << opened.error().message;
  EXPECT_TRUE(contains(opened.error().message, "session gap") && contains(opened.error().message, file_));
  // A failed writable open leaves the session free for the next one.
  EXPECT_EQ(store_->open("gap").error().code, "corrupt_log");

  write_chain("mystery", 3);
  sql("UPDATE session_entries SET type = 'hologram' WHERE session_id = 'mystery' AND seq = 1");
  auto unknown = store_->open("mystery", {.read_only = true});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, "unknown_type");
  EXPECT_TRUE(contains(unknown.error().message, "seq 1") && contains(unknown.error().message, "hologram") &&
              contains(unknown.error().message, "session mystery"))
      << unknown.error().message;

  // A row whose parent vanished breaks the log's invariants.
  write_chain("orphan", 3);
  sql("UPDATE session_entries SET parent_id = 'ghost' WHERE session_id = 'orphan' AND seq = 2");
  auto orphan = store_->open("orphan", {.read_only = true});
  ASSERT_FALSE(orphan);
  EXPECT_EQ(orphan.error().code, "corrupt_log");
  EXPECT_TRUE(contains(orphan.error().message, "seq 2")) << orphan.error().message;
}

TEST_F(SqliteStoreTest, RepairReplacesDamagedRowsAndKeepsTheRest) {
  write_chain("healthy", 3);
  auto clean = store_->repair("healthy");
  ASSERT_TRUE(clean) << clean.error().message;
  EXPECT_FALSE(clean->changed());
  EXPECT_EQ(clean->intact, 3);
  EXPECT_FALSE(clean->backup);

  // A payload that no longer parses: read-only opens still work (the payload
  // is read when asked for), writing opens check every payload and refuse.
  write_chain("damaged", 5);
  const std::string before = query("SELECT payload FROM session_entries WHERE session_id = 'damaged' AND seq = 3");
  sql("UPDATE session_entries SET payload = '{\"seq\":2,\"type\":\"mess' WHERE session_id = 'damaged' AND seq = 2");
  auto refused = store_->open("damaged");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "corrupt_log");
  EXPECT_TRUE(contains(refused.error().message, "seq 2") && contains(refused.error().message, "cairn repair"))
      << refused.error().message;
  auto report = store_->repair("damaged");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(contains(report->location, "session damaged") && contains(report->location, file_));
  EXPECT_EQ(report->records, 5);
  EXPECT_EQ(report->intact, 4);
  ASSERT_EQ(report->replaced.size(), 1u);
  EXPECT_TRUE(contains(report->replaced[0], "seq 2 (message") && contains(report->replaced[0], "checksum"))
      << report->replaced[0];
  ASSERT_TRUE(report->backup);
  EXPECT_TRUE(contains(*report->backup, file_ + ".damaged.repair-")) << *report->backup;
  EXPECT_EQ(query("SELECT payload FROM session_entries WHERE session_id = 'damaged' AND seq = 3"), before);
  auto repaired = store_->open("damaged");
  ASSERT_TRUE(repaired) << repaired.error().message;
  EXPECT_EQ((*repaired)->size(), 5);
  EXPECT_EQ((*repaired)->leaf(), "e4");
  EXPECT_EQ((*repaired)->path_to("e4").size(), 5u);  // the placeholder took e2's place in the chain
  ASSERT_TRUE((*repaired)->append(user_entry("goes on", "e4", "e5")));
  // Repair is a writer: not while another one holds the session.
  EXPECT_EQ(store_->repair("damaged").error().code, "locked");
  repaired->reset();

  // A row that vanished leaves a gap: a placeholder stands in it, and the
  // rows after it stay.
  write_chain("gapped", 4);
  sql("DELETE FROM session_entries WHERE session_id = 'gapped' AND seq = 1");
  auto gap = store_->repair("gapped");
  ASSERT_TRUE(gap) << gap.error().message;
  ASSERT_EQ(gap->replaced.size(), 1u);
  EXPECT_TRUE(contains(gap->replaced[0], "seq 1")) << gap->replaced[0];
  auto reopened = store_->open("gapped", {.read_only = true});
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_EQ((*reopened)->size(), 4);
  EXPECT_EQ((*reopened)->path_to("e3").size(), 4u);

  // A row whose columns say something its intact payload does not: the
  // columns are rewritten from the payload, nothing is replaced.
  write_chain("orphan", 3);
  sql("UPDATE session_entries SET parent_id = 'ghost' WHERE session_id = 'orphan' AND seq = 1");
  ASSERT_EQ(store_->open("orphan", {.read_only = true}).error().code, "corrupt_log");
  auto orphan = store_->repair("orphan");
  ASSERT_TRUE(orphan) << orphan.error().message;
  EXPECT_TRUE(orphan->replaced.empty());
  ASSERT_EQ(orphan->fixed.size(), 1u);
  EXPECT_TRUE(contains(orphan->fixed[0], "seq 1") && contains(orphan->fixed[0], "columns")) << orphan->fixed[0];
  auto fixed = store_->open("orphan", {.read_only = true});
  ASSERT_TRUE(fixed) << fixed.error().message;
  EXPECT_EQ((*fixed)->path_to("e2").size(), 3u);
  EXPECT_EQ(store_->repair("nobody").error().code, "not_found");
}

}  // namespace
}  // namespace cairn
