#include "cairn/llm/http.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "llm/sse.hpp"
#include "support/http_test_server.hpp"

namespace cairn {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using testing::HttpTestServer;
using testing::ScriptedResponse;
using Clock = std::chrono::steady_clock;

// What one stream() call delivered.
struct Received {
  HttpResult result;
  int header_calls = 0;
  int status = 0;
  HttpHeaders headers;
  std::vector<std::string> chunks;
  std::string body() const {
    std::string all;
    for (const auto& chunk : chunks) all += chunk;
    return all;
  }
};

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The test server is local; a proxy configured on the machine must not
    // be asked for it.
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  }

  static HttpRequest request_to(const std::string& url) {
    HttpRequest request;
    request.url = url;
    request.headers = {{"content-type", "application/json"}, {"authorization", "Bearer sk-secret-key"}};
    request.body = R"({"model":"m","stream":true})";
    return request;
  }

  static Received run(const HttpRequest& request, std::stop_token cancel = {},
                      const std::function<void(const std::string&)>& on_chunk = {}) {
    Received received;
    HttpClient client;
    received.result = client.stream(
        request,
        [&](int status, const HttpHeaders& headers) {
          ++received.header_calls;
          received.status = status;
          received.headers = headers;
        },
        [&](std::string_view chunk) {
          received.chunks.emplace_back(chunk);
          if (on_chunk) on_chunk(received.chunks.back());
        },
        cancel);
    return received;
  }
};

TEST_F(HttpClientTest, StreamsTheBodyAsItArrives) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  // The second piece is only sent once the client has seen the first: the
  // body is delivered as it arrives, not at the end.
  script.body = {{.bytes = "alpha "}, {.bytes = "beta ", .gated = true}, {.delay = 20ms, .bytes = "gamma"}};
  HttpTestServer server(script);

  Received received = run(request_to(server.url("/v1/messages")), {}, [&](const std::string&) { server.open_gate(); });
  ASSERT_TRUE(received.result.ok()) << received.result.message;
  EXPECT_EQ(received.result.status, 200);
  EXPECT_EQ(received.header_calls, 1);
  EXPECT_EQ(received.body(), "alpha beta gamma");
  EXPECT_GE(received.chunks.size(), 2u);
  EXPECT_EQ(find_header(received.result.headers, "content-type"), "text/event-stream");

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/messages");
  EXPECT_EQ(requests[0].body, R"({"model":"m","stream":true})");
  EXPECT_EQ(requests[0].header("authorization"), "Bearer sk-secret-key");
  EXPECT_EQ(requests[0].header("content-type"), "application/json");
  EXPECT_FALSE(requests[0].header("expect"));
  ASSERT_TRUE(requests[0].header("accept-encoding"));
  EXPECT_NE(requests[0].header("accept-encoding")->find("gzip"), std::string::npos);
  EXPECT_NE(requests[0].header("accept-encoding")->find("deflate"), std::string::npos);
}

TEST_F(HttpClientTest, OtherMethodsAreSentAsAsked) {
  ScriptedResponse script;
  script.body = {{.bytes = "[]"}};
  HttpTestServer server(script);
  HttpRequest get = request_to(server.url("/v1/models"));
  get.method = "GET";
  get.body.clear();
  Received received = run(get);
  ASSERT_TRUE(received.result.ok()) << received.result.message;
  HttpRequest put = request_to(server.url("/thing"));
  put.method = "PUT";
  ASSERT_TRUE(run(put).result.ok());

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].body, "");
  EXPECT_EQ(requests[1].method, "PUT");
  EXPECT_EQ(requests[1].body, R"({"model":"m","stream":true})");
}

TEST_F(HttpClientTest, AnErrorStatusAndItsHeadersAreReportedNotFailed) {
  ScriptedResponse script;
  script.status = 429;
  script.reason = "Too Many Requests";
  script.headers = {{"Retry-After", "7"}, {"X-Request-Id", "req_123"}, {"Content-Type", "application/json"}};
  script.body = {{.bytes = R"({"error":{"type":"rate_limit_error"}})"}};
  script.framing = ScriptedResponse::Framing::content_length;
  HttpTestServer server(script);

  Received received = run(request_to(server.url()));
  EXPECT_EQ(received.result.failure, HttpFailure::none) << received.result.message;
  EXPECT_EQ(received.result.status, 429);
  EXPECT_EQ(received.header_calls, 1);
  EXPECT_EQ(received.status, 429);
  EXPECT_EQ(find_header(received.headers, "retry-after"), "7");
  EXPECT_EQ(find_header(received.headers, "x-request-id"), "req_123");
  EXPECT_EQ(find_header(received.result.headers, "retry-after"), "7");
  EXPECT_FALSE(find_header(received.headers, "Retry-After"));  // names are lower-cased
  EXPECT_EQ(received.body(), R"({"error":{"type":"rate_limit_error"}})");
}

TEST_F(HttpClientTest, AGzipBodyIsDecoded) {
  // gzip of "data: hello, compressed world\n\n" three times.
  std::string compressed =
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\x4b\x49\x2c\x49\xb4\x52\xc8\x48\xcd\xc9\xc9\xd7\x51\x48\xce\xcf"
      "\x2d\x28\x4a\x2d\x2e\x4e\x4d\x51\x28\xcf\x2f\xca\x49\xe1\xe2\x4a\xa1\x48\x1a\x00\x99\x7e\xe9\x1e\x5d\x00"
      "\x00\x00"s;
  ASSERT_EQ(compressed.size(), 54u);
  ScriptedResponse script;
  script.headers = {{"Content-Encoding", "gzip"}};
  script.body = {{.bytes = compressed.substr(0, 20)}, {.delay = 10ms, .bytes = compressed.substr(20)}};
  for (auto framing : {ScriptedResponse::Framing::chunked, ScriptedResponse::Framing::content_length}) {
    script.framing = framing;
    HttpTestServer server(script);
    Received received = run(request_to(server.url()));
    ASSERT_TRUE(received.result.ok()) << received.result.message;
    std::string line = "data: hello, compressed world\n\n";
    EXPECT_EQ(received.body(), line + line + line);
  }
}

TEST_F(HttpClientTest, ARefusedConnectionIsConnectFailed) {
  HttpRequest request = request_to(fmt::format("http://127.0.0.1:{}/v1?key=query-secret", HttpTestServer::closed_port()));
  Received received = run(request);
  EXPECT_EQ(received.result.failure, HttpFailure::connect_failed) << received.result.message;
  EXPECT_EQ(received.result.status, 0);
  EXPECT_EQ(received.header_calls, 0);
  EXPECT_FALSE(received.result.message.empty());
  // Credentials never reach an error message.
  EXPECT_EQ(received.result.message.find("sk-secret-key"), std::string::npos) << received.result.message;
  EXPECT_EQ(received.result.message.find("query-secret"), std::string::npos) << received.result.message;
}

TEST_F(HttpClientTest, AnUnresolvableHostIsConnectFailed) {
  ::setenv("no_proxy", "*", 1);  // resolve it here, not at a proxy the machine may have
  HttpRequest request = request_to("http://cairn-test.invalid/");
  request.connect_timeout = 2000ms;
  Received received = run(request);
  EXPECT_EQ(received.result.failure, HttpFailure::connect_failed) << received.result.message;
}

TEST_F(HttpClientTest, TheEnvironmentsProxyIsUsed) {
  ScriptedResponse script;
  script.body = {{.bytes = "via proxy"}};
  HttpTestServer proxy(script);
  ::setenv("http_proxy", proxy.url().c_str(), 1);
  Received received = run(request_to("http://cairn-proxy-test.invalid/v1/messages"));
  ::unsetenv("http_proxy");
  ASSERT_TRUE(received.result.ok()) << received.result.message;
  EXPECT_EQ(received.body(), "via proxy");
  auto requests = proxy.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target, "http://cairn-proxy-test.invalid/v1/messages");  // a proxy's absolute form
}

TEST_F(HttpClientTest, AHeaderWithALineBreakIsRefusedUnsent) {
  HttpTestServer server(ScriptedResponse{});
  HttpRequest request = request_to(server.url());
  request.headers.emplace_back("x-api-key", "sk-secret-key\r\nx-injected: 1");
  Received received = run(request);
  EXPECT_EQ(received.result.failure, HttpFailure::other);
  EXPECT_EQ(received.result.message.find("sk-secret-key"), std::string::npos) << received.result.message;
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpClientTest, AConnectionClosedMidBodyIsConnectionReset) {
  struct Case {
    ScriptedResponse::Framing framing;
    ScriptedResponse::End end;
  };
  for (auto [framing, end] : {Case{ScriptedResponse::Framing::chunked, ScriptedResponse::End::close},
                              Case{ScriptedResponse::Framing::content_length, ScriptedResponse::End::close},
                              Case{ScriptedResponse::Framing::chunked, ScriptedResponse::End::reset}}) {
    ScriptedResponse script;
    script.body = {{.bytes = "data: one\n\n"}, {.delay = 10ms, .bytes = "data: tw"}};
    script.framing = framing;
    script.end = end;
    HttpTestServer server(script);
    Received received = run(request_to(server.url()));
    EXPECT_EQ(received.result.failure, HttpFailure::connection_reset)
        << to_string(received.result.failure) << ": " << received.result.message;
    EXPECT_EQ(received.result.status, 200);  // the response had begun
    EXPECT_EQ(received.body().substr(0, 11), "data: one\n\n");
  }
}

TEST_F(HttpClientTest, AServerClosingBeforeAnyResponseIsConnectionReset) {
  ScriptedResponse script;
  script.close_before_response = true;
  HttpTestServer server(script);
  Received received = run(request_to(server.url()));
  EXPECT_EQ(received.result.failure, HttpFailure::connection_reset) << received.result.message;
  EXPECT_EQ(received.result.status, 0);
  EXPECT_EQ(received.header_calls, 0);
}

TEST_F(HttpClientTest, AStalledServerIsIdleTimeout) {
  ScriptedResponse script;
  script.body = {{.bytes = "data: first\n\n"}};
  script.end = ScriptedResponse::End::stall;
  HttpTestServer server(script);
  HttpRequest request = request_to(server.url());
  request.idle_timeout = 300ms;

  auto start = Clock::now();
  Received received = run(request);
  auto elapsed = Clock::now() - start;
  EXPECT_EQ(received.result.failure, HttpFailure::idle_timeout) << received.result.message;
  EXPECT_EQ(received.result.status, 200);
  EXPECT_EQ(received.body(), "data: first\n\n");
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 3000ms);
  EXPECT_TRUE(server.wait_for_client_close(2000ms));
}

TEST_F(HttpClientTest, NoResponseAtAllIsIdleTimeout) {
  ScriptedResponse script;
  script.stall_before_response = true;
  HttpTestServer server(script);
  HttpRequest request = request_to(server.url());
  request.idle_timeout = 300ms;
  Received received = run(request);
  EXPECT_EQ(received.result.failure, HttpFailure::idle_timeout) << received.result.message;
  EXPECT_EQ(received.result.status, 0);
  EXPECT_EQ(received.header_calls, 0);
  EXPECT_TRUE(server.wait_for_client_close(2000ms));
}

// Starts a stream against `script`, waits until `ready` says the transfer is
// where the test wants it, requests stop and measures how long stream() takes
// to return and the server to see the connection closed.
void expect_prompt_cancel(const ScriptedResponse& script, bool wait_for_first_chunk) {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  HttpTestServer server(script);
  HttpRequest request;
  request.url = server.url();
  request.body = "{}";
  std::stop_source stop;
  std::promise<void> first_chunk;
  std::promise<std::pair<HttpResult, Clock::time_point>> finished;
  bool signalled = false;

  std::jthread client([&] {
    HttpClient http;
    HttpResult result = http.stream(
        request, [](int, const HttpHeaders&) {},
        [&](std::string_view) {
          if (!signalled) {
            signalled = true;
            first_chunk.set_value();
          }
        },
        stop.get_token());
    finished.set_value({std::move(result), Clock::now()});
  });

  if (wait_for_first_chunk) {
    ASSERT_EQ(first_chunk.get_future().wait_for(5s), std::future_status::ready);
  } else {
    for (int i = 0; i < 1000 && server.requests().empty(); ++i) std::this_thread::sleep_for(2ms);
    ASSERT_EQ(server.requests().size(), 1u);
  }
  std::this_thread::sleep_for(50ms);  // let the client settle into waiting
  auto stop_at = Clock::now();
  stop.request_stop();
  auto [result, returned_at] = finished.get_future().get();
  auto latency = std::chrono::duration<double, std::milli>(returned_at - stop_at).count();

  EXPECT_EQ(result.failure, HttpFailure::cancelled) << result.message;
  EXPECT_LT(latency, 500.0);
  ASSERT_TRUE(server.wait_for_client_close(2000ms)) << "the server never saw the connection closed";
  auto closed_after = std::chrono::duration<double, std::milli>(*server.first_client_close() - stop_at).count();
  fmt::print("cancel latency: stream() returned {:.2f} ms after the stop request; the server saw the close after "
             "{:.2f} ms\n",
             latency, closed_after);
  ::testing::Test::RecordProperty("cancel_latency_us", static_cast<int>(latency * 1000));
}

TEST_F(HttpClientTest, CancellingAStalledStreamEndsItAtOnce) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  script.body = {{.bytes = "data: first\n\n"}};
  script.end = ScriptedResponse::End::stall;
  expect_prompt_cancel(script, true);
}

TEST_F(HttpClientTest, CancellingWhileWaitingForTheResponseEndsItAtOnce) {
  ScriptedResponse script;
  script.stall_before_response = true;
  expect_prompt_cancel(script, false);
}

TEST_F(HttpClientTest, AStopRequestedBeforehandSendsNothing) {
  HttpTestServer server(ScriptedResponse{});
  std::stop_source stop;
  stop.request_stop();
  Received received = run(request_to(server.url()), stop.get_token());
  EXPECT_EQ(received.result.failure, HttpFailure::cancelled);
  EXPECT_EQ(received.header_calls, 0);
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpClientTest, ServerSentEventsStreamThroughTheParser) {
  ScriptedResponse script;
  script.headers = {{"Content-Type", "text/event-stream"}};
  script.body = {{.bytes = "event: message_start\r\ndata: {\"a\""},
                 {.delay = 5ms, .bytes = ":1}\r"},
                 {.delay = 5ms, .bytes = "\n\r\n: ping\r\n\r\ndata: [DO"},
                 {.delay = 5ms, .bytes = "NE]\r\n\r\n"}};
  HttpTestServer server(script);
  SseParser parser;
  std::vector<SseEvent> events;
  Received received = run(request_to(server.url()), {}, [&](const std::string& chunk) {
    ASSERT_TRUE(parser.feed(chunk, [&](const SseEvent& event) { events.push_back(event); }));
  });
  ASSERT_TRUE(received.result.ok()) << received.result.message;
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].data, "[DONE]");
}

TEST(HttpFailure, NamesAreStable) {
  EXPECT_EQ(to_string(HttpFailure::none), "none");
  EXPECT_EQ(to_string(HttpFailure::connect_failed), "connect_failed");
  EXPECT_EQ(to_string(HttpFailure::connection_reset), "connection_reset");
  EXPECT_EQ(to_string(HttpFailure::idle_timeout), "idle_timeout");
  EXPECT_EQ(to_string(HttpFailure::cancelled), "cancelled");
  EXPECT_EQ(to_string(HttpFailure::other), "other");
}

}  // namespace
}  // namespace cairn
