// The PostgreSQL store's inbox (cairn/store/inbox.hpp): an item is applied
// exactly once whatever point its holder stopped at — before its request
// appended anything, after the append, after it was decided — because the
// append that applies it marks it in the same transaction; a stale holder's
// append marks nothing; an item whose session is deleted is reported, not
// lost; and the holder and the sender are told without waiting for a poll.
//
// A holder "stops" here by being let go without deciding: every durable
// fact of an item is in the database, so the next holder (another store
// taking the lease) sees exactly what it would after a SIGKILL. The fleet
// test (tests/serve/fleet_test.cpp) kills real servers.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "cairn/store/store.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using testing::PgCluster;

class PgInboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    cluster_ = PgCluster::shared(&why);
    ASSERT_NE(cluster_, nullptr) << why;
    uri_ = cluster_->new_database(&why);
    ASSERT_FALSE(uri_.empty()) << why;
    auto store = open_store(uri_, {});
    ASSERT_TRUE(store) << store.error().message;
    sender_ = std::move(*store);
    ASSERT_NE(sender_->inbox(), nullptr);
    auto created = sender_->create({.id = "s1", .cwd = "/tmp"});
    ASSERT_TRUE(created) << created.error().message;
  }

  // A holder: another store (as another process would have) taking the
  // session's lease from whoever held it.
  struct Holder {
    std::unique_ptr<Store> store;
    std::shared_ptr<Session> session;
  };
  Holder take_session() {
    Holder holder;
    auto store = open_store(uri_, {});
    EXPECT_TRUE(store) << store.error().message;
    if (!store) return holder;
    holder.store = std::move(*store);
    auto session = holder.store->open("s1", OpenOptions{.break_lock = true});
    EXPECT_TRUE(session) << session.error().message;
    if (session) holder.session = std::move(*session);
    return holder;
  }

  std::int64_t submit(std::string text) {
    auto item = sender_->inbox()->submit("s1", Json{{"method", "POST"}, {"path", "/x"}, {"body", std::move(text)}});
    EXPECT_TRUE(item) << item.error().message;
    return item ? *item : 0;
  }
  InboxItem item(std::int64_t id) {
    auto got = sender_->inbox()->item(id);
    EXPECT_TRUE(got && *got) << (got ? "no such item" : got.error().message);
    return got && *got ? **got : InboxItem{};
  }
  // The request's effect: one user message naming the item.
  static void apply(Holder& holder, std::int64_t item) {
    InboxMark::Scope mark(std::make_shared<InboxMark>(item));
    auto appended = holder.session->append(testing::user_entry(fmt::format("item {}", item), holder.session->leaf("main")));
    ASSERT_TRUE(appended) << appended.error().message;
  }
  int records_of(std::int64_t item) {
    auto session = sender_->open("s1", OpenOptions{.read_only = true});
    EXPECT_TRUE(session) << session.error().message;
    int found = 0;
    auto log = (*session)->get_log();
    EXPECT_TRUE(log);
    for (const auto& line : log.value()) found += line.json.find(fmt::format("item {}", item)) != std::string::npos;
    return found;
  }
  // Applies every open item as a holder does (inbox_relay.cpp): an applied
  // one is settled, any other begun, applied and decided.
  void drain(Holder& holder) {
    Inbox& inbox = *holder.store->inbox();
    auto items = inbox.open_items("s1");
    ASSERT_TRUE(items) << items.error().message;
    for (const InboxItem& open : *items) {
      if (open.state == InboxState::applied) {
        auto settled = inbox.settle_applied(open);
        ASSERT_TRUE(settled && *settled);
        continue;
      }
      auto begun = inbox.begin(open.id);
      ASSERT_TRUE(begun && *begun);
      apply(holder, open.id);
      auto decided = inbox.decide(open.id, (*begun)->generation, 202, "application/json", R"({"ok":true})");
      ASSERT_TRUE(decided && *decided);
    }
  }

  PgCluster* cluster_ = nullptr;
  std::string uri_;
  std::unique_ptr<Store> sender_;
};

TEST_F(PgInboxTest, AnItemIsAppliedOnceWhereverItsHolderStopped) {
  enum class StopAt { before_begin, after_begin, after_append, after_decide };
  for (StopAt stop : {StopAt::before_begin, StopAt::after_begin, StopAt::after_append, StopAt::after_decide}) {
    SCOPED_TRACE(static_cast<int>(stop));
    const std::int64_t id = submit("do it");
    {
      Holder first = take_session();
      Inbox& inbox = *first.store->inbox();
      if (stop != StopAt::before_begin) {
        auto begun = inbox.begin(id);
        ASSERT_TRUE(begun && *begun) << (begun ? "not begun" : begun.error().message);
        EXPECT_EQ(item(id).state, InboxState::applying);
        if (stop != StopAt::after_begin) {
          apply(first, id);
          const InboxItem applied = item(id);
          EXPECT_EQ(applied.state, InboxState::applied);
          ASSERT_TRUE(applied.applied_seq);
          if (stop == StopAt::after_decide) {
            auto decided = inbox.decide(id, (*begun)->generation, 202, "application/json", R"({"seq":1})");
            ASSERT_TRUE(decided && *decided);
          }
        }
      }
    }  // the first holder stops here
    Holder next = take_session();
    drain(next);
    const InboxItem done = item(id);
    EXPECT_EQ(done.state, InboxState::decided);
    EXPECT_EQ(done.status, 202);
    EXPECT_EQ(records_of(id), 1) << "the item's request must have landed exactly once";
    if (stop == StopAt::after_append) {
      // The next holder did not apply it again: it said it was applied.
      EXPECT_NE(done.response.find("\"applied\":true"), std::string::npos) << done.response;
      EXPECT_NE(done.response.find(fmt::format("\"seq\":{}", *done.applied_seq)), std::string::npos) << done.response;
    }
  }
}

TEST_F(PgInboxTest, AStaleHoldersAppendMarksNothingAndTheNextHolderAppliesTheItem) {
  const std::int64_t id = submit("do it");
  Holder first = take_session();
  auto begun = first.store->inbox()->begin(id);
  ASSERT_TRUE(begun && *begun);
  Holder second = take_session();  // takes the lease over: the first is stale
  {
    InboxMark::Scope mark(std::make_shared<InboxMark>(id));
    auto appended = first.session->append(testing::user_entry("item stale", first.session->leaf("main")));
    ASSERT_FALSE(appended);
    EXPECT_TRUE(appended.error().is(Errc::stale_writer)) << appended.error().message;
  }
  EXPECT_EQ(item(id).state, InboxState::applying);
  EXPECT_FALSE(item(id).applied_seq);
  // Nor can the stale holder decide it once the next one has begun it.
  drain(second);
  auto late = first.store->inbox()->decide(id, (*begun)->generation, 409, "application/json", "{}");
  ASSERT_TRUE(late);
  EXPECT_FALSE(*late);
  EXPECT_EQ(item(id).status, 202);
  EXPECT_EQ(records_of(id), 1);
}

TEST_F(PgInboxTest, OnlyTheLeaseHolderBeginsAnItemAndAWithdrawnOneIsNotBegun) {
  const std::int64_t id = submit("read");
  auto begun = sender_->inbox()->begin(id);  // holds no lease on s1
  ASSERT_TRUE(begun);
  EXPECT_FALSE(*begun);
  auto withdrawn = sender_->inbox()->withdraw(id);
  ASSERT_TRUE(withdrawn && *withdrawn);
  Holder holder = take_session();
  auto late = holder.store->inbox()->begin(id);
  ASSERT_TRUE(late);
  EXPECT_FALSE(*late);
  EXPECT_EQ(item(id).state, InboxState::withdrawn);
  // Begun, it can no longer be withdrawn: its outcome will come.
  const std::int64_t second = submit("act");
  ASSERT_TRUE(holder.store->inbox()->begin(second).value());
  auto refused = sender_->inbox()->withdraw(second);
  ASSERT_TRUE(refused);
  EXPECT_FALSE(*refused);
}

TEST_F(PgInboxTest, AnItemWhoseSessionIsDeletedIsReportedNotLost) {
  const std::int64_t id = submit("too late");
  ASSERT_TRUE(sender_->remove("s1"));
  const InboxItem failed = item(id);
  EXPECT_EQ(failed.state, InboxState::failed);
  EXPECT_EQ(failed.status, 404);
  EXPECT_NE(failed.response.find("deleted"), std::string::npos) << failed.response;
  // One left for a session that is already gone (removed by a process that
  // died before it could say so) is reported by the next sweep.
  auto orphan = sender_->inbox()->submit("never-was", Json{{"method", "POST"}, {"path", "/x"}, {"body", ""}});
  ASSERT_TRUE(orphan);
  auto waiting = sender_->inbox()->waiting_sessions();
  ASSERT_TRUE(waiting) << waiting.error().message;
  EXPECT_TRUE(waiting->empty());
  EXPECT_EQ(item(*orphan).state, InboxState::failed);
}

TEST_F(PgInboxTest, TheHolderAndTheSenderAreToldWithoutWaitingForAPoll) {
  std::mutex mu;
  std::condition_variable cv;
  int arrivals = 0, decisions = 0;
  Holder holder = take_session();
  const auto poll = std::chrono::seconds(60);
  auto arrived = holder.store->inbox()->follow_session("s1", poll, [&] {
    std::lock_guard lock(mu);
    ++arrivals;
    cv.notify_all();
  });
  ASSERT_TRUE(arrived);
  std::unique_lock lock(mu);
  // The listener tells every follower once it is listening.
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrivals >= 1; }));
  const int before = arrivals;
  lock.unlock();
  const std::int64_t id = submit("hello");
  lock.lock();
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrivals > before; }));
  lock.unlock();
  auto decided_follow = sender_->inbox()->follow_item(id, poll, [&] {
    std::lock_guard inner(mu);
    ++decisions;
    cv.notify_all();
  });
  ASSERT_TRUE(decided_follow);
  drain(holder);
  lock.lock();
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return decisions >= 1; }));
  // The follows end without the lock their calls take.
  lock.unlock();
}

}  // namespace
}  // namespace cairn
