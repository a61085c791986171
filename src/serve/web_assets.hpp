// The web viewer's files (web/ in the source tree), built into the binary
// by cmake/embed_web.cmake so that the page works offline and always
// matches the server that serves it.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "http_types.hpp"

namespace cairn::serve {

struct WebAsset {
  std::string_view path;   // "/index.html", "/app.js", …
  std::string_view bytes;
};

std::span<const WebAsset> web_assets();

// GET / and GET /ui/{file}: the page and its files, with headers that keep
// them from being framed, sniffed or cached past a server upgrade. nullopt
// for a path that is not the viewer's.
std::optional<HttpResponse> web_response(const std::string& method, std::string_view path);

}  // namespace cairn::serve
