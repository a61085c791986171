// The coding agent's approval policy: modes, settings files, "always" rules
// and what counts as inside the working directory.
#include <fstream>

#include <gtest/gtest.h>

#include "agent/approval_settings.hpp"
#include "support/test_support.hpp"

namespace cairn::agent {
namespace {

ApprovalDecision decide(const ApprovalPolicy& policy, const std::string& tool, std::optional<std::string> subject) {
  const Json args = Json::object();
  return policy.evaluate(ApprovalCall{.ref = "main", .tool_name = tool, .args = &args, .subject = std::move(subject)})
      .decision;
}

class ApprovalSettingsTest : public ::testing::Test {
 protected:
  ApprovalSettingsTest() {
    std::filesystem::create_directories(cwd() / "src");
    std::filesystem::create_directories(user());
  }
  std::filesystem::path cwd() const { return dir_.path() / "project"; }
  std::filesystem::path user() const { return dir_.path() / "config"; }
  void write(const std::filesystem::path& file, const std::string& text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  testing::TempDir dir_;
};

TEST_F(ApprovalSettingsTest, AskModeLetsReadingToolsRunAndAsksTheRest) {
  auto policy = make_approval_policy(ApprovalMode::ask, cwd(), user());
  ASSERT_TRUE(policy);
  for (const char* tool : {"read", "grep", "find", "ls"}) EXPECT_EQ(decide(*policy, tool, "x"), ApprovalDecision::allow);
  for (const char* tool : {"bash", "edit", "write", "mcp__x__y"}) EXPECT_EQ(decide(*policy, tool, "x"), ApprovalDecision::ask);
}

TEST_F(ApprovalSettingsTest, AutoEditAllowsEditsInsideTheDirectoryOnly) {
  auto policy = make_approval_policy(ApprovalMode::auto_edit, cwd(), user());
  ASSERT_TRUE(policy);
  EXPECT_EQ(decide(*policy, "edit", "src/a.cpp"), ApprovalDecision::allow);
  EXPECT_EQ(decide(*policy, "write", (cwd() / "new.txt").string()), ApprovalDecision::allow);
  EXPECT_EQ(decide(*policy, "edit", "../outside.txt"), ApprovalDecision::ask);
  EXPECT_EQ(decide(*policy, "edit", "src/../../outside.txt"), ApprovalDecision::ask);
  EXPECT_EQ(decide(*policy, "write", "/etc/passwd"), ApprovalDecision::ask);
  EXPECT_EQ(decide(*policy, "edit", std::nullopt), ApprovalDecision::ask);
  EXPECT_EQ(decide(*policy, "bash", "ls"), ApprovalDecision::ask);
  // A symlink inside that leads outside is outside.
  std::filesystem::create_directory_symlink("/etc", cwd() / "etc-link");
  EXPECT_EQ(decide(*policy, "write", "etc-link/passwd"), ApprovalDecision::ask);
}

ApprovalDecision decide_sandboxed(const ApprovalPolicy& policy, const std::string& tool, std::optional<std::string> subject,
                                  std::optional<SandboxRecord> sandbox, bool wants_network = false) {
  const Json args = Json::object();
  return policy
      .evaluate(ApprovalCall{.ref = "main", .tool_name = tool, .args = &args, .subject = std::move(subject),
                             .sandbox = std::move(sandbox), .wants_network = wants_network})
      .decision;
}

TEST_F(ApprovalSettingsTest, AutoLetsRunWhatTheSandboxBoundsAndAsksForTheRest) {
  auto policy = make_approval_policy(ApprovalMode::sandboxed_auto, cwd(), user());
  ASSERT_TRUE(policy);
  const SandboxRecord workspace{.mode = SandboxMode::workspace_write};
  const SandboxRecord read_only{.mode = SandboxMode::read_only};
  const SandboxRecord networked{.mode = SandboxMode::workspace_write, .network = true};
  const SandboxRecord off{.mode = SandboxMode::off};
  // bash: unasked under either sandbox; asked without one, or with none recorded.
  EXPECT_EQ(decide_sandboxed(*policy, "bash", "make", workspace), ApprovalDecision::allow);
  EXPECT_EQ(decide_sandboxed(*policy, "bash", "make", read_only), ApprovalDecision::allow);
  EXPECT_EQ(decide_sandboxed(*policy, "bash", "make", off), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "bash", "make", std::nullopt), ApprovalDecision::ask);
  // The network the sandbox keeps off asks; one it allows does not.
  EXPECT_EQ(decide_sandboxed(*policy, "bash", "npm ci", workspace, true), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "bash", "npm ci", networked, true), ApprovalDecision::allow);
  // Edits run in cairn's own process: only inside a writable workspace, never
  // into what the sandbox keeps read-only there.
  EXPECT_EQ(decide_sandboxed(*policy, "edit", "src/a.cpp", workspace), ApprovalDecision::allow);
  EXPECT_EQ(decide_sandboxed(*policy, "write", "src/a.cpp", read_only), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "write", "src/a.cpp", off), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "write", "../outside.txt", workspace), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "write", ".cairn/settings.json", workspace), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "write", "./.git/hooks/pre-commit", workspace), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "write", (cwd() / ".cairn").string(), workspace), ApprovalDecision::ask);
  // Other tools ask (an MCP server's effects are its own); reading tools run.
  EXPECT_EQ(decide_sandboxed(*policy, "mcp__x__y", std::nullopt, workspace), ApprovalDecision::ask);
  EXPECT_EQ(decide_sandboxed(*policy, "read", "x", workspace), ApprovalDecision::allow);
  // The files' rules still come first.
  write(cwd() / ".cairn/settings.json", R"J({"approval": {"deny": ["bash(rm *)"]}})J");
  auto ruled = make_approval_policy(ApprovalMode::sandboxed_auto, cwd(), user());
  ASSERT_TRUE(ruled);
  EXPECT_EQ(decide_sandboxed(*ruled, "bash", "rm -rf x", workspace), ApprovalDecision::deny);
}

TEST_F(ApprovalSettingsTest, UserRulesComeBeforeProjectRulesBeforeTheMode) {
  write(user() / "settings.json", R"j({"approval": {"deny": ["bash(rm -rf *)"], "allow": ["bash(git status)"]}})j");
  write(cwd() / ".cairn" / "settings.json",
        R"j({"theme": "dark", "approval": {"allow": ["bash(rm -rf build)", "bash(npm run test:*)"], "ask": ["read(secrets/*)"]}})j");
  auto policy = make_approval_policy(ApprovalMode::ask, cwd(), user());
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_EQ(decide(*policy, "bash", "git status"), ApprovalDecision::allow);
  EXPECT_EQ(decide(*policy, "bash", "git status; rm x"), ApprovalDecision::ask);
  EXPECT_EQ(decide(*policy, "bash", "rm -rf build"), ApprovalDecision::deny);  // the user's deny first
  EXPECT_EQ(decide(*policy, "bash", "npm run test:unit"), ApprovalDecision::allow);
  EXPECT_EQ(decide(*policy, "read", "secrets/key.pem"), ApprovalDecision::ask);
  EXPECT_EQ(decide(*policy, "read", "README.md"), ApprovalDecision::allow);

  auto never = make_approval_policy(ApprovalMode::never_ask, cwd(), user());
  ASSERT_TRUE(never);
  EXPECT_EQ(decide(*never, "bash", "rm -rf /"), ApprovalDecision::deny);  // a deny still refuses
  EXPECT_EQ(decide(*never, "read", "secrets/key.pem"), ApprovalDecision::allow);  // nothing asks
  EXPECT_EQ(decide(*never, "bash", "make"), ApprovalDecision::allow);
}

TEST_F(ApprovalSettingsTest, ABadSettingsFileIsNamedWithWhatIsWrong) {
  const auto file = cwd() / ".cairn" / "settings.json";
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{not json", "not a JSON object"},
           {R"j({"approval": []})j", "approval: expected an object"},
           {R"j({"approval": {"allowed": []}})j", "approval.allowed: unknown"},
           {R"j({"approval": {"deny": [3]}})j", "approval.deny[0]: expected a rule"},
           {R"j({"approval": {"allow": ["bash(git status"]}})j", "a pattern ends with ')'"},
       }) {
    write(file, text);
    auto policy = make_approval_policy(ApprovalMode::ask, cwd(), user());
    ASSERT_FALSE(policy) << text;
    EXPECT_EQ(policy.error().code, "invalid_config");
    EXPECT_NE(policy.error().message.find(file.string()), std::string::npos) << policy.error().message;
    EXPECT_NE(policy.error().message.find(expected), std::string::npos) << policy.error().message;
  }
}

TEST(ApprovalSettings, ModesAndEnvironmentsKeepTheirFlagsSpelling) {
  for (auto [mode, name] : {std::pair{ApprovalMode::ask, "ask"}, std::pair{ApprovalMode::auto_edit, "auto-edit"},
                            std::pair{ApprovalMode::sandboxed_auto, "auto"}, std::pair{ApprovalMode::never_ask, "never-ask"}}) {
    EXPECT_EQ(to_string(mode), name);
    EXPECT_EQ(parse_approval_mode(name), mode);
  }
  EXPECT_EQ(parse_approval_mode("sometimes"), std::nullopt);
  for (auto [environment, name] : {std::pair{ToolEnvironment::filtered, "filtered"},
                                   std::pair{ToolEnvironment::inherit, "inherit"}}) {
    EXPECT_EQ(to_string(environment), name);
    EXPECT_EQ(parse_tool_environment(name), environment);
  }
  EXPECT_EQ(parse_tool_environment("all"), std::nullopt);
}

TEST(ApprovalAlwaysRule, NamesTheExactSubjectWithStarsEscaped) {
  EXPECT_EQ(always_rule("bash", std::string("git status")), "bash(git status)");
  EXPECT_EQ(always_rule("bash", std::string("ls *.txt")), "bash(ls \\*.txt)");
  EXPECT_EQ(always_rule("ask_user", std::nullopt), "ask_user");
  auto rule = ApprovalRule::parse(always_rule("bash", std::string("ls *.txt")), ApprovalDecision::allow);
  ASSERT_TRUE(rule);
  EXPECT_TRUE(rule->matches("bash", std::string("ls *.txt")));
  EXPECT_FALSE(rule->matches("bash", std::string("ls a.txt")));
}

}  // namespace
}  // namespace cairn::agent
