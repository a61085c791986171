// A small HTTP/1.1 server on 127.0.0.1 for the transport's tests: it replays
// a scripted response (or a sequence of them, one per request) to every connection (status, headers, body pieces
// with delays, then an end: finish, stall, close or reset) and records what
// it received and when each client hung up.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cairn::testing {

struct ScriptedResponse {
  struct Piece {
    std::chrono::milliseconds delay{0};  // before it is sent
    std::string bytes;
    bool gated = false;                  // also wait for HttpTestServer::open_gate()
  };
  enum class Framing { chunked, content_length };
  enum class End {
    finish,  // the body ends properly, then the server waits for the client to close
    stall,   // nothing more is sent, ever; the server waits for the client to close
    close,   // the connection is closed before the body is complete
    reset,   // as close, with a TCP RST
  };

  int status = 200;
  std::string reason = "OK";
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<Piece> body;  // each piece is one chunk when chunked
  Framing framing = Framing::chunked;
  End end = End::finish;
  bool stall_before_response = false;  // read the request, then send nothing at all
  bool close_before_response = false;  // read the request, then close the connection
};

struct ReceivedRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  std::optional<std::string> header(const std::string& name) const;
};

class HttpTestServer {
 public:
  explicit HttpTestServer(ScriptedResponse response);
  // The n-th request gets responses[n]; requests past the end get the last.
  explicit HttpTestServer(std::vector<ScriptedResponse> responses);
  // Each request gets what `responder` makes of it (called on the
  // connection's thread, concurrently for concurrent requests).
  using Responder = std::function<ScriptedResponse(const ReceivedRequest& request)>;
  explicit HttpTestServer(Responder responder);
  ~HttpTestServer();  // closes every connection and joins every thread
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const;

  // Lets gated pieces go.
  void open_gate();

  std::vector<ReceivedRequest> requests() const;
  // Waits until `count` connections were closed by their clients; false on timeout.
  bool wait_for_client_close(std::chrono::milliseconds timeout, std::size_t count = 1) const;
  // When the first connection's client was seen to close it.
  std::optional<std::chrono::steady_clock::time_point> first_client_close() const;

  // A port on 127.0.0.1 that nothing listens on (bound, then released).
  static int closed_port();

 private:
  void start();  // listens and starts accepting
  void accept_loop();
  void serve(int fd);
  bool wait_readable(int fd, std::chrono::milliseconds timeout) const;  // false when stopping
  bool pause(std::chrono::milliseconds delay) const;                    // false when stopping
  void wait_for_close(int fd);

  std::vector<ScriptedResponse> responses_;  // never empty
  Responder responder_;
  int listen_fd_ = -1;
  int wake_read_ = -1, wake_write_ = -1;  // a pipe written once, on shutdown
  int port_ = 0;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  bool gate_open_ = false;
  bool stopping_ = false;
  std::vector<ReceivedRequest> requests_;
  std::vector<std::chrono::steady_clock::time_point> client_closes_;
  // A connection's thread, joined once it is done: a test that makes tens of
  // thousands of requests (the fleet's soak) would otherwise keep every
  // ended thread's stack mapped until the kernel refuses another.
  struct Connection {
    std::thread thread;
    bool done = false;  // under mu_
  };
  std::list<Connection> connections_;
  std::thread acceptor_;
};

}  // namespace cairn::testing
