// Which models cairn can call here: the built-in table (model_catalog.hpp)
// with models.json applied (models_file.hpp), each with where it is
// configured and how its key is found. API keys live in memory only, in
// ApiKey values that cannot be printed; listings show the environment
// variable's name, never a key.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/llm/models_file.hpp"
#include "cairn/llm/provider.hpp"

namespace cairn {

// A credential. It has no formatter and no stream operator, so it cannot end
// up in a message by accident; reveal() is for the provider that sends it.
class ApiKey {
 public:
  ApiKey() = default;
  explicit ApiKey(std::string value) : value_(std::move(value)) {}
  bool empty() const { return value_.empty(); }
  const std::string& reveal() const { return value_; }

 private:
  std::string value_;
};

// How a model's key is found.
struct KeySource {
  enum class Kind {
    environment,   // the variable `env_var`
    models_file,   // apiKey in models.json
    command_line,  // --api-key
    none,          // the server needs no key (a local server)
  };
  Kind kind = Kind::none;
  std::string env_var;  // the variable's name, for `environment`
};
std::string_view to_string(KeySource::Kind kind);

struct ConfiguredModel {
  Model model;
  // "built-in", the models.json path, or "command line".
  std::string origin;
  // The models.json that changed a built-in model (its base URL, key,
  // headers or figures); empty when nothing did.
  std::string overridden_by;
  KeySource key_source;
  ApiKey api_key;  // empty when the key is missing or not needed

  // The key is present, or none is needed.
  bool available() const { return key_source.kind == KeySource::Kind::none || !api_key.empty(); }
  std::string qualified_id() const { return model.provider + "/" + model.id; }
};

// Says where the key comes from and whether it is there, without the key:
// "ANTHROPIC_API_KEY (set)", "ANTHROPIC_API_KEY (not set)", "apiKey in
// models.json", "--api-key", "not needed".
std::string describe_key(const ConfiguredModel& model);

// Makes the provider that speaks `api` with `api_key` (empty when none is
// needed). May return null for an API kind this build cannot speak.
using ProviderFactory = std::function<std::shared_ptr<Provider>(const std::string& api, std::string api_key)>;

// An endpoint named on the command line: --api KIND --base-url URL --model ID
// [--api-key KEY].
struct AdHocEndpoint {
  std::string api;
  std::string base_url;
  std::string model_id;
  std::optional<std::string> api_key;
  std::string provider = "custom";
};

class ModelRegistry {
 public:
  // The built-in table with `file` applied (null: no models.json), keys
  // looked up in `env`.
  static ModelRegistry build(const ModelsFile* file, const EnvLookup& env);
  // Reads models.json from `models_file` (nullopt: default_models_file())
  // and builds. A missing default file is no configuration; a missing file
  // named here is an error. Error codes: io_error, invalid_config.
  static Result<ModelRegistry> load(const std::optional<std::filesystem::path>& models_file, const EnvLookup& env);

  // Every configured model: built-in providers in table order, then the
  // custom providers in file order.
  const std::vector<ConfiguredModel>& models() const { return models_; }
  std::vector<const ConfiguredModel*> available() const;
  // The models.json consulted (whether or not it exists), when there was one.
  const std::optional<std::filesystem::path>& models_file() const { return models_file_; }
  bool models_file_found() const { return models_file_found_; }

  // "provider/id", or an id only one provider serves. Error codes:
  // unknown_model (the message lists close matches), ambiguous_model (it
  // lists the providers serving that id).
  Result<const ConfiguredModel*> find(std::string_view spec) const;

  // The model behind an ad-hoc endpoint. A configured model with the same id
  // at the same base URL lends its figures (window, prices, quirks); others
  // get conservative defaults. Error code: invalid_argument.
  Result<ConfiguredModel> ad_hoc(const AdHocEndpoint& endpoint) const;

 private:
  std::vector<ConfiguredModel> models_;
  std::optional<std::filesystem::path> models_file_;
  bool models_file_found_ = false;
};

// The models a harness may call: every available model of `registry`, with
// the provider `factory` makes for it (one per provider and API kind, shared
// by its models). Models whose API kind the factory cannot speak are left out.
Models make_models(const ModelRegistry& registry, const ProviderFactory& factory);

// Adds one model (an ad-hoc endpoint, say) to `models`. Error code:
// unsupported_api when the factory cannot speak its API kind.
Status add_model(Models& models, const ConfiguredModel& model, const ProviderFactory& factory);

}  // namespace cairn
