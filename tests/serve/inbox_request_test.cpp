// What a relayed request keeps in a session's inbox (serve/inbox_relay.hpp):
// everything its route reads — method, path, query, body, the headers that
// shape its meaning — and never its credentials; a request it cannot keep
// faithfully (bytes that are not UTF-8) is refused where it arrived; what
// answers with a stream is not relayed; a stored request that is not one
// cairn left is refused, not guessed at.
#include "serve/inbox_relay.hpp"

#include <gtest/gtest.h>

namespace cairn::serve {
namespace {

TEST(InboxRequest, ARequestComesBackAsItWasSentWithoutItsCredentials) {
  HttpRequest sent{.method = "POST",
                   .path = "/v1/sessions/s%20x/refs/main/prompt",
                   .query = {{"after", "3"}},
                   .headers = {{"authorization", "Bearer secret-token"},
                               {"content-type", "application/json"},
                               {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                               {"a2a-version", "1.0"},
                               {"cookie", "session=also-secret"}},
                   .body = R"({"text":"héllo ✓"})"};
  auto stored = inbox_request(sent);
  ASSERT_TRUE(stored) << stored.error().message;
  const std::string text = stored->dump();
  EXPECT_EQ(text.find("secret"), std::string::npos) << text;
  auto back = request_of(Json::parse(text));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->method, sent.method);
  EXPECT_EQ(back->path, sent.path);
  EXPECT_EQ(back->query, sent.query);
  EXPECT_EQ(back->body, sent.body);
  EXPECT_EQ(back->header("content-type"), "application/json");
  EXPECT_EQ(back->header("traceparent"), sent.header("traceparent"));
  EXPECT_EQ(back->header("a2a-version"), "1.0");
  EXPECT_FALSE(back->header("authorization"));
  EXPECT_FALSE(back->header("cookie"));
}

TEST(InboxRequest, BytesThatAreNotUtf8AreRefusedWhereTheyArrived) {
  for (const std::string& body : {std::string("{\"text\":\"\xff\"}"), std::string("\xc3"), std::string("a\xed\xa0\x80")}) {
    auto stored = inbox_request(HttpRequest{.method = "POST", .path = "/v1/sessions/s/refs/main/steer", .body = body});
    ASSERT_FALSE(stored);
    EXPECT_TRUE(stored.error().is(Errc::invalid_argument));
  }
  EXPECT_FALSE(inbox_request(HttpRequest{.method = "GET", .path = "/v1/sessions/s", .query = {{"x", "\xfe"}}}));
}

TEST(InboxRequest, WhatAnswersWithAStreamIsNotRelayed) {
  EXPECT_TRUE(relayed(HttpRequest{.method = "POST", .path = "/v1/sessions/s/refs/main/prompt"}));
  EXPECT_TRUE(relayed(HttpRequest{.method = "POST", .path = "/a2a/rest/message:send"}));
  EXPECT_FALSE(relayed(HttpRequest{.method = "POST", .path = "/a2a/rest/message:stream"}));
  EXPECT_FALSE(relayed(HttpRequest{.method = "GET", .path = "/a2a/rest/tasks/s%2Fmain%2Fr1:subscribe"}));
  EXPECT_TRUE(relayed(HttpRequest{.method = "POST", .path = "/a2a/jsonrpc",
                                  .body = R"({"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}})"}));
  EXPECT_FALSE(relayed(HttpRequest{.method = "POST", .path = "/a2a/jsonrpc",
                                   .body = R"({"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{}})"}));
  EXPECT_FALSE(relayed(HttpRequest{.method = "POST", .path = "/a2a/jsonrpc",
                                   .body = R"({"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{}})"}));
}

TEST(InboxRequest, AStoredRequestThatIsNotOneCairnLeftIsRefused) {
  for (const char* stored : {"[]", "{}", R"({"method":"POST","path":"/x","query":{},"headers":{}})",
                             R"({"method":1,"path":"/x","query":{},"headers":{},"body":""})",
                             R"({"method":"POST","path":"/x","query":[],"headers":{},"body":""})"}) {
    EXPECT_FALSE(request_of(Json::parse(stored))) << stored;
  }
}

TEST(InboxRequest, AnItemsStateIsToldAsTheRouteDocumentsIt) {
  InboxItem item{.id = 7, .session_id = "s", .request = Json{{"method", "POST"}, {"path", "/p"}, {"body", "x"}},
                 .state = InboxState::decided, .applied_seq = 12, .status = 202, .response = R"({"seq":12})",
                 .content_type = "application/json", .created = "2026-12-07T00:00:00.000Z", .decided = "2026-12-07T00:00:01.000Z"};
  const Json told = item_json(item);
  EXPECT_EQ(told["state"], "decided");
  EXPECT_EQ(told["appliedSeq"], 12);
  EXPECT_EQ(told["response"]["status"], 202);
  EXPECT_EQ(told["response"]["body"]["seq"], 12);
  EXPECT_FALSE(told["request"].contains("body")) << "the item names its request, it does not repeat it";
  const HttpResponse answer = outcome_response(item);
  EXPECT_EQ(answer.status, 202);
  EXPECT_EQ(answer.body, item.response);
  for (InboxState state : {InboxState::pending, InboxState::applying, InboxState::applied, InboxState::decided,
                           InboxState::withdrawn, InboxState::failed}) {
    EXPECT_EQ(parse_inbox_state(to_string(state)), state);
  }
  EXPECT_FALSE(parse_inbox_state("done"));
}

}  // namespace
}  // namespace cairn::serve
