// What the benchmarks of `cairn serve` share: the server as a process (the
// cairn command, on a SQLite store, its model a local scripted server),
// plain requests, its memory, and the chunks of a stream's body.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "support/health_probe.hpp"
#include "support/loopback.hpp"

namespace cairn::bench {

// As many open files as this process may have: each client is a socket.
inline void raise_own_descriptor_limit() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

struct ServeProcess {
  pid_t pid = -1;
  int port = 0;
  std::string token;
};

// Starts `cairn serve` in `dir` (its store, tokens and stderr there) with
// `extra` options; under `ulimit -n` `descriptors` when given. Returns once
// it listens (port 0: it did not start; see dir/serve.err).
// `store_uri`: another store than dir/store.db (a postgres:// URI, say).
inline ServeProcess start_serve(const std::filesystem::path& dir, const std::string& model_url,
                                const std::vector<std::string>& extra, std::optional<int> descriptors = std::nullopt,
                                const std::string& store_uri = {}) {
  ServeProcess server;
  const auto err = dir / "serve.err";
  const std::string store = store_uri.empty() ? "sqlite:" + (dir / "store.db").string() : store_uri;
  std::vector<std::string> args = {CAIRN_CLI_PATH, "serve", "--listen", "127.0.0.1:0", "--store", store, "--token-file",
                                   (dir / "tokens").string()};
  if (std::find(extra.begin(), extra.end(), "--approval") == extra.end()) args.insert(args.end(), {"--approval", "never-ask"});
  // The scripted model, unless `extra` names models of its own (--models-file).
  if (std::find(extra.begin(), extra.end(), "--models-file") == extra.end()) {
    args.insert(args.end(), {"--api", "openai-completions", "--base-url", model_url, "--model", "test"});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  std::string program = CAIRN_CLI_PATH;
  if (descriptors) {
    program = "/bin/sh";
    args.insert(args.begin(), {"/bin/sh", "-c", fmt::format("ulimit -n {} && exec \"$0\" \"$@\"", *descriptors)});
  }
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  std::vector<std::string> env = {"HOME=" + dir.string(), "XDG_CONFIG_HOME=" + (dir / "config").string(),
                                  "XDG_CACHE_HOME=" + (dir / "cache").string(), "PATH=/usr/bin:/bin"};
  std::vector<char*> envp;
  for (auto& variable : env) envp.push_back(variable.data());
  envp.push_back(nullptr);
  posix_spawn(&server.pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  const std::string marker = "listening on http://127.0.0.1:";
  for (int i = 0; i < 3000 && server.port == 0; ++i) {
    std::ifstream in(err);
    std::stringstream text;
    text << in.rdbuf();
    if (auto at = text.str().find(marker); at != std::string::npos) server.port = std::stoi(text.str().substr(at + marker.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream tokens(dir / "tokens");
  std::getline(tokens, server.token);
  return server;
}

inline std::string read_to_end(int fd) {
  std::string out;
  char buffer[8192];
  for (ssize_t got; (got = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;) out.append(buffer, static_cast<std::size_t>(got));
  return out;
}

// The whole reply to one request (head and body), sent with the token.
inline std::string call_raw(const ServeProcess& server, const std::string& method, const std::string& target,
                            const Json& body = nullptr) {
  const int fd = testing::connect_loopback(server.port);
  if (fd < 0) return {};
  const std::string payload = body.is_null() ? std::string() : body.dump();
  std::string raw = fmt::format("{} {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {}\r\n", method,
                                target, server.token);
  if (!payload.empty()) raw += fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\n", payload.size());
  raw += "\r\n" + payload;
  testing::send_all_bytes(fd, raw);
  std::string reply = read_to_end(fd);
  ::close(fd);
  return reply;
}

inline std::string call_text(const ServeProcess& server, const std::string& method, const std::string& target,
                             const Json& body = nullptr) {
  const std::string reply = call_raw(server, method, target, body);
  const auto body_at = reply.find("\r\n\r\n");
  return body_at == std::string::npos ? std::string() : reply.substr(body_at + 4);
}

inline Json call(const ServeProcess& server, const std::string& method, const std::string& target, const Json& body = nullptr) {
  return Json::parse(call_text(server, method, target, body), nullptr, false);
}

// A line of /proc/PID/status in KiB: "VmRSS" (resident now), "VmHWM" (its peak).
inline std::int64_t status_kib(pid_t pid, std::string_view field) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':') {
      return std::stoll(line.substr(field.size() + 1));
    }
  }
  return 0;
}
inline std::int64_t rss_kib(pid_t pid) { return status_kib(pid, "VmRSS"); }

// A chunked body as it arrives: feed() the bytes after the head; what the
// chunks hold goes to `body` as soon as it is there (a chunk's bytes before
// its end included, as a browser's reader hands them over).
struct Dechunker {
  std::string pending;     // a chunk-size line not yet whole
  std::size_t left = 0;    // bytes of the current chunk still to come
  std::size_t crlf = 0;    // bytes of the CRLF after it still to skip
  bool last = false;       // the last chunk came: the server ended the body

  void feed(std::string_view bytes, std::string& body) {
    while (!bytes.empty() && !last) {
      if (crlf > 0) {
        const std::size_t skip = std::min(crlf, bytes.size());
        crlf -= skip;
        bytes.remove_prefix(skip);
        continue;
      }
      if (left > 0) {
        const std::size_t take = std::min(left, bytes.size());
        body.append(bytes.substr(0, take));
        left -= take;
        bytes.remove_prefix(take);
        if (left == 0) crlf = 2;
        continue;
      }
      const auto end = bytes.find('\n');
      pending.append(bytes.substr(0, end == std::string_view::npos ? bytes.size() : end + 1));
      if (end == std::string_view::npos) return;
      bytes.remove_prefix(end + 1);
      left = std::strtoul(pending.c_str(), nullptr, 16);
      pending.clear();
      if (left == 0) last = true;
    }
  }
};

using testing::HealthProbe;

}  // namespace cairn::bench
