// The client against server-filesystem on a temporary directory: its tools,
// the replay and approval their annotations give, a read through the client
// and through make_tools.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "cairn/harness/tool.hpp"
#include "cairn/tools/mcp.hpp"
#include "mcp/mcp_test_support.hpp"
#include "support/test_support.hpp"

namespace cairn::mcp {
// Its own namespace: the test sources are compiled together (unity build).
namespace filesystem_test {
namespace {

using namespace std::chrono_literals;
using test::text_of;

class McpFilesystem : public ::testing::Test {
 protected:
  void SetUp() override {
    // The server resolves its directory: give it the resolved one, so paths compare.
    root_ = std::filesystem::canonical(dir_.path());
    {
      std::ofstream(root_ / "notes.txt") << "first line\nsecond line\n";
    }
    std::filesystem::create_directory(root_ / "sub");
    client_ = Client::start(test::stdio_server("fs", test::filesystem_js(), {root_.string()}));
    ASSERT_EQ(client_->wait_started(20s), ServerState::ready) << client_->state_message();
    for (auto& tool : client_->tools()) tools_[tool.name] = tool;
  }

  testing::TempDir dir_;
  std::filesystem::path root_;
  std::shared_ptr<Client> client_;
  std::map<std::string, ServerTool> tools_;
};

TEST_F(McpFilesystem, ReadToolsRunUnaskedAndReplayWriteToolsAsk) {
  for (const char* name : {"read_text_file", "read_multiple_files", "list_directory", "directory_tree", "search_files",
                           "get_file_info", "list_allowed_directories"}) {
    ASSERT_TRUE(tools_.contains(name)) << name;
    EXPECT_EQ(approval_from(tools_[name].annotations), ApprovalDecision::allow) << name;
    EXPECT_EQ(replay_from(tools_[name].annotations), Replay::safe) << name;
  }
  for (const char* name : {"write_file", "edit_file", "move_file"}) {
    ASSERT_TRUE(tools_.contains(name)) << name;
    EXPECT_EQ(approval_from(tools_[name].annotations), ApprovalDecision::ask) << name;
    // Destructive: not safe to run twice, even when idempotent (write_file).
    EXPECT_EQ(replay_from(tools_[name].annotations), Replay::never) << name;
  }
  // Idempotent and not destructive: asks, but may run again.
  ASSERT_TRUE(tools_.contains("create_directory"));
  EXPECT_EQ(approval_from(tools_["create_directory"].annotations), ApprovalDecision::ask);
  EXPECT_EQ(replay_from(tools_["create_directory"].annotations), Replay::safe);
}

TEST_F(McpFilesystem, EveryInputSchemaCompiles) {
  ASSERT_FALSE(tools_.empty());
  for (const auto& [name, tool] : tools_) {
    auto compiled = ArgumentValidator::compile(tool.input_schema);
    EXPECT_TRUE(compiled) << name << ": " << (compiled ? "" : compiled.error().message) << "\n"
                          << tool.input_schema.dump();
  }
  auto read = ArgumentValidator::compile(tools_["read_text_file"].input_schema);
  ASSERT_TRUE(read);
  EXPECT_TRUE(read->validate(Json{{"path", "x"}}));
  EXPECT_FALSE(read->validate(Json::object()));  // path is required
}

TEST_F(McpFilesystem, AReadReturnsTheFilesText) {
  auto answer = client_->call_tool("read_text_file", Json{{"path", (root_ / "notes.txt").string()}}, {}, {}, 10s);
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_FALSE(to_tool_result(*answer).is_error) << answer->dump();
  EXPECT_EQ(text_of(*answer), "first line\nsecond line\n");

  auto listing = client_->call_tool("list_directory", Json{{"path", root_.string()}}, {}, {}, 10s);
  ASSERT_TRUE(listing) << listing.error().message;
  const std::string text = text_of(*listing);
  EXPECT_NE(text.find("notes.txt"), std::string::npos) << text;
  EXPECT_NE(text.find("sub"), std::string::npos) << text;

  // Outside its directory: refused, as an error result.
  auto outside = client_->call_tool("read_text_file", Json{{"path", "/etc/hostname"}}, {}, {}, 10s);
  if (outside) {
    EXPECT_TRUE(to_tool_result(*outside).is_error) << outside->dump();
  }
}

TEST_F(McpFilesystem, MadeToolsApplyTheDefaultsAndWriteThroughTheClient) {
  auto made = make_tools({client_});
  ASSERT_EQ(made.size(), tools_.size());
  const McpTool* write = nullptr;
  const McpTool* read = nullptr;
  for (const auto& tool : made) {
    if (tool.server_tool == "write_file") write = &tool;
    if (tool.server_tool == "read_text_file") read = &tool;
  }
  ASSERT_NE(write, nullptr);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(write->tool.name, "mcp__fs__write_file");
  EXPECT_EQ(write->approval, ApprovalDecision::ask);
  EXPECT_EQ(write->tool.replay, Replay::never);
  EXPECT_EQ(read->tool.name, "mcp__fs__read_text_file");
  EXPECT_EQ(read->approval, ApprovalDecision::allow);
  EXPECT_EQ(read->tool.replay, Replay::safe);

  ToolContext context;
  ToolResult wrote =
      write->tool.execute(Json{{"path", (root_ / "new.txt").string()}, {"content", "made by cairn"}}, context);
  EXPECT_FALSE(wrote.is_error) << text_of(wrote);
  EXPECT_EQ(test::read_text(root_ / "new.txt"), "made by cairn");
  ToolResult got = read->tool.execute(Json{{"path", (root_ / "new.txt").string()}}, context);
  EXPECT_FALSE(got.is_error) << text_of(got);
  EXPECT_EQ(text_of(got), "made by cairn");
}

}  // namespace
}  // namespace filesystem_test
}  // namespace cairn::mcp
