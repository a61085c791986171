// ~/.config/cairn/models.json: custom providers and local servers, and
// overrides of the built-in providers (model_catalog.hpp). Shaped like pi's
// models.json:
//
//   {"providers": {
//      "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
//                 "apiKey": "ollama",              // or "apiKeyEnv": "OLLAMA_KEY"; neither: no key
//                 "headers": {"X-Client": "cairn"},
//                 "models": [{"id": "qwen3:32b", "contextWindow": 40960, "maxTokens": 8192,
//                             "reasoning": true, "input": ["text"],
//                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
//                             "compat": {"maxTokensField": "max_tokens"}}]},
//      "anthropic": {"apiKeyEnv": "WORK_ANTHROPIC_KEY"}}}
//
// Parsing never throws. An error names the file, the JSON path and what was
// wrong — never a value from the file, since any of them may be a secret.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/llm/provider.hpp"

namespace cairn {

// An environment variable's value, or nothing when it is unset. Tests pass
// their own; process_environment() reads the real one.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_environment();

// A model entry as the file gives it: only `id` is required, every other
// field is absent unless written, so that an override of a built-in model
// changes only what it names.
struct ModelEntry {
  std::string id;
  std::optional<std::int64_t> context_window;
  std::optional<std::int64_t> max_tokens;
  std::optional<bool> reasoning;
  std::optional<std::vector<std::string>> input;
  // Each price the file gives; the others keep their value.
  std::optional<double> cost_input, cost_output, cost_cache_read, cost_cache_write;
  std::optional<Json> compat;  // merged over the provider's compat, key by key
  std::map<std::string, std::string> headers;
};

// A provider entry. Held in memory only: `api_key` is a credential.
struct ProviderEntry {
  std::string name;
  std::optional<std::string> base_url;
  std::optional<std::string> api;
  std::optional<std::string> api_key;      // the key itself
  std::optional<std::string> api_key_env;  // the variable holding it
  std::map<std::string, std::string> headers;
  std::vector<ModelEntry> models;
};

struct ModelsFile {
  std::string path;  // as given, for "where is this configured"
  std::vector<ProviderEntry> providers;
};

// Parses models.json text; `path` only names the file in errors. Error codes:
// invalid_config (the message says file, JSON path and what was wrong).
Result<ModelsFile> parse_models_file(std::string_view text, const std::string& path);

// Reads and parses the file. A file that does not exist is no configuration:
// nullopt. Error codes: io_error, invalid_config.
Result<std::optional<ModelsFile>> load_models_file(const std::filesystem::path& path);

// $XDG_CONFIG_HOME/cairn/models.json, else ~/.config/cairn/models.json;
// nullopt when neither variable is set.
std::optional<std::filesystem::path> default_models_file(const EnvLookup& env);

}  // namespace cairn
