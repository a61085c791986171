// The HTTP/1.1 listener of `cairn serve` (Boost.Beast over Asio, C++20
// coroutines). A request's head is read first, with limits on its size and
// time: /healthz, the viewer's files and the refusal of a request without a
// valid token are answered from it, before a byte of the body is read. The
// rest is read with a limit, handed to the Api on a pool of worker threads
// (a handler may wait for an fsync or a store open, never for a run: a reply
// that waits for one is deferred and holds no thread), and answered. A
// stream's frames go out in chunks as they come, with a comment every
// heartbeat so that idle proxies keep it, and a last chunk that tells the
// client the stream ended rather than broke.
//
// No client can take it down: a connection is not taken until it sends
// something; connections are capped (all of them, and those without a
// valid request yet), the one idle the longest dropped first; the accept loop backs off when descriptors run out instead of
// spinning, and asks the sessions to give some back.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "api.hpp"
#include "cairn/serve/server.hpp"
#include "descriptors.hpp"

namespace cairn::serve {

// Where to listen, the threads and the limits are the server's options
// (ServerOptions, which document them); the rest is the HTTP layer's own.
struct HttpOptions : ServerOptions {
  std::size_t max_header = 16u << 10;
  std::chrono::milliseconds write_timeout{30000};  // a client that takes longer to take a write is dropped
  std::chrono::milliseconds heartbeat{15000};
  // Descriptors ran out (an accept failed with EMFILE or ENFILE): give some
  // back (close idle sessions). Called on a worker thread.
  std::function<void()> on_descriptors_short;
};

class HttpServer : public Scheduler {
 public:
  HttpServer(Api& api, HttpOptions options);
  ~HttpServer() override;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the port (the one chosen when 0 was asked).
  Result<std::uint16_t> listen();
  // Serves until stop(): then stops accepting, ends every stream with its
  // final frame, answers the replies still deferred with 503, and returns
  // within a few seconds. Installs no signal handler.
  void run();
  // Any thread, a signal handler's thread included (it only posts).
  void stop();

  // What the descriptor budget holds back for connections, and how many are
  // open: for the session pool's share.
  DescriptorBudget descriptor_budget() const;

  // Scheduler: work on the worker pool, now or later.
  void post(std::function<void()> work) override;
  void post_after(std::chrono::milliseconds delay, std::function<void()> work) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::serve
