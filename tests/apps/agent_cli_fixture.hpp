// The fixture of the tests that run the `cairn` command as a process: a
// directory of its own for HOME, XDG dirs, the store and the working
// directory; start / finish / cairn(...) to run it; leftovers() to find
// every process it (or its tools) left running.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cairn/json.hpp"
#include "support/http_test_server.hpp"
#include "support/test_support.hpp"

namespace cairn::cli_testing {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ScriptedResponse;

struct Finished {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using testing::lines_of;

inline int count_of(const std::string& text, const std::string& needle) {
  int count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++count;
  return count;
}

// ---- running cairn ---------------------------------------------------------------

class AgentCliTest : public ::testing::Test {
 protected:
  AgentCliTest() {
    for (const char* sub : {"home", "config", "data", "cache", "work", "io"}) {
      std::filesystem::create_directories(dir_.path() / sub);
    }
  }

  std::filesystem::path path(const std::string& sub) const { return dir_.path() / sub; }
  std::string store() const { return "jsonl:" + (dir_.path() / "store").string(); }

  // No key of this machine leaks in: only these variables, and extra_env_.
  // HOME names this test's directory, so every process cairn starts can be
  // told apart from other tests' by its environment (leftovers()).
  std::vector<std::string> environment() const {
    std::vector<std::string> env = {"HOME=" + path("home").string(), "XDG_CONFIG_HOME=" + path("config").string(),
                                    "XDG_DATA_HOME=" + path("data").string(),
                                    "XDG_CACHE_HOME=" + path("cache").string(), "LANG=C.UTF-8"};
    if (const char* system_path = std::getenv("PATH")) env.push_back(std::string("PATH=") + system_path);
    env.insert(env.end(), extra_env_.begin(), extra_env_.end());
    return env;
  }

  std::vector<std::string> endpoint(const HttpTestServer& server) const {
    return {"--api", "openai-completions", "--base-url", server.url("/v1"), "--model", "test"};
  }

  // Starts cairn with `args` in `cwd`; stdout and stderr go to files.
  pid_t start(const std::vector<std::string>& args, const std::filesystem::path& cwd,
              const std::optional<std::string>& input = std::nullopt) {
    ++runs_;
    out_ = path("io") / fmt::format("out-{}.txt", runs_);
    err_ = path("io") / fmt::format("err-{}.txt", runs_);
    const auto in = path("io") / fmt::format("in-{}.txt", runs_);
    std::ofstream(in, std::ios::binary) << input.value_or("");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, input ? in.c_str() : "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    std::vector<std::string> argv_strings = launcher_;
    argv_strings.push_back(CAIRN_CLI_PATH);
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = environment();
    std::vector<char*> envp;
    for (auto& variable : env_strings) envp.push_back(variable.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, argv_strings[0].c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(spawned, 0);
    return spawned == 0 ? pid : -1;
  }

  // Waits for a started cairn (killed after a minute: a hung run fails the
  // test instead of hanging it).
  Finished finish(pid_t pid) {
    Finished finished;
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << "cairn did not end within a minute";
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    finished.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    finished.out = read_file(out_);
    finished.err = read_file(err_);
    return finished;
  }

  Finished cairn(std::vector<std::string> args, const std::optional<std::string>& input = std::nullopt) {
    return cairn_in(path("work"), std::move(args), input);
  }
  Finished cairn_in(const std::filesystem::path& cwd, std::vector<std::string> args,
                    const std::optional<std::string>& input = std::nullopt) {
    args.push_back("--store");
    args.push_back(store());
    return finish(start(args, cwd, input));
  }

  // The running processes whose environment holds this test's HOME: what
  // cairn, and every process its tools started, inherited. Zombies hold no
  // environment any more, so a dead process whose parent has not yet reaped
  // it does not count. A process in the middle of an exec reads as having no
  // environment either (the new image has not set it up yet), so one whose
  // working directory is in this test's directory counts too: a tool's shell
  // spawned just before cairn was killed is caught on its way to running.
  std::vector<pid_t> leftovers() const {
    const std::string home = "HOME=" + path("home").string();
    const std::string ours = std::filesystem::weakly_canonical(dir_.path()).string() + "/";
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string environ_text = read_file(entry.path() / "environ");
      bool counts = false;
      for (std::size_t start = 0; start < environ_text.size() && !counts;) {
        const std::size_t end = std::min(environ_text.find('\0', start), environ_text.size());
        counts = environ_text.compare(start, end - start, home) == 0;
        start = end + 1;
      }
      if (!counts && environ_text.empty()) {
        std::error_code cwd_error;
        const std::string cwd = std::filesystem::read_symlink(entry.path() / "cwd", cwd_error).string() + "/";
        counts = !cwd_error && cwd.starts_with(ours);
      }
      if (counts) found.push_back(static_cast<pid_t>(std::stol(name)));
    }
    return found;
  }

  // How long after `since` the last leftover was gone, polling every
  // millisecond up to `limit`; nullopt when some still ran then.
  std::optional<std::chrono::milliseconds> leftovers_gone_after(std::chrono::steady_clock::time_point since,
                                                                std::chrono::milliseconds limit) const {
    for (;;) {
      const bool none = leftovers().empty();
      const auto now = std::chrono::steady_clock::now();
      if (none) return std::chrono::duration_cast<std::chrono::milliseconds>(now - since);
      if (now - since > limit) return std::nullopt;
      std::this_thread::sleep_for(1ms);
    }
  }

  // What a failing test leaves is ended here, after its checks have failed
  // (a passing test leaves nothing), so that it cannot reach into the next.
  ~AgentCliTest() override {
    for (const pid_t pid : leftovers()) ::kill(pid, SIGKILL);
  }

  static Json request_json(const testing::ReceivedRequest& request) { return Json::parse(request.body); }

  testing::TempDir dir_;
  int runs_ = 0;
  std::filesystem::path out_, err_;
  std::vector<std::string> extra_env_;  // NAME=VALUE given to cairn besides environment()'s
  std::vector<std::string> launcher_;   // a program (absolute path) and its arguments that run cairn
};

inline std::string session_line_id(const std::string& err) {
  for (const auto& line : lines_of(err)) {
    if (line.starts_with("cairn: session ")) return line.substr(std::string("cairn: session ").size());
  }
  return {};
}

// The records of `cairn log --json` output that have `type`.
inline std::vector<Json> log_of(const std::string& out, const std::string& type) {
  std::vector<Json> found;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    Json record = Json::parse(line, nullptr, false);
    if (record.is_object() && record.value("type", "") == type) found.push_back(record);
  }
  return found;
}

}  // namespace cairn::cli_testing
