// Resolution: the built-in table, then models.json over it, then the keys
// from the environment or the file. Lookups by "provider/id" or bare id.
#include "cairn/llm/model_registry.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "util/edit_distance.hpp"
#include "cairn/llm/model_catalog.hpp"

namespace cairn {
namespace {

// What a model nobody described gets: pi's defaults for custom models,
// small enough for any server that speaks the API.
constexpr std::int64_t kDefaultContextWindow = 128'000;
constexpr std::int64_t kDefaultMaxTokens = 16'384;

void merge_into(Json& base, const Json& patch) {
  for (auto it = patch.begin(); it != patch.end(); ++it) base[it.key()] = it.value();
}

void apply_entry(Model& model, const ModelEntry& entry) {
  if (entry.context_window) model.context_window = *entry.context_window;
  if (entry.max_tokens) model.max_tokens = *entry.max_tokens;
  if (entry.reasoning) model.reasoning = *entry.reasoning;
  if (entry.input) model.input = *entry.input;
  if (entry.cost_input) model.prices.input = *entry.cost_input;
  if (entry.cost_output) model.prices.output = *entry.cost_output;
  if (entry.cost_cache_read) model.prices.cache_read = *entry.cost_cache_read;
  if (entry.cost_cache_write) model.prices.cache_write = *entry.cost_cache_write;
  if (entry.compat) merge_into(model.compat, *entry.compat);
  for (const auto& [name, value] : entry.headers) model.headers[name] = value;
}

bool changes_provider(const ProviderEntry& entry) {
  return entry.base_url || entry.api || entry.api_key || entry.api_key_env || !entry.headers.empty();
}

// Where the key of a provider comes from, and the key when it is there.
std::pair<KeySource, ApiKey> resolve_key(const ProviderEntry* entry, const std::string& builtin_env,
                                         const EnvLookup& env) {
  if (entry && entry->api_key) return {KeySource{KeySource::Kind::models_file, {}}, ApiKey(*entry->api_key)};
  std::string variable = entry && entry->api_key_env ? *entry->api_key_env : builtin_env;
  if (variable.empty()) return {KeySource{KeySource::Kind::none, {}}, ApiKey()};
  auto value = env(variable);
  return {KeySource{KeySource::Kind::environment, variable}, ApiKey(value ? *value : std::string())};
}

std::string lowered(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// The configured names closest to what was typed: containing it, or within a
// few edits of it (of the whole "provider/id" or of the id alone).
std::vector<std::string> close_matches(std::string_view spec, const std::vector<ConfiguredModel>& models) {
  const std::string wanted = lowered(spec);
  const std::size_t tolerance = std::max<std::size_t>(2, wanted.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& configured : models) {
    const std::string qualified = lowered(configured.qualified_id());
    const std::string id = lowered(configured.model.id);
    std::size_t score = std::min(edit_distance(wanted, qualified), edit_distance(wanted, id));
    if (!wanted.empty() && (id.find(wanted) != std::string::npos || wanted.find(id) != std::string::npos)) score = 0;
    if (score <= tolerance) scored.emplace_back(score, configured.qualified_id());
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (const auto& [score, name] : scored) {
    if (names.size() == 5) break;
    names.push_back(name);
  }
  return names;
}

std::string normalized_url(std::string url) {
  while (url.ends_with("/")) url.pop_back();
  return url;
}

}  // namespace

std::string_view to_string(KeySource::Kind kind) {
  switch (kind) {
    case KeySource::Kind::environment: return "environment";
    case KeySource::Kind::models_file: return "models.json";
    case KeySource::Kind::command_line: return "command line";
    case KeySource::Kind::none: return "none";
  }
  return "none";
}

std::string describe_key(const ConfiguredModel& model) {
  switch (model.key_source.kind) {
    case KeySource::Kind::environment:
      return fmt::format("{} ({})", model.key_source.env_var, model.api_key.empty() ? "not set" : "set");
    case KeySource::Kind::models_file: return "apiKey in models.json";
    case KeySource::Kind::command_line: return "--api-key";
    case KeySource::Kind::none: return "not needed";
  }
  return "not needed";
}

ModelRegistry ModelRegistry::build(const ModelsFile* file, const EnvLookup& env) {
  ModelRegistry registry;
  auto entry_for = [&](const std::string& name) -> const ProviderEntry* {
    if (!file) return nullptr;
    for (const auto& entry : file->providers) {
      if (entry.name == name) return &entry;
    }
    return nullptr;
  };

  for (const CatalogProvider& builtin : builtin_providers()) {
    const ProviderEntry* entry = entry_for(builtin.name);
    auto [key_source, key] = resolve_key(entry, builtin.api_key_env, env);
    const std::string base_url = entry && entry->base_url ? *entry->base_url : builtin.base_url;
    const std::string api = entry && entry->api ? *entry->api : builtin.api;

    auto configure = [&](Model model, std::string origin, bool overridden) {
      model.base_url = base_url;
      model.api = api;
      if (entry) {
        for (const auto& [name, value] : entry->headers) model.headers[name] = value;
      }
      ConfiguredModel configured{std::move(model), std::move(origin), {}, key_source, key};
      if (overridden) configured.overridden_by = file->path;
      registry.models_.push_back(std::move(configured));
    };

    for (const Model& model : builtin.models) {
      const ModelEntry* model_entry = nullptr;
      if (entry) {
        for (const auto& candidate : entry->models) {
          if (candidate.id == model.id) model_entry = &candidate;
        }
      }
      Model result = model;
      if (model_entry) apply_entry(result, *model_entry);
      configure(std::move(result), "built-in", model_entry || (entry && changes_provider(*entry)));
    }
    if (!entry) continue;
    // Models the file adds to a built-in provider.
    for (const auto& model_entry : entry->models) {
      const bool builtin_model = std::any_of(builtin.models.begin(), builtin.models.end(),
                                             [&](const Model& m) { return m.id == model_entry.id; });
      if (builtin_model) continue;
      Model model;
      model.provider = builtin.name;
      model.id = model_entry.id;
      model.context_window = kDefaultContextWindow;
      model.max_tokens = kDefaultMaxTokens;
      model.compat = builtin.models.empty() ? Json::object() : builtin.models.front().compat;
      apply_entry(model, model_entry);
      configure(std::move(model), file->path, false);
    }
  }

  if (file) {
    for (const auto& entry : file->providers) {
      if (find_builtin_provider(entry.name)) continue;
      // The parser made sure a custom provider has a base URL, an API kind
      // and models.
      auto [key_source, key] = resolve_key(&entry, std::string(), env);
      for (const auto& model_entry : entry.models) {
        Model model;
        model.provider = entry.name;
        model.id = model_entry.id;
        model.api = entry.api.value_or(std::string(kApiOpenAiCompletions));
        model.base_url = entry.base_url.value_or(std::string());
        model.headers = entry.headers;
        model.context_window = kDefaultContextWindow;
        model.max_tokens = kDefaultMaxTokens;
        apply_entry(model, model_entry);
        registry.models_.push_back(ConfiguredModel{std::move(model), file->path, {}, key_source, key});
      }
    }
  }
  return registry;
}

Result<ModelRegistry> ModelRegistry::load(const std::optional<std::filesystem::path>& models_file,
                                          const EnvLookup& env) {
  std::optional<std::filesystem::path> path = models_file ? models_file : default_models_file(env);
  std::optional<ModelsFile> file;
  if (path) {
    auto loaded = load_models_file(*path);
    if (!loaded) return std::unexpected(loaded.error());
    // The default file may well not exist; a file named on purpose must.
    if (models_file && !loaded->has_value()) {
      return fail(Errc::io_error, fmt::format("{} does not exist", models_file->string()));
    }
    file = std::move(*loaded);
  }
  ModelRegistry registry = build(file ? &*file : nullptr, env);
  registry.models_file_ = path;
  registry.models_file_found_ = file.has_value();
  return registry;
}

std::vector<const ConfiguredModel*> ModelRegistry::available() const {
  std::vector<const ConfiguredModel*> result;
  for (const auto& configured : models_) {
    if (configured.available()) result.push_back(&configured);
  }
  return result;
}

Result<const ConfiguredModel*> ModelRegistry::find(std::string_view spec) const {
  // Ids may contain '/' themselves (OpenRouter's "anthropic/claude-…"), so
  // "provider/id" is tried first, then the whole text as an id.
  if (auto slash = spec.find('/'); slash != std::string_view::npos) {
    const auto provider = spec.substr(0, slash);
    const auto id = spec.substr(slash + 1);
    for (const auto& configured : models_) {
      if (configured.model.provider == provider && configured.model.id == id) return &configured;
    }
  }
  std::vector<const ConfiguredModel*> matches;
  for (const auto& configured : models_) {
    if (configured.model.id == spec) matches.push_back(&configured);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.size() > 1) {
    std::string names;
    for (const auto* match : matches) names += (names.empty() ? "" : ", ") + match->qualified_id();
    return fail(Errc::ambiguous_model,
                fmt::format("model '{}' is served by several providers; name one of: {}", spec, names));
  }
  const auto suggestions = close_matches(spec, models_);
  if (suggestions.empty()) {
    return fail(Errc::unknown_model, fmt::format("unknown model '{}' (cairn models --all lists the known models)", spec));
  }
  std::string names;
  for (const auto& name : suggestions) names += (names.empty() ? "" : ", ") + name;
  return fail(Errc::unknown_model, fmt::format("unknown model '{}'; did you mean {}? (cairn models --all lists the "
                                           "known models)",
                                           spec, names));
}

Result<ConfiguredModel> ModelRegistry::ad_hoc(const AdHocEndpoint& endpoint) const {
  if (!is_known_api(endpoint.api)) {
    std::string apis;
    for (auto api : known_apis()) apis += (apis.empty() ? "" : ", ") + std::string(api);
    return fail(Errc::invalid_argument, fmt::format("unknown API kind '{}' (known: {})", endpoint.api, apis));
  }
  // The URL is not echoed: it may carry credentials (user:password@host).
  if (!endpoint.base_url.starts_with("http://") && !endpoint.base_url.starts_with("https://")) {
    return fail(Errc::invalid_argument, "the base URL must start with http:// or https://");
  }
  if (endpoint.model_id.empty()) return fail(Errc::invalid_argument, "an endpoint needs a model id");
  if (endpoint.provider.empty() || endpoint.provider.find('/') != std::string::npos) {
    return fail(Errc::invalid_argument, "a provider name must be non-empty and contain no '/'");
  }

  const std::string base_url = normalized_url(endpoint.base_url);
  Model model;
  model.context_window = kDefaultContextWindow;
  model.max_tokens = kDefaultMaxTokens;
  for (const auto& configured : models_) {
    if (configured.model.id == endpoint.model_id && normalized_url(configured.model.base_url) == base_url) {
      model = configured.model;
      break;
    }
  }
  model.provider = endpoint.provider;
  model.id = endpoint.model_id;
  model.api = endpoint.api;
  model.base_url = base_url;

  ConfiguredModel configured{std::move(model), "command line", {}, {}, {}};
  if (endpoint.api_key && !endpoint.api_key->empty()) {
    configured.key_source = KeySource{KeySource::Kind::command_line, {}};
    configured.api_key = ApiKey(*endpoint.api_key);
  }
  return configured;
}

Models make_models(const ModelRegistry& registry, const ProviderFactory& factory) {
  Models models;
  // One provider object per provider and API kind: its models share the
  // connection settings and the key.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Provider>> made;
  for (const ConfiguredModel* configured : registry.available()) {
    const auto slot = std::make_pair(configured->model.provider, configured->model.api);
    auto it = made.find(slot);
    if (it == made.end()) it = made.emplace(slot, factory(configured->model.api, configured->api_key.reveal())).first;
    if (it->second) models.add(configured->model, it->second);
  }
  return models;
}

Status add_model(Models& models, const ConfiguredModel& model, const ProviderFactory& factory) {
  auto provider = factory(model.model.api, model.api_key.reveal());
  if (!provider) return fail(Errc::unsupported_api, fmt::format("this build cannot speak the {} API", model.model.api));
  models.add(model.model, std::move(provider));
  return {};
}

}  // namespace cairn
