// load_config: stdio and HTTP servers, ${VAR} expansion and the secrets it
// yields, the errors a person can act on, files that override each other.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "cairn/tools/mcp.hpp"
#include "support/test_support.hpp"

namespace cairn::mcp {
// Its own namespace: the test sources are compiled together (unity build).
namespace config_test {
namespace {

using namespace std::chrono_literals;

class McpConfig : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto file = dir_.path() / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file;
  }

  // The error of loading `text` alone.
  Error error_of(const std::string& text, const std::vector<std::string>& environment = {}) {
    const auto file = write("bad.json", text);
    auto loaded = load_config({file}, environment);
    EXPECT_FALSE(loaded) << text;
    if (loaded) return Error(Errc::invalid_argument, "loaded");
    EXPECT_EQ(loaded.error().code, to_string(Errc::invalid_config)) << loaded.error().message;
    EXPECT_NE(loaded.error().message.find(file.string()), std::string::npos) << loaded.error().message;
    return loaded.error();
  }

  testing::TempDir dir_;
};

TEST_F(McpConfig, ReadsStdioAndHttpServers) {
  const auto file = write("project/.mcp.json", R"({"mcpServers": {
    "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Team": "blue"}},
    "fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"A": "1"}, "cwd": "tools",
           "timeout": 60000, "replay": "never", "approval": "ask",
           "tools": {"read_file": {"approval": "allow", "replay": "safe"}, "write_file": {"approval": "deny"}}},
    "plain": {"url": "http://127.0.0.1:9/mcp"}
  }})");
  auto loaded = load_config({file}, {});
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->servers.size(), 3u);
  // Sorted by name.
  EXPECT_EQ(loaded->servers[0].name, "fs");
  EXPECT_EQ(loaded->servers[1].name, "plain");
  EXPECT_EQ(loaded->servers[2].name, "web");

  const ServerConfig& fs = loaded->servers[0];
  ASSERT_TRUE(std::holds_alternative<StdioTransport>(fs.transport));
  const auto& stdio = std::get<StdioTransport>(fs.transport);
  EXPECT_EQ(stdio.command, "npx");
  EXPECT_EQ(stdio.args, (std::vector<std::string>{"-y", "server-filesystem", "."}));
  EXPECT_EQ(stdio.env, (std::map<std::string, std::string>{{"A", "1"}}));
  // Relative to the file that says it.
  EXPECT_EQ(stdio.cwd, file.parent_path() / "tools");
  EXPECT_EQ(fs.timeout, 60000ms);
  EXPECT_EQ(fs.source, file);
  EXPECT_EQ(fs.all_tools.replay, Replay::never);
  EXPECT_EQ(fs.all_tools.approval, ApprovalDecision::ask);
  ASSERT_EQ(fs.tools.size(), 2u);
  EXPECT_EQ(fs.tools.at("read_file").approval, ApprovalDecision::allow);
  EXPECT_EQ(fs.tools.at("read_file").replay, Replay::safe);
  EXPECT_EQ(fs.tools.at("write_file").approval, ApprovalDecision::deny);
  EXPECT_FALSE(fs.tools.at("write_file").replay);

  const ServerConfig& web = loaded->servers[2];
  ASSERT_TRUE(std::holds_alternative<HttpTransport>(web.transport));
  EXPECT_EQ(std::get<HttpTransport>(web.transport).url, "https://example.com/mcp");
  EXPECT_EQ(std::get<HttpTransport>(web.transport).headers,
            (std::vector<std::pair<std::string, std::string>>{{"X-Team", "blue"}}));
  EXPECT_EQ(web.timeout, 600000ms);  // the default
  EXPECT_FALSE(web.all_tools.replay);
  EXPECT_FALSE(web.all_tools.approval);
  // A url without a type: http.
  EXPECT_TRUE(std::holds_alternative<HttpTransport>(loaded->servers[1].transport));
}

TEST_F(McpConfig, ExpandsVariablesAndKeepsTheirValuesAsSecrets) {
  const auto file = write("mcp.json", R"({"mcpServers": {
    "web": {"type": "http", "url": "${WEB_URL:-https://fallback.example/mcp}",
            "headers": {"Authorization": "Bearer ${WEB_TOKEN}", "X-Plain": "static-header-value"}},
    "tool": {"command": "${TOOL_BIN}", "args": ["--key=${API_KEY}", "${MODE:-quiet}", "$HOME", "${EMPTY:-was-empty}"],
             "env": {"API_KEY": "${API_KEY}", "LEVEL": "${LEVEL:-3}"}}
  }})");
  const std::vector<std::string> environment = {"WEB_TOKEN=tok-0123456789", "TOOL_BIN=/opt/bin/tool",
                                                "API_KEY=key-abcdefghij", "EMPTY=", "PATH=/usr/bin"};
  auto loaded = load_config({file}, environment);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->servers.size(), 2u);

  const auto& tool = std::get<StdioTransport>(loaded->servers[0].transport);
  EXPECT_EQ(tool.command, "/opt/bin/tool");
  // Only ${…} is expanded; $HOME stays as written.
  EXPECT_EQ(tool.args, (std::vector<std::string>{"--key=key-abcdefghij", "quiet", "$HOME", "was-empty"}));
  EXPECT_EQ(tool.env.at("API_KEY"), "key-abcdefghij");
  EXPECT_EQ(tool.env.at("LEVEL"), "3");

  const auto& web = std::get<HttpTransport>(loaded->servers[1].transport);
  EXPECT_EQ(web.url, "https://fallback.example/mcp");
  ASSERT_EQ(web.headers.size(), 2u);
  EXPECT_EQ(web.headers[0], (std::pair<std::string, std::string>{"Authorization", "Bearer tok-0123456789"}));

  // What came from the environment, and every header value, is a secret;
  // what the file itself says elsewhere is not.
  const Secrets& secrets = loaded->secrets;
  EXPECT_TRUE(secrets.appears_in("tok-0123456789"));
  EXPECT_TRUE(secrets.appears_in("key-abcdefghij"));
  EXPECT_TRUE(secrets.appears_in("/opt/bin/tool"));
  EXPECT_TRUE(secrets.appears_in("static-header-value"));
  EXPECT_FALSE(secrets.appears_in("https://fallback.example/mcp"));
  EXPECT_FALSE(secrets.appears_in("was-empty"));
  EXPECT_EQ(secrets.redact("the token tok-0123456789 leaked"), "the token [redacted] leaked");
}

TEST_F(McpConfig, AnUnsetVariableIsAnErrorNamingTheFileTheServerAndTheKey) {
  Error error = error_of(R"({"mcpServers": {"web": {"type": "http", "url": "https://x.example/mcp",
                                            "headers": {"Authorization": "Bearer ${MISSING_TOKEN}"}}}})",
                         {"OTHER=1"});
  EXPECT_NE(error.message.find("server 'web'"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("${MISSING_TOKEN} is not set"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("Authorization"), std::string::npos) << error.message;

  Error in_args = error_of(R"({"mcpServers": {"tool": {"command": "t", "args": ["a", "${NOPE}"]}}})");
  EXPECT_NE(in_args.message.find("${NOPE} is not set"), std::string::npos) << in_args.message;
  EXPECT_NE(in_args.message.find("args"), std::string::npos) << in_args.message;

  Error unclosed = error_of(R"({"mcpServers": {"tool": {"command": "${OPEN"}}})");
  EXPECT_NE(unclosed.message.find("'}'"), std::string::npos) << unclosed.message;
}

TEST_F(McpConfig, RefusesSseAndWhatIsMalformed) {
  Error sse = error_of(R"({"mcpServers": {"old": {"type": "sse", "url": "https://x.example/sse"}}})");
  EXPECT_NE(sse.message.find("server 'old'"), std::string::npos) << sse.message;
  EXPECT_NE(sse.message.find("not supported"), std::string::npos) << sse.message;
  EXPECT_NE(sse.message.find("\"type\": \"http\""), std::string::npos) << sse.message;

  Error malformed = error_of(R"({"mcpServers": {"a": {"command": "x",}})");
  EXPECT_NE(malformed.message.find("not a JSON object"), std::string::npos) << malformed.message;

  EXPECT_NE(error_of(R"({"mcpServers": []})").message.find("\"mcpServers\" must be an object"), std::string::npos);
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"type": "carrier-pigeon", "command": "x"}}})").message.find("carrier-pigeon"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"command": ""}}})").message.find("\"command\" is empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"args": ["x"]}}})").message.find("\"command\" must be a string"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"url": "ftp://x/mcp"}}})").message.find("http://"), std::string::npos);
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"command": "x", "timeout": -5}}})").message.find("\"timeout\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"command": "x", "replay": "sometimes"}}})").message.find("\"replay\""),
            std::string::npos);
  Error tool = error_of(R"({"mcpServers": {"a": {"command": "x", "tools": {"t1": {"approval": "maybe"}}}}})");
  EXPECT_NE(tool.message.find("tool 't1'"), std::string::npos) << tool.message;
  EXPECT_NE(tool.message.find("\"approval\""), std::string::npos) << tool.message;
  // Values of the wrong JSON type are errors too, not exceptions.
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"type": 5, "command": "x"}}})").message.find("\"type\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}})").message.find("\"env\""),
            std::string::npos);
}

TEST_F(McpConfig, LaterFilesReplaceServersByNameAndMissingFilesAreSkipped) {
  const auto user = write("user.json", R"({"mcpServers": {
    "shared": {"command": "user-shared"}, "mine": {"command": "user-mine"}}})");
  const auto project = write("project.json", R"({"mcpServers": {
    "shared": {"type": "http", "url": "https://project.example/mcp"}, "theirs": {"command": "project-theirs"}}})");
  const auto nothing = write("empty.json", R"({"other": true})");
  auto loaded = load_config({user, dir_.path() / "absent.json", project, nothing}, {});
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->servers.size(), 3u);
  EXPECT_EQ(loaded->servers[0].name, "mine");
  EXPECT_EQ(loaded->servers[0].source, user);
  EXPECT_EQ(loaded->servers[1].name, "shared");
  EXPECT_EQ(loaded->servers[1].source, project);
  ASSERT_TRUE(std::holds_alternative<HttpTransport>(loaded->servers[1].transport));
  EXPECT_EQ(std::get<HttpTransport>(loaded->servers[1].transport).url, "https://project.example/mcp");
  EXPECT_EQ(loaded->servers[2].name, "theirs");

  // An error in a later file names that file.
  const auto broken = write("broken.json", "not json at all");
  auto failed = load_config({user, broken}, {});
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("broken.json"), std::string::npos) << failed.error().message;
  EXPECT_EQ(failed.error().message.find("user.json"), std::string::npos) << failed.error().message;

  // No file at all: no servers.
  auto none = load_config({dir_.path() / "absent.json"}, {});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->servers.empty());
}

}  // namespace
}  // namespace config_test
}  // namespace cairn::mcp
