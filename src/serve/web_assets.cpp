#include "serve/web_assets.hpp"

#include <string>

namespace cairn::serve {

namespace {

std::string_view type_of(std::string_view path) {
  auto ends = [&](std::string_view suffix) { return path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix; };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".txt")) return "text/plain; charset=utf-8";  // the libraries' licences
  return "application/octet-stream";
}

}  // namespace

std::optional<HttpResponse> web_response(const std::string& method, std::string_view path) {
  std::string_view file;
  if (path == "/") {
    file = "/index.html";
  } else if (path.starts_with("/ui/")) {
    file = path.substr(3);
  } else {
    return std::nullopt;
  }
  if (method != "GET") {
    HttpResponse refused = error_response(405, "method_not_allowed", "the viewer's files are only read");
    refused.headers.emplace_back("Allow", "GET");
    return refused;
  }
  for (const WebAsset& asset : web_assets()) {
    if (asset.path != file) continue;
    HttpResponse response;
    response.content_type = std::string(type_of(file));
    response.body = std::string(asset.bytes);
    // The page talks only to this server, runs only its own scripts, and
    // is never framed (a frame could trick a person into clicking Allow).
    response.headers.emplace_back("Content-Security-Policy",
                                  "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                                  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    response.headers.emplace_back("X-Content-Type-Options", "nosniff");
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    response.headers.emplace_back("Cache-Control", "no-cache");
    return response;
  }
  return error_response(404, "not_found", "the viewer has no such file");
}

}  // namespace cairn::serve
