#include "provider_keys.hpp"

#include <algorithm>
#include <cctype>

#include "cairn/llm/model_catalog.hpp"

namespace cairn::agent {

namespace {

// Header values that are credentials, as the providers' error redaction sees them.
void add_header_credentials(const std::map<std::string, std::string>& headers, Secrets& values) {
  for (const auto& [name, value] : headers) {
    std::string key = name;
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool credential = key.find("auth") != std::string::npos || key.find("key") != std::string::npos ||
                            key.find("token") != std::string::npos || key.find("secret") != std::string::npos ||
                            key == "cookie";
    if (!credential) continue;
    values.add(value);
    // "Bearer KEY": the key alone may be quoted back.
    if (const auto space = value.find(' '); space != std::string::npos) values.add(value.substr(space + 1));
  }
}

void add_model(const ConfiguredModel& model, const EnvLookup& env, ProviderKeys& keys) {
  if (!model.api_key.empty()) keys.values.add(model.api_key.reveal());
  if (model.key_source.kind == KeySource::Kind::environment && !model.key_source.env_var.empty()) {
    const std::string& variable = model.key_source.env_var;
    if (std::find(keys.variables.begin(), keys.variables.end(), variable) == keys.variables.end()) {
      keys.variables.push_back(variable);
    }
    if (auto value = env(variable)) keys.values.add(*value);
  }
  add_header_credentials(model.model.headers, keys.values);
}

}  // namespace

ProviderKeys provider_keys(const ModelRegistry& registry, const std::optional<ConfiguredModel>& model,
                           const EnvLookup& env) {
  ProviderKeys keys;
  // The table's variables even when models.json points a provider elsewhere:
  // the key is still in the environment.
  for (const auto& provider : builtin_providers()) {
    add_model(ConfiguredModel{.key_source = {KeySource::Kind::environment, provider.api_key_env}}, env, keys);
  }
  for (const auto& configured : registry.models()) add_model(configured, env, keys);
  if (model) add_model(*model, env, keys);
  return keys;
}

}  // namespace cairn::agent
