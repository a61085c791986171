// cairn serve under the attacks of issue 42, measured from outside, each on
// a fresh server (the cairn command on a SQLite store):
//   1. 2,000 connections without a token, each announcing a 16 MiB body and
//      sending it slowly: the server's peak resident memory above idle
//      (reference: <= 64 MiB);
//   2. 500 SSE clients that never read, on a session whose log is ~3 MB:
//      memory per idle watcher above the snapshot (<= 64 KiB), and the
//      memory once they have closed (within 10 % of idle);
//   3. 5,000 idle connections to a server under `ulimit -n 1024`: the time
//      to answer an authorised request (<= 1 s).
// Each figure is printed beside its reference.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "serve_support.hpp"
#include "support/http_test_server.hpp"
#include "support/openai_script.hpp"

namespace {

using namespace std::chrono_literals;
using cairn::Json;
using cairn::bench::ServeProcess;
using cairn::testing::connect_loopback;
using cairn::testing::HttpTestServer;

// "say TEXT": TEXT.
cairn::testing::ScriptedResponse model(const cairn::testing::ReceivedRequest& request) {
  const Json body = Json::parse(request.body, nullptr, false);
  std::string prompt;
  if (!body.is_discarded() && body.contains("messages")) {
    for (const auto& message : body["messages"]) {
      if (message.value("role", "") != "user") continue;
      const Json& content = message["content"];
      if (content.is_string()) prompt = content;
      if (content.is_array() && !content.empty() && content[0].is_object()) prompt = content[0].value("text", "");
    }
  }
  return cairn::testing::openai_text_reply(prompt.rfind("say ", 0) == 0 ? prompt.substr(4) : "ok", 0ms);
}

void stop(ServeProcess& server) {
  ::kill(server.pid, SIGKILL);
  ::waitpid(server.pid, nullptr, 0);
}

// The resident memory once it has settled (a server that just started
// still grows for a moment).
std::int64_t settled_rss(pid_t pid) {
  std::this_thread::sleep_for(1s);
  return cairn::bench::rss_kib(pid);
}

double mib(std::int64_t kib) { return static_cast<double>(kib) / 1024; }

bool tokenless_bodies(const std::filesystem::path& dir, const HttpTestServer& model_server, int clients) {
  ServeProcess server = cairn::bench::start_serve(dir, model_server.url("/v1"), {});
  if (server.port == 0) return false;
  const std::int64_t idle = settled_rss(server.pid);
  cairn::bench::HealthProbe probe(server.port, std::chrono::milliseconds(20));
  std::vector<int> fds;
  for (int i = 0; i < clients; ++i) {
    const int fd = connect_loopback(server.port);
    if (fd < 0) continue;
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    const std::string head =
        "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16777216\r\n\r\n";
    (void)::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  // The bodies, 16 KiB a round from every client, for five seconds.
  const std::string piece(16384, 'x');
  for (int round = 0; round < 50; ++round) {
    for (int fd : fds) (void)::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    std::this_thread::sleep_for(100ms);
  }
  const std::int64_t peak = cairn::bench::status_kib(server.pid, "VmHWM");
  const std::string health = probe.distribution();
  for (int fd : fds) ::close(fd);
  fmt::print("1. {} connections without a token, each sending a 16 MiB body slowly ({} connected):\n"
             "   idle {:.1f} MiB, peak {:.1f} MiB: {:.1f} MiB above idle   (reference: <= 64 MiB above idle)\n"
             "   meanwhile {}   (reference: <= 100 ms)\n",
             clients, fds.size(), mib(idle), mib(peak), mib(peak - idle), health);
  stop(server);
  return true;
}

// The size of a stream's first frame (the snapshot), read by a client that reads.
std::size_t first_frame_bytes(const ServeProcess& server, const std::string& target) {
  const int fd = connect_loopback(server.port);
  if (fd < 0) return 0;
  cairn::testing::send_all_bytes(fd, fmt::format("GET {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n", target, server.token));
  std::string head, body;
  cairn::bench::Dechunker chunks;
  char buffer[65536];
  while (body.find("\n\n") == std::string::npos) {
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got <= 0) break;
    if (const auto end = head.find("\r\n\r\n"); end == std::string::npos) {
      head.append(buffer, static_cast<std::size_t>(got));
      if (const auto at = head.find("\r\n\r\n"); at != std::string::npos) chunks.feed(std::string_view(head).substr(at + 4), body);
    } else {
      chunks.feed(std::string_view(buffer, static_cast<std::size_t>(got)), body);
    }
  }
  ::close(fd);
  return body.find("\n\n") == std::string::npos ? body.size() : body.find("\n\n") + 2;
}

bool silent_watchers(const std::filesystem::path& dir, const HttpTestServer& model_server, int watchers) {
  // A context window the session never fills: its whole transcript is the
  // snapshot (no compaction shortens it).
  {
    std::ofstream models(dir / "models.json");
    models << Json{{"providers",
                    {{"bench",
                      {{"baseUrl", model_server.url("/v1")},
                       {"api", "openai-completions"},
                       {"models", Json::array({{{"id", "big"}, {"contextWindow", 100000000}, {"maxTokens", 8192}}})}}}}}}
                  .dump();
  }
  ServeProcess server = cairn::bench::start_serve(
      dir, model_server.url("/v1"), {"--tools", "ls", "--models-file", (dir / "models.json").string(), "--model", "bench/big"});
  if (server.port == 0) return false;
  cairn::bench::call(server, "POST", "/v1/sessions", Json{{"id", "big"}, {"cwd", dir.string()}});
  // About 3 MB of log: ten runs of a 150 KB prompt and its 150 KB answer.
  for (int i = 0; i < 10; ++i) {
    cairn::bench::call(server, "POST", "/v1/sessions/big/refs/main/prompt",
                       Json{{"text", "say " + std::string(150000, static_cast<char>('a' + i))}});
    for (int wait = 0; wait < 500; ++wait) {
      if (cairn::bench::call(server, "GET", "/v1/sessions/big/refs/main")["ref"].value("status", "") == "idle") break;
      std::this_thread::sleep_for(10ms);
    }
  }
  const std::int64_t idle = settled_rss(server.pid);
  std::vector<int> fds;
  for (int i = 0; i < watchers; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(server.port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd);
      continue;
    }
    cairn::testing::send_all_bytes(
        fd, fmt::format("GET /v1/sessions/big/refs/main/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n", server.token));
    fds.push_back(fd);
  }
  const std::int64_t watched = settled_rss(server.pid);
  const std::int64_t snapshot_frame = static_cast<std::int64_t>(first_frame_bytes(server, "/v1/sessions/big/refs/main/events")) / 1024;
  for (int fd : fds) ::close(fd);
  std::this_thread::sleep_for(3s);  // the server sees them go, and gives the memory back
  const std::int64_t after = cairn::bench::rss_kib(server.pid);
  const double per_watcher = static_cast<double>(watched - idle - snapshot_frame) / std::max<std::size_t>(fds.size(), 1);
  fmt::print("2. {} SSE clients that never read, on a session with a {:.1f} MB log (snapshot ~{:.1f} MiB):\n"
             "   idle {:.1f} MiB, watched {:.1f} MiB: {:.1f} KiB per idle watcher above the snapshot   (reference: <= 64 KiB)\n"
             "   after they closed {:.1f} MiB: {:+.1f} % of idle   (reference: within 10 %)\n",
             fds.size(), static_cast<double>(std::filesystem::file_size(dir / "store.db")) / 1e6, mib(snapshot_frame),
             mib(idle), mib(watched), per_watcher, mib(after), 100.0 * static_cast<double>(after - idle) / static_cast<double>(idle));
  stop(server);
  return true;
}

bool idle_flood(const std::filesystem::path& dir, const HttpTestServer& model_server, int connections) {
  ServeProcess server = cairn::bench::start_serve(dir, model_server.url("/v1"), {}, 1024);
  if (server.port == 0) return false;
  cairn::bench::HealthProbe probe(server.port, std::chrono::milliseconds(20));
  std::vector<int> fds;
  for (int i = 0; i < connections; ++i) {
    const int fd = connect_loopback(server.port);
    if (fd >= 0) fds.push_back(fd);
  }
  std::this_thread::sleep_for(500ms);
  std::vector<double> took;
  for (int i = 0; i < 5; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const std::string reply = cairn::bench::call_raw(server, "GET", "/v1/sessions");
    took.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    if (reply.rfind("HTTP/1.1 200", 0) != 0) fmt::print("   an authorised request failed: {}\n", reply.substr(0, 200));
  }
  const std::string health = probe.distribution();
  for (int fd : fds) ::close(fd);
  std::sort(took.begin(), took.end());
  fmt::print("3. {} idle connections ({} connected) to a server under `ulimit -n 1024`:\n"
             "   an authorised request answered in {:.1f} ms (median of 5; slowest {:.1f} ms)   (reference: <= 1000 ms)\n"
             "   meanwhile {}   (reference: <= 100 ms)\n",
             connections, fds.size(), took[2], took.back(), health);
  stop(server);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") quick = true;
    if (arg == "--help" || arg == "-h") {
      fmt::print("usage: cairn_bench_serve_attack [--quick]\n"
                 "  cairn serve under attack: 2,000 token-less slow 16 MiB bodies (peak memory), 500 SSE clients that\n"
                 "  never read on a 3 MB session (memory per watcher, and after they leave), 5,000 idle connections\n"
                 "  under ulimit -n 1024 (time to answer); --quick: a fifth of each\n");
      return 0;
    }
  }
  cairn::bench::raise_own_descriptor_limit();
  const int scale = quick ? 5 : 1;
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("cairn-bench-serve-attack-{}", ::getpid());
  HttpTestServer model_server{HttpTestServer::Responder(model)};
  bool ok = true;
  int part = 0;
  for (auto* scenario : {&tokenless_bodies, &silent_watchers, &idle_flood}) {
    const auto run_dir = dir / fmt::format("{}", ++part);
    std::filesystem::create_directories(run_dir / "config");
    const int count = part == 1 ? 2000 : part == 2 ? 500 : 5000;
    if (!scenario(run_dir, model_server, count / scale)) {
      fmt::print("cairn serve did not start (see {})\n", (run_dir / "serve.err").string());
      ok = false;
    }
  }
  std::error_code ec;
  if (ok) std::filesystem::remove_all(dir, ec);
  return ok ? 0 : 1;
}
