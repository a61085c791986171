#include "provider_support.hpp"

#include <exception>

#include <fmt/format.h>

namespace cairn::wire {
namespace {

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

Secrets request_secrets(const std::string& api_key, const Model& model, const StreamOptions& options) {
  Secrets secrets;
  secrets.add(api_key);
  for (const std::string& secret : header_secrets(model.headers)) secrets.add(secret);
  for (const std::string& secret : header_secrets(options.headers)) secrets.add(secret);
  return secrets;
}

HttpRequest json_request(std::string url, const Json& payload, const HttpHeaders& auth, const Model& model,
                         const StreamOptions& options) {
  HttpRequest request;
  request.url = std::move(url);
  request.body = serialize_payload(payload);
  set_header(request.headers, "Content-Type", "application/json");
  set_header(request.headers, "Accept", "text/event-stream");
  for (const auto& [name, value] : auth) set_header(request.headers, name, value);
  for (const auto& [name, value] : model.headers) set_header(request.headers, name, value);
  for (const auto& [name, value] : options.headers) set_header(request.headers, name, value);
  apply_transport_options(request, options.extra);
  return request;
}

void keep_headers(ProviderResponse& response, const HttpResult& http) {
  response.status = http.status;
  for (const auto& [name, value] : http.headers) response.headers.emplace(name, value);
}

std::optional<Failure> outcome_failure(const SseOutcome& outcome, const Secrets& secrets) {
  if (outcome.sse_error) {
    return Failure{.message = "the server broke the event stream's format: " + outcome.sse_error->message,
                   .retryable = true,
                   .status = outcome.http.status};
  }
  if (!outcome.http.ok()) return classify_transport(outcome.http);
  int status = outcome.http.status;
  if (status < 200 || status > 299) return classify_status(status, outcome.http.headers, outcome.error_body);
  if (outcome.not_event_stream) return not_an_event_stream(outcome, secrets);
  return std::nullopt;
}

Failure not_an_event_stream(const SseOutcome& outcome, const Secrets& secrets) {
  const int status = outcome.http.status;
  // An error some servers report this way, or a server that ignored "stream".
  Json body = Json::parse(outcome.error_body, nullptr, false);
  if (const Json* error = field(body, "error")) {
    Failure failure = error->is_string()
                          ? classify_stream_error("", error->get<std::string>())
                          : classify_stream_error(!string_field(*error, "code").empty() ? string_field(*error, "code")
                                                                                         : string_field(*error, "type"),
                                                  string_field(*error, "message"));
    failure.status = status;
    return failure;
  }
  // Redacted whole before it is cut, so that no part of a secret survives the cut.
  std::string text = to_valid_utf8(secrets.redact(outcome.error_body));
  constexpr std::size_t kExcerpt = 200;
  std::string excerpt;
  for (char c : text) {
    if (excerpt.size() > kExcerpt) break;
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F) {
      // Runs of blanks, line breaks and control characters: one space, so
      // that the message is one line.
      if (!excerpt.empty() && excerpt.back() != ' ') excerpt += ' ';
    } else {
      excerpt += c;
    }
  }
  const bool cut = excerpt.size() > kExcerpt;
  if (cut) excerpt.resize(utf8_floor(excerpt, kExcerpt));  // not inside a character
  while (excerpt.ends_with(' ')) excerpt.pop_back();
  std::optional<std::string_view> type = find_header(outcome.http.headers, "content-type");
  std::string named = type && !type->empty() ? fmt::format("Content-Type {}", to_valid_utf8(*type)) : "no Content-Type";
  // A server may even say it sends a stream.
  const bool claimed = type && lower_ascii(*type).starts_with("text/event-stream");
  std::string quoted =
      excerpt.empty() ? std::string("the body was blank") : fmt::format("the body began: {}{}", excerpt, cut ? "…" : "");
  return Failure{.message = fmt::format("the server answered {} with {}{}; {}", status, named,
                                        claimed ? " but a body that is not an event stream" : ", not an event stream",
                                        quoted),
                 .status = status};
}

Failure ended_early() {
  return Failure{.message = "the stream ended before the response was complete", .retryable = true};
}

ProviderResponse guarded(MessageBuilder& out, const Secrets& secrets,
                         const std::function<ProviderResponse()>& body) {
  std::string what;
  try {
    return body();
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  try {
    return out.fail(Failure{.message = "the provider failed: " + what}, secrets);
  } catch (...) {
    // The listener threw again while hearing of the failure; the response
    // is still owed.
    return std::move(out.response());
  }
}

HttpHeaders bearer_headers(const std::string& api_key) {
  HttpHeaders headers;
  if (!api_key.empty()) headers.emplace_back("Authorization", "Bearer " + api_key);
  return headers;
}

SseProvider::SseProvider(std::string api_key, HttpClient client, WireApi api)
    : api_key_(std::move(api_key)), client_(std::move(client)), api_(std::move(api)) {}

ProviderResponse SseProvider::stream(const Model& model, const LlmContext& context, const StreamOptions& options,
                                     const PayloadHook& before_payload, const ProviderEventSink& on_event,
                                     std::stop_token cancel) {
  MessageBuilder out(model, on_event);
  Secrets secrets = request_secrets(api_key_, model, options);
  return guarded(out, secrets, [&]() -> ProviderResponse {
    Json payload = api_.payload(model, context, options);
    if (before_payload) payload = before_payload(model, std::move(payload));
    const std::string_view base = model.base_url.empty() ? std::string_view(api_.default_base_url) : model.base_url;
    HttpRequest request = json_request(join_url(base, api_.path), payload, api_.headers(api_key_), model, options);
    if (cancel.stop_requested()) return out.abort();

    std::unique_ptr<StreamParser> parser = api_.make_parser(out);
    SseOutcome outcome =
        stream_sse(client_, request, [&](const SseEvent& event) { return parser->on_event(event); }, cancel);
    keep_headers(out.response(), outcome.http);

    if (cancel.stop_requested() && !parser->complete()) return out.abort();
    if (parser->failure()) return out.fail(*parser->failure(), secrets);
    // Once the response is complete only trailing events (the usage chunk)
    // may be outstanding: a connection lost then does not undo it.
    if (!parser->complete()) return out.fail(outcome_failure(outcome, secrets).value_or(ended_early()), secrets);
    out.end_open_blocks();
    auto reason = parser->stop_reason();
    if (auto* failure = std::get_if<Failure>(&reason)) return out.fail(*failure, secrets);
    return out.finish(std::get<StopReason>(reason));
  });
}

}  // namespace cairn::wire
