// The request side of the wire providers: one server-sent-events transfer,
// headers, timeouts, the payload's bytes, credentials kept out of messages,
// and the small JSON accessors the stream parsers share.

#include "wire_support.hpp"

#include <algorithm>

namespace cairn::wire {
namespace {

// An error body worth reading is short; a longer one is not read further.
constexpr std::size_t kMaxErrorBody = std::size_t{64} << 10;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

// A body that says it is JSON but is an event stream all the same (some
// proxies relabel streams).
bool looks_like_sse(std::string_view body) {
  std::size_t start = body.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return false;
  body.remove_prefix(start);
  return body.starts_with("data:") || body.starts_with("event:") || body.starts_with(":");
}

}  // namespace

int utf8_sequence(std::string_view bytes) {
  if (bytes.empty()) return -1;
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  int length;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  for (int i = 1; i < length; ++i) {
    if (static_cast<std::size_t>(i) >= bytes.size()) return -1;
    unsigned char c = byte(static_cast<std::size_t>(i));
    if (i == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) return 0;
  }
  return length;
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    int length = utf8_sequence(text);
    if (length > 0) {
      out.append(text.substr(0, static_cast<std::size_t>(length)));
      text.remove_prefix(static_cast<std::size_t>(length));
    } else {
      out += "\xEF\xBF\xBD";
      text.remove_prefix(1);
    }
  }
  return out;
}

std::string redact(std::string text, std::span<const std::string> secrets) {
  static constexpr std::string_view kMark = "[redacted]";
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + kMark.size())) {
      text.replace(at, secret.size(), kMark);
    }
  }
  return text;
}

std::vector<std::string> header_secrets(const std::map<std::string, std::string>& headers) {
  std::vector<std::string> secrets;
  for (const auto& [name, value] : headers) {
    std::string key = lower(name);
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

std::string join_url(std::string_view base, std::string_view path) {
  while (base.ends_with('/')) base.remove_suffix(1);
  std::string url(base);
  if (!path.starts_with('/')) url += '/';
  url += path;
  return url;
}

void set_header(HttpHeaders& headers, std::string_view name, std::string value) {
  std::string key = lower(name);
  std::erase_if(headers, [&](const auto& header) { return lower(header.first) == key; });
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
  bool event_stream = false;
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

  auto on_headers = [&](int status, const HttpHeaders& headers) {
    auto type = find_header(headers, "content-type");
    bool json = type && lower(*type).starts_with("application/json");
    event_stream = status >= 200 && status < 300 && !json;
  };
  auto on_body = [&](std::string_view chunk) {
    if (stop.stop_requested()) return;
    if (event_stream) {
      deliver(chunk);
      return;
    }
    outcome.error_body.append(chunk.substr(0, kMaxErrorBody - outcome.error_body.size()));
    if (outcome.error_body.size() >= kMaxErrorBody) {
      body_full = true;
      stop.request_stop();
    }
  };
  outcome.http = client.stream(request, on_headers, on_body, stop.get_token());

  bool stopped_by_us = outcome.stopped_by_handler || outcome.sse_error || body_full;
  if (outcome.http.failure == HttpFailure::cancelled && stopped_by_us && !cancel.stop_requested()) {
    outcome.http.failure = HttpFailure::none;
    outcome.http.message.clear();
  }
  int status = outcome.http.status;
  if (outcome.http.ok() && status >= 200 && status < 300 && !event_stream && looks_like_sse(outcome.error_body)) {
    std::string body = std::move(outcome.error_body);
    outcome.error_body.clear();
    deliver(body);
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
