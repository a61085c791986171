// The request side of the wire providers: one server-sent-events transfer,
// headers, timeouts, the payload's bytes, credentials kept out of messages,
// and the small JSON accessors the stream parsers share.

#include "wire_support.hpp"

#include "cairn/log/ids.hpp"
#include "curl_support.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace cairn::wire {
namespace {

// An error body worth reading is short; a longer one is not read further.
constexpr std::size_t kMaxErrorBody = std::size_t{64} << 10;

// Whether a 2xx body is server-sent events, from its first bytes: nullopt
// while they do not tell yet. A stream's first line is a field the SSE
// format knows or a comment; a page, a JSON answer or garbage is not.
std::optional<bool> starts_like_sse(std::string_view head, bool whole) {
  static constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (head.starts_with(kBom)) {
    head.remove_prefix(kBom.size());
  } else if (kBom.starts_with(head) && !head.empty()) {
    if (!whole) return std::nullopt;
  }
  std::size_t start = head.find_first_not_of("\r\n");
  if (start == std::string_view::npos) {
    // Blank lines are a stream's, but say nothing yet; a body of nothing
    // else is a stream that ended early.
    return whole || head.size() >= kMaxErrorBody ? std::optional(true) : std::nullopt;
  }
  head.remove_prefix(start);
  std::size_t end = head.find_first_of(":\r\n");
  if (end == std::string_view::npos) {
    constexpr std::size_t kLongestField = 5;  // "event", "retry"
    return whole || head.size() > kLongestField ? std::optional(false) : std::nullopt;
  }
  std::string_view name = head.substr(0, end);
  return name.empty() || name == "data" || name == "event" || name == "id" || name == "retry";
}

}  // namespace

ProviderResponse response_for(const Model& model) {
  ProviderResponse response;
  AssistantMessage& message = response.message;
  message.api = model.api;
  message.provider = model.provider;
  message.model = model.id;
  message.timestamp = now_unix_ms();
  return response;
}

std::vector<std::string> header_secrets(const std::map<std::string, std::string>& headers) {
  std::vector<std::string> secrets;
  for (const auto& [name, value] : headers) {
    std::string key = curl::ascii_lower(name);
    bool credential = key == "authorization" || key == "proxy-authorization" || key == "cookie" ||
                      key.find("key") != std::string::npos || key.find("token") != std::string::npos ||
                      key.find("secret") != std::string::npos;
    if (!credential || value.empty()) continue;
    secrets.push_back(value);
    // A server may quote the credential without its scheme.
    if (std::size_t space = value.find(' '); space != std::string::npos && space + 1 < value.size()) {
      secrets.push_back(value.substr(space + 1));
    }
  }
  return secrets;
}

bool same_model(const AssistantMessage& message, const Model& model) {
  return message.provider == model.provider && message.api == model.api && message.model == model.id;
}

bool takes_images(const Model& model) {
  return std::find(model.input.begin(), model.input.end(), "image") != model.input.end();
}

std::string join_url(std::string_view base, std::string_view path) {
  while (base.ends_with('/')) base.remove_suffix(1);
  std::string url(base);
  if (!path.starts_with('/')) url += '/';
  url += path;
  return url;
}

void set_header(HttpHeaders& headers, std::string_view name, std::string value) {
  std::string key = curl::ascii_lower(name);
  std::erase_if(headers, [&](const auto& header) { return curl::ascii_lower(header.first) == key; });
  headers.emplace_back(std::string(name), std::move(value));
}

void apply_transport_options(HttpRequest& request, const Json& extra) {
  auto positive = [&](std::string_view key) -> std::optional<std::chrono::milliseconds> {
    const Json* value = field(extra, key);
    if (value == nullptr || !value->is_number_integer() || value->get<std::int64_t>() <= 0) return std::nullopt;
    return std::chrono::milliseconds(value->get<std::int64_t>());
  };
  request.idle_timeout = positive("idleTimeoutMs").value_or(kDefaultModelIdleTimeout);
  if (auto connect = positive("connectTimeoutMs")) request.connect_timeout = *connect;
}

std::string serialize_payload(const Json& payload) {
  return payload.dump(-1, ' ', false, Json::error_handler_t::replace);
}

SseOutcome stream_sse(const HttpClient& client, const HttpRequest& request,
                      const std::function<bool(const SseEvent&)>& on_event, std::stop_token cancel) {
  SseOutcome outcome;
  // The transfer stops for the caller's cancel and for our own reasons (the
  // handler is done, the stream broke its format, the error body is long
  // enough); only the first is a cancellation.
  std::stop_source stop;
  std::stop_callback forward(cancel, [&stop] { stop.request_stop(); });
  SseParser parser;
  enum class Body { undecided, events, other } body = Body::other;
  std::string head;  // a 2xx body's first bytes, until they tell what it is
  bool body_full = false;

  auto deliver = [&](std::string_view bytes) {
    auto status = parser.feed(bytes, [&](const SseEvent& event) {
      if (outcome.stopped_by_handler || stop.stop_requested()) return;  // the rest of this piece is not wanted
      if (!on_event(event)) {
        outcome.stopped_by_handler = true;
        stop.request_stop();
      }
    });
    if (!status) {
      outcome.sse_error = status.error();
      stop.request_stop();
    }
  };
  auto collect = [&](std::string_view bytes) {
    outcome.error_body.append(bytes.substr(0, kMaxErrorBody - outcome.error_body.size()));
    if (outcome.error_body.size() >= kMaxErrorBody) {
      body_full = true;
      stop.request_stop();
    }
  };
  auto decide = [&](bool whole) {
    std::optional<bool> events = starts_like_sse(head, whole);
    if (!events) return;
    body = *events ? Body::events : Body::other;
    outcome.not_event_stream = !*events;
    std::string bytes = std::exchange(head, {});
    if (*events) {
      deliver(bytes);
    } else {
      collect(bytes);
    }
  };

  auto on_headers = [&](int status, const HttpHeaders&) {
    body = status >= 200 && status < 300 ? Body::undecided : Body::other;
  };
  auto on_body = [&](std::string_view chunk) {
    if (stop.stop_requested()) return;
    switch (body) {
      case Body::undecided:
        head.append(chunk);
        decide(/*whole=*/false);
        break;
      case Body::events:
        deliver(chunk);
        break;
      case Body::other:
        collect(chunk);
        break;
    }
  };
  outcome.http = client.stream(request, on_headers, on_body, stop.get_token());
  if (body == Body::undecided && outcome.http.ok()) decide(/*whole=*/true);

  bool stopped_by_us = outcome.stopped_by_handler || outcome.sse_error || body_full;
  if (outcome.http.failure == HttpFailure::cancelled && stopped_by_us && !cancel.stop_requested()) {
    outcome.http.failure = HttpFailure::none;
    outcome.http.message.clear();
  }
  return outcome;
}

const Json* field(const Json& json, std::string_view key) {
  if (!json.is_object()) return nullptr;
  auto it = json.find(key);
  return it == json.end() ? nullptr : &*it;
}

std::string_view string_field(const Json& json, std::string_view key) {
  const Json* value = field(json, key);
  if (value == nullptr || !value->is_string()) return {};
  return value->get_ref<const std::string&>();
}

std::int64_t int_field(const Json& json, std::string_view key, std::int64_t fallback) {
  const Json* value = field(json, key);
  if (value == nullptr || !value->is_number()) return fallback;
  if (value->is_number_float()) return static_cast<std::int64_t>(value->get<double>());
  return value->get<std::int64_t>();
}

}  // namespace cairn::wire
