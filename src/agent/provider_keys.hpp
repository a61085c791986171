// The provider keys the coding agent knows, and the variables that hold them:
// what its tools' processes must not inherit and what nothing it writes (the
// log, events, --json output, spill files) may contain.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cairn/llm/model_registry.hpp"
#include "cairn/secrets.hpp"

namespace cairn::agent {

struct ProviderKeys {
  // Every key value: the model table's variables and models.json's apiKeyEnv
  // as set in the environment, models.json's apiKey, --api-key, and the
  // credentials in configured headers (Authorization, x-api-key, ...).
  Secrets values;
  // Every variable that holds a provider key, set or not.
  std::vector<std::string> variables;
};

// From every configured model of `registry` and the model in use (which may
// be an ad-hoc endpoint with its own --api-key), keys read through `env`.
ProviderKeys provider_keys(const ModelRegistry& registry, const std::optional<ConfiguredModel>& model,
                           const EnvLookup& env);

}  // namespace cairn::agent
