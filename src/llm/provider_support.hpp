// The frame every wire provider's stream() shares: the request it sends,
// the secrets its messages must not hold, what a finished transfer failed
// of, and the guarantee that stream() answers instead of throwing.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cairn/llm/provider.hpp"
#include "cairn/secrets.hpp"
#include "message_builder.hpp"
#include "wire_support.hpp"

namespace cairn::wire {

// The credentials one request carries: the provider's key and any
// credential among the model's and the caller's headers.
// Values shorter than Secrets::kMinLength are left out (a test key "x"):
// redacting them would blank that character in every message.
Secrets request_secrets(const std::string& api_key, const Model& model, const StreamOptions& options);

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
// that was not a stream (not_an_event_stream). Nullopt when the transfer
// succeeded.
std::optional<Failure> outcome_failure(const SseOutcome& outcome, const Secrets& secrets);

// A 2xx answer whose body is not an event stream: the server's error when
// it is a JSON error object (classified as a stream's error is), else a
// failure that names the status and Content-Type and quotes the body's
// first ~200 bytes on one line, `secrets` redacted. Not retryable: the same
// request to the same URL gets the same page (most often a base URL that
// points at a web server or a proxy's login page, not at the API).
Failure not_an_event_stream(const SseOutcome& outcome, const Secrets& secrets);

// The stream ended without the server saying the response was complete:
// as good as a broken connection.
Failure ended_early();

// Runs `body`; an exception from it (a hook, a listener, an allocation)
// becomes a failed response, still carrying what was streamed.
ProviderResponse guarded(MessageBuilder& out, const Secrets& secrets,
                         const std::function<ProviderResponse()>& body);

// --- The stream frame ------------------------------------------------------

// Reads the event stream of one API (chat completions, responses, Anthropic
// messages) into a MessageBuilder, and says how the response ended.
class StreamParser {
 public:
  virtual ~StreamParser() = default;
  // False stops the transfer (a failure, or nothing more the response needs).
  virtual bool on_event(const SseEvent& event) = 0;
  // The server has said how the response ended; what goes wrong with the
  // transfer after that does not undo the response.
  virtual bool complete() const = 0;
  // What the stream itself failed of (an error event, a malformed chunk).
  virtual const std::optional<Failure>& failure() const = 0;
  // How a complete response ended: a stop reason, or a failure the server
  // reported as its ending (a content filter, a refusal).
  virtual std::variant<StopReason, Failure> stop_reason() const = 0;
};

// What sets one API apart on the wire; the rest of a stream is SseProvider's.
struct WireApi {
  // The base URL of a model that names none.
  std::string default_base_url;
  // The path of the streaming endpoint under the base URL.
  std::string path;
  // The headers that carry the key (none when it is empty), and the API's
  // own; the model's and the caller's headers may replace them.
  HttpHeaders (*headers)(const std::string& api_key);
  Json (*payload)(const Model&, const LlmContext&, const StreamOptions&);
  std::unique_ptr<StreamParser> (*make_parser)(MessageBuilder&);
};

// The OpenAI APIs' endpoint and authorisation (a bearer token).
inline constexpr const char* kOpenAiBaseUrl = "https://api.openai.com/v1";
HttpHeaders bearer_headers(const std::string& api_key);

// Every wire provider: one stream frame, so that they all fail alike. The
// payload (before_payload applied) goes in a POST to the API's path under
// the model's base URL, the events are read by the API's parser, and the
// response ends by the first cause: a stop request, the stream's failure,
// the transfer's (outcome_failure, or ended_early), then the parser's stop
// reason.
class SseProvider final : public Provider {
 public:
  SseProvider(std::string api_key, HttpClient client, WireApi api);

  ProviderResponse stream(const Model& model, const LlmContext& context, const StreamOptions& options,
                          const PayloadHook& before_payload, const ProviderEventSink& on_event,
                          std::stop_token cancel) override;

 private:
  std::string api_key_;
  HttpClient client_;
  WireApi api_;
};

}  // namespace cairn::wire
