// models.json parsing: the accepted shape, and every way a file can be wrong,
// each reported with the file, the JSON path and what was expected — and
// never with a value from the file, since any value may be a key.
#include "cairn/llm/models_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace cairn {
namespace {

constexpr const char* kModelsPath = "/home/u/.config/cairn/models.json";
constexpr const char* kSecret = "sk-SECRET-models-file-7f3a";

TEST(ModelsFile, ParsesProvidersModelsAndOverrides) {
  const std::string text = R"({
    "providers": {
      "ollama": {
        "baseUrl": "http://localhost:11434/v1/",
        "api": "openai-completions",
        "apiKey": "ollama",
        "headers": {"X-Client": "cairn"},
        "models": [
          {"id": "qwen3:32b", "name": "Qwen 3 32B", "contextWindow": 40960, "maxTokens": 8192,
           "reasoning": true, "input": ["text", "image"],
           "cost": {"input": 0, "output": 0.5, "cacheRead": 0.1, "cacheWrite": 0.2},
           "compat": {"maxTokensField": "max_tokens"}, "headers": {"X-Model": "q"}},
          {"id": "llama3"}
        ]
      },
      "anthropic": {"apiKeyEnv": "WORK_ANTHROPIC_KEY"}
    }
  })";
  auto file = parse_models_file(text, kModelsPath);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->path, kModelsPath);
  ASSERT_EQ(file->providers.size(), 2u);

  const ProviderEntry& ollama = file->providers[0];
  EXPECT_EQ(ollama.name, "ollama");
  EXPECT_EQ(ollama.base_url, "http://localhost:11434/v1");  // trailing '/' dropped
  EXPECT_EQ(ollama.api, "openai-completions");
  EXPECT_EQ(ollama.api_key, "ollama");
  EXPECT_FALSE(ollama.api_key_env);
  EXPECT_EQ(ollama.headers.at("X-Client"), "cairn");
  ASSERT_EQ(ollama.models.size(), 2u);
  const ModelEntry& qwen = ollama.models[0];
  EXPECT_EQ(qwen.id, "qwen3:32b");
  EXPECT_EQ(qwen.context_window, 40960);
  EXPECT_EQ(qwen.max_tokens, 8192);
  EXPECT_EQ(qwen.reasoning, true);
  EXPECT_EQ(qwen.input, (std::vector<std::string>{"text", "image"}));
  EXPECT_EQ(qwen.cost_input, 0.0);
  EXPECT_EQ(qwen.cost_output, 0.5);
  EXPECT_EQ(qwen.cost_cache_read, 0.1);
  EXPECT_EQ(qwen.cost_cache_write, 0.2);
  EXPECT_EQ(qwen.compat, (Json{{"maxTokensField", "max_tokens"}}));
  EXPECT_EQ(qwen.headers.at("X-Model"), "q");
  // What the file leaves out stays absent, so an override changes only
  // what it names.
  const ModelEntry& llama = ollama.models[1];
  EXPECT_FALSE(llama.context_window || llama.max_tokens || llama.reasoning || llama.input || llama.cost_input ||
               llama.compat);

  const ProviderEntry& anthropic = file->providers[1];
  EXPECT_EQ(anthropic.api_key_env, "WORK_ANTHROPIC_KEY");
  EXPECT_FALSE(anthropic.base_url || anthropic.api || anthropic.api_key);
  EXPECT_TRUE(anthropic.models.empty());
}

TEST(ModelsFile, AnEmptyConfigurationIsFine) {
  for (const char* text : {"{}", R"({"providers": {}})"}) {
    auto file = parse_models_file(text, kModelsPath);
    ASSERT_TRUE(file) << file.error().message;
    EXPECT_TRUE(file->providers.empty());
  }
}

struct BadFile {
  std::string text;
  std::string where;  // the JSON path the message must name ("" for the file itself)
  std::string what;   // words the message must contain
};

// Each document carries the secret somewhere, often as the offending value.
std::vector<BadFile> bad_files() {
  const std::string s = kSecret;
  auto custom = [&](const std::string& fields) {
    return R"({"providers": {"local": {"baseUrl": "http://localhost:8080/v1", "api": "openai-completions", "apiKey": ")" +
           s + "\", " + fields + "}}}";
  };
  auto model = [&](const std::string& fields) { return custom(R"("models": [{"id": "m", )" + fields + "}]"); };
  return {
      // The file itself.
      {R"({"providers": {"x": {"apiKey": ")" + s + R"(" oops}}})", "", "not valid JSON at line 1"},
      {"{\n  \"providers\": {\n    \"x\": {\"apiKey\": \"" + s + "\",\n", "", "ends too soon"},
      {"[\"" + s + "\"]", "", "expected an object"},
      {R"({"provider": {}, "k": ")" + s + "\"}", "provider", "unknown field"},
      {R"({"providers": [")" + s + "\"]}", "providers", "expected an object of providers by name, found array"},
      // Providers.
      {R"({"providers": {"a/b": {}}})", "providers[\"a/b\"]", "cannot contain '/'"},
      {R"({"providers": {"": {}}})", "providers[\"\"]", "cannot be empty"},
      {R"({"providers": {"local": ")" + s + "\"}}", "providers.local", "expected an object, found string"},
      {custom(R"("baseURL": ")" + s + "\""), "providers.local.baseURL", "unknown field (known: baseUrl"},
      {R"({"providers": {"local": {"baseUrl": 8080}}})", "providers.local.baseUrl", "expected a string, found number"},
      {R"({"providers": {"local": {"baseUrl": ""}}})", "providers.local.baseUrl", "must not be empty"},
      {R"({"providers": {"local": {"baseUrl": "ftp://)" + s + "@host\"}}}", "providers.local.baseUrl",
       "http:// or https://"},
      {R"({"providers": {"local": {"baseUrl": "http://h", "api": "grpc"}}})", "providers.local.api",
       "unknown API kind (known: openai-completions, openai-responses, anthropic-messages)"},
      {R"({"providers": {"local": {"api": ["openai-completions"]}}})", "providers.local.api", "expected a string"},
      {R"({"providers": {"anthropic": {"apiKey": ")" + s + R"(", "apiKeyEnv": "K"}}})", "providers.anthropic",
       "either apiKey or apiKeyEnv"},
      {R"({"providers": {"anthropic": {"apiKey": 12345}}})", "providers.anthropic.apiKey", "expected a string"},
      {R"({"providers": {"anthropic": {"apiKey": ""}}})", "providers.anthropic.apiKey", "must not be empty"},
      {R"({"providers": {"anthropic": {"apiKeyEnv": ")" + s + "\"}}}", "providers.anthropic.apiKeyEnv",
       "not the key itself"},
      {R"({"providers": {"anthropic": {"headers": [")" + s + "\"]}}}", "providers.anthropic.headers",
       "expected an object"},
      {R"({"providers": {"anthropic": {"headers": {"Authorization": [")" + s + "\"]}}}}",
       "providers.anthropic.headers.Authorization", "expected a string, found array"},
      {R"({"providers": {"anthropic": {"headers": {"": ")" + s + "\"}}}}", "providers.anthropic.headers[\"\"]",
       "header name cannot be empty"},
      // A provider cairn does not know must be complete.
      {R"({"providers": {"local": {"api": "openai-completions", "models": [{"id": "m"}]}}})", "providers.local",
       "needs baseUrl"},
      {R"({"providers": {"local": {"baseUrl": "http://h", "models": [{"id": "m"}]}}})", "providers.local",
       "needs api"},
      {custom(R"("models": [])"), "providers.local", "at least one model"},
      // Models.
      {custom(R"("models": {"id": "m"})"), "providers.local.models", "expected an array of models, found object"},
      {custom(R"("models": [")" + s + "\"]"), "providers.local.models[0]", "expected an object, found string"},
      {custom(R"("models": [{"contextWindow": 1}])"), "providers.local.models[0]", "needs an id"},
      {custom(R"("models": [{"id": 7}])"), "providers.local.models[0].id", "expected a string"},
      {custom(R"("models": [{"id": ""}])"), "providers.local.models[0].id", "must not be empty"},
      {custom(R"("models": [{"id": "m"}, {"id": "n"}, {"id": "m"}])"), "providers.local.models[2].id",
       "the same id as providers.local.models[0]"},
      {model(R"("context": 1000)"), "providers.local.models[0].context", "unknown field (known: id, name,"},
      {model(R"("name": 3)"), "providers.local.models[0].name", "expected a string"},
      {model(R"("contextWindow": "128k")"), "providers.local.models[0].contextWindow",
       "expected a positive integer, found string"},
      {model(R"("contextWindow": 128000.5)"), "providers.local.models[0].contextWindow", "positive integer"},
      {model(R"("contextWindow": 0)"), "providers.local.models[0].contextWindow", "positive integer"},
      {model(R"("maxTokens": -1)"), "providers.local.models[0].maxTokens", "positive integer"},
      {model(R"("maxTokens": 18446744073709551615)"), "providers.local.models[0].maxTokens", "positive integer"},
      {model(R"("reasoning": "yes")"), "providers.local.models[0].reasoning", "expected true or false"},
      {model(R"("input": "text")"), "providers.local.models[0].input", "non-empty array"},
      {model(R"("input": [])"), "providers.local.models[0].input", "non-empty array"},
      {model(R"("input": ["text", "audio"])"), "providers.local.models[0].input[1]", "\"text\" or \"image\""},
      {model(R"("cost": 3)"), "providers.local.models[0].cost", "expected an object of prices"},
      {model(R"("cost": {"prompt": 3})"), "providers.local.models[0].cost.prompt", "unknown field (known: input"},
      {model(R"("cost": {"output": "3"})"), "providers.local.models[0].cost.output", "expected a price"},
      {model(R"("cost": {"cacheRead": -0.1})"), "providers.local.models[0].cost.cacheRead", "cannot be negative"},
      {model(R"("compat": "max_tokens")"), "providers.local.models[0].compat", "expected an object"},
      {model(R"("headers": {"X": 1})"), "providers.local.models[0].headers.X", "expected a string"},
  };
}

TEST(ModelsFile, EveryErrorNamesTheFileThePathAndWhatWasWrong) {
  for (const BadFile& bad : bad_files()) {
    SCOPED_TRACE(bad.text);
    auto file = parse_models_file(bad.text, kModelsPath);
    ASSERT_FALSE(file) << "accepted";
    EXPECT_EQ(file.error().code, "invalid_config");
    const std::string& message = file.error().message;
    const std::string prefix = bad.where.empty() ? std::string(kModelsPath) + ": " : std::string(kModelsPath) + ": " + bad.where + ": ";
    EXPECT_TRUE(message.starts_with(prefix)) << message;
    EXPECT_NE(message.find(bad.what), std::string::npos) << message;
    EXPECT_EQ(message.find(kSecret), std::string::npos) << "the key leaked: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(ModelsFile, ASyntaxErrorGivesItsLineAndColumn) {
  // "nope" starts at column 10; the parser stops at its 'o', which is not
  // the 'u' of "null".
  auto file = parse_models_file("{\n  \"providers\": {\n    \"x\": nope\n  }\n}\n", kModelsPath);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().message, std::string(kModelsPath) + ": not valid JSON at line 3, column 11");
}

TEST(ModelsFile, LoadingAMissingFileIsNoConfiguration) {
  testing::TempDir dir;
  auto missing = load_models_file(dir.path() / "models.json");
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_FALSE(missing->has_value());

  const auto path = dir.path() / "present.json";
  std::ofstream(path) << R"({"providers": {"anthropic": {"apiKeyEnv": "K"}}})";
  auto present = load_models_file(path);
  ASSERT_TRUE(present) << present.error().message;
  ASSERT_TRUE(present->has_value());
  EXPECT_EQ((*present)->path, path.string());
  EXPECT_EQ((*present)->providers.at(0).api_key_env, "K");

  const auto broken = dir.path() / "broken.json";
  std::ofstream(broken) << R"({"providers": {"anthropic": {"apiKey": ")" << kSecret << "\"";
  auto failed = load_models_file(broken);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, "invalid_config");
  EXPECT_TRUE(failed.error().message.starts_with(broken.string() + ": ")) << failed.error().message;
  EXPECT_EQ(failed.error().message.find(kSecret), std::string::npos);

  auto directory = load_models_file(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code, "io_error");
  EXPECT_NE(directory.error().message.find(dir.str()), std::string::npos);
}

TEST(ModelsFile, DefaultPathFollowsXdgConfigHome) {
  auto env_of = [](std::map<std::string, std::string> values) -> EnvLookup {
    return [values](const std::string& name) -> std::optional<std::string> {
      auto it = values.find(name);
      if (it == values.end()) return std::nullopt;
      return it->second;
    };
  };
  EXPECT_EQ(default_models_file(env_of({{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}})),
            std::filesystem::path("/x/cairn/models.json"));
  EXPECT_EQ(default_models_file(env_of({{"XDG_CONFIG_HOME", ""}, {"HOME", "/h"}})),
            std::filesystem::path("/h/.config/cairn/models.json"));
  EXPECT_EQ(default_models_file(env_of({})), std::nullopt);
}

}  // namespace
}  // namespace cairn
