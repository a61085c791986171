// `cairn serve` opening sessions whose logs are long while it serves
// others: a session is opened on the pool's own threads, outside any lock
// another request needs, and however many requests ask for it at once, it
// is opened once.
#include "apps/serve_fixture.hpp"

#include <random>

#include "cairn/store/store.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using namespace serve_testing;

class ServeOpen : public ServeTest {
 protected:
  ServeOpen() { store_uri_ = "jsonl:" + path("store").string(); }

  // `count` sessions, big-0 to big-<count-1>, each a linear branch of
  // `records` messages on main. The first is written through the store;
  // the others are its file under another id (the header names it).
  void write_long_sessions(int count, int records) {
    {
      auto store = open_store(store_uri_, StoreOptions{.sync = SyncPolicy::none});
      ASSERT_TRUE(store) << store.error().message;
      auto session = (*store)->create(CreateOptions{.id = "big-0", .cwd = path("work").string()});
      ASSERT_TRUE(session) << session.error().message;
      std::optional<std::string> parent;
      std::vector<Record> batch;
      for (int i = 0; i < records; ++i) {
        const std::string id = fmt::format("e{:07}", i);
        batch.push_back(i % 2 == 0 ? testing::user_entry(fmt::format("question {}", i), parent, id, "main")
                                   : testing::assistant_entry(fmt::format("answer {}", i), parent, id, {}, "main"));
        parent = id;
        if (batch.size() == 1000 || i + 1 == records) {
          ASSERT_TRUE((*session)->append(std::move(batch)));
          batch.clear();
        }
      }
    }
    const std::string log = serve_slurp(path("store") / "big-0.jsonl");
    const auto header_end = log.find('\n');
    ASSERT_NE(header_end, std::string::npos);
    const std::string header = log.substr(0, header_end);
    const auto id_at = header.find("\"id\":\"big-0\"");
    ASSERT_NE(id_at, std::string::npos) << header;
    for (int n = 1; n < count; ++n) {
      std::string copy = header;
      copy.replace(id_at, std::string("\"id\":\"big-0\"").size(), fmt::format("\"id\":\"big-{}\"", n));
      std::ofstream out(path("store") / fmt::format("big-{}.jsonl", n), std::ios::binary);
      out << copy << std::string_view(log).substr(header_end);
      ASSERT_TRUE(out.good());
    }
  }

  std::int64_t metric(const std::string& name) {
    const std::string text = call("GET", "/metrics").body;
    const auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stoll(text.substr(at + name.size() + 2));
  }
};

TEST_F(ServeOpen, FiftyLongSessionsOpeningAtOnceHoldUpNoOtherRequest) {
  constexpr int kSessions = 50;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // What the sanitizers check here is the pool's locking, not its speed:
  // logs a twentieth as long (50 of 100k records take 2 GB in the release
  // build, and several times that under the sanitizers).
  const int records = 5000;
#else
  const int records = 100000;
#endif
  write_long_sessions(kSessions, records);
  start_server();
  create_session("small");
  const std::string auth = "Authorization: Bearer " + token_;
  ASSERT_EQ(call("GET", "/v1/sessions/small/refs/main").status, 200);

  // Meanwhile: /healthz, and a session open already, every 10 ms each.
  HealthProbe health(port_, 10ms);
  HealthProbe open_session(port_, 10ms, "/v1/sessions/small/refs/main", {auth});
  // Each long session asked for by three clients at once.
  std::vector<int> statuses(3 * kSessions, 0);
  std::vector<std::string> bodies(statuses.size());
  std::vector<std::thread> clients;
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    clients.emplace_back([&, i] {
      const ServeReply reply =
          serve_raw(port_, serve_request_text("GET", fmt::format("/v1/sessions/big-{}", i % kSessions), "", {auth}), 300s);
      statuses[i] = reply.status;
      bodies[i] = reply.body.substr(0, 300);
    });
  }
  for (auto& client : clients) client.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  health.stop();
  open_session.stop();

  for (std::size_t i = 0; i < statuses.size(); ++i) {
    EXPECT_EQ(statuses[i], 200) << "big-" << i % kSessions << ": " << bodies[i];
  }
  // Opened once each (and the small one, created), however many asked.
  EXPECT_EQ(metric("cairn_session_opens_total"), kSessions + 1);
  EXPECT_EQ(metric("cairn_sessions_open"), kSessions + 1);
  EXPECT_EQ(health.failures(), 0) << health.summary();
  EXPECT_EQ(open_session.failures(), 0) << open_session.summary();
  // Probes all the while the opens took.
  EXPECT_GE(open_session.probes(), std::min<std::int64_t>(10, took.count() / 20)) << open_session.summary();
  if (health_bound()) {
    EXPECT_LE(health.slowest(), 50ms) << health.summary() << "; " << kSessions << " opens of " << records
                                      << " records took " << took.count() << " ms";
    EXPECT_LE(open_session.slowest(), 50ms) << open_session.summary() << "; " << kSessions << " opens of "
                                            << records << " records took " << took.count() << " ms";
  }
  std::printf("[ opens    ] %d sessions of %d records: %lld ms, server RSS %ld MiB; /healthz %s; an open session %s\n",
              kSessions, records, static_cast<long long>(took.count()), server_rss_kb() / 1024, health.summary().c_str(),
              open_session.summary().c_str());
}

// A session asked for while the pool opens it is opened once, and a
// deletion waits for the open rather than racing it.
TEST_F(ServeOpen, ADeletionDuringAnOpenWaitsForIt) {
  write_long_sessions(1, testing::scaled(20000));
  start_server();
  int read_status = 0;
  std::thread reader([&] { read_status = call("GET", "/v1/sessions/big-0").status; });
  std::this_thread::sleep_for(5ms);
  const ServeReply deleted = call("DELETE", "/v1/sessions/big-0");
  reader.join();
  EXPECT_EQ(deleted.status, 200) << deleted.body;
  // Read before the deletion, or found deleted; never an error of a log
  // removed under its open.
  EXPECT_TRUE(read_status == 200 || read_status == 404) << read_status;
  EXPECT_EQ(call("GET", "/v1/sessions/big-0").status, 404);
  EXPECT_FALSE(std::filesystem::exists(path("store") / "big-0.jsonl"));
}

// A session closed for idling lets go of its file lock as it closes; asked
// for meanwhile, it is opened again once it has, never reported locked by
// its own server.
TEST_F(ServeOpen, ASessionClosingWhenAskedForIsOpenedAgainNotReportedLocked) {
  start_server({"--idle-close", "0.01"});
  create_session("s1");
  // Requests at random gaps around the idle time, for a few of the
  // server's sweeps (every 200 ms): some come as it closes the session.
  std::mt19937 random(std::random_device{}());
  const auto until = std::chrono::steady_clock::now() + 3s;
  for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
    const ServeReply reply = call("GET", "/v1/sessions/s1");
    ASSERT_EQ(reply.status, 200) << "request " << i << ": " << reply.body;
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 25000)(random)));
  }
  EXPECT_GT(metric("cairn_session_opens_total"), 2) << "the session was never closed between two requests";
}

}  // namespace
}  // namespace cairn
