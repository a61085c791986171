// A request to cairn's HTTP server and its response, as plain values: what
// Server::handle takes and gives in process, and what the server's routes
// see of a request that came over a socket.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cairn::serve {

struct HttpRequest {
  std::string method;
  std::string path;  // as sent: each segment is percent-decoded by the routes
  std::map<std::string, std::string> query;    // decoded
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  std::optional<std::string> header(const std::string& name) const {
    auto it = headers.find(name);
    if (it == headers.end()) return std::nullopt;
    return it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

}  // namespace cairn::serve
