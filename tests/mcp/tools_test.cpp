// MCP tools as cairn tools: their names, the overrides of their replay and
// approval, calls through the client (and while the server is down), what is
// said of a tool no server answers, and results in the harness's shape.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cairn/harness/tool.hpp"
#include "cairn/tools/mcp.hpp"
#include "mcp/mcp_test_support.hpp"
#include "support/test_support.hpp"

namespace cairn::mcp {
// Its own namespace: the test sources are compiled together (unity build).
namespace tools_test {
namespace {

using namespace std::chrono_literals;
using test::text_of;

bool well_formed(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

const McpTool* by_server_name(const std::vector<McpTool>& tools, const std::string& name) {
  for (const auto& tool : tools) {
    if (tool.server_tool == name) return &tool;
  }
  return nullptr;
}

TEST(McpToolNames, AreSanitisedBoundedAndUnique) {
  std::set<std::string> taken;
  EXPECT_EQ(cairn_tool_name("fs", "read_file", taken), "mcp__fs__read_file");
  EXPECT_EQ(cairn_tool_name("my server", "get.thing/v2", taken), "mcp__my_server__get_thing_v2");
  EXPECT_EQ(cairn_tool_name("ünï", "a-b", taken), "mcp____n____a-b");  // each byte of ü and ï: an underscore
  // Alike once sanitised: the later one is told apart.
  const std::string dotted = cairn_tool_name("s", "a.b", taken);
  const std::string underscored = cairn_tool_name("s", "a_b", taken);
  EXPECT_EQ(dotted, "mcp__s__a_b");
  EXPECT_NE(underscored, dotted);
  EXPECT_TRUE(well_formed(underscored)) << underscored;

  // Two long names that differ only at their ends stay distinct, and short enough.
  const std::string stem(80, 'x');
  const std::string one = cairn_tool_name("server", stem + "_one", taken);
  const std::string two = cairn_tool_name("server", stem + "_two", taken);
  EXPECT_NE(one, two);
  EXPECT_EQ(one.size(), 64u);
  EXPECT_EQ(two.size(), 64u);
  EXPECT_TRUE(one.starts_with("mcp__server__xxxx")) << one;
  // Stable: the same name cut the same way in another process.
  std::set<std::string> fresh;
  EXPECT_EQ(cairn_tool_name("server", stem + "_one", fresh), one);
  // The same long name again, against what is taken: still unique and bounded.
  const std::string again = cairn_tool_name("server", stem + "_one", taken);
  EXPECT_NE(again, one);
  EXPECT_LE(again.size(), 64u);

  for (const auto& name : taken) EXPECT_TRUE(well_formed(name)) << name;
  EXPECT_EQ(taken.size(), 8u);
}

TEST(McpToolResults, KeepTextAndImagesAndDescribeTheRest) {
  Json result = {{"content",
                  Json::array({Json{{"type", "text"}, {"text", "hello"}},
                               Json{{"type", "image"}, {"data", "iVBORw0KGgo="}, {"mimeType", "image/png"}},
                               Json{{"type", "audio"}, {"data", "AAAA"}, {"mimeType", "audio/wav"}},
                               Json{{"type", "resource_link"},
                                    {"uri", "file:///a.txt"},
                                    {"name", "a.txt"},
                                    {"mimeType", "text/plain"}},
                               Json{{"type", "resource"},
                                    {"resource", Json{{"uri", "file:///b.txt"}, {"text", "inside b"}}}}})}};
  ToolResult shown = to_tool_result(result);
  EXPECT_FALSE(shown.is_error);
  ASSERT_EQ(shown.content.size(), 5u);
  EXPECT_EQ(std::get<TextContent>(shown.content[0]).text, "hello");
  EXPECT_EQ(std::get<ImageContent>(shown.content[1]).data, "iVBORw0KGgo=");
  EXPECT_EQ(std::get<ImageContent>(shown.content[1]).mime_type, "image/png");
  EXPECT_NE(std::get<TextContent>(shown.content[2]).text.find("audio/wav"), std::string::npos);
  EXPECT_EQ(std::get<TextContent>(shown.content[3]).text, "[resource link: a.txt <file:///a.txt> (text/plain)]");
  EXPECT_EQ(std::get<TextContent>(shown.content[4]).text, "[resource file:///b.txt]\ninside b");

  // Structured content alone: in details, and as text.
  ToolResult structured = to_tool_result(Json{{"structuredContent", Json{{"t", 21}}}});
  ASSERT_TRUE(structured.details);
  EXPECT_EQ((*structured.details)["structuredContent"], Json({{"t", 21}}));
  EXPECT_NE(text_of(structured).find("\"t\": 21"), std::string::npos);

  ToolResult failed = to_tool_result(Json{{"isError", true}, {"content", Json::array()}});
  EXPECT_TRUE(failed.is_error);
  EXPECT_EQ(text_of(failed), "(error without a message)");
}

class McpTools : public ::testing::Test {
 protected:
  std::shared_ptr<Client> start(ServerConfig config) {
    config.transport = std::get<StdioTransport>(test::stdio_server("", test::misbehaving_js()).transport);
    std::get<StdioTransport>(config.transport).env["MARKER"] = marker_.string();
    auto client = Client::start(std::move(config));
    EXPECT_EQ(client->wait_started(15s), ServerState::ready) << client->state_message();
    return client;
  }

  testing::TempDir dir_;
  std::filesystem::path marker_ = dir_.path() / "marker";
};

TEST_F(McpTools, MakeToolsAppliesTheAnnotationsAndTheOverrides) {
  ServerConfig plain;
  plain.name = "plain";
  auto plain_client = start(plain);
  ServerConfig said;
  said.name = "said";
  said.all_tools.approval = ApprovalDecision::deny;  // every tool of it …
  said.tools["slow_safe"].replay = Replay::never;    // … but these
  said.tools["slow_never"] = ToolOverride{.replay = Replay::safe, .approval = ApprovalDecision::allow};
  auto said_client = start(said);

  auto made = make_tools({plain_client, said_client});
  ASSERT_EQ(made.size(), 2 * plain_client->tools().size());
  std::set<std::string> names;
  for (const auto& tool : made) {
    EXPECT_TRUE(names.insert(tool.tool.name).second) << tool.tool.name;
    EXPECT_EQ(tool.tool.name, "mcp__" + tool.server + "__" + tool.server_tool);
    EXPECT_TRUE(tool.tool.execute);
    EXPECT_TRUE(tool.tool.parallel);
  }
  // In the order of the clients.
  EXPECT_EQ(made.front().server, "plain");
  EXPECT_EQ(made.back().server, "said");

  std::vector<McpTool> plain_tools(made.begin(), made.begin() + static_cast<std::ptrdiff_t>(made.size() / 2));
  std::vector<McpTool> said_tools(made.begin() + static_cast<std::ptrdiff_t>(made.size() / 2), made.end());
  // From the annotations alone.
  EXPECT_EQ(by_server_name(plain_tools, "slow_safe")->tool.replay, Replay::safe);
  EXPECT_EQ(by_server_name(plain_tools, "slow_safe")->approval, ApprovalDecision::allow);
  EXPECT_EQ(by_server_name(plain_tools, "slow_never")->tool.replay, Replay::never);
  EXPECT_EQ(by_server_name(plain_tools, "slow_never")->approval, ApprovalDecision::ask);
  EXPECT_EQ(by_server_name(plain_tools, "slow_never")->tool.parameters["properties"]["ms"]["type"], "number");
  EXPECT_EQ(by_server_name(plain_tools, "slow_never")->tool.description, "waits, then answers");
  // The server's say, then the tool's.
  EXPECT_EQ(by_server_name(said_tools, "slow_safe")->tool.replay, Replay::never);
  EXPECT_EQ(by_server_name(said_tools, "slow_safe")->approval, ApprovalDecision::deny);
  EXPECT_EQ(by_server_name(said_tools, "slow_never")->tool.replay, Replay::safe);
  EXPECT_EQ(by_server_name(said_tools, "slow_never")->approval, ApprovalDecision::allow);
  EXPECT_EQ(by_server_name(said_tools, "fail")->approval, ApprovalDecision::deny);
  EXPECT_EQ(by_server_name(said_tools, "fail")->tool.replay, Replay::never);

  auto rules = approval_rules(made);
  ASSERT_EQ(rules.size(), made.size());
  for (std::size_t i = 0; i < rules.size(); ++i) {
    EXPECT_EQ(rules[i].tool, made[i].tool.name);
    EXPECT_FALSE(rules[i].pattern);
    EXPECT_EQ(rules[i].decision, made[i].approval);
    EXPECT_TRUE(rules[i].matches(made[i].tool.name, std::nullopt));
  }
  // Each rule reads back as the policy's text form: the bare tool name.
  for (const auto& rule : rules) {
    auto parsed = ApprovalRule::parse(rule.text(), rule.decision);
    ASSERT_TRUE(parsed) << rule.text();
    EXPECT_EQ(parsed->tool, rule.tool);
    EXPECT_FALSE(parsed->pattern);
  }
}

TEST_F(McpTools, AConfigurationFilesOverridesReachTheToolsAndTheirRules) {
  const auto file = dir_.path() / "mcp.json";
  std::ofstream(file) << Json{{"mcpServers",
                               {{"conf",
                                 {{"command", "node"},
                                  {"args", Json::array({test::misbehaving_js().string()})},
                                  {"env", {{"MARKER", "${MARKER_FILE}"}}},
                                  {"timeout", 500},
                                  {"approval", "deny"},
                                  {"tools",
                                   {{"slow_safe", {{"replay", "never"}}},
                                    {"fail", {{"approval", "allow"}, {"replay", "safe"}}}}}}}}}}
                             .dump();
  auto loaded = load_config({file}, {"MARKER_FILE=" + marker_.string()});
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->servers.size(), 1u);
  auto client = Client::start(loaded->servers[0]);
  ASSERT_EQ(client->wait_started(15s), ServerState::ready) << client->state_message();
  // The expanded variable reached the server.
  EXPECT_EQ(test::lines_starting(marker_, "started ").size(), 1u);

  auto made = make_tools({client});
  const McpTool* slow_safe = by_server_name(made, "slow_safe");
  const McpTool* fail = by_server_name(made, "fail");
  const McpTool* hang = by_server_name(made, "hang");
  ASSERT_TRUE(slow_safe && fail && hang);
  EXPECT_EQ(slow_safe->tool.replay, Replay::never);  // readOnlyHint said safe; the file says never
  EXPECT_EQ(slow_safe->approval, ApprovalDecision::deny);
  EXPECT_EQ(fail->tool.replay, Replay::safe);
  EXPECT_EQ(fail->approval, ApprovalDecision::allow);
  EXPECT_EQ(hang->tool.replay, Replay::never);
  EXPECT_EQ(hang->approval, ApprovalDecision::deny);
  for (const auto& rule : approval_rules(made)) {
    EXPECT_EQ(rule.decision, rule.tool == "mcp__conf__fail" ? ApprovalDecision::allow : ApprovalDecision::deny)
        << rule.tool;
  }
  // The file's timeout bounds a call.
  const auto started = std::chrono::steady_clock::now();
  ToolResult hung = hang->tool.execute(Json::object(), ToolContext{});
  EXPECT_TRUE(hung.is_error);
  EXPECT_NE(text_of(hung).find("did not answer tools/call within 0.5 s"), std::string::npos) << text_of(hung);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

TEST_F(McpTools, AToolExecutesThroughTheClientWithProgressAndCancel) {
  ServerConfig config;
  config.name = "mis";
  config.timeout = 5s;
  auto client = start(config);
  auto made = make_tools({client});
  const McpTool* progress = by_server_name(made, "progress");
  const McpTool* fail = by_server_name(made, "fail");
  const McpTool* slow = by_server_name(made, "slow_never");
  ASSERT_TRUE(progress && fail && slow);

  std::vector<std::string> updates;
  ToolContext context;
  context.update = [&](const ToolResult& partial) { updates.push_back(text_of(partial)); };
  ToolResult done = progress->tool.execute(Json{{"steps", 2}}, context);
  EXPECT_FALSE(done.is_error);
  EXPECT_EQ(text_of(done), "2 steps");
  EXPECT_EQ(updates, (std::vector<std::string>{"progress 1/2: step 1", "progress 2/2: step 2"}));

  ToolResult failed = fail->tool.execute(Json::object(), ToolContext{});
  EXPECT_TRUE(failed.is_error);
  EXPECT_EQ(text_of(failed), "it failed");

  // Cancelled through the context's stop token: an error result at once.
  std::stop_source stop;
  ToolContext cancellable;
  cancellable.cancel = stop.get_token();
  std::thread stopper([&] {
    test::wait_until([&] { return !test::lines_starting(marker_, "called slow_never").empty(); });
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  ToolResult cancelled = slow->tool.execute(Json{{"ms", 60000}}, cancellable);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_TRUE(cancelled.is_error);
  EXPECT_NE(text_of(cancelled).find("cancelled"), std::string::npos) << text_of(cancelled);
  EXPECT_TRUE(test::wait_until([&] { return !test::lines_starting(marker_, "cancelled ").empty(); }, 3s));
}

TEST_F(McpTools, ACallWhileTheServerIsDownIsAnErrorNamingIt) {
  ServerConfig config;
  config.name = "flaky";
  auto client = start(config);
  auto made = make_tools({client});
  const McpTool* exit = by_server_name(made, "exit");
  const McpTool* fail = by_server_name(made, "fail");
  ASSERT_TRUE(exit && fail);

  ToolResult died = exit->tool.execute(Json::object(), ToolContext{});
  EXPECT_TRUE(died.is_error);
  EXPECT_NE(text_of(died).find("'flaky'"), std::string::npos) << text_of(died);
  // Down until its restart (a quarter second later): a call now fails, naming it.
  ASSERT_TRUE(test::wait_until([&] { return client->state() != ServerState::ready; }, 3s));
  ToolResult down = fail->tool.execute(Json::object(), ToolContext{});
  EXPECT_TRUE(down.is_error);
  EXPECT_NE(text_of(down).find("MCP server 'flaky' is not running"), std::string::npos) << text_of(down);
  const auto described = describe_missing_tool("mcp__flaky__fail", {client});
  ASSERT_TRUE(described);
  EXPECT_NE(described->find("'flaky' is restarting"), std::string::npos) << *described;
  EXPECT_NE(described->find("exited with status 3"), std::string::npos) << *described;

  // Back: the same Tool reaches the new process.
  ASSERT_TRUE(test::wait_until([&] { return client->state() == ServerState::ready; }, 10s));
  ToolResult back = fail->tool.execute(Json::object(), ToolContext{});
  EXPECT_EQ(text_of(back), "it failed");
  EXPECT_EQ(test::lines_starting(marker_, "started ").size(), 2u);
}

TEST_F(McpTools, DescribeMissingToolSaysWhy) {
  ServerConfig config;
  config.name = "mis";
  auto ready = start(config);
  ServerConfig broken;
  broken.name = "mis.broken";  // sanitised in tool names: mcp__mis_broken__…
  broken.transport = StdioTransport{.command = "cairn-no-such-program-4711"};
  auto failed = Client::start(std::move(broken));
  ASSERT_EQ(failed->wait_started(5s), ServerState::failed);
  ServerConfig deep;
  deep.name = "mis__deep";  // its tools' names begin as mis's do
  deep.transport = StdioTransport{.command = "cairn-no-such-program-4711"};
  auto deeper = Client::start(std::move(deep));
  ASSERT_EQ(deeper->wait_started(5s), ServerState::failed);
  const std::vector<std::shared_ptr<Client>> clients{ready, failed, deeper};

  EXPECT_EQ(describe_missing_tool("bash", clients), std::nullopt);
  EXPECT_EQ(describe_missing_tool("mcp_single_underscore", clients), std::nullopt);
  EXPECT_EQ(describe_missing_tool("mcp__nowhere__tool", clients), "no MCP server 'nowhere' is configured here");
  EXPECT_EQ(describe_missing_tool("mcp__mis__gone", clients), "MCP server 'mis' no longer has this tool");
  // Found by its sanitised name.
  auto down = describe_missing_tool("mcp__mis_broken__tool", clients);
  ASSERT_TRUE(down);
  EXPECT_TRUE(down->starts_with("MCP server 'mis.broken' is not running: ")) << *down;
  EXPECT_NE(down->find("cairn-no-such-program-4711"), std::string::npos) << *down;
  // The longest configured prefix: mis__deep's, not mis's.
  auto deep_down = describe_missing_tool("mcp__mis__deep__tool", clients);
  ASSERT_TRUE(deep_down);
  EXPECT_TRUE(deep_down->starts_with("MCP server 'mis__deep' is not running: ")) << *deep_down;
  EXPECT_EQ(describe_missing_tool("mcp__nowhere__", {}), "no MCP server 'nowhere' is configured here");
}

}  // namespace
}  // namespace tools_test
}  // namespace cairn::mcp
