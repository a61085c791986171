// The built-in model table. Every figure below was read from the provider's
// own documentation where it could be found (the source is named above each
// provider), checked on or before catalog_date(). Prices are dollars per
// million tokens at the standard tier for short prompts: several providers
// charge more past a prompt size (noted per provider), which a flat price
// cannot express. When a provider publishes no price for a token kind, the
// price is 0 and the comment says so.
#include "cairn/llm/model_catalog.hpp"

#include <algorithm>
#include <cstdint>

namespace cairn {
namespace {

constexpr bool kReasoning = true;
constexpr bool kNoReasoning = false;
constexpr bool kImages = true;
constexpr bool kTextOnly = false;

struct Row {
  const char* id;
  std::int64_t context_window;
  std::int64_t max_tokens;
  bool reasoning;
  bool images;
  ModelPrices prices;  // input, output, cache read, cache write
};

CatalogProvider provider(std::string name, std::string_view api, std::string base_url, std::string api_key_env,
                         const Json& compat, std::initializer_list<Row> rows) {
  CatalogProvider result{std::move(name), std::string(api), std::move(base_url), std::move(api_key_env), {}, {}};
  for (const Row& row : rows) {
    Model model;
    model.provider = result.name;
    model.id = row.id;
    model.api = result.api;
    model.context_window = row.context_window;
    model.max_tokens = row.max_tokens;
    model.reasoning = row.reasoning;
    model.input = row.images ? std::vector<std::string>{"text", "image"} : std::vector<std::string>{"text"};
    model.prices = row.prices;
    model.base_url = result.base_url;
    model.compat = compat;
    result.models.push_back(std::move(model));
  }
  return result;
}

std::vector<CatalogProvider> make_catalog() {
  std::vector<CatalogProvider> providers;

  // platform.claude.com/docs: models/overview, the per-model pages and
  // about-claude/pricing. Cache write is the 5-minute write (1-hour writes
  // cost more). Haiku 5.5's prices are for prompts up to 100k tokens; longer
  // prompts cost 5x. Sonnet 5.5's cache read was cut from $0.20 to $0.10 on
  // 2026-10-07. Opus 5 and Sonnet 5 are "legacy" (still served).
  providers.push_back(provider(
      "anthropic", kApiAnthropicMessages, "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", Json::object(),
      {
          // id                 context    max out  reasoning   input    in     out    cache r cache w
          {"claude-fable-5-1", 1'000'000, 128'000, kReasoning, kImages, {10.00, 50.00, 0.25, 12.50}},
          {"claude-opus-5-5", 1'000'000, 128'000, kReasoning, kImages, {4.00, 20.00, 0.20, 5.00}},
          {"claude-sonnet-5-5", 1'000'000, 128'000, kReasoning, kImages, {2.00, 10.00, 0.10, 2.50}},
          {"claude-haiku-5-5", 1'000'000, 128'000, kReasoning, kImages, {0.10, 0.50, 0.01, 0.125}},
          {"claude-opus-5", 1'000'000, 128'000, kReasoning, kImages, {5.00, 25.00, 0.50, 6.25}},
          {"claude-sonnet-5", 1'000'000, 128'000, kReasoning, kImages, {2.00, 10.00, 0.20, 2.50}},
          {"claude-haiku-4-5", 200'000, 64'000, kReasoning, kImages, {1.00, 5.00, 0.10, 1.25}},
      }));

  // developers.openai.com/api/docs/models/<id> and /pricing. The GPT-6
  // models take tool calls only through the Responses API. Prices are for
  // prompts up to 272k tokens (past that: 2x input and cache, 1.5x output).
  // Cache writes are 1.25x input (30-minute retention); GPT-6.2 Astra's
  // cached input ($0.40, "60% cheaper" than GPT-6 Astra's $1) and cache write
  // are derived from those published rules.
  providers.push_back(provider(
      "openai", kApiOpenAiResponses, "https://api.openai.com/v1", "OPENAI_API_KEY", Json::object(),
      {
          // id              context    max out  reasoning   input    in     out    cache r cache w
          {"gpt-6.2-astra", 1'050'000, 128'000, kReasoning, kImages, {8.00, 40.00, 0.40, 10.00}},
          {"gpt-6.2-sol", 1'050'000, 128'000, kReasoning, kImages, {2.00, 10.00, 0.10, 2.50}},
          {"gpt-6.1-sol", 1'050'000, 128'000, kReasoning, kImages, {2.00, 10.00, 0.10, 2.50}},
          {"gpt-6-astra", 1'050'000, 128'000, kReasoning, kImages, {10.00, 50.00, 1.00, 12.50}},
          {"gpt-6-luna", 1'050'000, 128'000, kReasoning, kImages, {0.10, 0.50, 0.01, 0.125}},
      }));

  // ai.google.dev/gemini-api/docs/openai (the OpenAI-compatible endpoint) and
  // the model pages. Prices are for prompts up to 200k tokens. Gemini 3.8
  // Flash's cache read ($0.075) is Google's 10%-of-input cached rate, not a
  // figure read from its page.
  providers.push_back(provider(
      "google", kApiOpenAiCompletions, "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY",
      Json{{"maxTokensField", "max_tokens"}},
      {
          // id                       context    max out reasoning   input    in    out    cache r cache w
          {"gemini-3.8-flash", 1'048'576, 65'536, kReasoning, kImages, {0.75, 3.75, 0.075, 0.00}},
          {"gemini-3.1-pro-preview", 1'048'576, 65'536, kReasoning, kImages, {2.00, 12.00, 0.20, 0.00}},
      }));

  // api-docs.deepseek.com/quick_start/pricing (checked 2026-11-15). Prices are
  // the peak-hour rates; off-peak rates are half. Cache misses cost the input
  // price, so there is no separate cache write price. Thinking is on by
  // default and streams as `reasoning_content`.
  providers.push_back(provider(
      "deepseek", kApiOpenAiCompletions, "https://api.deepseek.com", "DEEPSEEK_API_KEY",
      Json{{"maxTokensField", "max_tokens"}},
      {
          // id                context    max out  reasoning   input      in    out   cache r cache w
          {"deepseek-flash", 1'048'576, 393'216, kReasoning, kImages, {0.30, 1.20, 0.006, 0.00}},
          {"deepseek-v4-pro", 1'048'576, 393'216, kReasoning, kTextOnly, {1.32, 3.96, 0.044, 0.00}},
      }));

  // console.groq.com/docs/models (production models). Groq publishes no
  // cache prices for these models.
  providers.push_back(provider(
      "groq", kApiOpenAiCompletions, "https://api.groq.com/openai/v1", "GROQ_API_KEY",
      Json{{"maxTokensField", "max_completion_tokens"}},
      {
          // id                         context  max out reasoning     input      in     out   cache r cache w
          {"openai/gpt-oss-120b", 131'072, 65'536, kReasoning, kTextOnly, {0.15, 0.60, 0.00, 0.00}},
          {"openai/gpt-oss-20b", 131'072, 65'536, kReasoning, kTextOnly, {0.075, 0.30, 0.00, 0.00}},
          {"llama-3.3-70b-versatile", 131'072, 32'768, kNoReasoning, kTextOnly, {0.59, 0.79, 0.00, 0.00}},
      }));

  // docs.mistral.ai/models (Mistral Medium 3.5, April 2026: the merged
  // instruct/reasoning/coding model). Its maximum output is from the Vercel
  // AI Gateway's listing; Mistral's page does not state one.
  providers.push_back(provider(
      "mistral", kApiOpenAiCompletions, "https://api.mistral.ai/v1", "MISTRAL_API_KEY",
      Json{{"maxTokensField", "max_tokens"}},
      {
          // id                  context  max out  reasoning   input    in    out   cache r cache w
          {"mistral-medium-3.5", 262'144, 256'000, kReasoning, kImages, {1.50, 7.50, 0.00, 0.00}},
      }));

  // openrouter.ai/<id>: OpenRouter bills the serving provider's prices, so
  // these mirror the providers' own rows above.
  providers.push_back(provider(
      "openrouter", kApiOpenAiCompletions, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
      Json{{"maxTokensField", "max_tokens"}},
      {
          // id                            context    max out  reasoning   input    in    out    cache r cache w
          {"anthropic/claude-opus-5.5", 1'000'000, 128'000, kReasoning, kImages, {4.00, 20.00, 0.20, 5.00}},
          {"google/gemini-3.8-flash", 1'048'576, 65'536, kReasoning, kImages, {0.75, 3.75, 0.075, 0.00}},
          {"mistralai/mistral-medium-3-5", 262'144, 256'000, kReasoning, kImages, {1.50, 7.50, 0.00, 0.00}},
      }));

  // docs.x.ai/developers/grok-4-7. xAI states no output limit apart from the
  // context window, and its page shows no cached-input price.
  providers.push_back(provider("xai", kApiOpenAiCompletions, "https://api.x.ai/v1", "XAI_API_KEY", Json::object(),
                               {
                                   // id     context  max out  reasoning   input    in    out   cache r cache w
                                   {"grok-4.7", 500'000, 500'000, kReasoning, kImages, {2.00, 6.00, 0.00, 0.00}},
                               }));

  // inference-docs.cerebras.ai/models (paid tier; the free tier allows 65k
  // tokens of context). The maximum output is the 32k Cerebras has listed for
  // this model.
  providers.push_back(provider(
      "cerebras", kApiOpenAiCompletions, "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY",
      Json{{"maxTokensField", "max_completion_tokens"}},
      {
          // id            context  max out reasoning   input      in    out   cache r cache w
          {"gpt-oss-120b", 131'072, 32'768, kReasoning, kTextOnly, {0.35, 0.75, 0.00, 0.00}},
      }));

  return providers;
}

}  // namespace

const std::vector<std::string_view>& known_apis() {
  static const std::vector<std::string_view> apis{kApiOpenAiCompletions, kApiOpenAiResponses, kApiAnthropicMessages};
  return apis;
}

bool is_known_api(std::string_view api) {
  const auto& apis = known_apis();
  return std::find(apis.begin(), apis.end(), api) != apis.end();
}

const std::vector<CatalogProvider>& builtin_providers() {
  static const std::vector<CatalogProvider> catalog = make_catalog();
  return catalog;
}

const CatalogProvider* find_builtin_provider(std::string_view name) {
  for (const auto& candidate : builtin_providers()) {
    if (candidate.name == name) return &candidate;
  }
  return nullptr;
}

std::string_view catalog_date() { return "2026-11-18"; }

}  // namespace cairn
