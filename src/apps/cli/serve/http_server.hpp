// The HTTP/1.1 listener of `cairn serve` (Boost.Beast over Asio, C++20
// coroutines): requests are read with limits on header size, body size and
// time, handed to the Api on a pool of worker threads (a handler may wait
// for an fsync or a store open), and answered; a stream's frames are written
// as they come, with a comment every heartbeat so that idle proxies keep it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "api.hpp"

namespace cairn::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8420;
  std::size_t max_body = 16u << 20;
  std::size_t max_header = 16u << 10;
  std::chrono::milliseconds request_timeout{30000};  // to read a whole request, and to idle between two
  std::chrono::milliseconds write_timeout{30000};    // a client that takes longer to take a write is dropped
  std::chrono::milliseconds heartbeat{15000};
  int io_threads = 2;
  int worker_threads = 16;
};

class HttpServer {
 public:
  HttpServer(Api& api, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the port (the one chosen when 0 was asked).
  Result<std::uint16_t> listen();
  // Serves until SIGTERM or SIGINT (or stop()): then stops accepting, ends
  // every stream with its final frame, and returns within a few seconds.
  void run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::serve
