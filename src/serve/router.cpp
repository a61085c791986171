#include "router.hpp"

#include <algorithm>
#include <cassert>

namespace cairn::serve {

namespace {

constexpr std::string_view kRest = "{rest...}";

// PathParams as views into the path, while patterns are tried.
struct Views {
  std::optional<std::string_view> id, ref, input, rest;
};

std::optional<std::string> owned(std::optional<std::string_view> view) {
  return view ? std::optional<std::string>(*view) : std::nullopt;
}

// Whether `path` has `pattern`'s shape; fills `params` as it goes.
bool matches(std::string_view pattern, std::string_view path, Views& params) {
  if (path.empty() || path.front() != '/') return false;
  pattern.remove_prefix(1);
  path.remove_prefix(1);
  for (;;) {
    const auto pattern_slash = pattern.find('/');
    const std::string_view want = pattern.substr(0, pattern_slash);
    if (want.starts_with(kRest)) {
      const std::string_view suffix = want.substr(kRest.size());
      if (path.size() <= suffix.size() || !path.ends_with(suffix)) return false;
      params.rest = path.substr(0, path.size() - suffix.size());
      return true;
    }
    const auto slash = path.find('/');
    const std::string_view got = path.substr(0, slash);
    if (want == "{id}") {
      params.id = got;
    } else if (want == "{ref}") {
      params.ref = got;
    } else if (want == "{input}") {
      params.input = got;
    } else if (want != got) {
      return false;
    }
    if (pattern_slash == std::string_view::npos || slash == std::string_view::npos) {
      return pattern_slash == std::string_view::npos && slash == std::string_view::npos;
    }
    pattern.remove_prefix(pattern_slash + 1);
    path.remove_prefix(slash + 1);
  }
}

[[maybe_unused]] bool well_formed(std::string_view pattern) {
  if (!pattern.starts_with('/')) return false;
  for (std::size_t at = pattern.find('{'); at != std::string_view::npos; at = pattern.find('{', at + 1)) {
    const std::string_view from = pattern.substr(at);
    const bool last = pattern.find('/', at) == std::string_view::npos;
    if (!(from.starts_with("{id}") || from.starts_with("{ref}") || from.starts_with("{input}") ||
          (from.starts_with(kRest) && last))) {
      return false;
    }
  }
  return true;
}

}  // namespace

Router::Router(std::vector<Route> routes) : routes_(std::move(routes)) {
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    [[maybe_unused]] const Route& row = routes_[i];
    assert(row.handler && well_formed(row.pattern));
    // A pattern's rows together: match() reads them as one group.
    assert(i == 0 || routes_[i - 1].pattern == row.pattern ||
           std::none_of(routes_.begin(), routes_.begin() + static_cast<std::ptrdiff_t>(i),
                        [&](const Route& earlier) { return earlier.pattern == row.pattern; }));
    assert(i == 0 || routes_[i - 1].pattern != row.pattern ||
           (routes_[i - 1].access == row.access && routes_[i - 1].metric == row.metric));
  }
}

RouteMatch Router::match(std::string_view method, std::string_view path) const {
  RouteMatch found;
  for (auto row = routes_.begin(); row != routes_.end(); ++row) {
    Views params;
    if (!matches(row->pattern, path, params)) continue;
    found.pattern = row->pattern;
    found.name = row->name();
    found.params = PathParams{owned(params.id), owned(params.ref), owned(params.input), owned(params.rest)};
    found.access = row->access;
    for (; row != routes_.end() && row->pattern == found.pattern; ++row) {
      if (row->method == method) found.route = &*row;
      found.allowed.push_back(row->method);
    }
    return found;
  }
  return found;
}

std::string allow_header(const std::vector<std::string_view>& methods) {
  std::string allow;
  for (const auto method : methods) {
    if (!allow.empty()) allow += ", ";
    allow += method;
  }
  return allow;
}

}  // namespace cairn::serve
