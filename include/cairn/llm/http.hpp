// The HTTP transport under the LLM providers: one request, its response body
// streamed to a callback as it arrives, over libcurl. Failures are values
// classified for the retry decision (DESIGN.md, Providers); an HTTP error
// status is not a transport failure and arrives as the status.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cairn {

// Header fields in the order they were sent. Response header names are
// lower-cased; values have surrounding whitespace removed.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// The first value of header `name` (lower-case), if present.
std::optional<std::string_view> find_header(const HttpHeaders& headers, std::string_view name);

struct HttpRequest {
  std::string method = "POST";
  std::string url;
  HttpHeaders headers;  // often hold credentials: never logged, never in an error message
  std::string body;
  // Name resolution, connect and TLS handshake together.
  std::chrono::milliseconds connect_timeout{10000};
  // The longest silence, in either direction, on an established connection.
  std::chrono::milliseconds idle_timeout{60000};
};

enum class HttpFailure {
  none,
  connect_failed,    // DNS, connect, proxy or TLS: no request reached the server
  connection_reset,  // the connection broke or closed before the response ended
  idle_timeout,      // no byte for idle_timeout
  cancelled,         // the stop token was triggered
  other,             // anything else (a malformed response, a bad URL, …)
};

std::string_view to_string(HttpFailure failure);

struct [[nodiscard]] HttpResult {
  int status = 0;        // the final response's status; 0 if none arrived
  HttpHeaders headers;   // the final response's headers
  HttpFailure failure = HttpFailure::none;
  std::string message;   // why, when failure is not none

  bool ok() const { return failure == HttpFailure::none; }
};

// Each call is one transfer on its own connection, so a client may be used
// from many threads at once. Proxies come from the environment (http_proxy,
// https_proxy, no_proxy, …), TLS peers are verified, compressed responses are
// decoded before on_body sees them.
class HttpClient {
 public:
  using OnHeaders = std::function<void(int status, const HttpHeaders& headers)>;
  using OnBody = std::function<void(std::string_view chunk)>;

  // Sends `request` and streams the response: on_headers once when the final
  // response's headers are complete, then on_body for every piece of the
  // decoded body. Both run on the calling thread. A stop request on `cancel`
  // ends the transfer within milliseconds, wherever it is blocked, and
  // closes the connection. To abort from inside on_body (a malformed stream),
  // pass a token of one's own that on_body can trigger.
  HttpResult stream(const HttpRequest& request, const OnHeaders& on_headers, const OnBody& on_body,
                    std::stop_token cancel = {}) const;
};

}  // namespace cairn
