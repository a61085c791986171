// The coding agent as a library (cairn/agent/coding_agent.hpp): options
// resolved once, then each session's harness options, as the server and
// embedders get them. The command-line side is AgentCliTest's.
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "cairn/agent/coding_agent.hpp"
#include "support/test_support.hpp"

namespace cairn::agent {
namespace {

// Sets an environment variable for the test's length: the agent reads the
// user's configuration (settings.json, AGENTS.md) from $XDG_CONFIG_HOME.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class CodingAgentTest : public ::testing::Test {
 protected:
  CodingAgentTest() : config_("XDG_CONFIG_HOME", (dir_.path() / "config").string()) {
    std::filesystem::create_directories(project());
    std::filesystem::create_directories(elsewhere());
    auto opened = open_store("memory:");
    EXPECT_TRUE(opened);
    store_ = std::move(*opened);
  }
  std::filesystem::path project() const { return dir_.path() / "project"; }
  std::filesystem::path elsewhere() const { return dir_.path() / "elsewhere"; }

  // An agent with no model configured and no MCP server: its harness can
  // be made, and shows everything but a model call.
  CodingAgent agent(std::vector<std::string> tools) {
    AgentOptions options;
    options.warn = [this](const std::string& message) { warnings_.push_back(message); };
    return CodingAgent({.options = std::move(options),
                        .registry = ModelRegistry::build(nullptr, [](const std::string&) { return std::nullopt; }),
                        .default_model = std::nullopt,
                        .tool_names = std::move(tools),
                        .cwd = elsewhere(),
                        .mcp = nullptr});
  }
  std::shared_ptr<Session> session(const std::string& cwd) {
    CreateOptions create;
    create.cwd = cwd;
    auto made = store_->create(create);
    EXPECT_TRUE(made);
    return *made;
  }

  testing::TempDir dir_;
  ScopedVariable config_;
  std::shared_ptr<Store> store_;
  std::vector<std::string> warnings_;
};

ApprovalDecision decide(const ApprovalPolicy& policy, const std::string& tool) {
  const Json args = Json::object();
  return policy.evaluate(ApprovalCall{.ref = "main", .tool_name = tool, .args = &args, .subject = "x"}).decision;
}

std::vector<std::string> names_of(const std::vector<Tool>& tools) {
  std::vector<std::string> names;
  for (const auto& tool : tools) names.push_back(tool.name);
  return names;
}

TEST_F(CodingAgentTest, ASessionGetsTheChosenToolsThePolicyAndAPromptOfItsDirectory) {
  auto made = agent({"read", "ls", "bash", "task"}).harness_options(session(project().string()), store_);
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(names_of(made->options.tools), (std::vector<std::string>{"read", "bash", "ls", "task"}));
  EXPECT_EQ(decide(made->options.approval, "ls"), ApprovalDecision::allow);
  EXPECT_EQ(decide(made->options.approval, "task"), ApprovalDecision::allow);
  EXPECT_EQ(decide(made->options.approval, "bash"), ApprovalDecision::ask);
  const std::string prompt = made->options.system_prompt({"read", "ls"});
  EXPECT_NE(prompt.find("Current working directory: " + project().string()), std::string::npos) << prompt;

  // The harness is made from them, and the MCP binding (none here) attached.
  auto created = AgentHarness::create(std::move(made->options));
  ASSERT_TRUE(created) << created.error().message;
  auto harness = std::make_unique<AgentHarness>(std::move(created->harness));
  std::shared_ptr<void> attached = made->attach(*harness);
  EXPECT_EQ(harness->tool_names().size(), 4u);
  attached.reset();
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(CodingAgentTest, ASessionWhoseDirectoryIsGoneWorksInTheAgentsOwn) {
  auto made = agent({"read"}).harness_options(session((dir_.path() / "gone").string()), store_);
  ASSERT_TRUE(made) << made.error().message;
  const std::string prompt = made->options.system_prompt({"read"});
  EXPECT_NE(prompt.find("Current working directory: " + elsewhere().string()), std::string::npos) << prompt;
}

TEST_F(CodingAgentTest, TheProjectsSettingsShapeTheApprovalPolicy) {
  std::filesystem::create_directories(project() / ".cairn");
  std::ofstream(project() / ".cairn" / "settings.json") << R"({"approval": {"allow": ["bash"]}})";
  auto made = agent({"bash"}).harness_options(session(project().string()), store_);
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(decide(made->options.approval, "bash"), ApprovalDecision::allow);

  std::ofstream(project() / ".cairn" / "settings.json") << R"({"approval": {"allow": "bash"}})";
  auto refused = agent({"bash"}).harness_options(session(project().string()), store_);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "invalid_config");
}

TEST_F(CodingAgentTest, CreateRefusesAnUnknownToolBeforeStartingAnything) {
  AgentOptions options;
  options.tools = "read,nope";
  auto made = CodingAgent::create(options, project());
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, "invalid_argument");
  EXPECT_NE(made.error().message.find("unknown tool 'nope'"), std::string::npos) << made.error().message;

  options.tools.reset();
  options.no_tools = true;
  options.models_file = (dir_.path() / "no-such-models.json").string();
  auto missing = CodingAgent::create(options, project());
  ASSERT_FALSE(missing);  // a models file named but missing
}

TEST_F(CodingAgentTest, CreateWithoutToolsStartsNoServerAndMakesAHarnessWithNone) {
  AgentOptions options;
  options.no_tools = true;
  options.models_file = (dir_.path() / "models.json").string();
  std::ofstream(dir_.path() / "models.json") << R"({"providers": {}})";
  auto agent = CodingAgent::create(options, project());
  ASSERT_TRUE(agent) << agent.error().message;
  EXPECT_EQ(agent->cwd(), project());
  auto made = agent->harness_options(session(project().string()), store_);
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_TRUE(made->options.tools.empty());
}

}  // namespace
}  // namespace cairn::agent
