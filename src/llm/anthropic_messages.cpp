// The Messages API in the stream frame every wire provider shares
// (provider_support.hpp): its endpoint and headers here, its payload and its
// event parser in anthropic_wire.hpp.
#include "cairn/llm/anthropic_messages.hpp"

#include "anthropic_wire.hpp"
#include "provider_support.hpp"

namespace cairn {

std::shared_ptr<Provider> make_anthropic_messages_provider(std::string api_key, HttpClient client) {
  return std::make_shared<wire::SseProvider>(
      std::move(api_key), std::move(client),
      wire::WireApi{.default_base_url = "https://api.anthropic.com/v1",
                    .path = "/messages",
                    .headers = anthropic::request_headers,
                    .payload = anthropic::build_payload,
                    .make_parser = [](wire::MessageBuilder& out) -> std::unique_ptr<wire::StreamParser> {
                      return std::make_unique<anthropic::EventParser>(out);
                    }});
}

}  // namespace cairn
