// One live session with an MCP server over a transport: JSON-RPC requests
// matched with their responses, progress routed to the call that asked for
// it, the server's own requests answered (ping; anything else refused, as
// this client offers no capabilities), cancellation and timeouts. When the
// transport ends, every waiting request fails at once, naming why.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "transport.hpp"

namespace cairn::mcp {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Callbacks {
    std::function<void()> on_tools_changed;     // notifications/tools/list_changed
    std::function<void(std::string why)> on_closed;  // the transport ended (not after close())
  };

  // Opens the transport; messages flow from then on.
  static Result<std::shared_ptr<Connection>> open(std::unique_ptr<Transport> transport, std::string server,
                                                  Callbacks callbacks);
  ~Connection();

  // Sends a request and waits for its answer: its `result`, or an error
  // (server_error for a JSON-RPC error, server_unavailable when the
  // connection ended, timed_out, cancelled). A timeout or a stop request
  // tells the server with notifications/cancelled.
  Result<Json> request(const std::string& method, Json params, std::chrono::milliseconds timeout,
                       std::stop_token cancel = {}, std::function<void(const CallProgress&)> progress = {});
  Status notify(const std::string& method, Json params);
  void set_protocol_version(const std::string& version);

  bool closed() const;
  std::string closed_reason() const;
  // Ends the transport; waiting requests fail with server_unavailable.
  void close();

 private:
  struct Pending {
    // Not an optional<Json>: g++ 12 warns of it as maybe uninitialized.
    bool answered = false;
    Json response;
    std::function<void(const CallProgress&)> progress;
    // Progress callbacks of this request running now, outside the lock: the
    // request does not return while one runs, as the callback may use what
    // its caller holds on the stack.
    int progress_running = 0;
  };
  Connection(std::unique_ptr<Transport> transport, std::string server, Callbacks callbacks)
      : transport_(std::move(transport)), server_(std::move(server)), callbacks_(std::move(callbacks)) {}
  void on_message(Json message);
  void on_transport_closed(std::string why);
  void answer_server_request(const Json& message);
  Error unavailable() const;

  std::unique_ptr<Transport> transport_;
  std::string server_;
  Callbacks callbacks_;
  mutable std::mutex mu_;
  std::condition_variable answered_;
  std::map<std::int64_t, Pending> pending_;
  std::int64_t next_id_ = 1;
  bool closed_ = false;
  std::string closed_reason_;
  std::atomic<bool> closing_{false};
};

}  // namespace cairn::mcp
