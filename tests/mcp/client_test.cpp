// The client against scripted Streamable HTTP servers that answer the
// handshake oddly: values of the wrong JSON type where a string or a flag
// belongs, an unknown protocol version, an error instead of a tool list.
// The client must report these, never die of them.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "cairn/tools/mcp.hpp"
#include "mcp/mcp_test_support.hpp"
#include "support/http_test_server.hpp"

namespace cairn::mcp {
// Its own namespace: the test sources are compiled together (unity build).
namespace client_test {
namespace {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ReceivedRequest;
using testing::ScriptedResponse;

ScriptedResponse status_only(int status, std::string reason) {
  ScriptedResponse response;
  response.status = status;
  response.reason = std::move(reason);
  return response;
}

ScriptedResponse json_answer(const Json& id, Json result) {
  ScriptedResponse response;
  response.headers = {{"Content-Type", "application/json"}};
  response.body = {{0ms, Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}.dump()}};
  return response;
}

// A server that answers initialize with `init` and tools/list with `tools`,
// tools/call with `call`.
HttpTestServer::Responder scripted(Json init, Json tools, Json call = Json{{"content", Json::array()}}) {
  return [=](const ReceivedRequest& request) {
    if (request.method == "GET") return status_only(405, "Method Not Allowed");
    if (request.method == "DELETE") return status_only(200, "OK");
    const Json body = Json::parse(request.body, nullptr, false);
    if (!body.is_object() || !body.contains("id")) return status_only(202, "Accepted");
    const std::string method = body.value("method", std::string());
    if (method == "initialize") return json_answer(body["id"], init);
    if (method == "tools/list") return json_answer(body["id"], tools);
    return json_answer(body["id"], call);
  };
}

Json init_answer(Json version = "2025-06-18") {
  return Json{{"protocolVersion", std::move(version)},
              {"capabilities", Json{{"tools", Json::object()}}},
              {"serverInfo", Json{{"name", "scripted"}, {"version", "1"}}}};
}

class McpClient : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  }

  std::shared_ptr<Client> start(const HttpTestServer& server) {
    ServerConfig config;
    config.name = "scripted";
    config.transport = HttpTransport{server.url("/mcp"), {}};
    ClientOptions options;
    options.request_timeout = 3s;
    return Client::start(std::move(config), std::move(options));
  }
};

TEST_F(McpClient, AcceptsAnOlderProtocolVersionAndReadsTheTools) {
  HttpTestServer server(scripted(
      init_answer("2025-06-18"),
      Json{{"tools", Json::array({Json{{"name", "t"},
                                       {"title", "The T"},
                                       {"description", "does t"},
                                       {"inputSchema", Json{{"properties", Json::object()}}},
                                       {"annotations", Json{{"readOnlyHint", true}}}}})}}));
  auto client = start(server);
  ASSERT_EQ(client->wait_started(5s), ServerState::ready) << client->state_message();
  EXPECT_EQ(client->protocol_version(), "2025-06-18");
  auto tools = client->tools();
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0].description, "does t");
  EXPECT_EQ(tools[0].annotations.title, "The T");
  EXPECT_EQ(tools[0].annotations.read_only, true);
  EXPECT_FALSE(tools[0].annotations.destructive);
  // A schema without a type is an object's.
  EXPECT_EQ(tools[0].input_schema["type"], "object");
  // Later requests carry the negotiated version.
  bool carried = false;
  for (const auto& request : server.requests()) {
    if (request.body.find("tools/list") != std::string::npos) carried = request.header("mcp-protocol-version") == "2025-06-18";
  }
  EXPECT_TRUE(carried);
}

TEST_F(McpClient, ValuesOfTheWrongTypeInTheToolListAreIgnored) {
  HttpTestServer server(scripted(
      init_answer(),
      Json{{"tools", Json::array({Json{{"name", "odd"},
                                       {"description", nullptr},
                                       {"title", 7},
                                       {"inputSchema", "not a schema"},
                                       {"annotations", Json{{"readOnlyHint", "yes"}, {"title", false}}}},
                                  Json{{"name", 5}}, Json("not a tool"), Json{{"name", "fine"}}})},
           {"nextCursor", nullptr}}));
  auto client = start(server);
  ASSERT_EQ(client->wait_started(5s), ServerState::ready) << client->state_message();
  auto tools = client->tools();
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].name, "odd");
  EXPECT_EQ(tools[0].description, "");
  EXPECT_FALSE(tools[0].annotations.title);
  EXPECT_FALSE(tools[0].annotations.read_only);
  EXPECT_EQ(tools[0].input_schema, Json({{"type", "object"}}));
  EXPECT_EQ(tools[1].name, "fine");
}

TEST_F(McpClient, AnUnknownOrMistypedProtocolVersionFailsTheStartNamingIt) {
  for (Json version : {Json("1999-01-01"), Json(20250618), Json(nullptr)}) {
    HttpTestServer server(scripted(init_answer(version), Json{{"tools", Json::array()}}));
    auto client = start(server);
    ASSERT_EQ(client->wait_started(5s), ServerState::failed) << version.dump();
    EXPECT_NE(client->state_message().find("MCP server 'scripted' speaks protocol version"), std::string::npos)
        << client->state_message();
    if (version.is_string()) {
      EXPECT_NE(client->state_message().find("1999-01-01"), std::string::npos) << client->state_message();
    }
  }
}

TEST_F(McpClient, AToolResultOfOddShapeIsStillAResult) {
  HttpTestServer server(scripted(init_answer(), Json{{"tools", Json::array({Json{{"name", "t"}}})}},
                                 Json{{"isError", "very"},
                                      {"content", Json::array({Json{{"type", "text"}, {"text", nullptr}},
                                                               Json{{"type", 3}},
                                                               Json{{"type", "text"}, {"text", "kept"}},
                                                               Json{{"type", "resource_link"}, {"uri", 9}}})}}));
  auto client = start(server);
  ASSERT_EQ(client->wait_started(5s), ServerState::ready) << client->state_message();
  auto answer = client->call_tool("t", Json::object(), {}, {}, 5s);
  ASSERT_TRUE(answer) << answer.error().message;
  ToolResult shown = to_tool_result(*answer);
  EXPECT_FALSE(shown.is_error);
  EXPECT_NE(test::text_of(shown).find("kept"), std::string::npos) << test::text_of(shown);
}

}  // namespace
}  // namespace client_test
}  // namespace cairn::mcp
