// JSON-RPC messages as MCP's transports and connection tell them apart, and
// the error a transport makes up for an answer it lost (transport.hpp).
#pragma once

#include <string>

#include "cairn/json.hpp"

namespace cairn::mcp {

// A request: a method and an id that is not null.
bool is_request(const Json& message);
// A response: an id and a result or an error, no method.
bool is_response(const Json& message);
// A message's method, or "" (a response, or a method that is not a string).
std::string method_of(const Json& message);

// The error response a transport delivers for request `id` whose answer it
// lost; `data` is {"cairn": kLostAnswerMark}.
Json lost_answer_response(const Json& id, const std::string& message);
// Whether a response's `error` is one of those.
bool is_lost_answer(const Json& error);

}  // namespace cairn::mcp
