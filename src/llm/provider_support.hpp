// The frame every wire provider's stream() shares: the request it sends,
// the secrets its messages must not hold, what a finished transfer failed
// of, and the guarantee that stream() answers instead of throwing.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cairn/llm/provider.hpp"
#include "message_builder.hpp"
#include "wire_support.hpp"

namespace cairn::wire {

// The credentials one request carries: the provider's key and any
// credential among the model's and the caller's headers.
std::vector<std::string> request_secrets(const std::string& api_key, const Model& model, const StreamOptions& options);

// A streaming JSON POST to `url`: `auth` headers, then the model's headers,
// then the caller's (each replacing an earlier one of the same name), the
// payload serialised, the caller's timeouts (apply_transport_options).
HttpRequest json_request(std::string url, const Json& payload, const HttpHeaders& auth, const Model& model,
                         const StreamOptions& options);

// The response's status and headers (the first value of each name), for
// the after_response hook.
void keep_headers(ProviderResponse& response, const HttpResult& http);

// What a transfer that the stream parser did not fail of failed of: the
// event stream's format, the transport, an error status, or a 2xx answer
// that was not a stream. Nullopt when the transfer succeeded.
std::optional<Failure> outcome_failure(const SseOutcome& outcome);

// The stream ended without the server saying the response was complete:
// as good as a broken connection.
Failure ended_early();

// Runs `body`; an exception from it (a hook, a listener, an allocation)
// becomes a failed response, still carrying what was streamed.
ProviderResponse guarded(MessageBuilder& out, const std::vector<std::string>& secrets,
                         const std::function<ProviderResponse()>& body);

}  // namespace cairn::wire
