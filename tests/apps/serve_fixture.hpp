// The harness of the tests of `cairn serve` as a process: a scripted model
// (answering each request from the conversation it carries, so concurrent
// runs each get their own script), a plain socket client for requests and
// SSE streams, and a fixture that starts the server and checks every
// response it got against docs/openapi.json when a test ends.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "support/health_probe.hpp"
#include "support/http_test_server.hpp"
#include "support/loopback.hpp"
#include "support/openai_script.hpp"
#include "support/pg_cluster.hpp"
#include "support/test_support.hpp"


namespace cairn::serve_testing {

using namespace std::chrono_literals;
using testing::HttpTestServer;
using testing::ReceivedRequest;
using testing::ScriptedResponse;

// ---- the scripted model ------------------------------------------------------------

inline std::string serve_content_text(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && part.value("type", "") == "text") text += part.value("text", "");
    }
  }
  return text;
}

// The last user message says what to do:
//   "say TEXT"    answer TEXT
//   "loop N"      call ls N times, then answer "looped"
//   "touch NAME"  call bash once to append NAME to ran.txt (in the work
//                 directory), then answer "touched"
//   "touch slowly NAME"  the same, the answer taking 1.2 s to stream
//   "ask"         call ask_user once, then answer with what came back
//   "delegate X"  call task with the prompt "say X", then answer "delegated: " and its result
inline ScriptedResponse serve_scripted_model(const ReceivedRequest& request) {
  const Json body = Json::parse(request.body, nullptr, false);
  if (body.is_discarded() || !body.contains("messages")) return testing::openai_text_reply("?");
  const Json& messages = body["messages"];
  std::string prompt;
  int results_since = 0;
  std::string last_result;
  for (const auto& message : messages) {
    const std::string role = message.value("role", "");
    if (role == "user") {
      prompt = serve_content_text(message["content"]);
      results_since = 0;
    } else if (role == "tool") {
      ++results_since;
      last_result = serve_content_text(message["content"]);
    }
  }
  const std::string call_id = fmt::format("call_{}_{}", std::hash<std::string>{}(prompt) % 100000, results_since);
  if (prompt.rfind("say ", 0) == 0) return testing::openai_text_reply(prompt.substr(4));
  if (prompt.rfind("loop ", 0) == 0) {
    const int wanted = std::stoi(prompt.substr(5));
    if (results_since < wanted) return testing::openai_tool_reply(call_id, "ls", {{"path", "."}});
    return testing::openai_text_reply("looped");
  }
  if (prompt.rfind("touch ", 0) == 0) {
    const bool slowly = prompt.rfind("touch slowly ", 0) == 0;
    const std::string name = prompt.substr(slowly ? 13 : 6);
    if (results_since == 0) {
      return testing::openai_tool_reply(call_id, "bash", {{"command", fmt::format("echo {} >> ran.txt", name)}});
    }
    return testing::openai_text_reply("touched", slowly ? 300ms : 1ms);
  }
  if (prompt == "wait") return testing::openai_text_reply("waited", 500ms);
  // A summary (of a compaction or a navigation): slow when its instructions say so.
  if (prompt.rfind("<conversation>", 0) == 0) {
    return testing::openai_text_reply("the summary", prompt.find("slow summary") != std::string::npos ? 500ms : 1ms);
  }
  if (prompt.rfind("run ", 0) == 0) {  // bash with the rest, then its output as the answer
    if (results_since == 0) return testing::openai_tool_reply(call_id, "bash", {{"command", prompt.substr(4)}});
    return testing::openai_text_reply("ran: " + last_result);
  }
  if (prompt.rfind("chatter ", 0) == 0) {  // N pieces of 100 characters: N message_updates, each the whole text so far
    std::vector<std::string> pieces = {testing::openai_chunk({{"role", "assistant"}, {"content", ""}})};
    for (int i = 0; i < std::stoi(prompt.substr(8)); ++i) pieces.push_back(testing::openai_chunk({{"content", std::string(100, 'x')}}));
    pieces.push_back(testing::openai_chunk(Json::object(), "stop"));
    return testing::openai_stream(std::move(pieces), 0ms);
  }
  if (prompt.rfind("steer:", 0) == 0) return testing::openai_text_reply("steered " + prompt.substr(6));
  if (prompt.rfind("delegate ", 0) == 0) {
    if (results_since == 0) return testing::openai_tool_reply(call_id, "task", {{"prompt", "say " + prompt.substr(9)}});
    return testing::openai_text_reply("delegated: " + last_result);
  }
  if (prompt == "ask") {
    if (results_since == 0) return testing::openai_tool_reply(call_id, "ask_user", {{"question", "which colour?"}});
    return testing::openai_text_reply("got " + last_result);
  }
  return testing::openai_text_reply("ok");
}

// ---- a plain HTTP client -----------------------------------------------------------

using testing::connect_loopback;
using testing::send_all_bytes;

// Reads until the peer closes or `timeout` passes.
inline std::string serve_read_all(int fd, std::chrono::milliseconds timeout) { return testing::read_until_closed(fd, timeout); }

struct ServeReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  Json json() const { return Json::parse(body, nullptr, false); }
};

inline ServeReply serve_parse_reply(const std::string& raw) {
  ServeReply reply;
  const auto head_end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || head_end == std::string::npos) return reply;
  reply.status = std::stoi(raw.substr(9, 3));
  std::istringstream head(raw.substr(0, head_end));
  std::string line;
  std::getline(head, line);
  while (std::getline(head, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (!value.empty() && value.back() == '\r') value.pop_back();
    reply.headers[name] = value;
  }
  reply.body = raw.substr(head_end + 4);
  // A request the server read as two (a body shorter than its length, the
  // rest taken for the next request) has two answers: this is the first.
  if (auto length = reply.headers.find("content-length"); length != reply.headers.end()) {
    const std::size_t size = std::strtoul(length->second.c_str(), nullptr, 10);
    if (reply.body.size() > size) reply.body.resize(size);
  }
  return reply;
}

// Every exchange a test has with the server, written as JSON lines for
// tests/openapi/validate.mjs, which checks each response against
// docs/openapi.json when the test ends: the document cannot drift from
// the server.
struct ApiRecording {
  std::mutex mu;
  std::filesystem::path file;  // empty: not recording
  std::string test;            // the test that made what is recorded now
  std::size_t count = 0;
};
inline ApiRecording& api_recording() {
  static ApiRecording recording;
  return recording;
}

inline void record_exchange(const std::string& raw_request, int status, const std::string& content_type, const std::string& body) {
  ApiRecording& recording = api_recording();
  std::lock_guard lock(recording.mu);
  if (recording.file.empty() || status <= 0) return;
  // Only requests whose line is one: a mangled request has no route to check.
  const std::string line = raw_request.substr(0, raw_request.find("\r\n"));
  const auto first = line.find(' '), second = line.rfind(' ');
  if (first == std::string::npos || second <= first || line.compare(second + 1, 7, "HTTP/1.") != 0) return;
  const Json entry = {{"method", line.substr(0, first)},
                      {"target", line.substr(first + 1, second - first - 1)},
                      {"status", status},
                      {"contentType", content_type},
                      {"body", body},
                      {"test", recording.test}};
  std::ofstream out(recording.file, std::ios::app);
  out << entry.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  ++recording.count;
}

// Sends `raw` as is and reads the whole answer.
inline ServeReply serve_raw(int port, const std::string& raw, std::chrono::milliseconds timeout = 30s) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  send_all_bytes(fd, raw);
  ServeReply reply = serve_parse_reply(serve_read_all(fd, timeout));
  ::close(fd);
  record_exchange(raw, reply.status, reply.headers.count("content-type") ? reply.headers["content-type"] : "", reply.body);
  return reply;
}

inline std::string serve_request_text(const std::string& method, const std::string& path, const std::string& body,
                         const std::vector<std::string>& headers) {
  std::string raw = fmt::format("{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", method, path);
  for (const auto& header : headers) raw += header + "\r\n";
  if (!body.empty() || method == "POST" || method == "PATCH") raw += fmt::format("Content-Length: {}\r\n", body.size());
  raw += "\r\n" + body;
  return raw;
}

// One SSE frame: its id, if any, and its data as JSON.
struct ServeFrame {
  std::optional<std::int64_t> id;
  Json data;
};

class ServeStreamClient {
 public:
  ServeStreamClient(int port, const std::string& path, const std::string& token, std::optional<std::int64_t> last_id = {}) {
    fd_ = connect_loopback(port);
    std::vector<std::string> headers = {"Authorization: Bearer " + token, "Accept: text/event-stream"};
    if (last_id) headers.push_back(fmt::format("Last-Event-ID: {}", *last_id));
    std::string raw = fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\n", path);
    for (const auto& header : headers) raw += header + "\r\n";
    raw += "\r\n";
    if (fd_ >= 0) send_all_bytes(fd_, raw);
    request_ = raw;
  }
  ~ServeStreamClient() { close(); }
  ServeStreamClient(const ServeStreamClient&) = delete;
  ServeStreamClient& operator=(const ServeStreamClient&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int status() {
    fill_head();
    return status_;
  }
  bool ended() const { return eof_; }
  // The server ended the stream: its last chunk came (a cut has none).
  bool ended_cleanly() const { return last_chunk_; }

  // The next whole frame; nullopt on timeout or when the server ended the stream.
  std::optional<ServeFrame> next(std::chrono::milliseconds timeout = 20s) {
    fill_head();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto end = buffer_.find("\n\n"); end != std::string::npos) {
        std::string block = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        ServeFrame frame;
        bool has_data = false;
        for (const auto& line : testing::lines_of(block)) {
          if (line.rfind("id: ", 0) == 0) frame.id = std::stoll(line.substr(4));
          if (line.rfind("data: ", 0) == 0) {
            frame.data = Json::parse(line.substr(6), nullptr, false);
            has_data = true;
          }
        }
        if (has_data) return frame;
        continue;  // a comment (heartbeat)
      }
      if (!read_some(deadline)) return std::nullopt;
    }
  }

 private:
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    if (fd_ < 0 || eof_) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) return true;  // a signal is not the stream's end: poll again
    if (ready <= 0) return false;
    char chunk[8192];
    const ssize_t got = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (got < 0 && errno == EINTR) return true;
    if (got <= 0) {
      eof_ = true;
      return false;
    }
    if (status_ != 0 && chunked_) {
      raw_.append(chunk, static_cast<std::size_t>(got));
      dechunk();
    } else {
      buffer_.append(chunk, static_cast<std::size_t>(got));
    }
    return true;
  }
  // Moves the whole chunks of raw_ into buffer_; the last (empty) chunk says
  // the server ended the stream, rather than the connection breaking.
  void dechunk() {
    for (;;) {
      const auto line_end = raw_.find("\r\n");
      if (line_end == std::string::npos) return;
      const std::size_t size = std::stoul(raw_.substr(0, line_end), nullptr, 16);
      if (raw_.size() < line_end + 2 + size + 2) return;
      if (size == 0) {
        last_chunk_ = true;
        raw_.erase(0, line_end + 4);
        return;
      }
      buffer_.append(raw_, line_end + 2, size);
      raw_.erase(0, line_end + 2 + size + 2);
    }
  }
  void fill_head() {
    if (status_ != 0) return;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!read_some(deadline)) {
        status_ = -1;
        return;
      }
    }
    status_ = std::stoi(buffer_.substr(9, 3));
    std::string content_type;
    const std::string head = buffer_.substr(0, end);
    std::string lowered = head;
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    if (auto at = lowered.find("\r\ncontent-type:"); at != std::string::npos) {
      const auto from = head.find_first_not_of(' ', at + 15);
      content_type = head.substr(from, head.find("\r\n", from) - from);
    }
    chunked_ = lowered.find("\r\ntransfer-encoding: chunked") != std::string::npos;
    buffer_.erase(0, end + 4);
    if (chunked_) {
      raw_ = std::exchange(buffer_, {});
      dechunk();
    }
    // A stream's body is not recorded: only its status and type are checked.
    record_exchange(request_, status_, content_type, status_ == 200 ? std::string() : buffer_);
  }

  int fd_ = -1;
  int status_ = 0;
  bool eof_ = false;
  bool chunked_ = false;
  bool last_chunk_ = false;
  std::string request_;
  std::string raw_;  // chunked: as received, before dechunk()
  std::string buffer_;
};

// How fast the server answers /healthz whatever it is doing: 100 ms. Held
// to in the release build only: under the sanitizers every step of the
// server costs several times more (and the suite runs beside it on the same
// cores), so there each probe must be answered, not timed.
inline std::optional<std::chrono::milliseconds> health_bound() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return std::nullopt;
#else
  return std::chrono::milliseconds(100);
#endif
}

// How soon a client with a token is answered while a flood of connections
// comes in: a second in the release build; under the sanitizers, where
// accepting and dropping each connection of the flood costs several times
// more, as much more as the suite's scale allows the other long tests.
inline std::chrono::milliseconds flood_answer_bound() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return std::chrono::milliseconds(static_cast<std::int64_t>(1000 / std::min(1.0, testing::test_scale())));
#else
  return std::chrono::milliseconds(1000);
#endif
}

using testing::HealthProbe;

// ---- the server process ------------------------------------------------------------

inline std::string serve_slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ServeTest : public ::testing::Test {
 protected:
  ServeTest() {
    for (const char* sub : {"home", "config", "data", "cache", "work"}) std::filesystem::create_directories(path(sub));
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::lock_guard lock(api_recording().mu);
    api_recording().test = info ? fmt::format("{}.{}", info->test_suite_name(), info->name()) : std::string();
  }
  // The responses of the suite's tests go to one file, checked against the
  // API's OpenAPI document once they have all run (one validator process
  // for the suite, not one for each test).
  static std::filesystem::path api_responses() {
    return std::filesystem::temp_directory_path() / fmt::format("cairn-api-responses-{}.jsonl", ::getpid());
  }
  static void SetUpTestSuite() {
    std::lock_guard lock(api_recording().mu);
    api_recording().file = api_responses();
    api_recording().count = 0;
    std::filesystem::remove(api_recording().file);
  }
  static void TearDownTestSuite() {
    std::size_t recorded = 0;
    {
      std::lock_guard lock(api_recording().mu);
      api_recording().file.clear();
      recorded = api_recording().count;
    }
    if (recorded == 0) return;
    const auto responses = api_responses();
    const auto out = std::filesystem::path(responses.string() + ".check");
    if (!std::filesystem::exists(std::filesystem::path(CAIRN_OPENAPI_DIR) / "node_modules" / "ajv")) {
      ADD_FAILURE() << "the OpenAPI validator is not installed: run scripts/install-deps (npm ci in tests/openapi)";
      return;
    }
    const std::string command = fmt::format("node '{}/validate.mjs' '{}' '{}' > '{}' 2>&1", CAIRN_OPENAPI_DIR,
                                            CAIRN_OPENAPI_DOC, responses.string(), out.string());
    EXPECT_EQ(std::system(command.c_str()), 0) << "responses that do not fit docs/openapi.json:\n" << serve_slurp(out);
    std::error_code ec;
    std::filesystem::remove(responses, ec);
    std::filesystem::remove(out, ec);
  }
  ~ServeTest() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    // A sanitizer's report in a server's output fails the test that ran it.
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      if (entry.path().extension() != ".err") continue;
      const std::string err = serve_slurp(entry.path());
      for (const char* report : {"ThreadSanitizer", "AddressSanitizer", "LeakSanitizer", "runtime error:"}) {
        EXPECT_EQ(err.find(report), std::string::npos) << entry.path().filename() << ":\n" << err;
      }
    }
  }

  std::filesystem::path path(const std::string& sub) const { return dir_.path() / sub; }
  std::string store() const { return store_uri_.empty() ? "sqlite:" + (dir_.path() / "store.db").string() : store_uri_; }
  std::filesystem::path token_file() const { return path("tokens"); }

  pid_t spawn(const std::vector<std::string>& args, const std::filesystem::path& err) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, (err.string() + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addchdir_np(&actions, path("work").c_str());
    std::vector<std::string> argv_strings = launcher_;
    argv_strings.push_back(CAIRN_CLI_PATH);
    std::string program = argv_strings.front();
    if (descriptor_limit_) {
      // ulimit -n: the soft and the hard limit, which the server cannot raise.
      program = "/bin/sh";
      argv_strings = {"/bin/sh", "-c", fmt::format("ulimit -n {} && exec \"$0\" \"$@\"", *descriptor_limit_), CAIRN_CLI_PATH};
    }
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> env = {"HOME=" + path("home").string(), "XDG_CONFIG_HOME=" + path("config").string(),
                                    "XDG_DATA_HOME=" + path("data").string(), "XDG_CACHE_HOME=" + path("cache").string(),
                                    "LANG=C.UTF-8", "USER=tester"};
    if (const char* system_path = std::getenv("PATH")) env.push_back(std::string("PATH=") + system_path);
    env.insert(env.end(), extra_env_.begin(), extra_env_.end());
    // Under the sanitizers the server runs with the suite's options (halt on error).
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
      if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
    }
    std::vector<char*> envp;
    for (auto& variable : env) envp.push_back(variable.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  }

  // Starts `cairn serve` and waits until it listens.
  void start_server(std::vector<std::string> extra = {}) {
    ++starts_;
    err_ = path(fmt::format("serve-{}.err", starts_));
    std::vector<std::string> args = {"serve", "--listen", "127.0.0.1:0", "--store", store(), "--token-file",
                                     token_file().string(), "--api", "openai-completions", "--base-url",
                                     model_.url("/v1"), "--model", "test"};
    if (std::find(extra.begin(), extra.end(), "--approval") == extra.end()) {
      args.insert(args.end(), {"--approval", "never-ask"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = spawn(args, err_);
    const std::string marker = "listening on http://127.0.0.1:";
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      const std::string err = serve_slurp(err_);
      if (auto at = err.find(marker); at != std::string::npos && err.find('\n', at) != std::string::npos) {
        port_ = std::stoi(err.substr(at + marker.size()));
        break;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "cairn serve did not start: " << err;
      int status = 0;
      ASSERT_EQ(::waitpid(pid_, &status, WNOHANG), 0) << "cairn serve exited: " << err;
      std::this_thread::sleep_for(10ms);
    }
    token_ = testing::lines_of(serve_slurp(token_file())).at(0);
  }

  // SIGKILL: nothing of the server's own goes to the disk after this.
  void kill_server() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  ServeReply call(const std::string& method, const std::string& target, const std::string& body = "",
                 std::vector<std::string> headers = {}) {
    headers.push_back("Authorization: Bearer " + token_);
    if (!body.empty()) headers.push_back("Content-Type: application/json");
    return serve_raw(port_, serve_request_text(method, target, body, headers));
  }
  ServeReply call(const std::string& method, const std::string& target, const Json& body) {
    return call(method, target, body.dump());
  }

  void create_session(const std::string& id) {
    auto reply = call("POST", "/v1/sessions", Json{{"id", id}, {"cwd", path("work").string()}});
    ASSERT_EQ(reply.status, 201) << reply.body;
  }

  Json ref_status(const std::string& session, const std::string& ref) {
    return call("GET", fmt::format("/v1/sessions/{}/refs/{}", session, ref)).json();
  }

  // Waits until the ref has no operation, or its operation waits for an answer.
  std::string wait_settled(const std::string& session, const std::string& ref, std::chrono::seconds timeout = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const Json status = ref_status(session, ref);
      const std::string state = status.contains("ref") ? status["ref"].value("status", "") : "";
      if (state == "idle" || state == "awaiting_input") return state;
      if (std::chrono::steady_clock::now() > deadline) return "timeout: " + status.dump();
      std::this_thread::sleep_for(20ms);
    }
  }

  // A stream whose client has a receive buffer so small that it fills with
  // a frame or two: the server's writes then wait, and its queue for this
  // client grows. The socket, once the request is sent and the server has
  // had a moment to answer it; -1 when the connection failed.
  int open_slow_stream(const std::string& path, std::chrono::milliseconds settle = 200ms) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int small = 1024;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port_));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd);
      return -1;
    }
    send_all_bytes(fd, fmt::format("GET {} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\r\n", path, token_));
    std::this_thread::sleep_for(settle);
    return fd;
  }

  std::vector<Json> records(const std::string& session) {
    std::vector<Json> out;
    std::int64_t after = -1;
    for (;;) {
      const Json page = call("GET", fmt::format("/v1/sessions/{}/records?after={}&limit=500", session, after)).json();
      for (const auto& record : page["records"]) out.push_back(record);
      if (page["next"].is_null()) return out;
      after = page["next"].get<std::int64_t>();
    }
  }

  // The server's resident memory, in KiB (0 when it cannot be read).
  long server_rss_kb() const {
    std::ifstream status(fmt::format("/proc/{}/status", pid_));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return 0;
  }
  // The CPU time the server has used, in seconds.
  double server_cpu_seconds() const {
    std::ifstream stat(fmt::format("/proc/{}/stat", pid_));
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; fields >> field; ++i) {
      if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
      if (i == 15) break;
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }

  testing::TempDir dir_;
  std::optional<int> descriptor_limit_;  // set: the server runs under `ulimit -n` this
  std::string store_uri_;  // empty: a sqlite file in dir_
  std::vector<std::string> launcher_;   // a program (absolute path) and its arguments that run cairn
  std::vector<std::string> extra_env_;  // NAME=VALUE given to cairn besides spawn()'s
  HttpTestServer model_{HttpTestServer::Responder(serve_scripted_model)};
  pid_t pid_ = -1;
  int port_ = 0;
  int starts_ = 0;
  std::string token_;
  std::filesystem::path err_;
};

inline std::string serve_error_code(const ServeReply& reply) {
  const Json body = reply.json();
  if (!body.is_object() || !body.contains("error")) return "(no error: " + reply.body + ")";
  return body["error"].value("code", "");
}

}  // namespace cairn::serve_testing
