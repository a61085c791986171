// `cairn models`: the models cairn can call, where each is configured and
// whether its key is there. Keys are never shown: only the name of the
// variable that holds one.
#include <fmt/format.h>

#include "cairn/llm/model_catalog.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct ModelsOptions {
  bool json = false;
  bool all = false;
  std::string models_file;
};

// 1'048'576 -> "1.05M", 131'072 -> "131K": a window at a glance; --json has
// the exact figures.
std::string compact_tokens(std::int64_t tokens) {
  auto three_digits = [](double value) { return fmt::format("{:.3g}", value); };
  if (tokens >= 1'000'000) return three_digits(static_cast<double>(tokens) / 1e6) + "M";
  if (tokens >= 1'000) return three_digits(static_cast<double>(tokens) / 1e3) + "K";
  return std::to_string(tokens);
}

std::string price(double dollars) { return fmt::format("{:g}", dollars); }

std::string configured_where(const ConfiguredModel& model) {
  if (!model.overridden_by.empty()) return fmt::format("{}, changed in {}", model.origin, model.overridden_by);
  return model.origin;
}

std::string joined_words(const std::vector<std::string>& words, std::string_view separator) {
  std::string text;
  for (const auto& word : words) text += (text.empty() ? "" : std::string(separator)) + word;
  return text;
}

Json model_json(const ConfiguredModel& configured) {
  const Model& model = configured.model;
  Json key = {{"source", to_string(configured.key_source.kind)}};
  if (configured.key_source.kind == KeySource::Kind::environment) key["env"] = configured.key_source.env_var;
  key["present"] = configured.key_source.kind == KeySource::Kind::none ? false : !configured.api_key.empty();
  Json json = {
      {"provider", model.provider},
      {"id", model.id},
      {"api", model.api},
      {"baseUrl", model.base_url},
      {"contextWindow", model.context_window},
      {"maxTokens", model.max_tokens},
      {"reasoning", model.reasoning},
      {"input", model.input},
      {"cost",
       {{"input", model.prices.input},
        {"output", model.prices.output},
        {"cacheRead", model.prices.cache_read},
        {"cacheWrite", model.prices.cache_write}}},
      {"configured", configured.origin},
  };
  if (!configured.overridden_by.empty()) json["overriddenBy"] = configured.overridden_by;
  json["key"] = std::move(key);
  json["available"] = configured.available();
  return json;
}

void print_table(const std::vector<const ConfiguredModel*>& models) {
  std::vector<std::vector<std::string>> rows{
      {"MODEL", "API", "CONTEXT", "MAX OUT", "THINKS", "INPUT", "$/M IN", "OUT", "CACHE R", "CACHE W", "KEY",
       "CONFIGURED"}};
  for (const ConfiguredModel* configured : models) {
    const Model& model = configured->model;
    rows.push_back({configured->qualified_id(), model.api, compact_tokens(model.context_window),
                    compact_tokens(model.max_tokens), model.reasoning ? "yes" : "no", joined_words(model.input, ","),
                    price(model.prices.input), price(model.prices.output), price(model.prices.cache_read),
                    price(model.prices.cache_write), describe_key(*configured), configured_where(*configured)});
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i + 1 == row.size()) {
        line += row[i];
      } else {
        line += fmt::format("{:<{}}  ", row[i], widths[i]);
      }
    }
    print_untrusted(stdout, "{}\n", line);  // ids and names from models.json
  }
}

// With nothing callable, say how to make something callable.
void print_setup_hint(const ModelRegistry& registry) {
  std::vector<std::string> variables;
  for (const auto& provider : builtin_providers()) variables.push_back(provider.api_key_env);
  print_untrusted(
      stderr,
      "cairn: no model is available. Set one of {},\n"
      "  or describe a provider or a local server (Ollama, llama.cpp, vLLM, LM Studio) in {},\n"
      "  or name an endpoint with --api KIND --base-url URL --model ID. `cairn models --all` lists every "
      "known model.\n",
      joined_words(variables, ", "),
      registry.models_file() ? registry.models_file()->string() : std::string("~/.config/cairn/models.json"));
}

int run_models(const ModelsOptions& options) {
  std::optional<std::filesystem::path> file;
  if (!options.models_file.empty()) file = options.models_file;
  auto registry = ModelRegistry::load(file, process_environment());
  if (!registry) return report(kFailure, registry.error().message);

  std::vector<const ConfiguredModel*> shown;
  for (const auto& configured : registry->models()) {
    if (options.all || configured.available()) shown.push_back(&configured);
  }
  if (options.json) {
    for (const ConfiguredModel* configured : shown) fmt::print("{}\n", model_json(*configured).dump());
  } else if (!shown.empty()) {
    print_table(shown);
  }
  if (registry->available().empty()) print_setup_hint(*registry);
  return kOk;
}

}  // namespace

void register_models_command(CLI::App& app, Commands& commands) {
  auto [sub, options] = add_command(app, commands,
      "models", "List the models cairn can call: window, output limit, prices per million tokens, where each is "
                "configured and which environment variable holds its key (never the key)", run_models);
  sub->add_flag("--json", options->json, "Print each model as one JSON object per line");
  sub->add_flag("--all", options->all, "Include the models whose key is missing");
  sub->add_option("--models-file", options->models_file,
                  "Custom providers and overrides. Default: $XDG_CONFIG_HOME/cairn/models.json "
                  "($XDG_CONFIG_HOME defaults to ~/.config)")
      ->type_name("FILE");
}

}  // namespace cairn::cli
