// The wire providers by API kind: what a model table entry's `api` names
// becomes a provider that speaks it (a ProviderFactory for make_models).
#pragma once

#include <memory>
#include <string>

#include "cairn/llm/provider.hpp"

namespace cairn {

// A provider for `api` ("openai-completions", "openai-responses",
// "anthropic-messages") holding `api_key` (empty: none is sent, as local
// servers need); null for an API kind this build does not speak.
std::shared_ptr<Provider> make_wire_provider(const std::string& api, std::string api_key);

}  // namespace cairn
