// What the MCP library tests share: where the servers of tests/mcp are, a
// Streamable HTTP server-everything process on a port of its own, and
// waiting for a condition instead of sleeping.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/tools/mcp.hpp"
#include "support/http_test_server.hpp"
#include "support/loopback.hpp"

extern char** environ;

namespace cairn::mcp::test {

inline const std::filesystem::path kMcpDir = CAIRN_MCP_DIR;

inline std::filesystem::path everything_js() {
  return kMcpDir / "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}
inline std::filesystem::path filesystem_js() {
  return kMcpDir / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
}
inline std::filesystem::path misbehaving_js() { return kMcpDir / "misbehaving-server.mjs"; }

// Polls `condition` every 5 ms until it holds or `limit` passes.
inline bool wait_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Lines of `file` that begin with `prefix`.
inline std::vector<std::string> lines_starting(const std::filesystem::path& file, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(read_text(file));
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(prefix)) found.push_back(line);
  }
  return found;
}

inline ServerConfig stdio_server(std::string name, std::filesystem::path script, std::vector<std::string> args = {},
                                 std::map<std::string, std::string> env = {}) {
  StdioTransport stdio;
  stdio.command = "node";
  stdio.args.push_back(script.string());
  for (auto& arg : args) stdio.args.push_back(std::move(arg));
  stdio.env = std::move(env);
  ServerConfig config;
  config.name = std::move(name);
  config.transport = std::move(stdio);
  return config;
}

// All text blocks of a tool result, joined.
inline std::string text_of(const ToolResult& result) {
  std::string text;
  for (const auto& block : result.content) {
    if (const auto* t = std::get_if<TextContent>(&block)) text += t->text;
  }
  return text;
}

// All "text" blocks of a server's tools/call result, joined.
inline std::string text_of(const Json& result) {
  std::string text;
  for (const Json& block : result.value("content", Json::array())) {
    if (block.value("type", std::string()) == "text") text += block.value("text", std::string());
  }
  return text;
}

// server-everything over Streamable HTTP: `node index.js streamableHttp`
// with PORT set, in a process group of its own, killed (group and all) at
// destruction. The port is one the kernel just handed out and took back;
// should another process take it first, the server fails to listen and a
// next port is tried.
class EverythingHttpServer {
 public:
  EverythingHttpServer() {
    for (int attempt = 0; attempt < 5 && port_ == 0; ++attempt) {
      const int port = testing::HttpTestServer::closed_port();
      if (spawn(port) && wait_listening(port)) {
        port_ = port;
      } else {
        stop();
        std::error_code ignored;
        if (attempt < 4) std::filesystem::remove(log_, ignored);  // the last one's is kept, to be read
      }
    }
  }
  ~EverythingHttpServer() {
    stop();
    std::error_code ignored;
    if (!log_.empty()) std::filesystem::remove(log_, ignored);
  }
  EverythingHttpServer(const EverythingHttpServer&) = delete;
  EverythingHttpServer& operator=(const EverythingHttpServer&) = delete;

  bool running() const { return port_ != 0; }
  std::string url() const { return fmt::format("http://127.0.0.1:{}/mcp", port_); }
  const std::filesystem::path& log() const { return log_; }

 private:
  bool spawn(int port) {
    log_ = std::filesystem::temp_directory_path() / fmt::format("cairn-mcp-everything-{}-{}.log", ::getpid(), port);
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      if (!std::string_view(*entry).starts_with("PORT=")) env.emplace_back(*entry);
    }
    env.push_back(fmt::format("PORT={}", port));
    const std::string script = everything_js().string();
    std::vector<char*> argv = {const_cast<char*>("node"), const_cast<char*>(script.c_str()),
                               const_cast<char*>("streamableHttp"), nullptr};
    std::vector<char*> envp;
    for (auto& entry : env) envp.push_back(entry.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    const int rc = ::posix_spawnp(&pid_, "node", &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) pid_ = -1;
    return rc == 0;
  }

  // Listening: a connection to the port is accepted. Gone: the process exited.
  bool wait_listening(int port) {
    bool listening = false;
    wait_until(
        [&] {
          int status = 0;
          if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return true;
          }
          const int fd = testing::connect_loopback(port);
          if (fd < 0) return false;
          ::close(fd);
          // The log says the server, not some other process, listens there.
          listening = read_text(log_).find(fmt::format("listening on port {}", port)) != std::string::npos;
          return listening;
        },
        std::chrono::seconds(15));
    return listening;
  }

  void stop() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    pid_ = -1;
    port_ = 0;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  std::filesystem::path log_;
};

}  // namespace cairn::mcp::test
