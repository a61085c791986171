#include "provider_support.hpp"

#include <exception>

#include <fmt/format.h>

namespace cairn::wire {

std::vector<std::string> request_secrets(const std::string& api_key, const Model& model, const StreamOptions& options) {
  std::vector<std::string> secrets;
  if (!api_key.empty()) secrets.push_back(api_key);
  for (auto& secret : header_secrets(model.headers)) secrets.push_back(std::move(secret));
  for (auto& secret : header_secrets(options.headers)) secrets.push_back(std::move(secret));
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

std::optional<Failure> outcome_failure(const SseOutcome& outcome) {
  if (outcome.sse_error) {
    return Failure{.message = "the server broke the event stream's format: " + outcome.sse_error->message,
                   .retryable = true,
                   .status = outcome.http.status};
  }
  if (!outcome.http.ok()) return classify_transport(outcome.http);
  int status = outcome.http.status;
  if (status < 200 || status > 299) return classify_status(status, outcome.http.headers, outcome.error_body);
  if (!outcome.error_body.empty()) {
    // A 2xx JSON answer where a stream was asked for: an error some servers
    // report this way, or a server that ignored "stream".
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
    return Failure{.message = fmt::format("HTTP {}: the server answered with JSON, not an event stream", status),
                   .status = status};
  }
  return std::nullopt;
}

Failure ended_early() {
  return Failure{.message = "the stream ended before the response was complete", .retryable = true};
}

ProviderResponse guarded(MessageBuilder& out, const std::vector<std::string>& secrets,
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

}  // namespace cairn::wire
