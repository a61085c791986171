#include "cairn/llm/wire_providers.hpp"

#include "cairn/llm/anthropic_messages.hpp"
#include "cairn/llm/model_catalog.hpp"
#include "cairn/llm/openai_completions.hpp"
#include "cairn/llm/openai_responses.hpp"

namespace cairn {

std::shared_ptr<Provider> make_wire_provider(const std::string& api, std::string api_key) {
  if (api == kApiOpenAiCompletions) return make_openai_completions_provider(std::move(api_key));
  if (api == kApiOpenAiResponses) return make_openai_responses_provider(std::move(api_key));
  if (api == kApiAnthropicMessages) return make_anthropic_messages_provider(std::move(api_key));
  return nullptr;
}

}  // namespace cairn
