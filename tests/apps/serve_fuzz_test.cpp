// Structure-aware fuzzing of `cairn serve` through real sockets, for a
// bounded time: valid requests of every kind (the A2A methods on both
// bindings, the own API's routes) with their JSON mutated field by field
// (another type, a huge or hostile string, a deep nest, a field removed or
// added) and their query parameters and headers mutated, sent with the
// token (naming only the session under attack) and without one (naming
// any). Whatever comes back, the server never crashes, never answers 500,
// never changes the session no request was allowed to change, and every
// log it wrote passes `cairn verify`. Each response is also checked
// against the OpenAPI document when the test ends. CAIRN_FUZZ_SEED
// replays a run.
#include "apps/serve_fixture.hpp"

#include <sys/wait.h>

namespace cairn {
namespace {

using namespace std::chrono_literals;
using namespace serve_testing;
using testing::connect_loopback;
using testing::send_all_bytes;

class ServeFuzz : public ServeTest {
 protected:
  Json rpc_result(const std::string& body) { return call("POST", "/a2a/jsonrpc", body).json()["result"]; }
};

Json with_task_id(Json message, const std::string& task) {
  message["taskId"] = task;
  return message;
}

// A request before mutation: method, path (with its query), JSON body.
struct FuzzShape {
  std::string method;
  std::string path;
  std::optional<Json> body;
  bool stream = false;  // answered with a stream: read briefly, then hung up
};

class RequestMutator {
 public:
  explicit RequestMutator(std::uint64_t seed) : random_(seed) {}

  int below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(random_); }
  bool chance(int percent) { return below(100) < percent; }

  std::string hostile_string() {
    switch (below(12)) {
      case 0: return "";
      case 1: return std::string(100000, 'x');
      case 2: return "../../etc/passwd";
      case 3: return std::string("a\0b", 3);
      case 4: return "\x1b[2J\x1b]52;c;aGk=\x07";
      case 5: return "line\nbreak\r\n";
      case 6: return "é✓💥";
      case 7: return "%2F%00%ff";
      case 8: return "fuzz/main";
      case 9: return "fuzz/main/" + std::to_string(below(1000));
      case 10: return std::string(1, static_cast<char>(0x80 + below(64)));  // not UTF-8
      default: return "TASK_STATE_COMPLETED";
    }
  }

  Json any_value(int depth = 0) {
    switch (below(depth > 2 ? 6 : 8)) {
      case 0: return nullptr;
      case 1: return chance(50);
      case 2: {
        static const std::int64_t numbers[] = {0, -1, 1, 42, INT64_MAX, INT64_MIN, 1000000, -1000000};
        return numbers[below(8)];
      }
      case 3: return chance(50) ? 1e308 : -0.5;
      case 4:
      case 5: return hostile_string();
      case 6: {
        Json array = Json::array();
        for (int i = below(4); i > 0; --i) array.push_back(any_value(depth + 1));
        return array;
      }
      default: {
        Json object = Json::object();
        for (int i = below(4); i > 0; --i) object[hostile_key()] = any_value(depth + 1);
        return object;
      }
    }
  }

  std::string hostile_key() {
    static const char* keys[] = {"text", "id", "message", "parts", "data", "decision", "contextId", "taskId",
                                 "__proto__", "", "x", "configuration", "historyLength", "metadata"};
    return keys[below(14)];
  }

  // One edit somewhere in `value`: a field replaced, removed, added, or the
  // whole value swapped.
  void mutate(Json& value, int depth = 0) {
    if ((value.is_object() || value.is_array()) && !value.empty() && chance(70)) {
      if (value.is_object()) {
        auto it = value.begin();
        std::advance(it, below(static_cast<int>(value.size())));
        if (chance(15)) {
          value.erase(it.key());
          return;
        }
        return mutate(it.value(), depth + 1);
      }
      return mutate(value[static_cast<std::size_t>(below(static_cast<int>(value.size())))], depth + 1);
    }
    if (value.is_object() && chance(30)) {
      value[hostile_key()] = any_value();
      return;
    }
    value = any_value();
  }

  // The body as sent: usually the mutated JSON, sometimes text JSON cannot
  // say (a deep nest, a NUL, trailing bytes, a cut).
  std::string body_text(const Json& body) {
    std::string text = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    switch (below(12)) {
      case 0: return std::string(static_cast<std::size_t>(64 + below(3) * 20000), '[') + text;
      case 1: return text + std::string(1, '\0') + R"({"text":"hidden"})";
      case 2: return text + " {}";
      case 3: return text.substr(0, static_cast<std::size_t>(below(static_cast<int>(text.size()) + 1)));
      default: return text;
    }
  }

  std::string query_value() {
    static const char* values[] = {"1", "-1", "0", "99999999999999999999", "x", "", "%zz", "10000", "fuzz", "a%00b"};
    return values[below(10)];
  }

 private:
  std::mt19937_64 random_;
};

TEST_F(ServeFuzz, MutatedRequestsNeverCrashTheServerNorChangeASessionTheyMayNotChange) {
  const char* seed_text = std::getenv("CAIRN_FUZZ_SEED");
  const std::uint64_t seed = seed_text ? std::stoull(seed_text) : std::random_device{}();
  SCOPED_TRACE(fmt::format("CAIRN_FUZZ_SEED={}", seed));
  start_server({"--request-timeout", "2", "--max-body", "1000000"});
  create_session("fuzz");
  create_session("bystander");
  for (const char* session : {"fuzz", "bystander"}) {
    ASSERT_EQ(call("POST", fmt::format("/v1/sessions/{}/refs/main/prompt", session), Json{{"text", "say hello"}}).status, 202);
    ASSERT_EQ(wait_settled(session, "main"), "idle");
  }
  const std::vector<Json> bystander_before = records("bystander");
  const std::string fuzz_task =
      rpc_result(R"({"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"fuzz/main"}})")["tasks"][0]["id"];
  const std::string bystander_task =
      rpc_result(R"({"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"bystander/main"}})")["tasks"][0]["id"];
  std::string fuzz_entry = records("fuzz").back().value("id", "");
  for (const auto& record : records("fuzz")) {
    if (record.value("type", "") == "message") fuzz_entry = record.value("id", fuzz_entry);
  }

  const Json message = {{"messageId", "m1"}, {"role", "ROLE_USER"}, {"parts", {{{"text", "say fuzzed"}}}}, {"contextId", "fuzz/main"}};
  auto rpc_shape = [](const std::string& method, Json params, bool stream = false) {
    return FuzzShape{"POST", "/a2a/jsonrpc", Json{{"jsonrpc", "2.0"}, {"id", 7}, {"method", method}, {"params", std::move(params)}}, stream};
  };
  std::string encoded_task;
  for (char c : fuzz_task) encoded_task += c == '/' ? std::string("%2F") : std::string(1, c);
  const std::vector<FuzzShape> shapes = {
      rpc_shape("SendMessage", {{"message", message}, {"configuration", {{"returnImmediately", true}, {"historyLength", 2}}}}),
      rpc_shape("SendMessage", {{"message", with_task_id(message, fuzz_task)}, {"configuration", {{"returnImmediately", true}}}}),
      rpc_shape("SendStreamingMessage", {{"message", message}}, true),
      rpc_shape("GetTask", {{"id", fuzz_task}, {"historyLength", 1}}),
      rpc_shape("ListTasks", {{"contextId", "fuzz/main"}, {"status", "TASK_STATE_COMPLETED"}, {"pageSize", 5}, {"pageToken", "0"}}),
      rpc_shape("CancelTask", {{"id", fuzz_task}}),
      rpc_shape("SubscribeToTask", {{"id", fuzz_task}}, true),
      FuzzShape{"POST", "/a2a/rest/message:send", Json{{"message", message}, {"configuration", {{"returnImmediately", true}}}}},
      FuzzShape{"POST", "/a2a/rest/message:stream", Json{{"message", message}}, true},
      FuzzShape{"GET", "/a2a/rest/tasks?contextId=fuzz%2Fmain&pageSize=3", std::nullopt},
      FuzzShape{"GET", "/a2a/rest/tasks/" + encoded_task + "?historyLength=1", std::nullopt},
      FuzzShape{"POST", "/a2a/rest/tasks/" + encoded_task + ":cancel", std::nullopt},
      FuzzShape{"GET", "/a2a/rest/tasks/" + encoded_task + ":subscribe", std::nullopt, true},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/prompt", Json{{"text", "say again"}, {"whileRunning", "followUp"}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/steer", Json{{"text", "x"}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/follow-up", Json{{"text", "x"}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/next-run", Json{{"text", "x"}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/abort", Json::object()},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/resume", Json::object()},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/navigate", Json{{"targetId", fuzz_entry}, {"summarize", false}, {"label", "l"}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/label", Json{{"entryId", fuzz_entry}, {"label", "fuzzed"}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs/main/inputs/nothing", Json{{"decision", "allow"}, {"arguments", Json::object()}}},
      FuzzShape{"PATCH", "/v1/sessions/fuzz/refs/main/config", Json{{"thinkingLevel", "low"}, {"activeTools", {"ls"}}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/refs", Json{{"name", "side"}, {"at", fuzz_entry}}},
      FuzzShape{"POST", "/v1/sessions/fuzz/fork", Json{{"ref", "main"}, {"entryId", fuzz_entry}, {"scope", "branch"}, {"position", "at"}}},
      FuzzShape{"POST", "/v1/sessions", Json{{"cwd", path("work").string()}}},
      FuzzShape{"GET", "/v1/sessions/fuzz/records?after=0&limit=5", std::nullopt},
      FuzzShape{"GET", "/v1/sessions/fuzz/refs/main/branch?before=" + fuzz_entry + "&limit=2", std::nullopt},
      FuzzShape{"GET", "/v1/sessions/fuzz/refs/main/events?transcript=3", std::nullopt, true},
      FuzzShape{"GET", "/v1/sessions?limit=2&parent=fuzz", std::nullopt},
      FuzzShape{"GET", "/v1/sessions/fuzz/tree", std::nullopt},
  };

  RequestMutator mutator(seed);
  HealthProbe probe(port_, 50ms);
  int sent = 0, server_errors = 0;
  std::string first_server_error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::max(4, testing::scaled(12)));
  while (std::chrono::steady_clock::now() < deadline) {
    FuzzShape shape = shapes[static_cast<std::size_t>(mutator.below(static_cast<int>(shapes.size())))];
    // One in five goes without a valid token, and may then name anything.
    const int authority = mutator.below(10);
    std::vector<std::string> headers;
    if (authority >= 2) headers.push_back("Authorization: Bearer " + token_);
    if (authority == 1) headers.push_back("Authorization: Bearer " + std::string(token_.size(), 'x'));
    if (authority < 2 && mutator.chance(50)) {
      std::string& path = shape.path;
      for (std::size_t at; (at = path.find("fuzz")) != std::string::npos;) path.replace(at, 4, "bystander");
      if (shape.body) {
        std::string text = shape.body->dump();
        for (std::size_t at; (at = text.find("fuzz")) != std::string::npos;) text.replace(at, 4, "bystander");
        shape.body = Json::parse(text);
      }
    }
    if (mutator.chance(20)) shape.method = mutator.chance(50) ? "PUT" : shape.method == "GET" ? "POST" : "GET";
    if (mutator.chance(30)) {
      const auto question = shape.path.find('?');
      shape.path = (question == std::string::npos ? shape.path : shape.path.substr(0, question)) +
                   fmt::format("?{}={}", mutator.chance(50) ? "limit" : "after", mutator.query_value());
    }
    if (mutator.chance(15)) headers.push_back(fmt::format("Last-Event-ID: {}", mutator.query_value()));
    if (mutator.chance(10)) headers.push_back("A2A-Version: " + mutator.query_value());
    std::string body;
    if (shape.body) {
      Json mutated = *shape.body;
      for (int edits = 1 + mutator.below(3); edits > 0; --edits) mutator.mutate(mutated);
      body = mutator.body_text(mutated);
      headers.push_back(mutator.chance(95) ? "Content-Type: application/json" : "Content-Type: text/plain");
    }
    const std::string raw = serve_request_text(shape.method, shape.path, body, headers);
    const ServeReply reply = serve_raw(port_, raw, shape.stream ? 300ms : 10s);
    ++sent;
    if (reply.status >= 500 && reply.status != 503) {
      if (server_errors++ == 0) first_server_error = raw.substr(0, 600) + "\n  -> " + reply.body.substr(0, 600);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid_, &status, WNOHANG), 0) << "the server died after " << sent << " requests; the last:\n"
                                                    << raw.substr(0, 2000) << "\n"
                                                    << serve_slurp(err_);
  }
  probe.stop();
  EXPECT_EQ(server_errors, 0) << server_errors << " of " << sent << " requests got a 5xx; the first:\n" << first_server_error;
  EXPECT_EQ(probe.failures(), 0) << probe.summary();
  if (auto bound = health_bound()) {
    EXPECT_LE(probe.slowest(), *bound) << probe.summary();
  }
  EXPECT_EQ(serve_raw(port_, serve_request_text("GET", "/healthz", "", {})).status, 200);
  // A task of the bystander named in the fuzzed session's context: refused.
  const Json crossed = call("POST", "/a2a/jsonrpc",
                            Json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "SendMessage"},
                                 {"params", {{"message", with_task_id(message, bystander_task)}}}}).json();
  EXPECT_EQ(crossed["error"]["code"], -32602) << crossed.dump();
  // Nothing reached the bystander.
  const std::vector<Json> bystander_after = records("bystander");
  ASSERT_EQ(bystander_after.size(), bystander_before.size());
  for (std::size_t i = 0; i < bystander_after.size(); ++i) EXPECT_EQ(bystander_after[i], bystander_before[i]);
  // Every session the fuzzing wrote is a log cairn verify passes.
  const Json listed = call("GET", "/v1/sessions?limit=1000").json();
  for (const auto& session : listed["sessions"]) {
    const std::string id = session["id"];
    wait_settled(id, "main", 30s);
    const std::string out = path("verify.txt").string();
    const std::string command =
        fmt::format("'{}' --store '{}' verify '{}' > '{}' 2>&1", CAIRN_CLI_PATH, store(), id, out);
    EXPECT_EQ(std::system(command.c_str()), 0) << id << ":\n" << serve_slurp(out);
  }
  RecordProperty("requests", sent);
  std::printf("[ fuzz     ] %d requests, seed %llu, %s\n", sent, static_cast<unsigned long long>(seed), probe.summary().c_str());
}

}  // namespace
}  // namespace cairn
