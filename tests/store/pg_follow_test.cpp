// Following a session across machines on the PostgreSQL store: a follower in
// another store (another process, another machine: its own connections) sees
// every record a writer appends, in seq order, byte for byte, woken by the
// writer's batched announcements — and, when those are off or lost, by its
// own poll.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "store/pg_conn.hpp"
#include "support/crash_record.hpp"
#include "support/follow_reader.hpp"
#include "support/pg_cluster.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using testing::crash_record;
using testing::FollowReader;
using testing::PgCluster;
using Clock = std::chrono::steady_clock;

class PgFollowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    uri_ = PgCluster::shared_database(&why);
    ASSERT_FALSE(uri_.empty()) << why;
  }
  std::unique_ptr<Store> open(bool announce = true) {
    auto store = open_store(uri_, {.sync = SyncPolicy::full, .announce_appends = announce});
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  // Appends `count` records one batch at a time; returns the writer's log.
  static std::vector<LogLine> write(Session& session, int count, std::chrono::milliseconds pause) {
    std::optional<std::string> parent = session.leaf();
    for (int i = 0; i < count; ++i) {
      const std::string id = fmt::format("r{}", session.size());
      EXPECT_TRUE(session.append(crash_record(id, parent, "main")));
      parent = id;
      if (i + 1 < count) std::this_thread::sleep_for(pause);
    }
    return session.get_log().value();
  }
  static void expect_same(const std::vector<LogLine>& seen, const std::vector<LogLine>& written) {
    ASSERT_EQ(seen.size(), written.size());
    for (std::size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i].seq, static_cast<std::int64_t>(i));
      EXPECT_EQ(seen[i].json, written[i].json) << "seq " << i;
    }
  }

  // Whether `count` connections LISTEN on the test's database within `timeout`.
  bool listening(int count, std::chrono::milliseconds timeout) {
    auto admin = pg::Connection::connect(uri_);
    if (!admin) return false;
    const auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
      auto rows = admin->exec("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND query LIKE 'LISTEN%'");
      if (rows && rows->int64(0, 0) == count) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  std::string uri_;
};

// The follower's poll is 60 s: only the writer's announcements can wake it
// within the test's time.
TEST_F(PgFollowTest, AFollowerElsewhereSeesEveryRecordInOrderAsTheWriterAnnouncesIt) {
  auto writer_store = open();
  auto follower_store = open();
  auto session = writer_store->create({.id = "followed", .cwd = "/w"});
  ASSERT_TRUE(session) << session.error().message;
  FollowReader reader(*follower_store, "followed");
  auto follow = follower_store->follow("followed", 60s, [&] { reader.changed(); });
  ASSERT_TRUE(follow) << follow.error().message;
  // The listener connects in the background, and tells every follower when
  // it has: wait for that, so that what follows can only come announced.
  ASSERT_TRUE(listening(1, 5s));
  std::this_thread::sleep_for(200ms);
  reader.skip_changes();
  const auto written = write(**session, 40, 5ms);
  const auto last_append = Clock::now();
  ASSERT_TRUE(reader.wait_for(40, 10s)) << reader.error();
  const auto lag = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_append);
  expect_same(reader.lines(), written);
  // The last batch waits its ~10 ms window, then crosses the database.
  EXPECT_LT(lag, 2s) << "the follower saw the last record " << lag.count() << " ms after it was appended";
  std::printf("the follower saw the last record %lld ms after its append\n", static_cast<long long>(lag.count()));
}

// Announcements off (or lost with the announcer's process): the poll alone
// brings every record.
TEST_F(PgFollowTest, WithoutAnnouncementsTheFollowersPollStillBringsEveryRecord) {
  auto writer_store = open(false);
  auto follower_store = open();
  auto session = writer_store->create({.id = "quiet", .cwd = "/w"});
  ASSERT_TRUE(session) << session.error().message;
  FollowReader reader(*follower_store, "quiet");
  auto follow = follower_store->follow("quiet", 200ms, [&] { reader.changed(); });
  ASSERT_TRUE(follow) << follow.error().message;
  const auto written = write(**session, 10, 1ms);
  ASSERT_TRUE(reader.wait_for(10, 10s)) << reader.error();
  expect_same(reader.lines(), written);
}

// The follower's LISTEN connection killed by the server: it reconnects,
// looks (anything announced meanwhile was lost), and listens again.
TEST_F(PgFollowTest, AFollowerWhoseListenConnectionIsKilledReconnectsAndMissesNothing) {
  auto writer_store = open();
  auto follower_store = open();
  auto session = writer_store->create({.id = "cut", .cwd = "/w"});
  ASSERT_TRUE(session) << session.error().message;
  FollowReader reader(*follower_store, "cut");
  auto follow = follower_store->follow("cut", 60s, [&] { reader.changed(); });
  ASSERT_TRUE(follow) << follow.error().message;
  ASSERT_TRUE(listening(1, 5s));
  auto written = write(**session, 5, 1ms);
  ASSERT_TRUE(reader.wait_for(5, 10s)) << reader.error();
  auto admin = pg::Connection::connect(uri_);
  ASSERT_TRUE(admin) << admin.error().message;
  auto killed = admin->exec(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
      "AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()");
  ASSERT_TRUE(killed) << killed.error().message;
  ASSERT_EQ(killed->size(), 1) << "one listening connection";
  written = write(**session, 5, 20ms);
  ASSERT_TRUE(reader.wait_for(10, 10s)) << reader.error();
  expect_same(reader.lines(), written);
}

TEST_F(PgFollowTest, ReadingTheLogOfAMissingOrDamagedSessionSaysWhatIsWrong) {
  auto store = open();
  auto missing = store->read_log("nobody", -1, 10);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
  {
    auto session = store->create({.id = "edited", .cwd = "/w"});
    ASSERT_TRUE(session);
    (void)write(**session, 3, 0ms);
  }
  auto empty_tail = store->read_log("edited", 2, 10);
  ASSERT_TRUE(empty_tail) << empty_tail.error().message;
  EXPECT_TRUE(empty_tail->empty());
  auto admin = pg::Connection::connect(uri_);
  ASSERT_TRUE(admin);
  ASSERT_TRUE(admin->run("UPDATE cairn_records SET payload = replace(payload, 'quick', 'QUICK') "
                         "WHERE session_id = 'edited' AND seq = 1"));
  auto damaged = store->read_log("edited", -1, 10);
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.error().code, "corrupt_log");
  EXPECT_NE(damaged.error().message.find("seq 1"), std::string::npos) << damaged.error().message;
  // What comes before the damage still reads.
  auto before = store->read_log("edited", -1, 1);
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_EQ(before->size(), 1u);
}

}  // namespace
}  // namespace cairn
