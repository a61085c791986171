// The same random valid batches go into every backend; every read, query and
// projection must come back identical, before and after reopening.
#include <gtest/gtest.h>

#include "cairn/store/store.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

TEST(Differential, AllBackendsAgreeOnRandomLogs) {
  testing::TempDir dir;
  std::vector<std::unique_ptr<Store>> stores;
  stores.push_back(make_memory_store({SyncPolicy::none}));
  stores.push_back(*open_store("jsonl:" + dir.str() + "/jsonl", {SyncPolicy::none}));
  stores.push_back(*open_store("sqlite:" + dir.str() + "/db.sqlite", {SyncPolicy::none}));
  std::string why;
  auto* cluster = testing::PgCluster::shared(&why);
  ASSERT_NE(cluster, nullptr) << why;
  const std::string database = cluster->new_database(&why);
  ASSERT_FALSE(database.empty()) << why;
  auto postgres = open_store(database, {SyncPolicy::none});
  ASSERT_TRUE(postgres) << postgres.error().message;
  stores.push_back(std::move(*postgres));

  for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(cairn::testing::scaled(4)); ++seed) {
    const std::string id = "diff-" + std::to_string(seed);
    std::vector<std::shared_ptr<Session>> sessions;
    for (auto& store : stores) {
      auto session = store->create({.id = id, .cwd = "/w"});
      ASSERT_TRUE(session) << session.error().message;
      sessions.push_back(*session);
    }
    testing::RandomLog generator(seed);
    for (int batch = 0; batch < 800; ++batch) {
      std::vector<Record> records = generator.next_batch();
      for (auto& session : sessions) {
        auto appended = session->append(records);
        ASSERT_TRUE(appended) << "seed " << seed << " batch " << batch << ": " << appended.error().message;
      }
      if (batch % 200 == 199) {
        const Json expected = testing::snapshot_reads(*sessions[0]);
        for (std::size_t s = 1; s < sessions.size(); ++s) {
          ASSERT_EQ(testing::snapshot_reads(*sessions[s]), expected) << stores[s]->uri() << " seed " << seed;
        }
      }
    }
    const Json expected = testing::snapshot_reads(*sessions[0]);
    EXPECT_GT(expected["stats"]["records"].get<int>(), 2000);
    for (std::size_t s = 0; s < sessions.size(); ++s) {
      sessions[s].reset();
      auto reopened = stores[s]->open(id, {.read_only = true});
      ASSERT_TRUE(reopened) << reopened.error().message;
      EXPECT_EQ(testing::snapshot_reads(**reopened), expected) << stores[s]->uri() << " after reopen, seed " << seed;
    }
  }
}

}  // namespace
}  // namespace cairn
