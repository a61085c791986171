// The OpenAPI 3.1 document of cairn serve's own API (docs/openapi.json in
// the source tree, built into the binary by cmake/embed_file.cmake), served
// at GET /openapi.json. The API tests check every response they get against
// it, so it says what the server does.
#pragma once

#include <string_view>

namespace cairn::serve {

std::string_view openapi_document();

}  // namespace cairn::serve
