// Resolution: the built-in table with models.json over it, keys from the
// environment or the file, lookups, ad-hoc endpoints, and the Models registry
// made with a provider factory (a fake here: the wire providers are tested
// on their own).
#include "cairn/llm/model_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "cairn/llm/model_catalog.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

constexpr const char* kRegistryModelsPath = "/cfg/cairn/models.json";
constexpr const char* kRegistryAnthropicKey = "sk-ant-SECRET-registry-0001";
constexpr const char* kRegistryFileKey = "sk-SECRET-registry-file-0002";

EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

ModelsFile file_of(const std::string& text) {
  auto file = parse_models_file(text, kRegistryModelsPath);
  EXPECT_TRUE(file) << file.error().message;
  return file ? *file : ModelsFile{};
}

const ConfiguredModel& find(const ModelRegistry& registry, std::string_view spec) {
  auto found = registry.find(spec);
  EXPECT_TRUE(found) << found.error().message;
  static const ConfiguredModel none{};
  return found ? **found : none;
}

std::size_t builtin_model_count() {
  std::size_t count = 0;
  for (const auto& provider : builtin_providers()) count += provider.models.size();
  return count;
}

class FakeProvider : public Provider {
 public:
  FakeProvider(std::string api, std::string key) : api(std::move(api)), key(std::move(key)) {}
  ProviderResponse stream(const Model&, const LlmContext&, const StreamOptions&, const PayloadHook&,
                          const ProviderEventSink&, std::stop_token) override {
    return {};
  }
  std::string api, key;
};

struct FakeFactory {
  std::vector<std::pair<std::string, std::string>> calls;
  std::set<std::string> speaks{"openai-completions", "openai-responses", "anthropic-messages"};
  ProviderFactory factory() {
    return [this](const std::string& api, std::string key) -> std::shared_ptr<Provider> {
      calls.emplace_back(api, key);
      if (!speaks.contains(api)) return nullptr;
      return std::make_shared<FakeProvider>(api, std::move(key));
    };
  }
};

TEST(ModelRegistry, BuiltInModelsNeedTheirProvidersKey) {
  auto registry = ModelRegistry::build(nullptr, env_of({}));
  EXPECT_EQ(registry.models().size(), builtin_model_count());
  EXPECT_TRUE(registry.available().empty());
  for (const auto& configured : registry.models()) {
    SCOPED_TRACE(configured.qualified_id());
    EXPECT_EQ(configured.origin, "built-in");
    EXPECT_TRUE(configured.overridden_by.empty());
    EXPECT_EQ(configured.key_source.kind, KeySource::Kind::environment);
    EXPECT_EQ(configured.key_source.env_var, find_builtin_provider(configured.model.provider)->api_key_env);
    EXPECT_FALSE(configured.available());
  }
  EXPECT_EQ(describe_key(find(registry, "anthropic/claude-opus-5-5")), "ANTHROPIC_API_KEY (not set)");
}

TEST(ModelRegistry, AKeyInTheEnvironmentMakesItsProviderAvailable) {
  auto registry = ModelRegistry::build(nullptr, env_of({{"ANTHROPIC_API_KEY", kRegistryAnthropicKey}, {"OPENAI_API_KEY", ""}}));
  const auto available = registry.available();
  ASSERT_EQ(available.size(), find_builtin_provider("anthropic")->models.size());
  for (const auto* configured : available) EXPECT_EQ(configured->model.provider, "anthropic");
  const auto& opus = find(registry, "anthropic/claude-opus-5-5");
  EXPECT_EQ(opus.api_key.reveal(), kRegistryAnthropicKey);
  EXPECT_EQ(describe_key(opus), "ANTHROPIC_API_KEY (set)");
  // An empty variable is no key.
  EXPECT_FALSE(find(registry, "openai/gpt-6.2-sol").available());
}

TEST(ModelRegistry, ModelsJsonOverridesABuiltInProviderAndAddsModels) {
  const ModelsFile file = file_of(R"({"providers": {"anthropic": {
      "baseUrl": "https://proxy.example/anthropic/v1",
      "apiKeyEnv": "WORK_ANTHROPIC_KEY",
      "headers": {"X-Team": "infra"},
      "models": [
        {"id": "claude-opus-5-5", "maxTokens": 64000, "cost": {"cacheRead": 0.3}},
        {"id": "claude-next-preview", "contextWindow": 500000, "reasoning": true}
      ]}}})");
  auto registry =
      ModelRegistry::build(&file, env_of({{"ANTHROPIC_API_KEY", "unused"}, {"WORK_ANTHROPIC_KEY", kRegistryAnthropicKey}}));
  EXPECT_EQ(registry.models().size(), builtin_model_count() + 1);

  const auto& opus = find(registry, "anthropic/claude-opus-5-5");
  EXPECT_EQ(opus.model.base_url, "https://proxy.example/anthropic/v1");
  EXPECT_EQ(opus.model.headers.at("X-Team"), "infra");
  EXPECT_EQ(opus.model.max_tokens, 64000);
  EXPECT_EQ(opus.model.context_window, 1'000'000) << "what the file leaves out stays built-in";
  EXPECT_EQ(opus.model.prices.cache_read, 0.3);
  EXPECT_EQ(opus.model.prices.input, 4.00);
  EXPECT_EQ(opus.origin, "built-in");
  EXPECT_EQ(opus.overridden_by, kRegistryModelsPath);
  EXPECT_EQ(opus.key_source.env_var, "WORK_ANTHROPIC_KEY");
  EXPECT_EQ(opus.api_key.reveal(), kRegistryAnthropicKey);

  // The provider-level change reaches every model of the provider.
  const auto& sonnet = find(registry, "claude-sonnet-5-5");
  EXPECT_EQ(sonnet.model.base_url, "https://proxy.example/anthropic/v1");
  EXPECT_EQ(sonnet.overridden_by, kRegistryModelsPath);
  EXPECT_EQ(sonnet.model.max_tokens, 128'000);

  const auto& added = find(registry, "anthropic/claude-next-preview");
  EXPECT_EQ(added.origin, kRegistryModelsPath);
  EXPECT_TRUE(added.overridden_by.empty());
  EXPECT_EQ(added.model.api, kApiAnthropicMessages);
  EXPECT_EQ(added.model.base_url, "https://proxy.example/anthropic/v1");
  EXPECT_EQ(added.model.context_window, 500000);
  EXPECT_EQ(added.model.max_tokens, 16'384);
  EXPECT_TRUE(added.model.reasoning);
  EXPECT_EQ(added.model.input, (std::vector<std::string>{"text"}));
  EXPECT_TRUE(added.available());

  // Other providers are untouched.
  const auto& gpt = find(registry, "openai/gpt-6.2-sol");
  EXPECT_EQ(gpt.origin, "built-in");
  EXPECT_TRUE(gpt.overridden_by.empty());
}

TEST(ModelRegistry, CompatMergesKeyByKeyOverTheBuiltInQuirks) {
  const ModelsFile file = file_of(R"({"providers": {"deepseek": {"models": [
      {"id": "deepseek-flash", "compat": {"supportsDeveloperRole": true, "strictTools": true}}]}}})");
  auto registry = ModelRegistry::build(&file, env_of({}));
  const auto& flash = find(registry, "deepseek/deepseek-flash");
  EXPECT_EQ(flash.model.compat["maxTokensField"], "max_tokens");  // the built-in quirk stays
  EXPECT_EQ(flash.model.compat["supportsDeveloperRole"], true);
  EXPECT_EQ(flash.model.compat["strictTools"], true);
  // A provider-only entry without changes is no override.
  const ModelsFile empty_entry = file_of(R"({"providers": {"groq": {}}})");
  auto plain = ModelRegistry::build(&empty_entry, env_of({}));
  EXPECT_TRUE(find(plain, "groq/llama-3.3-70b-versatile").overridden_by.empty());
}

TEST(ModelRegistry, CustomProvidersTakeTheirKeyFromTheFileTheEnvironmentOrNeedNone) {
  const ModelsFile file = file_of(std::string(R"({"providers": {
      "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                 "models": [{"id": "qwen3:32b", "contextWindow": 40960}]},
      "vllm": {"baseUrl": "http://gpu:8000/v1", "api": "openai-completions", "apiKey": ")") +
                                  kRegistryFileKey + R"(",
               "headers": {"X-Route": "a"}, "models": [{"id": "big", "headers": {"X-Route": "b"}}]},
      "work": {"baseUrl": "https://llm.work/v1", "api": "openai-responses", "apiKeyEnv": "WORK_KEY",
               "models": [{"id": "house-model"}]}}})");
  auto registry = ModelRegistry::build(&file, env_of({}));
  EXPECT_EQ(registry.models().size(), builtin_model_count() + 3);
  EXPECT_EQ(registry.models().back().qualified_id(), "work/house-model") << "file order after the table";

  const auto& qwen = find(registry, "ollama/qwen3:32b");
  EXPECT_EQ(qwen.origin, kRegistryModelsPath);
  EXPECT_EQ(qwen.model.api, "openai-completions");
  EXPECT_EQ(qwen.model.base_url, "http://localhost:11434/v1");
  EXPECT_EQ(qwen.model.context_window, 40960);
  EXPECT_EQ(qwen.model.max_tokens, 16'384);
  EXPECT_EQ(qwen.model.prices.input, 0);
  EXPECT_EQ(qwen.key_source.kind, KeySource::Kind::none);
  EXPECT_TRUE(qwen.available());
  EXPECT_EQ(describe_key(qwen), "not needed");

  const auto& big = find(registry, "vllm/big");
  EXPECT_EQ(big.key_source.kind, KeySource::Kind::models_file);
  EXPECT_EQ(big.api_key.reveal(), kRegistryFileKey);
  EXPECT_EQ(describe_key(big), "apiKey in models.json");
  EXPECT_EQ(big.model.headers.at("X-Route"), "b") << "a model's headers win over its provider's";
  EXPECT_TRUE(big.available());

  const auto& house = find(registry, "house-model");
  EXPECT_EQ(house.key_source.env_var, "WORK_KEY");
  EXPECT_FALSE(house.available());
  EXPECT_EQ(describe_key(house), "WORK_KEY (not set)");
  auto with_key = ModelRegistry::build(&file, env_of({{"WORK_KEY", "k"}}));
  EXPECT_TRUE(find(with_key, "work/house-model").available());
}

TEST(ModelRegistry, FindsByProviderAndIdOrByAnUnambiguousId) {
  const ModelsFile file = file_of(R"({"providers": {"local": {"baseUrl": "http://h/v1", "api": "openai-completions",
      "models": [{"id": "gpt-oss-120b"}]}}})");
  auto registry = ModelRegistry::build(&file, env_of({}));
  EXPECT_EQ(find(registry, "anthropic/claude-opus-5-5").model.id, "claude-opus-5-5");
  EXPECT_EQ(find(registry, "gpt-6.2-astra").model.provider, "openai");
  // Ids with a '/' of their own.
  EXPECT_EQ(find(registry, "openrouter/anthropic/claude-opus-5.5").model.provider, "openrouter");
  EXPECT_EQ(find(registry, "anthropic/claude-opus-5.5").model.provider, "openrouter");
  EXPECT_EQ(find(registry, "groq/openai/gpt-oss-120b").model.provider, "groq");
  EXPECT_EQ(find(registry, "cerebras/gpt-oss-120b").model.provider, "cerebras");

  auto ambiguous = registry.find("gpt-oss-120b");
  ASSERT_FALSE(ambiguous);
  EXPECT_EQ(ambiguous.error().code, "ambiguous_model");
  EXPECT_NE(ambiguous.error().message.find("cerebras/gpt-oss-120b"), std::string::npos) << ambiguous.error().message;
  EXPECT_NE(ambiguous.error().message.find("local/gpt-oss-120b"), std::string::npos) << ambiguous.error().message;
}

TEST(ModelRegistry, AnUnknownModelListsCloseMatches) {
  auto registry = ModelRegistry::build(nullptr, env_of({}));
  for (const char* typo : {"claude-opus-55", "anthropic/claude-opus-5.5x", "Claude-Opus-5-5", "opus-5-5"}) {
    auto found = registry.find(typo);
    ASSERT_FALSE(found) << typo;
    EXPECT_EQ(found.error().code, "unknown_model");
    EXPECT_NE(found.error().message.find("did you mean"), std::string::npos) << found.error().message;
    EXPECT_NE(found.error().message.find("anthropic/claude-opus-5-5"), std::string::npos) << found.error().message;
  }
  auto nothing = registry.find("zzzzzzzzzzzzzzzzzzzz");
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code, "unknown_model");
  EXPECT_EQ(nothing.error().message.find("did you mean"), std::string::npos);
  EXPECT_NE(nothing.error().message.find("cairn models --all"), std::string::npos);
  // The suggestions stay few.
  auto vague = registry.find("gpt");
  ASSERT_FALSE(vague);
  EXPECT_LE(std::count(vague.error().message.begin(), vague.error().message.end(), ','), 4);
}

TEST(ModelRegistry, AdHocEndpoints) {
  auto registry = ModelRegistry::build(nullptr, env_of({}));

  auto local = registry.ad_hoc({"openai-completions", "http://localhost:8080/v1/", "qwen3-coder", std::nullopt});
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->qualified_id(), "custom/qwen3-coder");
  EXPECT_EQ(local->model.base_url, "http://localhost:8080/v1");
  EXPECT_EQ(local->model.context_window, 128'000);
  EXPECT_EQ(local->model.max_tokens, 16'384);
  EXPECT_EQ(local->origin, "command line");
  EXPECT_EQ(local->key_source.kind, KeySource::Kind::none);
  EXPECT_TRUE(local->available());

  // A known model at its own base URL keeps its figures.
  auto known = registry.ad_hoc({"openai-completions", "https://api.deepseek.com/", "deepseek-flash", "k-123"});
  ASSERT_TRUE(known) << known.error().message;
  EXPECT_EQ(known->model.context_window, 1'048'576);
  EXPECT_EQ(known->model.prices.output, 1.20);
  EXPECT_EQ(known->model.compat["maxTokensField"], "max_tokens");
  EXPECT_EQ(known->model.provider, "custom");
  EXPECT_EQ(known->key_source.kind, KeySource::Kind::command_line);
  EXPECT_EQ(known->api_key.reveal(), "k-123");
  EXPECT_EQ(describe_key(*known), "--api-key");

  const std::string secret_url = "https://user:pa55-SECRET@h/v1";
  for (const AdHocEndpoint& bad : std::vector<AdHocEndpoint>{
           {"grpc", "http://h/v1", "m", std::nullopt},
           {"openai-completions", "h/v1", "m", std::nullopt},
           {"openai-completions", "ftp" + secret_url.substr(5), "m", std::nullopt},
           {"openai-completions", "http://h/v1", "", std::nullopt},
           {"openai-completions", "http://h/v1", "m", std::nullopt, "a/b"},
       }) {
    auto made = registry.ad_hoc(bad);
    ASSERT_FALSE(made) << bad.api << " " << bad.model_id;
    EXPECT_EQ(made.error().code, "invalid_argument");
    EXPECT_EQ(made.error().message.find("SECRET"), std::string::npos);
  }
}

TEST(ModelRegistry, MakeModelsGivesEachAvailableModelItsProvider) {
  const ModelsFile file = file_of(R"({"providers": {
      "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                 "models": [{"id": "a"}, {"id": "b"}]}}})");
  auto registry = ModelRegistry::build(&file, env_of({{"ANTHROPIC_API_KEY", kRegistryAnthropicKey}}));
  FakeFactory fake;
  Models models = make_models(registry, fake.factory());

  const auto listed = models.list();
  EXPECT_EQ(listed.size(), find_builtin_provider("anthropic")->models.size() + 2);
  const auto* opus = models.find("anthropic", "claude-opus-5-5");
  ASSERT_NE(opus, nullptr);
  auto* provider = dynamic_cast<FakeProvider*>(opus->provider.get());
  ASSERT_NE(provider, nullptr);
  EXPECT_EQ(provider->api, "anthropic-messages");
  EXPECT_EQ(provider->key, kRegistryAnthropicKey);
  EXPECT_EQ(models.find("openai", "gpt-6.2-sol"), nullptr) << "no key, not callable";

  // One provider object per provider and API kind.
  EXPECT_EQ(models.find("anthropic", "claude-haiku-5-5")->provider, opus->provider);
  EXPECT_EQ(models.find("ollama", "a")->provider, models.find("ollama", "b")->provider);
  EXPECT_EQ(dynamic_cast<FakeProvider*>(models.find("ollama", "a")->provider.get())->key, "");
  EXPECT_EQ(fake.calls.size(), 2u);

  // A kind the factory cannot speak leaves its models out.
  FakeFactory partial;
  partial.speaks = {"openai-completions"};
  Models some = make_models(registry, partial.factory());
  EXPECT_EQ(some.find("anthropic", "claude-opus-5-5"), nullptr);
  EXPECT_NE(some.find("ollama", "a"), nullptr);

  // An ad-hoc endpoint joins through add_model.
  auto ad_hoc = registry.ad_hoc({"openai-responses", "http://h/v1", "m", "key-1"});
  ASSERT_TRUE(ad_hoc);
  ASSERT_TRUE(add_model(models, *ad_hoc, fake.factory()));
  EXPECT_EQ(dynamic_cast<FakeProvider*>(models.find("custom", "m")->provider.get())->key, "key-1");
  auto refused = add_model(some, *ad_hoc, partial.factory());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "unsupported_api");
  EXPECT_EQ(refused.error().message.find("key-1"), std::string::npos);
}

TEST(ModelRegistry, LoadReadsTheDefaultFileAndReportsItsErrors) {
  testing::TempDir dir;
  const auto config = dir.path() / "config";
  auto env = env_of({{"XDG_CONFIG_HOME", config.string()}, {"ANTHROPIC_API_KEY", kRegistryAnthropicKey}});

  auto without = ModelRegistry::load(std::nullopt, env);
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_EQ(without->models_file(), config / "cairn" / "models.json");
  EXPECT_FALSE(without->models_file_found());
  EXPECT_EQ(without->models().size(), builtin_model_count());

  std::filesystem::create_directories(config / "cairn");
  std::ofstream(config / "cairn" / "models.json")
      << R"({"providers": {"ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",)"
      << R"( "models": [{"id": "qwen3:32b"}]}}})";
  auto with = ModelRegistry::load(std::nullopt, env);
  ASSERT_TRUE(with) << with.error().message;
  EXPECT_TRUE(with->models_file_found());
  EXPECT_EQ(find(*with, "ollama/qwen3:32b").origin, (config / "cairn" / "models.json").string());

  const auto other = dir.path() / "other.json";
  std::ofstream(other) << R"({"providers": {"anthropic": {"apiKey": ")" << kRegistryFileKey << R"(", "models": 3}}})";
  auto broken = ModelRegistry::load(other, env);
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, "invalid_config");
  EXPECT_TRUE(broken.error().message.starts_with(other.string() + ": providers.anthropic.models: "))
      << broken.error().message;
  EXPECT_EQ(broken.error().message.find(kRegistryFileKey), std::string::npos);
  EXPECT_EQ(broken.error().message.find(kRegistryAnthropicKey), std::string::npos);

  // A file named on purpose must exist; only the default may be absent.
  auto absent = ModelRegistry::load(dir.path() / "absent.json", env);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code, "io_error");
  EXPECT_EQ(absent.error().message, (dir.path() / "absent.json").string() + " does not exist");
}

}  // namespace
}  // namespace cairn
