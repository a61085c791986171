// The built-in table is data typed by hand from the providers' pages: these
// checks catch the typing mistakes (a duplicated id, a window in the wrong
// unit, a cache price above the input price, an API kind nobody speaks).
#include "cairn/llm/model_catalog.hpp"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>

namespace cairn {
namespace {

TEST(ModelCatalog, HasTheMajorProvidersWithTheirKeyVariables) {
  const std::map<std::string, std::string> expected{
      {"anthropic", "ANTHROPIC_API_KEY"}, {"openai", "OPENAI_API_KEY"},         {"google", "GEMINI_API_KEY"},
      {"deepseek", "DEEPSEEK_API_KEY"},   {"groq", "GROQ_API_KEY"},             {"mistral", "MISTRAL_API_KEY"},
      {"openrouter", "OPENROUTER_API_KEY"}, {"xai", "XAI_API_KEY"},           {"cerebras", "CEREBRAS_API_KEY"},
  };
  std::map<std::string, std::string> found;
  for (const auto& provider : builtin_providers()) found[provider.name] = provider.api_key_env;
  EXPECT_EQ(found, expected);
  EXPECT_EQ(find_builtin_provider("anthropic")->api, kApiAnthropicMessages);
  EXPECT_EQ(find_builtin_provider("anthropic")->base_url, "https://api.anthropic.com/v1");
  EXPECT_EQ(find_builtin_provider("openai")->base_url, "https://api.openai.com/v1");
  EXPECT_EQ(find_builtin_provider("nobody"), nullptr);
}

TEST(ModelCatalog, ProvidersAreWellFormed) {
  std::set<std::string> names;
  for (const auto& provider : builtin_providers()) {
    SCOPED_TRACE(provider.name);
    EXPECT_TRUE(names.insert(provider.name).second) << "duplicate provider";
    EXPECT_FALSE(provider.name.empty());
    EXPECT_EQ(provider.name.find('/'), std::string::npos);
    EXPECT_TRUE(is_known_api(provider.api));
    EXPECT_TRUE(provider.base_url.starts_with("https://"));
    EXPECT_FALSE(provider.base_url.ends_with("/"));
    EXPECT_TRUE(std::regex_match(provider.api_key_env, std::regex("[A-Z][A-Z0-9_]*_API_KEY")));
    EXPECT_FALSE(provider.models.empty());
  }
}

TEST(ModelCatalog, ModelsAreUniqueAndPlausible) {
  std::set<std::string> ids;
  std::size_t count = 0;
  for (const auto& provider : builtin_providers()) {
    for (const Model& model : provider.models) {
      ++count;
      SCOPED_TRACE(model.provider + "/" + model.id);
      EXPECT_TRUE(ids.insert(model.provider + "/" + model.id).second) << "duplicate model";
      EXPECT_FALSE(model.id.empty());
      EXPECT_EQ(model.provider, provider.name);
      EXPECT_EQ(model.api, provider.api);
      EXPECT_EQ(model.base_url, provider.base_url);
      EXPECT_TRUE(is_known_api(model.api));

      // Windows in tokens, not thousands of tokens; output fits the window.
      EXPECT_GE(model.context_window, 32'000);
      EXPECT_LE(model.context_window, 10'000'000);
      EXPECT_GE(model.max_tokens, 4'096);
      EXPECT_LE(model.max_tokens, model.context_window);

      ASSERT_FALSE(model.input.empty());
      EXPECT_EQ(model.input.front(), "text");
      for (const auto& kind : model.input) EXPECT_TRUE(kind == "text" || kind == "image") << kind;

      // Every model in the table has published input and output prices; a
      // cache hit never costs more than a fresh input token.
      EXPECT_GT(model.prices.input, 0);
      EXPECT_GT(model.prices.output, 0);
      EXPECT_GE(model.prices.cache_read, 0);
      EXPECT_LE(model.prices.cache_read, model.prices.input);
      EXPECT_GE(model.prices.cache_write, 0);
      EXPECT_LT(model.prices.output, 1000) << "dollars per million tokens";

      ASSERT_TRUE(model.compat.is_object());
      if (model.compat.contains("maxTokensField")) {
        const auto field = model.compat["maxTokensField"].get<std::string>();
        EXPECT_TRUE(field == "max_tokens" || field == "max_completion_tokens") << field;
      }
      // Every quirk is one the openai-completions provider reads
      // (openai_completions.hpp): a key nothing reads would claim a
      // behaviour that does not exist.
      for (const auto& [key, value] : model.compat.items()) {
        static const std::set<std::string> kRead = {
            "maxTokensField", "supportsUsageInStreaming", "supportsStore", "supportsDeveloperRole",
            "supportsReasoningEffort", "thinkingFormat", "supportsXhigh", "requiresToolResultName",
            "requiresAssistantAfterToolResult", "requiresThinkingAsText", "requiresMistralToolIds"};
        EXPECT_TRUE(kRead.contains(key)) << model.provider << "/" << model.id << ": " << key;
      }
      // Quirks are a chat-completions matter.
      if (model.api != kApiOpenAiCompletions) {
        EXPECT_TRUE(model.compat.empty());
      }
    }
  }
  EXPECT_GE(count, 20u);
}

TEST(ModelCatalog, KnownApisAndDate) {
  EXPECT_TRUE(is_known_api("openai-completions"));
  EXPECT_TRUE(is_known_api("openai-responses"));
  EXPECT_TRUE(is_known_api("anthropic-messages"));
  EXPECT_FALSE(is_known_api("faux"));
  EXPECT_FALSE(is_known_api("OpenAI-Completions"));
  EXPECT_TRUE(std::regex_match(std::string(catalog_date()), std::regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]")));
}

}  // namespace
}  // namespace cairn
