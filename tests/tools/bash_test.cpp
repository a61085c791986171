// bash: merged output, exit codes, timeout, tail with the full output
// spilled, streamed updates, and that no process of the command's group
// survives an abort, a timeout or the command's own exit.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

using ToolsBash = ToolsFixture;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Processes of group `pgid` that still run. A killed process whose parent
// (init, here) has not reaped it yet is a zombie: it runs nothing.
std::vector<long> live_members(pid_t pgid) {
  std::vector<long> live;
  if (::kill(-pgid, 0) == -1 && errno == ESRCH) return live;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (close == std::string::npos || std::sscanf(line.c_str() + close + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') live.push_back(std::stol(name));
  }
  return live;
}

std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs a command on a thread; the first line of its output must be its
// shell's pid ($$), which is also its process group.
struct Running {
  std::stop_source stop;
  std::promise<pid_t> pid_promise;
  std::future<ToolResult> result;
  std::mutex mu;
  bool got_pid = false;
  // A failed assertion must not wait for `sleep 100`.
  ~Running() {
    stop.request_stop();
    if (result.valid()) result.wait();
  }
};

void start(Running& running, const Tool& bash, Json args) {
  ToolContext context;
  context.cancel = running.stop.get_token();
  context.update = [&running](const ToolResult& partial) {
    std::lock_guard lock(running.mu);
    if (running.got_pid) return;
    const auto& text = std::get<TextContent>(partial.content.at(0)).text;
    if (const auto nl = text.find('\n'); nl != std::string::npos) {
      running.got_pid = true;
      running.pid_promise.set_value(static_cast<pid_t>(std::stol(text.substr(0, nl))));
    }
  };
  running.result = std::async(std::launch::async, [&bash, args = std::move(args), context] { return bash.execute(args, context); });
}

TEST_F(ToolsBash, ReturnsStdoutAndStderrMergedFromTheWorkingDirectory) {
  const ToolResult result = run("bash", {{"command", "pwd; echo to-out; echo to-err >&2"}});
  EXPECT_FALSE(result.is_error);
  EXPECT_EQ(text(result), cwd().string() + "\nto-out\nto-err\n");
  EXPECT_EQ(result.details->at("exitCode"), 0);
  EXPECT_EQ(text(run("bash", {{"command", "true"}})), "(no output)");
}

TEST_F(ToolsBash, ANonZeroExitIsAnErrorWithTheOutputAndTheCode) {
  const ToolResult result = run("bash", {{"command", "echo partial; exit 3"}});
  EXPECT_TRUE(result.is_error);
  EXPECT_EQ(text(result), "partial\n\nCommand exited with code 3");
  EXPECT_EQ(result.details->at("exitCode"), 3);
  const ToolResult killed = run("bash", {{"command", "kill -9 $$"}});
  EXPECT_TRUE(killed.is_error);
  EXPECT_NE(text(killed).find("killed by signal 9"), std::string::npos) << text(killed);
}

TEST_F(ToolsBash, OutputIsCleanUtf8WithoutTerminalEscapes) {
  const ToolResult result = run("bash", {{"command", "printf 'bad \\377 \\033[31mred\\033[0m\\r\\n'"}});
  EXPECT_EQ(text(result), "bad \xEF\xBF\xBD red\n");
  EXPECT_NO_THROW((void)Json(text(result)).dump());
}

TEST_F(ToolsBash, StdinIsEmpty) {
  const auto started = Clock::now();
  const ToolResult result = run("bash", {{"command", "cat; echo done"}});
  EXPECT_EQ(text(result), "done\n");
  EXPECT_LT(Clock::now() - started, 5s);
}

TEST_F(ToolsBash, ATimeoutKillsTheCommandAndSaysSo) {
  const auto started = Clock::now();
  const ToolResult result = run("bash", {{"command", "echo $$; echo before; sleep 30; echo finished"}, {"timeout", 0.5}});
  EXPECT_LT(Clock::now() - started, 5s);
  EXPECT_TRUE(result.is_error);
  const std::string out = text(result);
  EXPECT_NE(out.find("before\n"), std::string::npos);
  EXPECT_EQ(out.find("finished"), std::string::npos);
  EXPECT_TRUE(out.ends_with("Command timed out after 0.5 seconds")) << out;
  EXPECT_EQ(result.details->at("timedOut"), true);
  const pid_t pgid = static_cast<pid_t>(std::stol(out.substr(0, out.find('\n'))));
  EXPECT_TRUE(live_members(pgid).empty());
}

TEST_F(ToolsBash, LongOutputKeepsTheTailAndSpillsEverythingToAFile) {
  const ToolResult result = run("bash", {{"command", "seq 1 5000"}});
  EXPECT_FALSE(result.is_error);
  const std::string out = text(result);
  ASSERT_TRUE(result.details->contains("fullOutputPath")) << result.details->dump();
  const std::string path = result.details->at("fullOutputPath").get<std::string>();
  EXPECT_TRUE(path.starts_with(spill_dir().string())) << path;
  EXPECT_TRUE(out.starts_with("3001\n3002\n")) << out.substr(0, 50);
  EXPECT_NE(out.find("\n5000\n"), std::string::npos);
  EXPECT_TRUE(out.ends_with(fmt::format("[Showing lines 3001-5000 of 5000. Full output: {}]", path))) << out.substr(out.size() - 200);
  std::string expected;
  for (int i = 1; i <= 5000; ++i) expected += fmt::format("{}\n", i);
  EXPECT_EQ(slurp_file(path), expected);
}

TEST_F(ToolsBash, WideOutputIsCutAt50KB) {
  // 3000 lines of 100 bytes: the byte limit comes first.
  const ToolResult result = run("bash", {{"command", "for i in $(seq 1 3000); do printf '%099d\\n' $i; done"}});
  const std::string out = text(result);
  const auto note = out.rfind("\n\n[Showing lines ");
  ASSERT_NE(note, std::string::npos);
  EXPECT_LE(note, 50u * 1024);
  EXPECT_NE(out.find(fmt::format("{:099d}\n", 3000)), std::string::npos);
  EXPECT_NE(out.find("of 3000 (50.0KB limit). Full output: "), std::string::npos) << out.substr(note);
  EXPECT_EQ(slurp_file(result.details->at("fullOutputPath").get<std::string>()).size(), 300000u);
}

TEST_F(ToolsBash, StreamsPartialOutputWhileItRuns) {
  std::mutex mu;
  std::vector<std::string> updates;
  ToolContext context;
  context.update = [&](const ToolResult& partial) {
    std::lock_guard lock(mu);
    updates.push_back(text(partial));
  };
  const ToolResult result = tool("bash").execute({{"command", "echo first; sleep 0.6; echo second"}}, context);
  EXPECT_EQ(text(result), "first\nsecond\n");
  std::lock_guard lock(mu);
  ASSERT_FALSE(updates.empty());
  EXPECT_EQ(updates.front(), "first\n");  // seen before the command ended
  EXPECT_EQ(updates.back(), "first\nsecond\n");
}

TEST_F(ToolsBash, AbortKillsTheWholeProcessGroup) {
  Running running;
  start(running, tool("bash"), {{"command", "echo $$; sleep 100 & sleep 100 & wait"}});
  auto pid_future = running.pid_promise.get_future();
  ASSERT_EQ(pid_future.wait_for(10s), std::future_status::ready);
  const pid_t pgid = pid_future.get();
  // Both sleeps started: the shell and two children run in the group.
  const auto until = Clock::now() + 5s;
  while (live_members(pgid).size() < 3 && Clock::now() < until) std::this_thread::sleep_for(10ms);
  ASSERT_GE(live_members(pgid).size(), 3u);

  const auto aborted_at = Clock::now();
  running.stop.request_stop();
  ASSERT_EQ(running.result.wait_for(10s), std::future_status::ready);
  const ToolResult result = running.result.get();
  EXPECT_LT(Clock::now() - aborted_at, 3s);
  EXPECT_TRUE(result.is_error);
  EXPECT_TRUE(text(result).ends_with("Command aborted")) << text(result);
  EXPECT_EQ(result.details->at("cancelled"), true);
  EXPECT_EQ(live_members(pgid), std::vector<long>{});
}

TEST_F(ToolsBash, AbortKillsEvenWhatIgnoresSigterm) {
  Running running;
  start(running, tool("bash"), {{"command", "trap '' TERM; echo $$; sleep 100 & wait"}});
  auto pid_future = running.pid_promise.get_future();
  ASSERT_EQ(pid_future.wait_for(10s), std::future_status::ready);
  const pid_t pgid = pid_future.get();
  std::this_thread::sleep_for(100ms);
  running.stop.request_stop();
  ASSERT_EQ(running.result.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(running.result.get().is_error);
  EXPECT_EQ(live_members(pgid), std::vector<long>{});
}

TEST_F(ToolsBash, BackgroundJobsLeftRunningAreKilledWhenTheCommandExits) {
  const auto started = Clock::now();
  const ToolResult result = run("bash", {{"command", "echo $$; (sleep 100; echo never) & sleep 100 >/dev/null 2>&1 &"}});
  EXPECT_LT(Clock::now() - started, 5s);
  EXPECT_FALSE(result.is_error) << text(result);
  const std::string out = text(result);
  EXPECT_EQ(out.find("never"), std::string::npos);
  EXPECT_EQ(live_members(static_cast<pid_t>(std::stol(out.substr(0, out.find('\n'))))), std::vector<long>{});
}

TEST_F(ToolsBash, AMissingWorkingDirectoryIsAnError) {
  const auto tools = make_coding_tools(CodingToolsOptions{.cwd = cwd() / "gone", .spill_dir = spill_dir()});
  const ToolResult result = tools.at(1).execute({{"command", "true"}}, ToolContext{});
  EXPECT_TRUE(result.is_error);
  EXPECT_NE(text(result).find("gone"), std::string::npos);
}

}  // namespace
}  // namespace cairn::testing
