// One Messages API exchange: the payload out, the event stream back, and
// every way it can fail turned into the response's classification.
#include "cairn/llm/anthropic_messages.hpp"

#include <exception>

#include <fmt/format.h>

#include "anthropic_wire.hpp"
#include "cairn/secrets.hpp"
#include "provider_support.hpp"
#include "wire_support.hpp"

namespace cairn {
namespace {

constexpr const char* kDefaultBaseUrl = "https://api.anthropic.com/v1";
constexpr const char* kApiVersion = "2023-06-01";

// How a response ends when it does not end well: the message's stop reason
// and error text (credentials removed), the classification for the retry
// decision, and the error event last.
class Ending {
 public:
  Ending(ProviderResponse& response, anthropic::StreamDecoder& decoder, Secrets secrets)
      : response_(response), decoder_(decoder), secrets_(std::move(secrets)) {}

  void fail(const wire::Failure& failure) {
    response_.message.stop_reason = StopReason::error;
    response_.message.error_message = to_valid_utf8(secrets_.redact(failure.message));
    response_.retryable = failure.retryable;
    response_.retry_after_ms = failure.retry_after_ms;
    response_.context_overflow = failure.context_overflow;
    if (failure.status != 0) response_.status = failure.status;
    tell();
  }

  const Secrets& secrets() const { return secrets_; }

  void abort() {
    response_.message.stop_reason = StopReason::aborted;
    response_.message.error_message = "Request was aborted";
    response_.retryable = false;
    tell();
  }

 private:
  void tell() {
    try {
      // Whoever adds up the deltas gets all that arrived, as the message has it.
      decoder_.report_open_blocks();
      decoder_.emit(ProviderEvent::Type::error);
    } catch (...) {
      // The sink failed while told of a failure; the response says it all.
    }
  }

  ProviderResponse& response_;
  anthropic::StreamDecoder& decoder_;
  Secrets secrets_;
};

class AnthropicMessagesProvider final : public Provider {
 public:
  AnthropicMessagesProvider(std::string api_key, HttpClient client)
      : api_key_(std::move(api_key)), client_(std::move(client)) {}

  ProviderResponse stream(const Model& model, const LlmContext& context, const StreamOptions& options,
                          const PayloadHook& before_payload, const ProviderEventSink& on_event,
                          std::stop_token cancel) override {
    ProviderResponse response = wire::response_for(model);
    anthropic::StreamDecoder decoder(model, response.message, on_event);
    // The key, and whatever else names a credential, stays out of every error text.
    Ending ending(response, decoder, wire::request_secrets(api_key_, model, options));
    try {
      exchange(model, context, options, before_payload, cancel, decoder, response, ending);
    } catch (const std::exception& e) {
      // Never thrown to the caller (a sink that threw, memory): still a response.
      ending.fail(wire::Failure{.message = fmt::format("anthropic-messages: {}", e.what())});
    }
    return response;
  }

 private:
  void exchange(const Model& model, const LlmContext& context, const StreamOptions& options,
                const PayloadHook& before_payload, std::stop_token cancel, anthropic::StreamDecoder& decoder,
                ProviderResponse& response, Ending& ending) const {
    Json payload = anthropic::build_payload(model, context, options);
    if (before_payload) payload = before_payload(model, std::move(payload));

    HttpRequest request;
    request.url = wire::join_url(model.base_url.empty() ? kDefaultBaseUrl : model.base_url, "/messages");
    // The model's headers may replace a default, the request's the model's.
    wire::set_header(request.headers, "content-type", "application/json");
    wire::set_header(request.headers, "accept", "text/event-stream");
    wire::set_header(request.headers, "anthropic-version", kApiVersion);
    if (!api_key_.empty()) wire::set_header(request.headers, "x-api-key", api_key_);
    for (const auto& [name, value] : model.headers) wire::set_header(request.headers, name, value);
    for (const auto& [name, value] : options.headers) wire::set_header(request.headers, name, value);
    wire::apply_transport_options(request, options.extra);
    request.body = wire::serialize_payload(payload);

    wire::SseOutcome outcome = wire::stream_sse(
        client_, request, [&](const SseEvent& event) { return decoder.on_event(event); }, cancel);

    const HttpResult& http = outcome.http;
    response.status = http.status;
    for (const auto& [name, value] : http.headers) response.headers.emplace(name, value);
    const bool success_status = http.status >= 200 && http.status < 300;

    // The first cause wins: a stop request explains whatever followed it,
    // and what the stream said explains why it was cut.
    if (http.failure == HttpFailure::cancelled || (cancel.stop_requested() && !decoder.message_stopped())) {
      ending.abort();
    } else if (decoder.failure()) {
      ending.fail(*decoder.failure());
    } else if (outcome.sse_error) {
      ending.fail(wire::Failure{.message = fmt::format("malformed event stream: {}", outcome.sse_error->message),
                                .retryable = true});
    } else if (http.status != 0 && !success_status) {
      ending.fail(wire::classify_status(http.status, http.headers, outcome.error_body));
    } else if (!http.ok()) {
      ending.fail(wire::classify_transport(http));
    } else if (outcome.not_event_stream) {
      // A server that ignored "stream": true, or a proxy's page.
      ending.fail(wire::not_an_event_stream(outcome, ending.secrets()));
    } else if (!decoder.message_stopped()) {
      // The connection closed cleanly in the middle of the message: as
      // transient as a reset one.
      ending.fail(wire::Failure{.message = "the event stream ended before message_stop", .retryable = true});
    } else if (decoder.unsuccessful_stop()) {
      ending.fail(wire::Failure{.message = fmt::format("the model stopped: {}", *decoder.unsuccessful_stop())});
    } else {
      decoder.report_open_blocks();
      decoder.emit(ProviderEvent::Type::done);
    }
  }

  std::string api_key_;
  HttpClient client_;
};

}  // namespace

std::shared_ptr<Provider> make_anthropic_messages_provider(std::string api_key, HttpClient client) {
  return std::make_shared<AnthropicMessagesProvider>(std::move(api_key), std::move(client));
}

}  // namespace cairn
