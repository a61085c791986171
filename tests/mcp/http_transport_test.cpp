// The Streamable HTTP transport against a scripted local server: answers as
// JSON and as event streams, the session header, resumption of a cut stream,
// errors told as responses, a lost session, concurrency and close.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/secrets.hpp"
#include "mcp/transport.hpp"
#include "support/http_test_server.hpp"

namespace cairn::mcp {
// Its own namespace: the test sources are compiled together (unity build).
namespace http_transport_test {
namespace {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ReceivedRequest;
using testing::ScriptedResponse;
using Clock = std::chrono::steady_clock;

constexpr const char* kSecret = "sk-very-secret-credential-4711";

// What the transport reported, in order.
class Inbox {
 public:
  Transport::OnMessage on_message() {
    return [this](Json message) {
      {
        std::lock_guard lock(mu_);
        messages_.push_back(std::move(message));
      }
      changed_.notify_all();
    };
  }
  Transport::OnClosed on_closed() {
    return [this](std::string why) {
      {
        std::lock_guard lock(mu_);
        closed_.push_back(std::move(why));
      }
      changed_.notify_all();
    };
  }
  bool wait_messages(std::size_t count, std::chrono::milliseconds limit = 1500ms) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return messages_.size() >= count; });
  }
  bool wait_closed(std::chrono::milliseconds limit = 1500ms) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return !closed_.empty(); });
  }
  std::vector<Json> messages() const {
    std::lock_guard lock(mu_);
    return messages_;
  }
  std::vector<std::string> closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Json> messages_;
  std::vector<std::string> closed_;
};

Json request(int id, const std::string& method) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", Json::object()}};
}

Json notification(const std::string& method, Json params = Json::object()) {
  return Json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

Json result(const Json& id, Json value) { return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(value)}}; }

Json progress(double done) {
  return notification("notifications/progress", Json{{"progressToken", "t"}, {"progress", done}});
}

std::string event(const Json& message, const std::string& id = {}) {
  std::string block = id.empty() ? "" : fmt::format("id: {}\n", id);
  return block + fmt::format("data: {}\n\n", message.dump());
}

ScriptedResponse json_answer(const Json& message, std::vector<std::pair<std::string, std::string>> extra = {}) {
  ScriptedResponse response;
  response.headers = {{"Content-Type", "application/json"}};
  for (auto& header : extra) response.headers.push_back(std::move(header));
  response.body = {{0ms, message.dump()}};
  return response;
}

ScriptedResponse events_answer(std::vector<ScriptedResponse::Piece> pieces,
                               ScriptedResponse::End end = ScriptedResponse::End::finish) {
  ScriptedResponse response;
  response.headers = {{"Content-Type", "text/event-stream"}};
  response.body = std::move(pieces);
  response.end = end;
  return response;
}

ScriptedResponse status_only(int status, std::string reason) {
  ScriptedResponse response;
  response.status = status;
  response.reason = std::move(reason);
  return response;
}

// The JSON-RPC message a POST carried; null for a GET or DELETE.
Json body_of(const ReceivedRequest& request) {
  if (request.body.empty()) return nullptr;
  return Json::parse(request.body, nullptr, false);
}

std::string method_of(const ReceivedRequest& request) {
  Json body = body_of(request);
  return body.is_object() && body.contains("method") ? body["method"].get<std::string>() : std::string();
}

std::vector<ReceivedRequest> requests_with(const HttpTestServer& server, const std::string& method) {
  std::vector<ReceivedRequest> found;
  for (const auto& request : server.requests()) {
    if (request.method == method) found.push_back(request);
  }
  return found;
}

class McpHttpTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    // The server is local; a proxy configured on the machine must not be asked for it.
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  }

  std::unique_ptr<Transport> open(const HttpTestServer& server,
                                  std::vector<std::pair<std::string, std::string>> headers = {}) {
    HttpTransport config;
    config.url = server.url("/mcp");
    config.headers = std::move(headers);
    auto transport = make_http_transport(config);
    EXPECT_TRUE(transport->open(inbox.on_message(), inbox.on_closed()));
    return transport;
  }

  // initialize, answered with session `session_id`, then the protocol
  // version set as the client above does.
  static void initialize(Transport& transport, Inbox& inbox) {
    ASSERT_TRUE(transport.send(request(0, "initialize")));
    ASSERT_TRUE(inbox.wait_messages(1));
    transport.set_protocol_version("2025-11-25");
  }

  static ScriptedResponse initialize_answer(const std::string& session_id) {
    return json_answer(result(0, Json{{"protocolVersion", "2025-11-25"}}), {{"Mcp-Session-Id", session_id}});
  }

  Inbox inbox;
};

TEST_F(McpHttpTransport, DeliversAJsonAnswer) {
  HttpTestServer server([](const ReceivedRequest& request) {
    return json_answer(result(body_of(request)["id"], Json{{"tools", Json::array()}}));
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(1, "tools/list")));
  ASSERT_TRUE(inbox.wait_messages(1));
  EXPECT_EQ(inbox.messages()[0], result(1, Json{{"tools", Json::array()}}));

  auto posts = requests_with(server, "POST");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0].target, "/mcp");
  EXPECT_EQ(posts[0].header("content-type"), "application/json");
  EXPECT_EQ(posts[0].header("accept"), "application/json, text/event-stream");
  EXPECT_EQ(body_of(posts[0]), request(1, "tools/list"));
  // No session was given: none is claimed.
  EXPECT_FALSE(posts[0].header("mcp-session-id"));
}

TEST_F(McpHttpTransport, DeliversEachMessageOfAJsonBatch) {
  HttpTestServer server([](const ReceivedRequest&) {
    return json_answer(Json::array({progress(1), result(1, Json::object())}));
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  ASSERT_TRUE(inbox.wait_messages(2));
  EXPECT_EQ(inbox.messages()[0], progress(1));
  EXPECT_EQ(inbox.messages()[1], result(1, Json::object()));
}

TEST_F(McpHttpTransport, DeliversAnEventStreamAnswerInOrder) {
  HttpTestServer server([](const ReceivedRequest&) {
    return events_answer({{0ms, event(progress(1))}, {20ms, event(result(1, Json{{"content", Json::array()}}))}});
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  ASSERT_TRUE(inbox.wait_messages(2));
  EXPECT_EQ(inbox.messages()[0], progress(1));
  EXPECT_EQ(inbox.messages()[1], result(1, Json{{"content", Json::array()}}));
}

TEST_F(McpHttpTransport, KeepsTheSessionOfInitializeAndSendsItWithTheProtocolVersion) {
  HttpTestServer server([](const ReceivedRequest& request) {
    if (request.method == "GET") return status_only(405, "Method Not Allowed");
    if (request.method == "DELETE") return status_only(200, "OK");
    std::string method = method_of(request);
    if (method == "initialize") return initialize_answer("session-1");
    if (method == "notifications/initialized") return status_only(202, "Accepted");
    return json_answer(result(body_of(request)["id"], Json::object()));
  });
  auto transport = open(server);
  initialize(*transport, inbox);
  ASSERT_TRUE(transport->send(notification("notifications/initialized")));
  ASSERT_TRUE(transport->send(request(1, "tools/list")));
  ASSERT_TRUE(inbox.wait_messages(2));
  transport->close();

  auto posts = requests_with(server, "POST");
  ASSERT_EQ(posts.size(), 3u);
  EXPECT_EQ(method_of(posts[0]), "initialize");
  EXPECT_FALSE(posts[0].header("mcp-session-id"));
  EXPECT_FALSE(posts[0].header("mcp-protocol-version"));
  // The notification went first: a request waits for what was sent before it.
  EXPECT_EQ(method_of(posts[1]), "notifications/initialized");
  EXPECT_EQ(method_of(posts[2]), "tools/list");
  for (std::size_t i = 1; i < posts.size(); ++i) {
    EXPECT_EQ(posts[i].header("mcp-session-id"), "session-1");
    EXPECT_EQ(posts[i].header("mcp-protocol-version"), "2025-11-25");
  }
  // The 202 of the notification delivers nothing.
  EXPECT_EQ(inbox.messages().size(), 2u);
  EXPECT_TRUE(inbox.closed().empty());
}

TEST_F(McpHttpTransport, ANotificationAcceptedWith202DeliversNothing) {
  HttpTestServer server([](const ReceivedRequest&) { return status_only(202, "Accepted"); });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(notification("notifications/cancelled", Json{{"requestId", 9}})));
  ASSERT_TRUE(transport->send(Json{{"jsonrpc", "2.0"}, {"id", "s1"}, {"result", Json::object()}}));
  for (auto deadline = Clock::now() + 1s; server.requests().size() < 2 && Clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
  }
  transport->close();
  auto posts = requests_with(server, "POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(method_of(posts[0]), "notifications/cancelled");
  EXPECT_EQ(body_of(posts[1])["id"], "s1");
  EXPECT_TRUE(inbox.messages().empty());
  EXPECT_TRUE(inbox.closed().empty());
}

TEST_F(McpHttpTransport, ResumesACutStreamWithLastEventId) {
  HttpTestServer server([](const ReceivedRequest& request) {
    if (request.method == "DELETE") return status_only(200, "OK");
    if (request.method == "GET") {
      if (request.header("last-event-id") != "e-7") return status_only(405, "Method Not Allowed");
      return events_answer({{0ms, event(progress(2), "e-8")}, {0ms, event(result(1, Json{{"done", true}}), "e-9")}});
    }
    if (method_of(request) == "initialize") return initialize_answer("session-2");
    // The stream of the call breaks after its first event.
    return events_answer({{0ms, event(progress(1), "e-7")}}, ScriptedResponse::End::reset);
  });
  auto transport = open(server);
  initialize(*transport, inbox);
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  ASSERT_TRUE(inbox.wait_messages(4));
  auto messages = inbox.messages();
  EXPECT_EQ(messages[1], progress(1));
  EXPECT_EQ(messages[2], progress(2));
  EXPECT_EQ(messages[3], result(1, Json{{"done", true}}));

  auto gets = requests_with(server, "GET");
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0].header("accept"), "text/event-stream");
  EXPECT_EQ(gets[0].header("last-event-id"), "e-7");
  EXPECT_EQ(gets[0].header("mcp-session-id"), "session-2");
  EXPECT_EQ(gets[0].header("mcp-protocol-version"), "2025-11-25");
}

TEST_F(McpHttpTransport, PollsAStreamTheServerEndedAfterPrimingIt) {
  // Protocol 2025-11-25: the server sends an event ID with empty data and
  // ends the stream; the client asks again with that ID.
  HttpTestServer server([](const ReceivedRequest& request) {
    if (request.method == "GET") {
      if (request.header("last-event-id") != "p-1") return status_only(405, "Method Not Allowed");
      return events_answer({{0ms, event(result(1, Json{{"polled", true}}), "p-2")}});
    }
    return events_answer({{0ms, "id: p-1\ndata:\n\n"}});
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  ASSERT_TRUE(inbox.wait_messages(1));
  // The priming event is no message.
  EXPECT_EQ(inbox.messages()[0], result(1, Json{{"polled", true}}));
}

TEST_F(McpHttpTransport, AServerThatCannotResumeAnswersTheRequestWithAnError) {
  HttpTestServer server([](const ReceivedRequest& request) {
    if (request.method == "GET") return status_only(405, "Method Not Allowed");
    return events_answer({{0ms, event(progress(1), "e-1")}}, ScriptedResponse::End::close);
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(2, "tools/call")));
  ASSERT_TRUE(inbox.wait_messages(2));
  Json error = inbox.messages()[1];
  EXPECT_EQ(error["id"], 2);
  EXPECT_NE(error["error"]["message"].get<std::string>().find("HTTP 405"), std::string::npos) << error.dump();
  EXPECT_EQ(requests_with(server, "GET").size(), 1u);
}

TEST_F(McpHttpTransport, AStreamCutWithoutAnIdAnswersTheRequestWithAnError) {
  HttpTestServer server([](const ReceivedRequest&) {
    return events_answer({{0ms, event(progress(1))}}, ScriptedResponse::End::close);
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(5, "tools/call")));
  ASSERT_TRUE(inbox.wait_messages(2));
  auto messages = inbox.messages();
  EXPECT_EQ(messages[0], progress(1));
  EXPECT_EQ(messages[1]["id"], 5);
  EXPECT_EQ(messages[1]["error"]["code"], -32000);
  EXPECT_NE(messages[1]["error"]["message"].get<std::string>().find("ended before its answer"), std::string::npos)
      << messages[1].dump();
  // Nothing to resume from: no GET was tried.
  EXPECT_TRUE(requests_with(server, "GET").empty());
}

TEST_F(McpHttpTransport, AnHttpErrorIsTheRequestsErrorResponseWithoutTheCredential) {
  HttpTestServer server([](const ReceivedRequest&) {
    ScriptedResponse response = status_only(500, "Internal Server Error");
    response.headers = {{"Content-Type", "text/plain"}};
    // A server that quotes the credential back: the token alone, and the header whole.
    response.body = {{0ms, fmt::format("database unavailable for {}\n(Authorization: Bearer {})", kSecret, kSecret)}};
    return response;
  });
  auto transport = open(server, {{"Authorization", fmt::format("Bearer {}", kSecret)}, {"X-Team", "blue"}});
  ASSERT_TRUE(transport->send(request(3, "tools/call")));
  ASSERT_TRUE(inbox.wait_messages(1));
  Json error = inbox.messages()[0];
  EXPECT_EQ(error["id"], 3);
  std::string message = error["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("HTTP 500"), std::string::npos) << message;
  EXPECT_NE(message.find("database unavailable"), std::string::npos) << message;
  EXPECT_NE(message.find(Secrets::kMark), std::string::npos) << message;
  for (const Json& delivered : inbox.messages()) EXPECT_EQ(delivered.dump().find(kSecret), std::string::npos);

  // The configured headers were sent all the same.
  auto posts = requests_with(server, "POST");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0].header("authorization"), fmt::format("Bearer {}", kSecret));
  EXPECT_EQ(posts[0].header("x-team"), "blue");
}

TEST_F(McpHttpTransport, AnUnreachableServerIsTheRequestsErrorResponse) {
  HttpTransport config;
  config.url = fmt::format("http://127.0.0.1:{}/mcp", HttpTestServer::closed_port());
  auto transport = make_http_transport(config);
  ASSERT_TRUE(transport->open(inbox.on_message(), inbox.on_closed()));
  ASSERT_TRUE(transport->send(request(4, "ping")));
  ASSERT_TRUE(inbox.wait_messages(1));
  EXPECT_EQ(inbox.messages()[0]["id"], 4);
  EXPECT_NE(inbox.messages()[0]["error"]["message"].get<std::string>().find("connect_failed"), std::string::npos);
}

TEST_F(McpHttpTransport, AMalformedUrlDoesNotOpen) {
  for (const char* url : {"ftp://example.com/mcp", "example.com/mcp", "http://", "http:///mcp"}) {
    auto transport = make_http_transport(HttpTransport{url, {}});
    auto opened = transport->open(inbox.on_message(), inbox.on_closed());
    EXPECT_FALSE(opened) << url;
  }
}

TEST_F(McpHttpTransport, A404ToASessionEndsTheChannel) {
  HttpTestServer server([](const ReceivedRequest& request) {
    if (method_of(request) == "initialize") return initialize_answer("session-3");
    return status_only(404, "Not Found");
  });
  auto transport = open(server);
  initialize(*transport, inbox);
  ASSERT_TRUE(transport->send(request(1, "tools/list")));
  ASSERT_TRUE(inbox.wait_closed());
  EXPECT_EQ(inbox.closed(), std::vector<std::string>{"the server ended the MCP session (HTTP 404)"});
  // Only the answer to initialize: the lost request is not answered here.
  EXPECT_EQ(inbox.messages().size(), 1u);
  EXPECT_FALSE(transport->send(request(2, "tools/list")));
  transport->close();
  // A session the server forgot is not deleted.
  EXPECT_TRUE(requests_with(server, "DELETE").empty());
}

TEST_F(McpHttpTransport, ASlowRequestDoesNotHoldBackAFastOne) {
  HttpTestServer server([](const ReceivedRequest& request) {
    Json id = body_of(request)["id"];
    ScriptedResponse response = events_answer({{0ms, event(result(id, Json{{"which", id}}))}});
    // The slow one's answer waits until the fast one's has arrived.
    if (id == 1) response.body[0].gated = true;
    return response;
  });
  auto transport = open(server);
  auto sent = Clock::now();
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  ASSERT_TRUE(transport->send(request(2, "tools/call")));
  EXPECT_LT(Clock::now() - sent, 200ms);
  ASSERT_TRUE(inbox.wait_messages(1));
  EXPECT_EQ(inbox.messages()[0]["id"], 2);
  server.open_gate();
  ASSERT_TRUE(inbox.wait_messages(2));
  EXPECT_EQ(inbox.messages()[1]["id"], 1);
}

TEST_F(McpHttpTransport, CancellingARequestDropsItsStream) {
  HttpTestServer server([](const ReceivedRequest& request) {
    if (method_of(request) == "notifications/cancelled") return status_only(202, "Accepted");
    ScriptedResponse response = events_answer({}, ScriptedResponse::End::stall);
    return response;
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  for (auto deadline = Clock::now() + 1s; server.requests().empty() && Clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(transport->send(notification("notifications/cancelled", Json{{"requestId", 1}})));
  // Both connections end: the notification's, and the dropped stream's.
  EXPECT_TRUE(server.wait_for_client_close(1s, 2));
  std::this_thread::sleep_for(50ms);
  // The client stopped waiting: no error is made up for the call.
  EXPECT_TRUE(inbox.messages().empty());
}

TEST_F(McpHttpTransport, CloseDeletesTheSessionAndReturnsPromptlyWithAStalledRequest) {
  HttpTestServer server([](const ReceivedRequest& request) {
    if (request.method == "DELETE") return status_only(200, "OK");
    if (method_of(request) == "initialize") return initialize_answer("session-4");
    ScriptedResponse stalled;
    stalled.stall_before_response = true;
    return stalled;
  });
  auto transport = open(server, {{"Authorization", fmt::format("Bearer {}", kSecret)}});
  initialize(*transport, inbox);
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  for (auto deadline = Clock::now() + 1s; server.requests().size() < 2 && Clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
  }
  auto started = Clock::now();
  transport->close();
  EXPECT_LT(Clock::now() - started, 1s);

  auto deletes = requests_with(server, "DELETE");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].header("mcp-session-id"), "session-4");
  EXPECT_EQ(deletes[0].header("mcp-protocol-version"), "2025-11-25");
  EXPECT_EQ(deletes[0].header("authorization"), fmt::format("Bearer {}", kSecret));
  // The stalled call got no answer, not even a made-up one, and nothing comes after close.
  EXPECT_EQ(inbox.messages().size(), 1u);
  EXPECT_FALSE(transport->send(request(2, "tools/list")));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(inbox.messages().size(), 1u);
  EXPECT_TRUE(inbox.closed().empty());
}

TEST_F(McpHttpTransport, TheServersOwnMessagesArriveOnTheGetStream) {
  HttpTestServer server([](const ReceivedRequest& request) {
    if (request.method == "DELETE") return status_only(200, "OK");
    if (request.method == "GET") {
      return events_answer({{0ms, event(notification("notifications/tools/list_changed"), "g-1")}},
                           ScriptedResponse::End::stall);
    }
    if (method_of(request) == "initialize") return initialize_answer("session-5");
    return status_only(202, "Accepted");
  });
  auto transport = open(server);
  initialize(*transport, inbox);
  ASSERT_TRUE(transport->send(notification("notifications/initialized")));
  ASSERT_TRUE(inbox.wait_messages(2));
  EXPECT_EQ(inbox.messages()[1], notification("notifications/tools/list_changed"));
  auto gets = requests_with(server, "GET");
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0].header("mcp-session-id"), "session-5");
  EXPECT_FALSE(gets[0].header("last-event-id"));
  auto started = Clock::now();
  transport->close();
  EXPECT_LT(Clock::now() - started, 1s);
}

TEST_F(McpHttpTransport, AnAnswerPastTheLimitIsAnErrorNamingIt) {
  HttpTestServer server([](const ReceivedRequest&) {
    ScriptedResponse response;
    response.headers = {{"Content-Type", "application/json"}};
    response.framing = ScriptedResponse::Framing::content_length;
    response.body = {{0ms, std::string((std::size_t{32} << 20) + 1, ' ')}};
    return response;
  });
  auto transport = open(server);
  ASSERT_TRUE(transport->send(request(1, "tools/call")));
  // A wait, not a speed bound: 32 MiB over loopback in a sanitizer build on a
  // loaded machine took longer than 3 s once.
  ASSERT_TRUE(inbox.wait_messages(1, 30s));
  EXPECT_EQ(inbox.messages()[0]["id"], 1);
  EXPECT_NE(inbox.messages()[0]["error"]["message"].get<std::string>().find("32 MiB"), std::string::npos);
}

TEST_F(McpHttpTransport, ACallbackMayCloseTheTransport) {
  HttpTestServer server(
      [](const ReceivedRequest& request) { return json_answer(result(body_of(request)["id"], Json::object())); });
  HttpTransport config;
  config.url = server.url("/mcp");
  auto transport = make_http_transport(config);
  std::mutex mu;
  std::condition_variable changed;
  bool closed = false;
  ASSERT_TRUE(transport->open(
      [&](Json) {
        transport->close();
        std::lock_guard lock(mu);
        closed = true;
        changed.notify_all();
      },
      [](std::string) {}));
  ASSERT_TRUE(transport->send(request(1, "ping")));
  std::unique_lock lock(mu);
  EXPECT_TRUE(changed.wait_for(lock, 1s, [&] { return closed; }));
}

}  // namespace
}  // namespace http_transport_test
}  // namespace cairn::mcp
