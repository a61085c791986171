// PostgreSQL store benchmark. Starts a private cluster (fsync on, as a real
// server runs) and prints, for 1 and 16 sessions appended to concurrently and
// 1 and 10 records per append, cairn's fenced appends per second beside plain
// INSERT commits of as many rows (one row: the single-row INSERT; ten: one
// ten-row INSERT per commit) measured against the same server in the same
// run, with the same number of connections and the same payloads. Reference
// (issue 20): cairn's appends ≥ 0.8 × the plain commits. Then the same
// appends with and without announcing them to watchers on other machines
// (a follower store LISTENing to every session); reference: ≤ 10% cost.
//
//   cairn_bench_pg [--seconds S] [--help]   (S: per row, each side; default 6)
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "store/pg_conn.hpp"
#include "store/lease_holder.hpp"
#include "store/pg_medium.hpp"
#include "support/crash_record.hpp"
#include "support/pg_cluster.hpp"

using namespace cairn;
using Clock = std::chrono::steady_clock;

namespace {

struct Rate {
  double commits = 0;  // per second
  double records = 0;  // per second
};

// `writers` threads, each appending `batch` records per append to a session
// of its own, for `seconds`.
// Connections and sessions are made before the clock starts: the rows
// compare appends, not connecting.
class StartLine {
 public:
  explicit StartLine(int writers) : waiting_(writers) {}
  void arrive_and_wait() {
    std::unique_lock lock(mu_);
    if (--waiting_ == 0) ready_.notify_all();
    ready_.wait(lock, [&] { return waiting_ == 0 && started_; });
  }
  void start_when_ready() {
    std::unique_lock lock(mu_);
    ready_.wait(lock, [&] { return waiting_ == 0; });
    started_ = true;
    ready_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_;
  int waiting_;
  bool started_ = false;
};

// What a row of the notifier's table adds: whether the writers announce
// their appends, and a store of another "machine" that follows every
// session (so that the notifications are delivered, as they are in use).
struct Announcing {
  bool on = true;
  Store* follower = nullptr;
  std::atomic<std::int64_t>* heard = nullptr;
};

Rate cairn_rate(const std::string& uri, int writers, int batch, double seconds, int round, Announcing announcing = {}) {
  std::atomic<std::int64_t> appends{0};
  std::atomic<bool> stop{false};
  StartLine line(writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      auto store = open_store(uri, {.announce_appends = announcing.on});
      if (!store) {
        std::fprintf(stderr, "%s\n", store.error().message.c_str());
        std::exit(1);
      }
      auto session = (*store)->create({.id = fmt::format("bench-{}-{}", round, w), .cwd = "/bench"});
      if (!session) {
        std::fprintf(stderr, "%s\n", session.error().message.c_str());
        std::exit(1);
      }
      std::unique_ptr<LogFollow> follow;
      if (announcing.follower) {
        auto followed = announcing.follower->follow((*session)->id(), std::chrono::seconds(60), [&] { ++*announcing.heard; });
        if (!followed) {
          std::fprintf(stderr, "%s\n", followed.error().message.c_str());
          std::exit(1);
        }
        follow = std::move(*followed);
      }
      line.arrive_and_wait();
      std::optional<std::string> parent;
      for (std::int64_t n = 0; !stop; ++n) {
        std::vector<Record> records;
        for (int k = 0; k < batch; ++k) {
          const std::string id = fmt::format("n{}k{}", n, k);
          records.push_back(testing::crash_record(id, parent, "main"));
          parent = id;
        }
        if (auto appended = (*session)->append(std::move(records)); !appended) {
          std::fprintf(stderr, "%s\n", appended.error().message.c_str());
          std::exit(1);
        }
        ++appends;
      }
    });
  }
  line.start_when_ready();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const std::int64_t done = appends;
  for (auto& thread : threads) thread.join();
  return {static_cast<double>(done) / elapsed, static_cast<double>(done) * batch / elapsed};
}

// What a plain statement writes (--dissect compares them): the reference's
// rows (session, seq, stored line); the same rows with cairn's four further
// columns (id, type, ref, run id); the reference's rows inserted only
// through a guarded update of the session's head row, as cairn's fence
// does; and cairn's own append statement into its own tables, for a
// session a store created (and holds), sent by this loop instead of by the
// session: what is left between it and cairn's appends is cairn's process.
enum class Shape { plain, wide, fenced, statement };

// Shape::statement: cairn's append statement for a session `store` created
// and holds, its head and generation read back, committed in a loop.
void statement_loop(pg::Connection& db, const std::string& uri, const std::string& session, int batch,
                    const std::string& line, StartLine& start_line, const std::atomic<bool>& stop,
                    std::atomic<std::int64_t>& commits) {
  auto store = open_store(uri, {.announce_appends = false});
  if (!store) std::exit(1);
  auto held = (*store)->create({.id = session, .cwd = "/bench"});
  if (!held) std::exit(1);
  const std::array<pg::Param, 1> id{session};
  auto row = db.exec("SELECT generation, head_seq FROM cairn_sessions WHERE id = $1", id);
  if (!row || row->size() != 1 || !db.prepare("statement", pg::append_statement(static_cast<std::size_t>(batch)))) {
    std::exit(1);
  }
  const std::string generation = std::to_string(row->int64(0, 0));
  std::int64_t head = row->int64(0, 1);
  start_line.arrive_and_wait();
  for (std::int64_t n = 0; !stop; ++n) {
    std::vector<pg::Param> params{session, generation, pg::this_owner(), std::to_string(head + batch),
                                  std::to_string(head), "0"};
    for (int k = 0; k < batch; ++k) {
      const std::string id = fmt::format("n{}k{}", n, k);
      RecordMeta meta;
      meta.seq = head + 1 + k;
      meta.id = id;
      meta.role = "user";
      pg::add_record_params(params, meta, line);
    }
    auto done = db.exec_prepared("statement", params);
    if (!done || done->affected() != batch) std::exit(1);
    head += batch;
    ++commits;
  }
}

// The same number of connections, each committing INSERTs of `batch` rows
// (a record's stored line each) into a plain table keyed like cairn's, one
// statement per commit, prepared once: what the server does for the same
// rows without a lease, a fence or a log's checks.
Rate plain_rate(const std::string& uri, int writers, int batch, double seconds, int round, Shape shape = Shape::plain) {
  std::string line = encode(testing::crash_record("n0k0", std::nullopt, "main")).dump();
  {
    auto db = pg::Connection::connect(uri);
    if (!db || !db->run("CREATE TABLE IF NOT EXISTS plain (session_id text, seq bigint, payload text, "
                        "PRIMARY KEY (session_id, seq))") ||
        !db->run("CREATE TABLE IF NOT EXISTS plain_wide (session_id text, seq bigint, id text, type text, ref text, "
                 "run_id text, payload text, PRIMARY KEY (session_id, seq))") ||
        !db->run("CREATE TABLE IF NOT EXISTS plain_heads (session_id text PRIMARY KEY, head bigint NOT NULL) "
                 "WITH (fillfactor = 50)")) {
      std::fprintf(stderr, "cannot create the plain tables\n");
      std::exit(1);
    }
  }
  std::atomic<std::int64_t> commits{0};
  std::atomic<bool> stop{false};
  StartLine start_line(writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      auto db = pg::Connection::connect(uri);
      if (!db) std::exit(1);
      const std::string session = fmt::format("plain-{}-{}", round, w);
      if (shape == Shape::statement) {
        statement_loop(*db, uri, session, batch, line, start_line, stop, commits);
        return;
      }
      // $1 session, then (fenced) $2 new head and $3 expected head, then
      // each row's seq and line (wide: and its four columns).
      const int first = shape == Shape::fenced ? 4 : 2;
      const int per_row = shape == Shape::wide ? 6 : 2;
      std::string sql;
      if (shape == Shape::fenced) {
        if (!db->run(fmt::format("INSERT INTO plain_heads VALUES ('{}', -1)", session))) std::exit(1);
        sql = "WITH head AS (UPDATE plain_heads SET head = $2::bigint WHERE session_id = $1 AND head = $3::bigint "
              "RETURNING 1) INSERT INTO plain (session_id, seq, payload) SELECT $1, v.seq, v.payload FROM head, (VALUES ";
      } else {
        sql = shape == Shape::wide ? "INSERT INTO plain_wide (session_id, seq, id, type, ref, run_id, payload) VALUES "
                                   : "INSERT INTO plain (session_id, seq, payload) VALUES ";
      }
      for (int k = 0; k < batch; ++k) {
        const int p = first + per_row * k;
        if (shape == Shape::fenced) sql += fmt::format("{}(${}::bigint, ${})", k ? ", " : "", p, p + 1);
        if (shape == Shape::plain) sql += fmt::format("{}($1, ${}::bigint, ${})", k ? ", " : "", p, p + 1);
        if (shape == Shape::wide) {
          sql += fmt::format("{}($1, ${}::bigint, ${}, ${}, ${}, ${}, ${})", k ? ", " : "", p, p + 1, p + 2, p + 3, p + 4, p + 5);
        }
      }
      if (shape == Shape::fenced) sql += ") AS v(seq, payload)";
      if (!db->prepare("plain", sql)) std::exit(1);
      start_line.arrive_and_wait();
      for (std::int64_t n = 0; !stop; ++n) {
        std::vector<pg::Param> params{session};
        if (shape == Shape::fenced) {
          params.emplace_back(std::to_string(n * batch + batch - 1));
          params.emplace_back(std::to_string(n * batch - 1));
        }
        for (int k = 0; k < batch; ++k) {
          params.emplace_back(std::to_string(n * batch + k));
          if (shape == Shape::wide) {
            params.emplace_back(fmt::format("n{}k{}", n, k));
            params.emplace_back("message");
            params.emplace_back("main");
            params.emplace_back("run-1");
          }
          params.emplace_back(line);
        }
        auto done = db->exec_prepared("plain", params);
        if (!done || done->affected() != batch) std::exit(1);
        ++commits;
      }
    });
  }
  start_line.start_when_ready();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const std::int64_t done = commits;
  for (auto& thread : threads) thread.join();
  return {static_cast<double>(done) / elapsed, static_cast<double>(done) * batch / elapsed};
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 6;
  bool dissect = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::stod(argv[++i]);
    } else if (arg == "--dissect") {
      dissect = true;
    } else {
      std::printf("usage: cairn_bench_pg [--seconds S] [--dissect]\n\nFenced appends on a private PostgreSQL 15 cluster (fsync on) "
                  "beside plain INSERT commits of as many rows on the same server.\n--dissect: instead, the plain "
                  "INSERTs beside the same rows with cairn's four further columns and beside them inserted through a "
                  "guarded update of a head row, beside cairn's own append statement sent by a plain loop, to say what each "
                  "costs.\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  std::string why;
  auto cluster = testing::PgCluster::start_new(/*durable=*/true, &why);
  if (!cluster) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  const std::string uri = cluster->new_database(&why);
  if (uri.empty()) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  auto median = [](std::vector<Rate> rates) {
    std::sort(rates.begin(), rates.end(), [](const Rate& a, const Rate& b) { return a.commits < b.commits; });
    return rates[rates.size() / 2];
  };
  int round = 0;
  if (dissect) {
    std::printf("plain INSERT commits/s on a private cluster with fsync on, %.1f s a row (three turns each), beside the same "
                "rows with 4 more columns (wide), inserted through a guarded head-row update (fenced), cairn's append statement "
                "sent by a plain loop (statement), and cairn's appends\n\n",
                seconds);
    std::printf("%-9s %-7s %10s %10s %10s %11s %10s %7s %7s %10s %7s\n", "sessions", "batch", "plain/s", "wide/s",
                "fenced/s", "statement/s", "cairn/s", "wide", "fenced", "statement", "cairn");
    for (const int writers : {1, 16}) {
      for (const int batch : {1, 10}) {
        std::vector<Rate> plains, wides, fenceds, statements, cairns;
        for (int turn = 0; turn < 3; ++turn) {
          plains.push_back(plain_rate(uri, writers, batch, seconds / 5, round++));
          wides.push_back(plain_rate(uri, writers, batch, seconds / 5, round++, Shape::wide));
          fenceds.push_back(plain_rate(uri, writers, batch, seconds / 5, round++, Shape::fenced));
          statements.push_back(plain_rate(uri, writers, batch, seconds / 5, round++, Shape::statement));
          cairns.push_back(cairn_rate(uri, writers, batch, seconds / 5, round++));
        }
        const double plain = median(plains).commits;
        const double wide = median(wides).commits, fenced = median(fenceds).commits;
        const double statement = median(statements).commits, cairn = median(cairns).commits;
        std::printf("%-9d %-7d %10.0f %10.0f %10.0f %11.0f %10.0f %7.2f %7.2f %10.2f %7.2f\n", writers, batch, plain, wide,
                    fenced, statement, cairn, wide / plain, fenced / plain, statement / plain, cairn / plain);
      }
    }
    return 0;
  }
  std::printf("PostgreSQL store, private cluster with fsync on, %.1f s a row (three turns each); reference: cairn appends/s >= 0.8 x plain "
              "INSERT commits/s\n\n",
              seconds);
  std::printf("%-9s %-7s %14s %14s %16s %8s %s\n", "sessions", "batch", "appends/s", "records/s", "plain commits/s",
              "ratio", "");
  // The two take turns, three times, and each keeps its median: this
  // machine's load comes and goes, and a row measured whole after the other
  // would compare two different machines.
  for (const int writers : {1, 16}) {
    for (const int batch : {1, 10}) {
      std::vector<Rate> plains, cairns;
      for (int turn = 0; turn < 3; ++turn) {
        plains.push_back(plain_rate(uri, writers, batch, seconds / 3, round++));
        cairns.push_back(cairn_rate(uri, writers, batch, seconds / 3, round++));
      }
      const Rate plain = median(plains);
      const Rate rate = median(cairns);
      const double ratio = rate.commits / plain.commits;
      std::printf("%-9d %-7d %14.0f %14.0f %16.0f %8.2f %s\n", writers, batch, rate.commits, rate.records, plain.commits,
                  ratio, ratio >= 0.8 ? "ok" : "BELOW 0.8");
    }
  }

  // The notifier: a process's appends announced every ~10 ms on a
  // connection of its own (never inside the append's transaction), with a
  // follower listening, beside the same appends announced to nobody.
  std::printf("\nannouncing appends to watchers elsewhere (LISTEN/NOTIFY, batched ~10 ms); reference: cost <= 10%%\n\n");
  std::printf("%-9s %-7s %16s %16s %8s %14s %s\n", "sessions", "batch", "announced/s", "unannounced/s", "cost",
              "notifications", "");
  auto follower = open_store(uri, {});
  if (!follower) {
    std::fprintf(stderr, "%s\n", follower.error().message.c_str());
    return 1;
  }
  for (const int writers : {1, 16}) {
    for (const int batch : {1, 10}) {
      std::vector<Rate> on, off;
      std::atomic<std::int64_t> heard{0};
      for (int turn = 0; turn < 3; ++turn) {
        off.push_back(cairn_rate(uri, writers, batch, seconds / 3, round++, {.on = false}));
        on.push_back(cairn_rate(uri, writers, batch, seconds / 3, round++,
                                {.on = true, .follower = follower->get(), .heard = &heard}));
      }
      const Rate with = median(on);
      const Rate without = median(off);
      const double cost = 1 - with.commits / without.commits;
      std::printf("%-9d %-7d %16.0f %16.0f %7.1f%% %14lld %s\n", writers, batch, with.commits, without.commits,
                  cost * 100, static_cast<long long>(heard.load()), cost <= 0.10 ? "ok" : "ABOVE 10%");
    }
  }
  return 0;
}
