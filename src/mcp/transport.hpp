// A channel of JSON-RPC messages to one MCP server. The connection above it
// (connection.hpp) matches requests with responses; a transport only moves
// messages and says when the channel is gone.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/tools/mcp.hpp"

namespace cairn::mcp {

class Transport {
 public:
  // What arrives from the server: each message once, in order per stream,
  // from the transport's own threads (never from inside send()).
  using OnMessage = std::function<void(Json message)>;
  // Once, when the channel has ended for good (the process exited, the
  // HTTP session was lost), with why; never after close().
  using OnClosed = std::function<void(std::string why)>;

  virtual ~Transport() = default;

  // Begins reading. Fails when the server cannot be reached at all
  // (the program cannot be run, the URL is malformed).
  virtual Status open(OnMessage on_message, OnClosed on_closed) = 0;
  // Sends a request, notification or response. A request's answer (and
  // the notifications about it) come through on_message. Fails when the
  // message could not be delivered.
  virtual Status send(const Json& message) = 0;
  // Tells the transport what initialize negotiated (the HTTP transport
  // sends it as MCP-Protocol-Version on every later request).
  virtual void set_protocol_version(const std::string& version) = 0;
  // Ends the channel and everything of it (the process group, the HTTP
  // session); returns once nothing of it runs. No callback after it.
  virtual void close() = 0;
};

// The error a transport delivers for a request whose answer it lost (the
// server could not be reached, the stream ended first): a JSON-RPC error
// whose `data` is {"cairn": "lost_answer"}, never sent by a server to us.
inline constexpr const char* kLostAnswerMark = "lost_answer";

// Spawns `config`'s program in its own process group, tied to this process
// (it dies with us, however we die); its stderr appended to `stderr_log`
// (or /dev/null). It gets this process's environment but the variables
// `withhold` names, and the config's `env` on top.
std::unique_ptr<Transport> make_stdio_transport(const StdioTransport& config, std::filesystem::path stderr_log,
                                                std::function<bool(std::string_view name)> withhold = {});

// Streamable HTTP: every message a POST (Accept: application/json,
// text/event-stream); a response that is an SSE stream cut before its
// answer is resumed with GET and Last-Event-ID; Mcp-Session-Id kept from
// initialize's answer and sent on every later request; DELETE at close.
std::unique_ptr<Transport> make_http_transport(const HttpTransport& config);

}  // namespace cairn::mcp
