// The model the coding agent's options name: a configured one (--model),
// or an endpoint not in the model table (--api, --base-url and --model).
#pragma once

#include <optional>

#include "cairn/agent/options.hpp"
#include "cairn/error.hpp"
#include "cairn/llm/model_registry.hpp"

namespace cairn::agent {

// nullopt when none is named. Errors: an unknown or ambiguous model, one
// without a key, an ad-hoc endpoint short of one of its three options,
// --api-key without a model.
Result<std::optional<ConfiguredModel>> named_model(const ModelRegistry& registry, const AgentOptions& options);

}  // namespace cairn::agent
