// The models cairn knows without any configuration: the current models of the
// major providers, where each provider serves them and which environment
// variable holds its key. ~/.config/cairn/models.json adds to and overrides
// this table (model_registry.hpp).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/llm/provider.hpp"

namespace cairn {

// The wire formats the providers speak, as `Model::api` names them.
inline constexpr std::string_view kApiOpenAiCompletions = "openai-completions";
inline constexpr std::string_view kApiOpenAiResponses = "openai-responses";
inline constexpr std::string_view kApiAnthropicMessages = "anthropic-messages";

// Every API kind a configured model may name.
const std::vector<std::string_view>& known_apis();
bool is_known_api(std::string_view api);

// One provider of the built-in table: how to reach it and the models it
// serves. Every model's `provider`, `api`, `base_url` and `headers` are those
// of its provider.
struct CatalogProvider {
  std::string name;         // "anthropic", "openai", "google", …
  std::string api;          // its wire format
  std::string base_url;     // "https://api.anthropic.com/v1", …
  std::string api_key_env;  // the environment variable holding its key
  std::map<std::string, std::string> headers;
  std::vector<Model> models;
};

// The built-in table, in the order `cairn models` lists it.
const std::vector<CatalogProvider>& builtin_providers();
const CatalogProvider* find_builtin_provider(std::string_view name);

// The day the table's figures were last checked against the providers'
// documentation (ISO date).
std::string_view catalog_date();

}  // namespace cairn
