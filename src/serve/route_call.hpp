// What a route's function is handed: the request, the server's state, and
// the path's parameters already decoded, checked and resolved (the session
// open or followed, the ref found) as its row asked. Also how every route
// reads its body and its query, so that each says what is wrong the same way.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api.hpp"
#include "session_view.hpp"

namespace cairn::serve {

// What the routes share; lives as long as the Api.
struct ApiState {
  SessionPool& pool;
  Metrics& metrics;
  ApiLimits limits;
  SessionActivity& activity;
  std::shared_ptr<WorkQueue> work;
};

// A request body: a JSON object of the fields its route takes.
struct Body {
  Json json = Json::object();

  Result<std::optional<std::string>> string(const char* key) const;
  Result<std::string> required_string(const char* key) const;
  Result<bool> boolean(const char* key, bool fallback = false) const;
};

struct RouteCall {
  const HttpRequest& request;
  ApiState& api;
  // The path's {id}, {ref}, {input}: decoded and checked names (empty when
  // the pattern has none); {rest...} as the path spells it (its route
  // decodes it and says what is wrong in its own protocol's words).
  std::string session_id, ref_name, input_id, rest;
  // SessionUse::open, or open_or_followed and open here: the session, and
  // the ref its path names (found, or the route was refused unknown_ref).
  std::shared_ptr<SessionHost> host;
  std::optional<AgentRef> ref;
  // SessionUse::open_or_followed: the session, open here or followed.
  std::optional<SessionView> view;

  // The body, refused when it is not a JSON object of `allowed` fields.
  Result<Body> body(std::initializer_list<std::string_view> allowed) const;
  Result<std::optional<std::int64_t>> query_int(const std::string& key) const;
  // A count in the query (a page's limit, a snapshot's transcript), 1 to
  // `max`: absent, it is `fallback`.
  Result<std::optional<std::size_t>> query_count(const std::string& key, std::size_t max,
                                                 std::optional<std::size_t> fallback) const;
  // Where a stream starts: Last-Event-ID, else ?after=, else none (a snapshot).
  Result<std::optional<std::int64_t>> stream_cursor() const;
  EventStream::Limits stream_limits() const { return {api.limits.max_stream_queue, api.limits.max_stream_bytes}; }
};

inline Reply error_reply(const Error& error) { return Reply{error_response(error)}; }
inline Reply json_reply(const Json& body, int status = 200) { return Reply{json_response(status, body)}; }

}  // namespace cairn::serve
