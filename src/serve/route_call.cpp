#include "route_call.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "request_json.hpp"

namespace cairn::serve {

namespace {

Result<std::int64_t> parse_int(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return fail(Errc::invalid_argument, fmt::format("{} must be an integer", what));
  return value;
}

}  // namespace

Result<std::optional<std::string>> Body::string(const char* key) const {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return fail(Errc::invalid_argument, fmt::format("field '{}' must be a string", key));
  return std::optional<std::string>(it->get<std::string>());
}

Result<std::string> Body::required_string(const char* key) const {
  auto value = string(key);
  if (!value) return std::unexpected(value.error());
  if (!*value) return fail(Errc::invalid_argument, fmt::format("field '{}' is required", key));
  return **value;
}

Result<bool> Body::boolean(const char* key, bool fallback) const {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return fail(Errc::invalid_argument, fmt::format("field '{}' must be true or false", key));
  return it->get<bool>();
}

Result<Body> RouteCall::body(std::initializer_list<std::string_view> allowed) const {
  Body body;
  if (request.body.empty()) return body;
  if (auto type = request.header("content-type"); type && type->find("application/json") == std::string::npos) {
    return fail(http_error(HttpErrc::unsupported_media_type, "the body must be application/json"));
  }
  auto parsed = parse_request_json(request.body, api.limits.max_json_depth);
  if (!parsed) return std::unexpected(parsed.error());
  body.json = std::move(*parsed);
  if (!body.json.is_object()) return fail(Errc::invalid_argument, "the body must be a JSON object");
  for (const auto& [key, value] : body.json.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string known;
      for (auto name : allowed) known += (known.empty() ? "" : ", ") + std::string(name);
      return fail(Errc::invalid_argument, fmt::format("unknown field '{}' (this route takes: {})", key,
                                                      known.empty() ? "nothing" : known));
    }
  }
  return body;
}

Result<std::optional<std::int64_t>> RouteCall::query_int(const std::string& key) const {
  auto it = request.query.find(key);
  if (it == request.query.end()) return std::optional<std::int64_t>();
  auto value = parse_int(it->second, fmt::format("query parameter '{}'", key));
  if (!value) return std::unexpected(value.error());
  return std::optional<std::int64_t>(*value);
}

Result<std::optional<std::size_t>> RouteCall::query_count(const std::string& key, std::size_t max,
                                                          std::optional<std::size_t> fallback) const {
  auto value = query_int(key);
  if (!value) return std::unexpected(value.error());
  if (!*value) return fallback;
  if (**value < 1 || static_cast<std::uint64_t>(**value) > max) {
    return fail(Errc::invalid_argument, fmt::format("{} must be 1 to {}", key, max));
  }
  return std::optional<std::size_t>(static_cast<std::size_t>(**value));
}

Result<std::optional<std::int64_t>> RouteCall::stream_cursor() const {
  if (auto last = request.header("last-event-id"); last && !last->empty()) {
    auto value = parse_int(*last, "Last-Event-ID");
    if (!value) return fail(Errc::invalid_argument, "Last-Event-ID must be a seq");
    return std::optional<std::int64_t>(*value);
  }
  return query_int("after");
}

}  // namespace cairn::serve
