// The sandbox around bash's commands, through the bash tool itself: every
// attack of the suite (support/sandbox_attacks.hpp) fails under read-only and
// workspace-write and succeeds under off; the legitimate actions succeed
// under workspace-write; a denied command's result ends with cairn's line
// naming the policy; what goes wrong before exec is the call's error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cairn/tools/coding_tools.hpp"
#include "cairn/tools/sandbox.hpp"
#include "support/sandbox_attacks.hpp"
#include "tools/process.hpp"

namespace cairn::testing {
namespace {

class SandboxToolTest : public ::testing::TestWithParam<SandboxMode> {
 protected:
  void SetUp() override {
    if (GetParam() != SandboxMode::off) {
      if (std::string missing = sandbox_unavailable(GetParam()); !missing.empty()) GTEST_SKIP() << missing;
    }
    if (!scene_.ready()) GTEST_SKIP() << "the scene needs git, cc and a loopback port";
  }

  // The bash tool of a session working in the scene's workspace, hiding its
  // HOME's secrets and cairn's configuration directory.
  Tool bash(bool network = false) const {
    CodingToolsOptions options{.cwd = scene_.workspace(), .spill_dir = scene_.root() / "spill"};
    options.sandbox = SandboxPolicy{.mode = GetParam(), .network = network};
    options.sandbox.deny = default_sandbox_deny(scene_.home());
    options.sandbox.deny.push_back(scene_.cairn_config());
    for (auto& tool : make_coding_tools(options)) {
      if (tool.name == "bash") return tool;
    }
    throw std::runtime_error("no bash tool");
  }

  static std::string text_of(const ToolResult& result) {
    std::string out;
    for (const auto& block : result.content) {
      if (const auto* t = std::get_if<TextContent>(&block)) out += t->text;
    }
    return out;
  }

  TempDir dir_;
  SandboxScene scene_{dir_.path(), dir_.path() / "home/.config"};
};

TEST_P(SandboxToolTest, EveryAttackFailsUnderASandboxAndSucceedsWithout) {
  const Tool tool = bash();
  for (const auto& attack : scene_.attacks()) {
    const ToolResult result = tool.execute(Json{{"command", attack.command}}, ToolContext{});
    const bool escaped = SandboxScene::escaped(attack, !result.is_error);
    if (GetParam() == SandboxMode::off) {
      EXPECT_TRUE(escaped) << attack.name << " failed without a sandbox: " << text_of(result);
    } else {
      EXPECT_FALSE(escaped) << attack.name << " got out of " << sandbox_mode_name(GetParam()) << ": "
                            << text_of(result);
    }
  }
}

TEST_P(SandboxToolTest, LegitimateWorkSucceedsWhereTheWorkspaceIsWritable) {
  if (GetParam() == SandboxMode::read_only) GTEST_SKIP() << "read-only refuses writes to the workspace";
  const Tool tool = bash();
  for (const auto& action : scene_.legitimate()) {
    const ToolResult result = tool.execute(Json{{"command", action.command}}, ToolContext{});
    EXPECT_FALSE(result.is_error) << action.name << ": " << text_of(result);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SandboxToolTest,
                         ::testing::Values(SandboxMode::off, SandboxMode::read_only, SandboxMode::workspace_write),
                         [](const auto& info) { return std::string(to_string(info.param)); });

class SandboxDetailTest : public SandboxToolTest {};

TEST_P(SandboxDetailTest, ADeniedCommandShowsItsErrorAndOneLineNamingThePolicy) {
  const ToolResult result = bash().execute(
      Json{{"command", fmt::format("echo x > {}/denied", scene_.outside().string())}}, ToolContext{});
  ASSERT_TRUE(result.is_error);
  const std::string text = text_of(result);
  EXPECT_NE(text.find("Permission denied"), std::string::npos) << text;
  EXPECT_NE(text.find("[cairn] this command ran in the sandbox (workspace-write, network off)"), std::string::npos)
      << text;
  EXPECT_FALSE(std::filesystem::exists(scene_.outside() / "denied"));
}

TEST_P(SandboxDetailTest, ReadOnlyRefusesTheWorkspaceToo) {
  CodingToolsOptions options{.cwd = scene_.workspace(), .spill_dir = scene_.root() / "spill"};
  options.sandbox = SandboxPolicy{.mode = SandboxMode::read_only};
  Tool tool = make_coding_tools(options)[1];
  ASSERT_EQ(tool.name, "bash");
  const ToolResult refused = tool.execute(Json{{"command", "echo x > inside"}}, ToolContext{});
  EXPECT_TRUE(refused.is_error) << text_of(refused);
  EXPECT_FALSE(std::filesystem::exists(scene_.workspace() / "inside"));
  const ToolResult read = tool.execute(Json{{"command", "cat .git/HEAD && echo x > \"$TMPDIR/t\""}}, ToolContext{});
  EXPECT_FALSE(read.is_error) << text_of(read);
}

TEST_P(SandboxDetailTest, TheCallsRecordedPolicyDecidesOverTheTools) {
  // The tool was made for workspace-write; the call's tool_started said read-only.
  ToolContext context;
  context.sandbox = SandboxRecord{.mode = SandboxMode::read_only};
  const ToolResult refused = bash().execute(Json{{"command", "echo x > inside"}}, context);
  EXPECT_TRUE(refused.is_error) << text_of(refused);
  EXPECT_NE(text_of(refused).find("(read-only, network off)"), std::string::npos) << text_of(refused);
  context.sandbox = SandboxRecord{.mode = SandboxMode::off};
  const ToolResult allowed = bash().execute(Json{{"command", "echo x > ../outside/recorded-off"}}, context);
  EXPECT_FALSE(allowed.is_error) << text_of(allowed);
}

TEST_P(SandboxDetailTest, AnAllowedNetworkReachesTheListener) {
  const auto attacks = scene_.attacks();
  const auto tcp = std::find_if(attacks.begin(), attacks.end(), [](const auto& a) { return a.name == "tcp to 127.0.0.1"; });
  ASSERT_NE(tcp, attacks.end());
  const ToolResult result = bash(/*network=*/true).execute(Json{{"command", tcp->command}}, ToolContext{});
  EXPECT_FALSE(result.is_error) << text_of(result);
}

// A port of "cairn's own" (what cairn serve names when it listens), kept
// listening for the whole process so that no later listener gets its number.
std::uint16_t cairns_own_port() {
  static const std::uint16_t port = [] {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 8) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return std::uint16_t{0};
    }
    return ntohs(address.sin_port);
  }();
  return port;
}

TEST_P(SandboxDetailTest, AnAllowedNetworkNeverReachesCairnsOwnPorts) {
  const std::uint16_t own = cairns_own_port();
  ASSERT_NE(own, 0);
  const std::string connect = fmt::format("exec 3<>/dev/tcp/127.0.0.1/{} && echo connected", own);
  // Before cairn names the port, a command given the network reaches it...
  if (landlock_abi_version() >= 4) {
    const ToolResult before = bash(/*network=*/true).execute(Json{{"command", connect}}, ToolContext{});
    EXPECT_FALSE(before.is_error) << text_of(before);
  }
  close_port_to_sandbox(own);
  const ToolResult refused = bash(/*network=*/true).execute(Json{{"command", connect}}, ToolContext{});
  EXPECT_TRUE(refused.is_error) << text_of(refused);
  if (landlock_abi_version() < 4) {
    EXPECT_NE(text_of(refused).find("cannot keep an allowed network off cairn's own port"), std::string::npos)
        << text_of(refused);
    return;
  }
  EXPECT_NE(text_of(refused).find("Permission denied"), std::string::npos) << text_of(refused);
  // ...and every other port stays reachable.
  const auto attacks = scene_.attacks();
  const auto tcp = std::find_if(attacks.begin(), attacks.end(), [](const auto& a) { return a.name == "tcp to 127.0.0.1"; });
  ASSERT_NE(tcp, attacks.end());
  const ToolResult other = bash(/*network=*/true).execute(Json{{"command", tcp->command}}, ToolContext{});
  EXPECT_FALSE(other.is_error) << text_of(other);
}

TEST_P(SandboxDetailTest, AFailureBeforeExecIsTheCallsErrorNotACrash) {
  // The working directory goes between the check and the child's chdir: the
  // child's report comes back over its pipe.
  tools::ProcessSpec spec;
  spec.argv = {"true"};
  spec.cwd = scene_.root() / "gone";
  spec.sandbox = SandboxPolicy{.mode = SandboxMode::read_only};
  const tools::ProcessOutcome outcome = tools::run_process(spec);
  EXPECT_EQ(outcome.end, tools::ProcessOutcome::End::spawn_failed);
  EXPECT_NE(outcome.error.find("cannot run under the sandbox (read-only, network off)"), std::string::npos)
      << outcome.error;
  EXPECT_NE(outcome.error.find("No such file or directory"), std::string::npos) << outcome.error;
  EXPECT_NE(outcome.error.find("--sandbox off"), std::string::npos) << outcome.error;
}

TEST_P(SandboxDetailTest, TheCairnDirectoryOfTheWorkspaceIsReadOnlyEvenBeforeItExists) {
  const ToolResult result =
      bash().execute(Json{{"command", "mkdir -p .cairn && echo '{}' > .cairn/settings.json"}}, ToolContext{});
  EXPECT_TRUE(result.is_error) << text_of(result);
  EXPECT_FALSE(std::filesystem::exists(scene_.workspace() / ".cairn/settings.json"));
}

INSTANTIATE_TEST_SUITE_P(WorkspaceWrite, SandboxDetailTest, ::testing::Values(SandboxMode::workspace_write),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace cairn::testing
