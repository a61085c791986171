// The tool set as the harness sees it: names and order, schemas that
// compile, replay policies; and a model's tool calls through a real harness
// with the faux provider, results back in the next request.
#include <algorithm>
#include <fstream>
#include <mutex>

#include "harness/harness_support.hpp"
#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

using ToolsSet = ToolsFixture;

TEST_F(ToolsSet, NamesOrderSchemasAndReplayPolicies) {
  ASSERT_EQ(coding_tool_names(), (std::vector<std::string>{"read", "bash", "edit", "write", "grep", "find", "ls", "ask_user"}));
  ASSERT_EQ(tools_.size(), coding_tool_names().size());
  for (std::size_t i = 0; i < tools_.size(); ++i) {
    const Tool& tool = tools_[i];
    EXPECT_EQ(tool.name, coding_tool_names()[i]);
    EXPECT_FALSE(tool.description.empty()) << tool.name;
    EXPECT_NE(static_cast<bool>(tool.execute), tool.asks_user) << tool.name;  // a question is the harness's to ask
    auto validator = ArgumentValidator::compile(tool.parameters);
    ASSERT_TRUE(validator.has_value()) << tool.name << ": " << validator.error().message;
    EXPECT_FALSE(validator->validate(Json::array()).has_value()) << tool.name << " accepts a non-object";
  }
  EXPECT_TRUE(tool("ask_user").asks_user);
  EXPECT_EQ(tool("bash").approval_subject, "command");
  EXPECT_EQ(tool("edit").approval_subject, "path");
  EXPECT_EQ(tool("write").approval_subject, "path");
  EXPECT_EQ(tool("read").replay, Replay::safe);
  EXPECT_EQ(tool("write").replay, Replay::safe);
  EXPECT_EQ(tool("grep").replay, Replay::safe);
  EXPECT_EQ(tool("find").replay, Replay::safe);
  EXPECT_EQ(tool("ls").replay, Replay::safe);
  EXPECT_EQ(tool("edit").replay, Replay::never);
  EXPECT_EQ(tool("bash").replay, Replay::never);
  EXPECT_FALSE(tool("bash").parallel);
  // The limits are in the descriptions the model reads.
  EXPECT_NE(tool("read").description.find("2000 lines"), std::string::npos);
  EXPECT_NE(tool("bash").description.find("50.0KB"), std::string::npos);
}

TEST_F(ToolsSet, SchemasAcceptWhatTheToolsTakeAndRefuseTheRest) {
  const auto check = [&](const std::string& name, const Json& args) {
    return ArgumentValidator::compile(tool(name).parameters)->validate(args).has_value();
  };
  EXPECT_TRUE(check("read", {{"path", "a"}, {"offset", 3}, {"limit", 10}}));
  EXPECT_FALSE(check("read", {{"offset", 3}}));
  EXPECT_TRUE(check("edit", {{"path", "a"}, {"edits", {{{"oldText", "x"}, {"newText", "y"}}}}}));
  EXPECT_TRUE(check("edit", {{"path", "a"}, {"oldText", "x"}, {"newText", "y"}}));
  EXPECT_FALSE(check("edit", {{"path", "a"}, {"edits", {{{"oldText", "x"}}}}}));
  EXPECT_TRUE(check("bash", {{"command", "ls"}, {"timeout", 2.5}}));
  EXPECT_FALSE(check("bash", {{"command", "ls"}, {"timeout", -1}}));
  EXPECT_TRUE(check("grep", {{"pattern", "x"}, {"ignoreCase", true}, {"literal", true}, {"context", 2}, {"glob", "*.c"}}));
  EXPECT_TRUE(check("ls", Json::object()));
}

class ToolsHarness : public HarnessTest {
 protected:
  TempDir temp_;
};

std::string result_text(const ToolResultMessage& message) {
  std::string out;
  for (const auto& block : message.content) {
    if (const auto* t = std::get_if<TextContent>(&block)) out += t->text;
  }
  return out;
}

TEST_F(ToolsHarness, ToolCallsRunThroughTheHarnessAndTheirResultsReachTheModel) {
  HarnessOptions opts = options();
  opts.tools = make_coding_tools(CodingToolsOptions{.cwd = temp_.path(), .spill_dir = temp_.path() / "spill"});
  auto created = AgentHarness::create(opts);
  ASSERT_TRUE(created) << created.error().message;
  std::mutex mu;
  std::vector<Event> events;
  auto subscription = created->harness.on_event([&](const Event& e) {
    std::lock_guard lock(mu);
    events.push_back(e);
  });
  faux_->push(FauxResponse::tool_call("w1", "write", {{"path", "notes/todo.txt"}, {"content", "buy milk\n"}}));
  faux_->push(FauxResponse::tool_call("r1", "read", {{"path", "notes/todo.txt"}})
                  .then_tool_call("l1", "ls", {{"path", "notes"}}));
  faux_->push(FauxResponse::tool_call("b1", "bash", {{"command", "cat notes/todo.txt; exit 4"}}));
  faux_->push(FauxResponse::text("done"));
  const RunResult run = created->harness.main().prompt("note it");
  ASSERT_TRUE(run.ok());
  std::ifstream written(temp_.path() / "notes/todo.txt");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>()), "buy milk\n");

  const auto requests = faux_->requests();
  ASSERT_EQ(requests.size(), 4u);
  const auto& wrote = std::get<ToolResultMessage>(requests[1].messages.back());
  EXPECT_EQ(wrote.tool_call_id, "w1");
  EXPECT_EQ(result_text(wrote), "Wrote 9 bytes to notes/todo.txt");
  const auto& messages = requests[2].messages;
  const auto& read = std::get<ToolResultMessage>(messages[messages.size() - 2]);
  EXPECT_EQ(read.tool_name, "read");
  EXPECT_EQ(result_text(read), "     1\tbuy milk\n");
  EXPECT_EQ(result_text(std::get<ToolResultMessage>(messages.back())), "todo.txt");
  const auto& bash = std::get<ToolResultMessage>(requests[3].messages.back());
  EXPECT_TRUE(bash.is_error);
  EXPECT_EQ(result_text(bash), "buy milk\n\nCommand exited with code 4");
  EXPECT_EQ(bash.details->at("exitCode"), 4);

  std::lock_guard lock(mu);
  const bool streamed = std::any_of(events.begin(), events.end(), [](const Event& e) { return e.type == EventType::tool_update; });
  EXPECT_TRUE(streamed);  // bash's partial output reached listeners
}

}  // namespace
}  // namespace cairn::testing
