// `cairn serve` attacked through real sockets, as a client with or without
// a token would: JSON nested 50,000 deep, bodies sent to a server that has
// not checked the token, floods of idle connections, descriptors running
// out, blocking sends that outnumber the workers, watchers that never
// read, a bash call that reads the token file, a bash call given the
// network that tries the server's own port, fields of the wrong type,
// names the REST routes refuse, cursors past the head, NUL bytes, and a
// deletion under a watcher. Each test also asks /healthz all the while:
// the server answers it within 100 ms whatever is going on.
#include "apps/serve_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "cairn/tools/sandbox.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using namespace serve_testing;
using testing::connect_loopback;
using testing::send_all_bytes;

class ServeAttack : public ServeTest {
 protected:
  std::string auth() const { return "Authorization: Bearer " + token_; }

  ServeReply rpc(const std::string& body) {
    return serve_raw(port_, serve_request_text("POST", "/a2a/jsonrpc", body, {auth(), "Content-Type: application/json"}));
  }
  ServeReply rest_send(const std::string& body) {
    return serve_raw(port_, serve_request_text("POST", "/a2a/rest/message:send", body, {auth(), "Content-Type: application/json"}));
  }
  // A connection that sends nothing, left open: the kernel holds it (the
  // listener defers accepting until bytes come), the server never sees it.
  int silent_connection() const { return connect_loopback(port_); }
  // A connection that began a request and went quiet: the server holds it,
  // pending, once it has read the byte.
  int quiet_connection() const {
    const int fd = connect_loopback(port_);
    if (fd >= 0 && !send_all_bytes(fd, "G")) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  std::size_t server_descriptors() const {
    std::size_t open = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid_))) ++open;
    return open;
  }
  // Whether the server has closed `fd` (EOF or reset within `wait`).
  static bool closed_by_server(int fd, std::chrono::milliseconds wait) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
    char byte;
    return ::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0;
  }
  void expect_healthy(const HealthProbe& probe) {
    EXPECT_EQ(probe.failures(), 0) << probe.summary();
    if (auto bound = health_bound()) {
      EXPECT_LE(probe.slowest(), *bound) << probe.summary();
    }
    EXPECT_GT(probe.probes(), 0);
  }
};

// The server's memory, where it means something: the sanitizers keep freed
// memory in quarantine and shadow every byte.
constexpr bool kMemoryMeasured =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    false;
#else
    true;
#endif

std::string nested_arrays(std::size_t depth, std::string_view inside = "1") {
  return std::string(depth, '[') + std::string(inside) + std::string(depth, ']');
}

// ---- JSON ------------------------------------------------------------------------------

TEST_F(ServeAttack, JsonNested50000DeepIsRefusedOnEveryParsePath) {
  start_server();
  create_session("s1");
  HealthProbe probe(port_);
  const std::string deep = nested_arrays(50000);
  const std::vector<std::string> rpc_bodies = {
      fmt::format(R"({{"jsonrpc":"2.0","method":"GetTask","id":{}}})", deep),
      fmt::format(R"({{"jsonrpc":"2.0","method":"GetTask","id":1,"params":{}}})", deep),
      fmt::format(R"({{"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":{}}}}}}})", deep),
      fmt::format(R"({{"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{{"configuration":{},"message":{{"messageId":"m","parts":[{{"text":"say x"}}]}}}}}})", deep),
  };
  for (const auto& body : rpc_bodies) {
    const ServeReply reply = rpc(body);
    ASSERT_EQ(reply.status, 200) << reply.body.substr(0, 300);
    EXPECT_EQ(reply.json()["error"]["code"], -32700) << reply.body.substr(0, 300);
    EXPECT_NE(reply.json()["error"]["message"].get<std::string>().find("deeper than 64"), std::string::npos);
    EXPECT_TRUE(reply.json()["id"].is_null());
  }
  const ServeReply rest = rest_send(fmt::format(R"({{"message":{{"messageId":"m","parts":{}}}}})", deep));
  EXPECT_EQ(rest.status, 400) << rest.body.substr(0, 300);
  const ServeReply own = call("POST", "/v1/sessions/s1/refs/main/prompt", fmt::format(R"({{"text":{}}})", deep));
  EXPECT_EQ(own.status, 400);
  EXPECT_EQ(serve_error_code(own), "invalid_argument");
  // Exactly 64 is fine as JSON; the route then says what it thinks of it.
  EXPECT_EQ(rpc(fmt::format(R"({{"jsonrpc":"2.0","method":"GetTask","id":1,"params":{{"id":{}}}}})", nested_arrays(62))).json()["error"]["code"], -32602);
  // A JSON-RPC id must be a string, a number or null: never echoed whole.
  EXPECT_EQ(rpc(R"({"jsonrpc":"2.0","method":"GetTask","id":{"a":[1,2]}})").json()["error"]["code"], -32600);
  probe.stop();
  expect_healthy(probe);
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/healthz", "", {})).status, 200);
}

TEST_F(ServeAttack, ANulByteOrAnythingAfterTheValueIsRefused) {
  start_server();
  create_session("s1");
  const std::string with_nul = std::string(R"({"text":"visible"})") + '\0' + R"({"text":"hidden"})";
  for (const std::string& body : {with_nul, std::string(R"({"text":"visible"} {"text":"hidden"})"), std::string(R"({"text":"x"}x)")}) {
    const ServeReply reply = call("POST", "/v1/sessions/s1/refs/main/prompt", body);
    EXPECT_EQ(reply.status, 400) << reply.body;
    EXPECT_EQ(serve_error_code(reply), "invalid_argument");
    EXPECT_EQ(rest_send(body).status, 400);
  }
  EXPECT_NE(serve_error_code(call("POST", "/v1/sessions/s1/refs/main/prompt", with_nul)).size(), 0u);
  EXPECT_EQ(records("s1").size(), 0u) << "nothing ran";
}

TEST_F(ServeAttack, AFieldOfTheWrongTypeIsInvalidNamingIt) {
  start_server();
  create_session("s1");
  struct Case {
    std::string body;
    std::string field;  // named in the message
  };
  const std::vector<Case> rpc_cases = {
      {R"({"jsonrpc":"2.0","method":"GetTask","id":1,"params":{"id":42}})", "params.id"},
      {R"({"jsonrpc":"2.0","method":"GetTask","id":1,"params":{"id":"s1/main/x","historyLength":"many"}})", "params.historyLength"},
      {R"({"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":"hello"}})", "params.message"},
      {R"({"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":{"messageId":7,"parts":[]}}})", "params.message.messageId"},
      {R"({"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":{"messageId":"m","parts":{"text":"x"}}}})", "params.message.parts"},
      {R"({"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":{"messageId":"m","parts":[{"text":5}]}}})", "params.message.parts[0].text"},
      {R"({"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":{"messageId":"m","contextId":["s1"],"parts":[{"text":"say x"}]}}})", "params.message.contextId"},
      {R"({"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"configuration":{"returnImmediately":"yes"},"message":{"messageId":"m","parts":[{"text":"say x"}]}}})", "params.configuration.returnImmediately"},
      {R"({"jsonrpc":"2.0","method":"ListTasks","id":1,"params":{"pageSize":"ten"}})", "params.pageSize"},
      {R"({"jsonrpc":"2.0","method":"CancelTask","id":1,"params":{"id":{"a":1}}})", "params.id"},
      {R"({"jsonrpc":"2.0","method":"GetTask","id":1,"params":[1]})", "params"},
  };
  for (const auto& c : rpc_cases) {
    const ServeReply reply = rpc(c.body);
    ASSERT_EQ(reply.status, 200) << c.body << " -> " << reply.body;
    EXPECT_EQ(reply.json()["error"]["code"], -32602) << c.body << " -> " << reply.body;
    EXPECT_NE(reply.json()["error"]["message"].get<std::string>().find(c.field), std::string::npos) << c.body << " -> " << reply.body;
  }
  const ServeReply rest = rest_send(R"({"message":{"messageId":"m","parts":[{"text":5}]}})");
  EXPECT_EQ(rest.status, 400) << rest.body;
  EXPECT_EQ(rest.json()["error"]["status"], "INVALID_ARGUMENT");
  EXPECT_NE(rest.body.find("body.message.parts[0].text"), std::string::npos) << rest.body;
  const ServeReply query = serve_raw(port_, serve_request_text("GET", "/a2a/rest/tasks?pageSize=x", "", {auth()}));
  EXPECT_EQ(query.status, 400) << query.body;
  // The own API: 400 invalid_argument naming the field.
  const ServeReply own = call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", 42}});
  EXPECT_EQ(own.status, 400);
  EXPECT_NE(own.body.find("'text'"), std::string::npos) << own.body;
  EXPECT_EQ(records("s1").size(), 0u);
}

// ---- names -----------------------------------------------------------------------------

TEST_F(ServeAttack, A2aContextsObeyTheRestRoutesNamesAndATaskStaysInItsContext) {
  start_server();
  create_session("s1");
  create_session("s2");
  auto send = [&](const std::string& context, const std::string& task = "", const std::string& text = "say hi") {
    Json message = {{"messageId", "m"}, {"role", "ROLE_USER"}, {"parts", {{{"text", text}}}}, {"contextId", context}};
    if (!task.empty()) message["taskId"] = task;
    return rpc(Json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "SendMessage"},
                    {"params", {{"message", message}, {"configuration", {{"returnImmediately", true}}}}}}.dump());
  };
  for (const std::string& ref : {std::string("a\nb"), std::string("a\0b", 3), std::string("../../x"), std::string(".."),
                                 std::string(100000, 'r'), std::string("\x1b[2J"), std::string("a\\b"), std::string("")}) {
    const ServeReply reply = send("s1/" + ref);
    EXPECT_EQ(reply.json()["error"]["code"], -32602) << reply.body.substr(0, 200);
  }
  const Json refs = call("GET", "/v1/sessions/s1/refs").json();
  ASSERT_EQ(refs["refs"].size(), 1u) << refs.dump();
  EXPECT_EQ(refs["refs"][0]["name"], "main");

  // A task of s2 named in a message whose context is s1: refused, and s2 is untouched.
  const ServeReply started = send("s2/main", "", "wait");
  ASSERT_TRUE(started.json().contains("result")) << started.body;
  const std::string task = started.json()["result"]["task"]["id"];
  const std::size_t before = records("s2").size();
  const ServeReply crossed = send("s1/main", task, "steer:hijack");
  EXPECT_EQ(crossed.json()["error"]["code"], -32602) << crossed.body;
  EXPECT_NE(crossed.body.find("is not in context"), std::string::npos) << crossed.body;
  EXPECT_EQ(wait_settled("s2", "main"), "idle");
  for (const auto& record : records("s2")) {
    EXPECT_EQ(record.dump().find("hijack"), std::string::npos) << record.dump();
  }
  EXPECT_GE(records("s2").size(), before);
  EXPECT_EQ(records("s1").size(), 0u);
}

TEST_F(ServeAttack, ACursorPastTheHeadIsRefusedNamingTheHead) {
  start_server();
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say a"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  const std::int64_t head = static_cast<std::int64_t>(records("s1").size()) - 1;
  for (const std::string& target : {std::string("/v1/sessions/s1/events"), std::string("/v1/sessions/s1/refs/main/events")}) {
    ServeStreamClient stream(port_, target, token_, head + 5);
    EXPECT_EQ(stream.status(), 400) << target;
    const ServeReply again = call("GET", target + fmt::format("?after={}", head + 1));
    EXPECT_EQ(again.status, 400);
    EXPECT_NE(again.body.find(fmt::format("(seq {})", head)), std::string::npos) << again.body;
    ServeStreamClient at_head(port_, target, token_, head);
    EXPECT_EQ(at_head.status(), 200) << "the head itself is a cursor";
  }
  const Json tasks = rpc(R"({"jsonrpc":"2.0","method":"ListTasks","id":1,"params":{"contextId":"s1/main"}})").json();
  ASSERT_EQ(tasks["result"]["tasks"].size(), 1u) << tasks.dump();
  const std::string task = tasks["result"]["tasks"][0]["id"];
  const ServeReply past = serve_raw(port_, serve_request_text("POST", "/a2a/jsonrpc",
                                                              Json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "SubscribeToTask"},
                                                                   {"params", {{"id", task}}}}.dump(),
                                                              {auth(), "Content-Type: application/json",
                                                               fmt::format("Last-Event-ID: {}", head + 100)}));
  EXPECT_EQ(past.json()["error"]["code"], -32602) << past.body;
  EXPECT_NE(past.body.find(fmt::format("(seq {})", head)), std::string::npos) << past.body;
}

// ---- auth before the body --------------------------------------------------------------

TEST_F(ServeAttack, ARequestWithoutAValidTokenIsRefusedBeforeItsBodyIsRead) {
  start_server({"--max-connections", "40", "--max-pending", "16"});
  HealthProbe probe(port_);
  for (const std::string& token_header : {std::string(), std::string("Authorization: Bearer not-a-token-at-all-xxxx")}) {
    const int fd = connect_loopback(port_);
    ASSERT_GE(fd, 0);
    // The head only: a 16 MiB body announced and none of it sent.
    std::string head = "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16777216\r\n";
    if (!token_header.empty()) head += token_header + "\r\n";
    ASSERT_TRUE(send_all_bytes(fd, head + "\r\n"));
    const ServeReply reply = serve_parse_reply(serve_read_all(fd, 5s));
    EXPECT_EQ(reply.status, token_header.empty() ? 401 : 403);
    EXPECT_EQ(reply.headers.count("connection") ? reply.headers.at("connection") : "", "close");
    ::close(fd);
  }
  // 200 at once (more than the server holds; fewer under the sanitizers,
  // where each costs several times more), each starting a large body
  // slowly: the memory stays where it was.
  const long idle_kb = server_rss_kb();
  std::vector<int> slow;
  for (int i = 0; i < testing::scaled(200); ++i) {
    const int fd = connect_loopback(port_);
    if (fd < 0) continue;
    send_all_bytes(fd, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16777216\r\n\r\n");
    send_all_bytes(fd, std::string(4096, '{'));
    slow.push_back(fd);
  }
  std::this_thread::sleep_for(500ms);
  const long loaded_kb = server_rss_kb();
  // Refused clients still sending are the first to go: they never take the
  // place of a client with a token.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(call("GET", "/v1/sessions").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, flood_answer_bound());
  for (int fd : slow) ::close(fd);
  if (kMemoryMeasured) {
    EXPECT_LT(loaded_kb - idle_kb, 32 * 1024) << "RSS grew from " << idle_kb << " KiB to " << loaded_kb << " KiB";
  }
  probe.stop();
  expect_healthy(probe);
}

// ---- connections and descriptors ------------------------------------------------------------

TEST_F(ServeAttack, ConnectionsAreCappedAndTheOldestIdleOneGoesFirst) {
  start_server({"--max-connections", "40", "--max-pending", "10"});
  // A client with a valid request, kept alive: not dropped for the floods below.
  const int kept = connect_loopback(port_);
  ASSERT_GE(kept, 0);
  const std::string keep_alive_request = fmt::format("GET /v1/sessions HTTP/1.1\r\nHost: x\r\n{}\r\n\r\n", auth());
  ASSERT_TRUE(send_all_bytes(kept, keep_alive_request));
  std::string first = serve_read_all(kept, 300ms);
  EXPECT_EQ(first.rfind("HTTP/1.1 200", 0), 0u) << first;

  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(quiet_connection());
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(closed_by_server(idle.front(), 50ms)) << "ten pending connections are within the cap";
  idle.push_back(quiet_connection());
  EXPECT_TRUE(closed_by_server(idle.front(), 2s)) << "the oldest pending connection goes when the eleventh comes";
  EXPECT_FALSE(closed_by_server(idle.back(), 50ms));
  // Connections that send nothing never reach the server: 500 of them (fewer
  // under the sanitizers) leave its descriptors as they were and take the
  // place of none of the ten that began a request.
  const int eleventh = idle.back();
  const std::size_t descriptors_before = server_descriptors();
  for (int i = 0; i < testing::scaled(500); ++i) {
    const int fd = silent_connection();
    if (fd >= 0) idle.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_LE(server_descriptors(), descriptors_before + 2);
  EXPECT_FALSE(closed_by_server(eleventh, 50ms)) << "a silent connection took the place of one that began a request";
  // A flood of 500 that each began a request: the server keeps answering,
  // and the kept-alive client keeps its connection. (The probe's own
  // connections count as pending once their request has come: it starts
  // once the counts above are checked.)
  HealthProbe probe(port_, 50ms);
  for (int i = 0; i < testing::scaled(500); ++i) {
    const int fd = quiet_connection();
    if (fd >= 0) idle.push_back(fd);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ServeReply listed = call("GET", "/v1/sessions");
  EXPECT_EQ(listed.status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, flood_answer_bound());
  ASSERT_TRUE(send_all_bytes(kept, keep_alive_request));
  const std::string second = serve_read_all(kept, 1s);
  EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << "the kept-alive client lost its connection: " << second.substr(0, 200);
  for (int fd : idle) ::close(fd);
  ::close(kept);
  probe.stop();
  expect_healthy(probe);
}

TEST_F(ServeAttack, DescriptorsRunningOutNeitherSpinNorStopTheServer) {
  start_server();
  // At start the server took every descriptor its hard limit allows.
  {
    std::ifstream limits(fmt::format("/proc/{}/limits", pid_));
    std::string line;
    while (std::getline(limits, line) && line.rfind("Max open files", 0) != 0) {
    }
    std::istringstream fields(line.substr(std::string("Max open files").size()));
    std::string soft, hard;
    fields >> soft >> hard;
    EXPECT_EQ(soft, hard) << line;
  }
  // A client with a kept-alive connection from before.
  const int kept = connect_loopback(port_);
  ASSERT_GE(kept, 0);
  const std::string healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(send_all_bytes(kept, healthz));
  ASSERT_EQ(serve_read_all(kept, 300ms).rfind("HTTP/1.1 200", 0), 0u);
  // Another program, or an operator, takes the server's descriptors away:
  // its limit drops to what it has open now, so every accept fails.
  const std::size_t open_now = server_descriptors();
  // (The soft limit only: a hard limit lowered cannot be raised again.)
  rlimit old{};
  ASSERT_EQ(::prlimit(pid_, RLIMIT_NOFILE, nullptr, &old), 0) << std::strerror(errno);
  rlimit tight{static_cast<rlim_t>(open_now + 1), old.rlim_max};
  ASSERT_EQ(::prlimit(pid_, RLIMIT_NOFILE, &tight, nullptr), 0) << std::strerror(errno);
  std::vector<int> waiting;
  for (int i = 0; i < 50; ++i) {
    const int fd = quiet_connection();  // ready to be taken, but not taken
    if (fd >= 0) waiting.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);
  const double cpu_before = server_cpu_seconds();
  std::this_thread::sleep_for(2s);
  const double cpu_used = server_cpu_seconds() - cpu_before;
  EXPECT_LT(cpu_used, 0.3) << "the accept loop spins: " << cpu_used << " s of CPU in 2 s";
  // The connections it has are still served.
  ASSERT_TRUE(send_all_bytes(kept, healthz));
  EXPECT_EQ(serve_read_all(kept, 1s).rfind("HTTP/1.1 200", 0), 0u);
  // Descriptors back: the queued connections are taken and answered.
  ASSERT_EQ(::prlimit(pid_, RLIMIT_NOFILE, &old, nullptr), 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(call("GET", "/v1/sessions").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  for (int fd : waiting) ::close(fd);
  ::close(kept);
}

TEST_F(ServeAttack, ManyNewSessionsUnderATightDescriptorLimitCloseIdleOnesInsteadOfFailing) {
  descriptor_limit_ = 128;
  start_server();
  HealthProbe probe(port_, 50ms);
  constexpr int kSessions = 80;
  int created = 0, unavailable = 0;
  for (int i = 0; i < kSessions; ++i) {
    const ServeReply reply = call("POST", "/v1/sessions", Json{{"id", fmt::format("s{}", i)}});
    if (reply.status == 201) {
      ++created;
    } else {
      EXPECT_EQ(reply.status, 503) << reply.body;
      EXPECT_EQ(serve_error_code(reply), "unavailable") << reply.body;
      ++unavailable;
    }
  }
  EXPECT_EQ(created, kSessions) << unavailable << " refused";
  // Fewer are open than were made: the ones nothing used were closed.
  const std::string metrics = call("GET", "/metrics").body;
  const auto open_at = metrics.find("\ncairn_sessions_open ");
  ASSERT_NE(open_at, std::string::npos) << metrics;
  const int open = std::stoi(metrics.substr(open_at + 21));
  EXPECT_LT(open, kSessions / 2) << metrics;
  EXPECT_GT(open, 0);
  // Every route answers, the sessions closed meanwhile reopened on demand.
  for (int i : {0, 1, kSessions / 2, kSessions - 1}) {
    EXPECT_EQ(call("GET", fmt::format("/v1/sessions/s{}", i)).status, 200);
    EXPECT_EQ(call("GET", fmt::format("/v1/sessions/s{}/refs/main/context", i)).status, 200);
  }
  ASSERT_EQ(call("POST", "/v1/sessions/s7/refs/main/prompt", Json{{"text", "say still here"}}).status, 202);
  EXPECT_EQ(wait_settled("s7", "main"), "idle");
  probe.stop();
  expect_healthy(probe);
}

// ---- waits that hold no thread ------------------------------------------------------------

TEST_F(ServeAttack, BlockingSendsThatOutnumberTheWorkersHoldNone) {
  start_server({"--workers", "2"});
  HealthProbe probe(port_);
  std::vector<std::thread> senders;
  std::vector<std::string> states(6);
  for (std::size_t i = 0; i < states.size(); ++i) {
    senders.emplace_back([&, i] {
      const ServeReply reply = rest_send(Json{{"message", {{"messageId", fmt::format("m{}", i)}, {"role", "ROLE_USER"},
                                                           {"parts", {{{"text", "wait"}}}}}}}.dump());
      states[i] = reply.json()["task"]["status"].value("state", reply.body);
    });
  }
  std::this_thread::sleep_for(500ms);  // all six are waiting now
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(call("GET", "/v1/sessions").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "a request waited for a worker";
  for (auto& sender : senders) sender.join();
  for (const auto& state : states) EXPECT_EQ(state, "TASK_STATE_COMPLETED");
  probe.stop();
  expect_healthy(probe);
}

TEST_F(ServeAttack, NavigationsWaitingForASummaryHoldNoWorker) {
  start_server({"--workers", "1"});
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say a"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  std::string prompt_entry;
  for (const auto& record : records("s1")) {
    if (record.value("type", "") == "message" && record["message"].value("role", "") == "user") prompt_entry = record["id"];
  }
  ASSERT_FALSE(prompt_entry.empty());
  HealthProbe probe(port_);
  std::vector<std::thread> navigations;
  std::vector<int> statuses(3);
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const std::string ref = fmt::format("r{}", i);
    ASSERT_EQ(call("POST", "/v1/sessions/s1/refs", Json{{"name", ref}}).status, 201);
    navigations.emplace_back([&, i, ref] {
      statuses[i] = call("POST", fmt::format("/v1/sessions/s1/refs/{}/navigate", ref),
                         Json{{"targetId", prompt_entry}, {"summarize", true}, {"instructions", "slow summary"}})
                        .status;
    });
  }
  std::this_thread::sleep_for(500ms);  // each waits for its summary now
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(call("GET", "/v1/sessions/s1").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "a request waited for the one worker";
  for (auto& navigation : navigations) navigation.join();
  for (int status : statuses) EXPECT_EQ(status, 200);
  probe.stop();
  expect_healthy(probe);
}

// ---- streams ---------------------------------------------------------------------------

TEST_F(ServeAttack, WatchersThatNeverReadShareOneSnapshot) {
  start_server();
  create_session("s1");
  // A transcript of about 4 MB: prompts and answers of 200 KB.
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say " + std::string(200000, 'a' + i % 26)}}).status, 202);
    ASSERT_EQ(wait_settled("s1", "main"), "idle");
  }
  // The first watcher pays for the snapshot (built once, then shared);
  // each of the next 49 costs its own connection and queue only.
  std::vector<int> watchers;
  watchers.push_back(open_slow_stream("/v1/sessions/s1/refs/main/events"));
  std::this_thread::sleep_for(500ms);
  const long idle_kb = server_rss_kb();
  for (int i = 1; i < 50; ++i) {
    const int fd = open_slow_stream("/v1/sessions/s1/refs/main/events", 0ms);
    ASSERT_GE(fd, 0);
    watchers.push_back(fd);
  }
  std::this_thread::sleep_for(500ms);
  const long watched_kb = server_rss_kb();
  // A copy of the snapshot each would be 4 MB a watcher.
  if (kMemoryMeasured) {
    EXPECT_LT(watched_kb - idle_kb, 4 * 1024 + 49 * 64) << "RSS " << idle_kb << " KiB with one watcher, " << watched_kb
                                                        << " KiB with 50";
  }
  for (int fd : watchers) ::close(fd);
}

TEST_F(ServeAttack, DeletingASessionThatIsOnlyWatchedEndsItsStreams) {
  start_server();
  create_session("s1");
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "say a"}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  ServeStreamClient ref_stream(port_, "/v1/sessions/s1/refs/main/events", token_);
  ServeStreamClient session_stream(port_, "/v1/sessions/s1/events", token_);
  ASSERT_EQ(ref_stream.status(), 200);
  ASSERT_EQ(session_stream.status(), 200);
  ASSERT_TRUE(ref_stream.next());  // the snapshots
  ASSERT_TRUE(session_stream.next());
  const ServeReply deleted = call("DELETE", "/v1/sessions/s1");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  for (ServeStreamClient* stream : {&ref_stream, &session_stream}) {
    auto last = stream->next(5s);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->data.value("type", ""), "session_deleted") << last->data.dump();
    EXPECT_FALSE(stream->next(5s));
    EXPECT_TRUE(stream->ended_cleanly()) << "the stream's last chunk";
  }
  EXPECT_EQ(call("GET", "/v1/sessions/s1").status, 404);
  // The id can be taken again at once: nothing holds the old session's lock.
  create_session("s1");
}

// ---- secrets ---------------------------------------------------------------------------

TEST_F(ServeAttack, TheServersTokensAreRedactedLikeProviderKeys) {
  // Without a sandbox, which would hide the token file (the sandbox tests
  // check that): the redaction is what stands between a tool that can read
  // it and the log.
  start_server({"--sandbox", "off"});
  create_session("s1");
  ServeStreamClient stream(port_, "/v1/sessions/s1/refs/main/events", token_);
  ASSERT_EQ(stream.status(), 200);
  ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", "run cat " + token_file().string()}}).status, 202);
  ASSERT_EQ(wait_settled("s1", "main"), "idle");
  std::string streamed;
  while (auto frame = stream.next(2s)) streamed += frame->data.dump();
  std::string logged;
  for (const auto& record : records("s1")) logged += record.dump();
  EXPECT_NE(logged.find("[redacted]"), std::string::npos) << logged.substr(0, 2000);
  EXPECT_EQ(logged.find(token_), std::string::npos);
  EXPECT_EQ(streamed.find(token_), std::string::npos);
  EXPECT_NE(streamed.find("[redacted]"), std::string::npos);
  const std::string context = call("GET", "/v1/sessions/s1/refs/main/context").body;
  EXPECT_EQ(context.find(token_), std::string::npos);
}

// ---- the sandbox -----------------------------------------------------------------------

// The text of every tool result in the session's log.
std::string tool_results(const std::vector<Json>& log) {
  std::string out;
  for (const auto& record : log) {
    if (record.value("type", "") != "message" || record["message"].value("role", "") != "toolResult") continue;
    for (const Json& block : record["message"]["content"]) out += block.value("text", "") + "\n";
  }
  return out;
}

// A command given the network still cannot reach the server that runs it:
// its port is closed to the sandbox, every other port is not.
TEST_F(ServeAttack, AToolGivenTheNetworkCannotReachTheServersOwnPort) {
#if defined(__SANITIZE_THREAD__)
  // This process's own probe may pass while the server's cannot: every
  // child a ThreadSanitizer cairn forks is multithreaded, and such a process
  // cannot make the user namespace a sandbox needs.
  GTEST_SKIP() << "a ThreadSanitizer build of cairn serve has no sandbox";
#endif
  if (std::string missing = sandbox_unavailable(SandboxMode::workspace_write); !missing.empty()) GTEST_SKIP() << missing;
  if (landlock_abi_version() < 4) GTEST_SKIP() << "Landlock ABI 4 is needed to close one port: the server refuses the policy";
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int other = ntohs(address.sin_port);

  start_server({"--sandbox", "workspace-write", "--sandbox-network"});
  create_session("s1");
  for (const auto& [port, word] : {std::pair{port_, "reached-own"}, std::pair{other, "reached-other"}}) {
    const std::string command = fmt::format("run exec 3<>/dev/tcp/127.0.0.1/{} && echo {}", port, word);
    ASSERT_EQ(call("POST", "/v1/sessions/s1/refs/main/prompt", Json{{"text", command}}).status, 202);
    ASSERT_EQ(wait_settled("s1", "main"), "idle");
  }
  ::close(listener);
  const std::string results = tool_results(records("s1"));
  EXPECT_EQ(results.find("reached-own\n"), std::string::npos) << results;
  EXPECT_NE(results.find("Permission denied"), std::string::npos) << results;
  EXPECT_NE(results.find("reached-other"), std::string::npos) << results;
}

}  // namespace
}  // namespace cairn
