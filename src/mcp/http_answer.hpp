// One HTTP answer of an MCP server, read into JSON-RPC messages as its body
// arrives: a JSON body (one message, or a batch of them) or an event stream
// whose events are messages. Any other body (an error page) is kept only in
// part, to be quoted in an error.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cairn/json.hpp"
#include "cairn/llm/http.hpp"
#include "cairn/secrets.hpp"
#include "llm/sse.hpp"

namespace cairn::mcp {

// No message larger than this is buffered: a server sending more is broken
// or hostile, and holding it would only grow the process.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{32} << 20;

// The headers the protocol sets; a configured header of the same name is
// not sent (a second Accept would break the exchange).
bool is_mcp_protocol_header(std::string_view name);

class HttpAnswer {
 public:
  enum class Body {
    none,    // no headers yet, or no Content-Type (a 202 Accepted)
    json,    // application/json
    events,  // text/event-stream
    other,   // anything else, and every body of an error status
  };
  using OnMessage = std::function<void(Json message)>;

  // `secrets` (the configured header values) are taken out of every quote;
  // both must outlive the answer.
  HttpAnswer(OnMessage on_message, const Secrets& secrets);

  // HttpClient's two callbacks. on_body returns false once reading should
  // stop: the body is malformed or past the limit, or it is an error page
  // of which enough was kept.
  void on_headers(int status, const HttpHeaders& headers);
  bool on_body(std::string_view chunk);
  // Parses and delivers a JSON body, once the transfer has ended whole.
  void finish();

  int status() const { return status_; }
  bool success() const { return status_ >= 200 && status_ < 300; }
  Body body() const { return body_; }
  const std::string& content_type() const { return content_type_; }
  std::size_t delivered() const { return delivered_; }
  // The event stream's last event ID and the reconnection time it asked for.
  const std::optional<std::string>& last_event_id() const { return events_.last_event_id(); }
  std::optional<int> retry_ms() const { return events_.reconnection_time_ms(); }
  // Why the body could not be read as messages (malformed, too large);
  // empty when nothing went wrong.
  const std::string& malformed() const { return malformed_; }
  // The start of an error page, fit to quote: about 200 bytes, valid UTF-8,
  // on one line, without any secret. Empty for an empty body.
  std::string excerpt() const;

 private:
  void deliver(Json message);
  void on_event(const SseEvent& event);
  std::string quote(std::string_view bytes) const;

  OnMessage on_message_;
  const Secrets& secrets_;
  int status_ = 0;
  Body body_ = Body::none;
  std::string content_type_;  // the media type alone, lower-cased
  SseParser events_{SseParserOptions{kMaxMessageBytes}};
  std::string buffer_;  // a JSON body so far, or the start of an error page
  std::size_t delivered_ = 0;
  std::string malformed_;
};

}  // namespace cairn::mcp
