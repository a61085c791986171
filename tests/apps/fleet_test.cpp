// A fleet on PostgreSQL: three `cairn serve` processes — two of them in PID
// and UTS namespaces of their own, so that to the others they are processes
// of other machines, whose death cannot be seen but only waited out — and
// one `cairn worker` share a database. Clients send every request (prompts,
// steers, follow-ups, aborts, approval answers, event streams) to a server
// picked at random, while servers are SIGKILLed and started again at random
// moments. Then:
// - every request answered 2xx was applied exactly once (its acceptance
//   record is in the log once); one answered otherwise was not applied; one
//   answered 202 {queued} was applied once or reported, as GET
//   /v1/inbox/{item} says at the end;
// - no bash command ran twice (each writes its unique name to a file);
// - every stream, followed on one server and resumed on another after a
//   kill with Last-Event-ID, delivered each record once, in order;
// - `cairn verify` passes on every session; no client was ever told `locked`.
//
// CAIRN_FLEET_SECONDS sets how long the clients run (default 40);
// CAIRN_FLEET_RUNS repeats the whole test (a soak by hand).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "serve_fixture.hpp"
#include "support/pg_cluster.hpp"

namespace cairn::serve_testing {
namespace {

constexpr int kSessions = 20;
constexpr int kServers = 3;

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

// One request a client sent, and how it was answered.
struct Sent {
  std::string session;
  std::string kind;   // prompt, steer, follow-up, answer, abort
  std::string token;  // the unique text it carried (an answer: the input's id)
  int status = 0;     // 0: no answer (the server died)
  std::string code;   // an error's code
  std::optional<std::int64_t> queued;  // 202 {queued: ITEM}
  bool relayed = false;                // answered through the session's inbox
};

class FleetTest : public ServeTest {
 protected:
  struct Member {
    pid_t pid = -1;
    int port = 0;
    bool elsewhere = false;  // in namespaces of its own
    std::filesystem::path err;
  };

  void SetUp() override {
    std::string why;
    store_uri_ = testing::PgCluster::shared_database(&why);
    ASSERT_FALSE(store_uri_.empty()) << why;
    // A lease of 2 s: a server killed in another "machine" is waited out
    // that long (the inbox's bound is 5 s).
    extra_env_.push_back("CAIRN_LEASE_TTL=2");
    launcher_ = {"/usr/bin/unshare", "--pid", "--uts", "--fork", "--kill-child=SIGKILL"};
    const pid_t probe = spawn({"--version"}, path("probe.err"));
    int status = -1;
    ::waitpid(probe, &status, 0);
    namespaces_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    launcher_.clear();
  }

  ~FleetTest() override {
    for (auto& member : members_) stop(member);
    if (worker_ > 0) {
      ::kill(worker_, SIGKILL);
      ::waitpid(worker_, nullptr, 0);
    }
  }

  void launch(int index, const std::vector<std::string>& extra = {}) {
    Member& member = members_[static_cast<std::size_t>(index)];
    member.elsewhere = index > 0 && namespaces_;
    member.err = path(fmt::format("fleet-{}-{}.err", index, ++launches_));
    if (member.elsewhere) launcher_ = {"/usr/bin/unshare", "--pid", "--uts", "--fork", "--kill-child=SIGKILL"};
    std::vector<std::string> args = {"serve", "--listen", "127.0.0.1:0", "--store", store(), "--token-file",
                                     token_file().string(), "--api", "openai-completions", "--base-url",
                                     model_.url("/v1"), "--model", "test", "--approval", "ask"};
    if (std::find(extra.begin(), extra.end(), "--claim-poll") == extra.end()) args.insert(args.end(), {"--claim-poll", "0.2"});
    args.insert(args.end(), extra.begin(), extra.end());
    const pid_t pid = spawn(args, member.err);
    launcher_.clear();
    const std::string marker = "listening on http://127.0.0.1:";
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    int port = 0;
    for (;;) {
      const std::string err = serve_slurp(member.err);
      if (auto at = err.find(marker); at != std::string::npos && err.find('\n', at) != std::string::npos) {
        port = std::stoi(err.substr(at + marker.size()));
        break;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "cairn serve did not start: " << err;
      ASSERT_EQ(::waitpid(pid, nullptr, WNOHANG), 0) << "cairn serve exited: " << err;
      std::this_thread::sleep_for(10ms);
    }
    std::lock_guard lock(mu_);
    member.pid = pid;
    member.port = port;
  }

  void stop(Member& member) {
    pid_t pid = -1;
    {
      std::lock_guard lock(mu_);
      pid = std::exchange(member.pid, -1);
      member.port = 0;
    }
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);  // with unshare, the cairn inside it (--kill-child)
    ::waitpid(pid, nullptr, 0);
  }

  int random_port(std::mt19937& rng) {
    std::lock_guard lock(mu_);
    std::vector<int> up;
    for (const auto& member : members_) {
      if (member.port > 0) up.push_back(member.port);
    }
    if (up.empty()) return 0;
    return up[std::uniform_int_distribution<std::size_t>(0, up.size() - 1)(rng)];
  }

  ServeReply call_at(int port, const std::string& method, const std::string& target, const std::string& body = "") {
    std::vector<std::string> headers = {"Authorization: Bearer " + token_};
    if (!body.empty()) headers.push_back("Content-Type: application/json");
    return serve_raw(port, serve_request_text(method, target, body, headers), 20s);
  }

  Sent send(std::mt19937& rng, const std::string& session, const std::string& kind, const std::string& token,
            const std::string& target, const Json& body) {
    Sent sent{.session = session, .kind = kind, .token = token};
    const int port = random_port(rng);
    if (port == 0) return sent;
    const ServeReply reply = call_at(port, "POST", target, body.dump());
    sent.status = reply.status;
    sent.relayed = reply.headers.contains("cairn-inbox-item");
    const Json json = reply.json();
    if (json.is_object() && json.contains("error")) sent.code = json["error"].value("code", "");
    if (reply.status == 202 && json.is_object() && json.contains("queued") && json["queued"].is_number_integer()) {
      sent.queued = json["queued"].get<std::int64_t>();
    }
    return sent;
  }

  // Answers every approval the session waits for, through a random server.
  void answer_all(std::mt19937& rng, const std::string& session, std::vector<Sent>& log) {
    const int port = random_port(rng);
    if (port == 0) return;
    const ServeReply listed = call_at(port, "GET", fmt::format("/v1/sessions/{}/refs/main/inputs", session));
    if (listed.status != 200) {
      const Json json = listed.json();
      if (json.is_object() && json.contains("error")) {
        log.push_back(Sent{.session = session, .kind = "list", .status = listed.status,
                           .code = json["error"].value("code", "")});
      }
      return;
    }
    for (const auto& input : listed.json().value("inputs", Json::array())) {
      const std::string id = input.value("id", "");
      if (id.empty()) continue;
      log.push_back(send(rng, session, "answer", id, fmt::format("/v1/sessions/{}/refs/main/inputs/{}", session, id),
                         Json{{"decision", "allow"}}));
    }
  }

  std::vector<Json> records_of(const std::string& session) {
    std::mt19937 rng(7);
    std::vector<Json> out;
    std::int64_t after = -1;
    for (int tries = 0; tries < 50;) {
      const int port = random_port(rng);
      const ServeReply page = call_at(port, "GET", fmt::format("/v1/sessions/{}/records?after={}&limit=1000", session, after));
      if (page.status != 200) {
        ++tries;
        std::this_thread::sleep_for(100ms);
        continue;
      }
      const Json json = page.json();
      for (const auto& record : json["records"]) out.push_back(record);
      if (json["next"].is_null()) return out;
      after = json["next"].get<std::int64_t>();
    }
    ADD_FAILURE() << "the records of " << session << " could not be read";
    return out;
  }

  // The last lines each server launch and the worker wrote, for a failure's message.
  std::string stderr_tails() {
    std::string out;
    for (const auto& entry : std::filesystem::directory_iterator(path("."))) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("fleet-") && name != "worker.err") continue;
      const std::string text = serve_slurp(entry.path());
      out += fmt::format("--- {}:\n{}\n", name, text.size() > 1500 ? text.substr(text.size() - 1500) : text);
    }
    return out;
  }

  std::mutex mu_;
  std::array<Member, kServers> members_;
  int launches_ = 0;
  bool namespaces_ = false;
  pid_t worker_ = -1;
};

// A stream of one session, followed across servers: the ids of its frames.
struct Followed {
  std::string session;
  std::vector<std::int64_t> ids;  // every id'd frame after the first snapshot
  std::optional<std::int64_t> cursor;
  int reconnects = 0;
};

TEST_F(FleetTest, AnyServerTakesAnyRequestAndACrashLosesOrDoublesNothing) {
  if (!namespaces_) std::printf("[ note     ] no PID namespaces here: every server runs as a process of this host\n");
  // Under the sanitizers every step costs several times more: the clients
  // run for as much less as the suite's scale says.
  const int seconds = env_int("CAIRN_FLEET_SECONDS", std::max(15, static_cast<int>(40 * std::min(1.0, testing::test_scale()))));
  const int runs = std::max(1, env_int("CAIRN_FLEET_RUNS", 1));
  for (int run = 0; run < runs; ++run) {
    SCOPED_TRACE(fmt::format("run {}", run));
    const auto started = std::chrono::steady_clock::now();
    const int launches_before = launches_;
    const std::string prefix = fmt::format("r{}", run);
    for (int i = 0; i < kServers; ++i) {
      ASSERT_NO_FATAL_FAILURE(launch(i));
      if (i == 0) token_ = testing::lines_of(serve_slurp(token_file())).at(0);
    }
    if (worker_ <= 0) {
      worker_ = spawn({"worker", "--store", store(), "--api", "openai-completions", "--base-url", model_.url("/v1"),
                       "--model", "test", "--approval", "ask", "--poll", "0.2"},
                      path("worker.err"));
    }
    std::mt19937 setup_rng(static_cast<unsigned>(run));
    std::vector<std::string> sessions;
    for (int s = 0; s < kSessions; ++s) {
      const std::string id = fmt::format("{}-s{}", prefix, s);
      ServeReply created;
      for (int tries = 0; tries < 5 && created.status != 201; ++tries) {
        created = call_at(random_port(setup_rng), "POST", "/v1/sessions", Json{{"id", id}, {"cwd", path("work").string()}}.dump());
      }
      ASSERT_EQ(created.status, 201) << created.body;
      sessions.push_back(id);
    }

    std::atomic<bool> running{true};
    std::mutex sent_mu;
    std::vector<Sent> sent;
    std::atomic<int> counter{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < 3; ++c) {
      threads.emplace_back([&, c] {
        std::mt19937 rng(static_cast<unsigned>(1000 * run + c));
        std::vector<Sent> mine;
        while (running) {
          const std::string& session = sessions[std::uniform_int_distribution<std::size_t>(0, sessions.size() - 1)(rng)];
          const std::string base = fmt::format("/v1/sessions/{}/refs/main/", session);
          const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
          const std::string token = fmt::format("{}-t{}", prefix, counter.fetch_add(1));
          if (roll < 30) {
            mine.push_back(send(rng, session, "prompt", token, base + "prompt",
                                Json{{"text", "touch " + token}, {"whileRunning", "followUp"}}));
          } else if (roll < 40) {
            mine.push_back(send(rng, session, "steer", token, base + "steer", Json{{"text", "say " + token}}));
          } else if (roll < 52) {
            mine.push_back(send(rng, session, "follow-up", token, base + "follow-up", Json{{"text", "touch " + token}}));
          } else if (roll < 57) {
            mine.push_back(send(rng, session, "abort", token, base + "abort", Json::object()));
          } else {
            answer_all(rng, session, mine);
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(5, 40)(rng)));
        }
        std::lock_guard lock(sent_mu);
        sent.insert(sent.end(), mine.begin(), mine.end());
      });
    }
    // Streams of four sessions, each resumed on another server when its
    // server goes.
    std::vector<Followed> followed(4);
    for (std::size_t f = 0; f < followed.size(); ++f) {
      followed[f].session = sessions[f];
      threads.emplace_back([&, f] {
        std::mt19937 rng(static_cast<unsigned>(77 + f + 100 * run));
        Followed& mine = followed[f];
        while (running) {
          const int port = random_port(rng);
          if (port == 0) {
            std::this_thread::sleep_for(50ms);
            continue;
          }
          ServeStreamClient stream(port, fmt::format("/v1/sessions/{}/events", mine.session), token_, mine.cursor);
          if (stream.status() != 200) {
            std::this_thread::sleep_for(50ms);
            continue;
          }
          ++mine.reconnects;
          while (running) {
            auto frame = stream.next(500ms);
            if (!frame) {
              if (stream.ended()) break;
              // A quiet stream: now and then moved to another server.
              if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) break;
              continue;
            }
            if (!frame->id) continue;
            if (!mine.cursor) {
              mine.cursor = frame->id;  // the snapshot's
              continue;
            }
            mine.ids.push_back(*frame->id);
            mine.cursor = frame->id;
          }
        }
      });
    }
    // The killer.
    std::thread killer([&] {
      std::mt19937 rng(static_cast<unsigned>(4242 + run));
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
      while (std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(3000, 7000)(rng)));
        if (std::chrono::steady_clock::now() >= end) break;
        const int victim = std::uniform_int_distribution<int>(0, kServers - 1)(rng);
        stop(members_[static_cast<std::size_t>(victim)]);
        std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 1500)(rng)));
        launch(victim);
      }
    });
    killer.join();
    running = false;
    for (auto& thread : threads) thread.join();
    threads.clear();

    // Settle: every approval answered until every session is idle and no
    // queued item is left undecided.
    std::mt19937 rng(static_cast<unsigned>(99 + run));
    const auto settle_by = std::chrono::steady_clock::now() + 90s;
    std::vector<Sent> late;
    for (std::string unsettled = "?"; !unsettled.empty();) {
      ASSERT_LT(std::chrono::steady_clock::now(), settle_by)
          << "the fleet never settled; still unsettled:\n" << unsettled << "\nthe servers and the worker said:\n" << stderr_tails();
      unsettled.clear();
      for (const auto& session : sessions) {
        answer_all(rng, session, late);
        const ServeReply ref = call_at(random_port(rng), "GET", fmt::format("/v1/sessions/{}/refs/main", session));
        const std::string state = ref.json().is_object() && ref.json().contains("ref") ? ref.json()["ref"].value("status", "") : "";
        if (state != "idle") unsettled += fmt::format("  session {}: {} {}\n", session, ref.status, ref.body);
      }
      for (const Sent& one : sent) {
        if (!one.queued) continue;
        const ServeReply reply = call_at(random_port(rng), "GET", fmt::format("/v1/inbox/{}", *one.queued));
        const Json item = reply.json();
        const std::string state = item.is_object() ? item.value("state", "") : "";
        if (state != "decided" && state != "failed") unsettled += fmt::format("  inbox item {}: {} {}\n", *one.queued, reply.status, reply.body);
      }
      if (!unsettled.empty()) std::this_thread::sleep_for(200ms);
    }
    sent.insert(sent.end(), late.begin(), late.end());

    // What each request did.
    std::map<std::string, std::vector<Json>> logs;
    for (const auto& session : sessions) logs[session] = records_of(session);
    const auto acceptances = [&](const Sent& one) {
      int count = 0;
      for (const Json& record : logs[one.session]) {
        const std::string type = record.value("type", "");
        const std::string text = record.dump();
        if (one.kind == "answer") {
          count += type == "input_resolved" && text.find("\"" + one.token + "\"") != std::string::npos;
        } else {
          count += (type == "operation_started" || type == "queue_enqueued") && text.find(one.token + "\"") != std::string::npos;
        }
      }
      return count;
    };
    int answered = 0, relayed = 0, relayed_queued = 0, unanswered = 0;
    // An approval may be answered by several clients: one answer applies,
    // the others are refused (unknown or resolved); it is resolved once.
    std::map<std::string, bool> allowed;  // input → some answer was 2xx
    for (const Sent& one : sent) {
      EXPECT_NE(one.code, "locked") << one.kind << " on " << one.session << " was told locked";
      relayed += one.relayed;
      if (one.kind == "answer") {
        allowed[one.session + "/" + one.token] |= one.status >= 200 && one.status < 300;
        if (one.status >= 200 && one.status < 300) ++answered;
        continue;
      }
      if (one.kind == "abort" || one.kind == "list") continue;
      const int count = acceptances(one);
      int status = one.status;
      if (one.queued) {
        ++relayed_queued;
        const Json item = call_at(random_port(rng), "GET", fmt::format("/v1/inbox/{}", *one.queued)).json();
        status = item.contains("response") ? item["response"].value("status", 0) : 404;
      }
      if (status == 0) {
        ++unanswered;
        EXPECT_LE(count, 1) << one.kind << " " << one.token << " on " << one.session;
      } else if (status >= 200 && status < 300) {
        ++answered;
        EXPECT_EQ(count, 1) << one.kind << " " << one.token << " on " << one.session << " answered " << status;
      } else {
        EXPECT_EQ(count, 0) << one.kind << " " << one.token << " on " << one.session << " answered " << status << " "
                            << one.code;
      }
    }
    for (const auto& [input, was_allowed] : allowed) {
      const auto slash = input.find('/');
      const int count = acceptances(Sent{.session = input.substr(0, slash), .kind = "answer", .token = input.substr(slash + 1)});
      EXPECT_LE(count, 1) << "input " << input << " resolved " << count << " times";
      if (was_allowed) {
        EXPECT_EQ(count, 1) << "input " << input << " was answered 2xx and never resolved";
      }
    }
    // No command ran twice.
    std::map<std::string, int> ran;  // this run's commands (their names start with its prefix)
    for (const auto& line : testing::lines_of(serve_slurp(path("work/ran.txt")))) {
      if (line.starts_with(prefix + "-")) ++ran[line];
    }
    EXPECT_FALSE(ran.empty()) << "no command ran: the check below would hold whatever happened";
    for (const auto& [name, times] : ran) EXPECT_EQ(times, 1) << name << " ran " << times << " times";
    // Every stream delivered each record once, in order, across its servers.
    for (const Followed& one : followed) {
      for (std::size_t i = 1; i < one.ids.size(); ++i) {
        EXPECT_EQ(one.ids[i], one.ids[i - 1] + 1) << one.session << ": frame " << one.ids[i] << " after " << one.ids[i - 1];
      }
    }
    for (const auto& session : sessions) {
      const pid_t verify = spawn({"verify", session, "--store", store()}, path("verify.err"));
      int status = -1;
      ::waitpid(verify, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << session << ": " << serve_slurp(path("verify.err"));
    }
    int reconnects = 0;
    for (const Followed& one : followed) reconnects += one.reconnects;
    std::printf("[ figures  ] fleet run %d: %zu requests (%d answered 2xx, %d relayed to the holder, %d of them queued, "
                "%d unanswered by a killed server), %zu commands ran, %d stream connections, %d server starts, %.1f s\n",
                run, sent.size(), answered, relayed, relayed_queued, unanswered, ran.size(), reconnects,
                launches_ - launches_before,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    for (auto& member : members_) stop(member);
    if (HasFailure()) break;
  }
}

// A holder that does not decide within the bound (stopped, here): the
// request is answered 202 {queued: ITEM} and applied once the holder comes
// back; one left when the holder dies is applied by the server that takes
// the session over. A read is withdrawn instead, and said unreachable.
TEST_F(FleetTest, ARequestTheHolderDoesNotDecideInTimeIsQueuedThenAppliedOnce) {
  extra_env_ = {"CAIRN_LEASE_TTL=3"};
  ASSERT_NO_FATAL_FAILURE(launch(0));
  token_ = testing::lines_of(serve_slurp(token_file())).at(0);
  ASSERT_NO_FATAL_FAILURE(launch(1, {"--inbox-wait", "0.5"}));
  const int holder = members_[0].port, other = members_[1].port;
  ASSERT_EQ(call_at(holder, "POST", "/v1/sessions", Json{{"id", "q1"}, {"cwd", path("work").string()}}.dump()).status, 201);
  const auto queue_prompt = [&](const std::string& text) -> std::int64_t {
    const auto sent_at = std::chrono::steady_clock::now();
    const ServeReply reply = call_at(other, "POST", "/v1/sessions/q1/refs/main/prompt", Json{{"text", text}}.dump());
    const auto took = std::chrono::steady_clock::now() - sent_at;
    EXPECT_EQ(reply.status, 202) << reply.body;
    EXPECT_LT(took, 3s) << "the bound is half a second";
    const Json body = reply.json();
    EXPECT_TRUE(body.contains("queued") && body["queued"].is_number_integer()) << reply.body;
    EXPECT_EQ(reply.headers.count("cairn-inbox-item"), 1u);
    return body.value("queued", std::int64_t{0});
  };
  const auto wait_decided = [&](std::int64_t item, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      const Json state = call_at(other, "GET", fmt::format("/v1/inbox/{}", item)).json();
      if (state.value("state", "") == "decided" || std::chrono::steady_clock::now() > deadline) return state;
      std::this_thread::sleep_for(50ms);
    }
  };

  ::kill(members_[0].pid, SIGSTOP);
  const std::int64_t first = queue_prompt("say queued one");
  const Json pending = call_at(other, "GET", fmt::format("/v1/inbox/{}", first)).json();
  EXPECT_EQ(pending.value("state", ""), "pending") << pending.dump();
  EXPECT_EQ(pending["request"].value("path", ""), "/v1/sessions/q1/refs/main/prompt") << pending.dump();
  const ServeReply read = call_at(other, "GET", "/v1/sessions/q1/refs/main");
  EXPECT_EQ(read.status, 409) << read.body;
  EXPECT_EQ(serve_error_code(read), "locked");
  EXPECT_NE(read.body.find("did not answer within"), std::string::npos) << read.body;
  ::kill(members_[0].pid, SIGCONT);
  const Json applied = wait_decided(first, 20s);
  ASSERT_EQ(applied.value("state", ""), "decided") << applied.dump();
  EXPECT_EQ(applied["response"].value("status", 0), 202) << applied.dump();
  EXPECT_TRUE(applied["response"]["body"].contains("runId")) << applied.dump();
  for (const auto deadline = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < deadline;) {
    const Json ref = call_at(holder, "GET", "/v1/sessions/q1/refs/main").json();
    if (ref.contains("ref") && ref["ref"].value("status", "") == "idle") break;
    std::this_thread::sleep_for(20ms);
  }

  // An A2A message to the server that does not hold its context's session
  // is relayed too, and answered as the holder answers it.
  const Json send = {{"message",
                      {{"messageId", "m1"}, {"role", "ROLE_USER"}, {"contextId", "q1/main"}, {"parts", {{{"text", "say by a2a"}}}}}},
                     {"configuration", {{"returnImmediately", true}}}};
  const ServeReply a2a = serve_raw(other, serve_request_text("POST", "/a2a/rest/message:send", send.dump(),
                                                             {"Authorization: Bearer " + token_,
                                                              "Content-Type: application/json", "A2A-Version: 1.0"}));
  EXPECT_EQ(a2a.status, 200) << a2a.body;
  EXPECT_EQ(a2a.headers.count("cairn-inbox-item"), 1u);
  EXPECT_TRUE(a2a.json().contains("task")) << a2a.body;
  for (const auto deadline = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < deadline;) {
    const Json ref = call_at(holder, "GET", "/v1/sessions/q1/refs/main").json();
    if (ref.contains("ref") && ref["ref"].value("status", "") == "idle") break;
    std::this_thread::sleep_for(20ms);
  }

  // The holder dies with an item left: the server that takes the session
  // over once the lease has expired applies it.
  ::kill(members_[0].pid, SIGSTOP);
  const std::int64_t second = queue_prompt("say queued two");
  stop(members_[0]);
  const Json taken = wait_decided(second, 30s);
  ASSERT_EQ(taken.value("state", ""), "decided") << taken.dump() << serve_slurp(members_[1].err);
  EXPECT_EQ(taken["response"].value("status", 0), 202) << taken.dump();
  EXPECT_EQ(call_at(other, "GET", "/v1/inbox/999999").status, 404);
  EXPECT_EQ(call_at(other, "GET", "/v1/inbox/x").status, 404);

  int ones = 0, twos = 0;
  for (const Json& record : records_of("q1")) {
    if (record.value("type", "") != "operation_started") continue;
    ones += record.dump().find("say queued one") != std::string::npos;
    twos += record.dump().find("say queued two") != std::string::npos;
  }
  EXPECT_EQ(ones, 1);
  EXPECT_EQ(twos, 1);
}

// A run whose holder died, taken over by a request rather than by a claim:
// the server the request opened it on runs it on at once. (It now holds the
// session live, so no claim would ever take it; before, the run stayed
// suspended until the session was closed as idle, five minutes later.)
TEST_F(FleetTest, ARunWhoseHolderDiedGoesOnOnTheServerARequestOpensItOn) {
  namespaces_ = false;  // both on this host: the dead holder's lease is taken at once
  ASSERT_NO_FATAL_FAILURE(launch(0));
  token_ = testing::lines_of(serve_slurp(token_file())).at(0);
  // Server 1 claims once, 200 ms after it starts, and then not for an hour.
  ASSERT_NO_FATAL_FAILURE(launch(1, {"--claim-poll", "3600"}));
  const int holder = members_[0].port, other = members_[1].port;
  std::this_thread::sleep_for(1s);
  ASSERT_EQ(call_at(holder, "POST", "/v1/sessions", Json{{"id", "t1"}, {"cwd", path("work").string()}}.dump()).status, 201);
  // The model takes half a second to answer "wait": the holder dies meanwhile.
  const ServeReply prompted = call_at(holder, "POST", "/v1/sessions/t1/refs/main/prompt", Json{{"text", "wait"}}.dump());
  ASSERT_EQ(prompted.status, 202) << prompted.body;
  std::this_thread::sleep_for(150ms);
  stop(members_[0]);

  std::string state;
  for (const auto deadline = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < deadline;) {
    const ServeReply ref = call_at(other, "GET", "/v1/sessions/t1/refs/main");
    state = ref.json().is_object() && ref.json().contains("ref") ? ref.json()["ref"].value("status", "") : ref.body;
    if (state == "idle") break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(state, "idle") << serve_slurp(members_[1].err);
  EXPECT_NE(serve_slurp(members_[1].err).find("session taken over t1 ref main: resuming run"), std::string::npos)
      << serve_slurp(members_[1].err);
  int started = 0, finished = 0, answered = 0;
  for (const Json& record : records_of("t1")) {
    const std::string type = record.value("type", "");
    started += type == "operation_started";
    finished += type == "operation_finished";
    answered += type == "message" && record.dump().find("waited") != std::string::npos;
  }
  EXPECT_EQ(started, 1);
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(answered, 1);
}

}  // namespace
}  // namespace cairn::serve_testing
