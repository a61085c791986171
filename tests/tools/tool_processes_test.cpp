// The processes of a tool call after the agent is gone: every process a call
// starts carries CAIRN_TOOL_CALL=<run id>:<tool call id>, and the tools'
// settle ends whatever carries its call's marker — here, what a killed
// stand-in for the agent left running (a subshell, a background job, a
// process that left the group with setsid, a nested sh -c).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

using ToolsProcesses = ToolsFixture;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// The running processes whose environment holds `entry` (NAME=VALUE), read
// from /proc without the code under test. A zombie's environment reads empty.
std::vector<pid_t> carrying(const std::string& entry) {
  std::vector<pid_t> found;
  for (const auto& dir : std::filesystem::directory_iterator("/proc")) {
    const std::string name = dir.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(dir.path() / "environ", std::ios::binary);
    const std::string environment((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::size_t start = 0; start < environment.size();) {
      const std::size_t end = std::min(environment.find('\0', start), environment.size());
      if (environment.compare(start, end - start, entry) == 0) {
        found.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
      start = end + 1;
    }
  }
  return found;
}

// `sh -c script` with only PATH and `marker_entry` in its environment.
pid_t spawn_marked(const std::string& script, const std::string& marker_entry) {
  std::string path = std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  std::string marker = marker_entry;
  char* envp[] = {path.data(), marker.data(), nullptr};
  std::string sh = "sh", dash_c = "-c", body = script;
  char* argv[] = {sh.data(), dash_c.data(), body.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

bool wait_for_count(const std::string& entry, std::size_t count) {
  const auto deadline = Clock::now() + 10s;
  while (carrying(entry).size() < count) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST_F(ToolsProcesses, EveryProcessOfACallCarriesTheCallsMarker) {
  ToolContext context;
  context.run_id = "run-7";
  context.tool_call_id = "call 7/x";  // the model's text: escaped into the marker
  const ToolResult result = run("bash", {{"command", "echo \"$CAIRN_TOOL_CALL\"; sh -c 'echo \"$CAIRN_TOOL_CALL\"'"}}, context);
  EXPECT_EQ(text(result), "run-7:call%207%2Fx\nrun-7:call%207%2Fx\n");
}

TEST_F(ToolsProcesses, SettleEndsWhatAKilledProcessLeftOfTheCallAndNothingElse) {
  for (const char* name : {"bash", "grep", "find"}) ASSERT_TRUE(static_cast<bool>(tool(name).settle)) << name;
  const std::string ours = "CAIRN_TOOL_CALL=run-settle:call_1";
  const std::string theirs = "CAIRN_TOOL_CALL=run-settle:call_2";
  // The stand-in agent and what it starts: itself, a subshell, a job, a
  // process in a session of its own and sh -c with its sleep.
  const pid_t agent = spawn_marked("(sleep 100) & sleep 100 & setsid sleep 100 & sh -c 'sleep 100; true' & wait", ours);
  ASSERT_GT(agent, 0);
  const pid_t other_call = spawn_marked("sleep 100", theirs);
  ASSERT_GT(other_call, 0);
  const bool started = wait_for_count(ours, 6) && wait_for_count(theirs, 1);
  ::kill(agent, SIGKILL);
  ::waitpid(agent, nullptr, 0);
  if (!started) {
    ::kill(other_call, SIGKILL);
    ::waitpid(other_call, nullptr, 0);
    for (pid_t pid : carrying(ours)) ::kill(pid, SIGKILL);
    FAIL() << "the processes did not start";
  }
  ASSERT_GE(carrying(ours).size(), 5u);  // orphans now: nothing ends them but settle
  const auto theirs_before = carrying(theirs);

  ToolContext context;
  context.run_id = "run-settle";
  context.tool_call_id = "call_1";
  const auto settling = Clock::now();
  tool("bash").settle(context);
  EXPECT_LT(Clock::now() - settling, 5s);
  const auto left = carrying(ours);
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the call survived settle";
  EXPECT_EQ(carrying(theirs), theirs_before) << "settle ended another call's process";

  for (pid_t pid : left) ::kill(pid, SIGKILL);
  for (pid_t pid : carrying(theirs)) ::kill(pid, SIGKILL);
  ::waitpid(other_call, nullptr, 0);
}

TEST_F(ToolsProcesses, SettleOfACallThatLeftNothingReturnsAtOnce) {
  ToolContext context;
  context.run_id = "run-none";
  context.tool_call_id = "call_none";
  const auto settling = Clock::now();
  tool("grep").settle(context);
  EXPECT_LT(Clock::now() - settling, 1s);
}

}  // namespace
}  // namespace cairn::testing
