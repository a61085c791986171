// The server's routes as one table: each route a row (its method, its path
// pattern, the name its requests are counted under, who may call it, what
// it needs of the session its path names) and the one function that
// answers it. A path no row's pattern matches is 404; a path whose pattern
// has no row for the method is 405 with the methods it has in Allow. No
// route decides either by hand.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http_types.hpp"

namespace cairn::serve {

struct RouteCall;
struct PathParams;
using RouteHandler = Reply (*)(RouteCall&);
// The session a request names elsewhere than in its path's {id} (an A2A
// task id, a body's contextId), so that it is opened before the request
// is routed; none when it names none.
using SessionLocator = std::optional<std::string> (*)(const HttpRequest&, const PathParams&);

// What a route needs of the session its path's {id} names.
enum class SessionUse {
  none,              // nothing; the route does what it needs with the id itself
  open,              // open here (the pool opens it first if it is not)
  open_or_followed,  // open here, or, when another process writes it, followed from the store
};

enum class Access {
  token,   // a bearer token of the server's token file
  anyone,  // no token (holds no data: /healthz)
};

struct Route {
  std::string_view method;
  // Segments split on '/', each a literal or a parameter: {id}, {ref} and
  // {input} take one segment (decoded and checked as a name by the API);
  // a last {rest...} takes the rest of the path, slashes and all, up to a
  // literal suffix written after it ("{rest...}:cancel").
  std::string_view pattern;
  RouteHandler handler = nullptr;
  SessionUse session = SessionUse::none;
  Access access = Access::token;
  std::string_view metric = {};  // its name in cairn_http_requests_total; the pattern when empty
  SessionLocator locate = nullptr;  // SessionUse::none: the session it will ask the pool for

  std::string_view name() const { return metric.empty() ? pattern : metric; }
};

// The parameters a path gave its pattern, as the path spells them (still
// percent-encoded); none where the pattern has no such parameter.
struct PathParams {
  std::optional<std::string> id, ref, input, rest;
};

struct RouteMatch {
  const Route* route = nullptr;  // the row of the request's method
  PathParams params;
  // The first pattern the path matched, its name for metrics, and its
  // rows' methods (for Allow) and access: set also when `route` is not (405).
  std::string_view pattern;
  std::string_view name = "unmatched";
  std::vector<std::string_view> allowed;
  Access access = Access::token;

  bool path_known() const { return !pattern.empty(); }
};

class Router {
 public:
  // Rows of one pattern are next to each other and share its access and
  // metric name; each pattern names only the parameters above (asserted).
  explicit Router(std::vector<Route> routes);

  // The row for `method` on `path` (a path without its query): the first
  // pattern that matches the path decides.
  RouteMatch match(std::string_view method, std::string_view path) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// The Allow header's value: "GET, POST".
std::string allow_header(const std::vector<std::string_view>& methods);

}  // namespace cairn::serve
