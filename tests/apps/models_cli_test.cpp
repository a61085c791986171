// `cairn models` run as a process with an environment the test controls (no
// keys of the machine it runs on leak in): what it lists, where each model is
// configured, and that no key it was given ever appears in its output or its
// errors.
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cairn/json.hpp"
#include "cairn/llm/model_catalog.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

constexpr const char* kCliAnthropicKey = "sk-ant-SECRET-cli-env-91c2";
constexpr const char* kCliFileKey = "sk-SECRET-cli-file-5d07";

struct CliOutput {
  int status = -1;
  std::string out;
  std::string err;
};

std::string drain(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

// Runs the built `cairn` with `args` and exactly the variables in `env`.
CliOutput run_cairn(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);

  std::vector<std::string> argv_strings{CAIRN_CLI_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = env;
  std::vector<char*> envp;
  for (auto& variable : env_strings) envp.push_back(variable.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, CAIRN_CLI_PATH, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CliOutput run;
  if (spawned == 0) {
    std::thread err_reader([&] { run.err = drain(err_pipe[0]); });
    run.out = drain(out_pipe[0]);
    err_reader.join();
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  return run;
}

using testing::lines_of;

std::string line_with(const std::string& text, const std::string& needle) {
  for (const auto& line : lines_of(text)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return {};
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

class ModelsCliTest : public ::testing::Test {
 protected:
  std::filesystem::path config_file() const { return dir_.path() / "config" / "cairn" / "models.json"; }

  void write_config(const std::string& text) {
    std::filesystem::create_directories(config_file().parent_path());
    std::ofstream(config_file()) << text;
  }

  std::vector<std::string> env(std::vector<std::string> extra = {}) const {
    std::vector<std::string> variables{"HOME=" + (dir_.path() / "home").string(),
                                       "XDG_CONFIG_HOME=" + (dir_.path() / "config").string()};
    variables.insert(variables.end(), extra.begin(), extra.end());
    return variables;
  }

  CliOutput models(std::vector<std::string> args, std::vector<std::string> extra_env = {}) {
    args.insert(args.begin(), "models");
    CliOutput run = run_cairn(args, env(std::move(extra_env)));
    // Whatever it printed, no key it was given is in it.
    for (const char* key : {kCliAnthropicKey, kCliFileKey}) {
      EXPECT_FALSE(contains(run.out, key)) << "key on stdout:\n" << run.out;
      EXPECT_FALSE(contains(run.err, key)) << "key on stderr:\n" << run.err;
    }
    return run;
  }

  testing::TempDir dir_;
};

TEST_F(ModelsCliTest, ListsTheModelsWhoseKeyIsSetAndNamesTheVariable) {
  CliOutput run = models({}, {std::string("ANTHROPIC_API_KEY=") + kCliAnthropicKey});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(run.err.empty()) << run.err;
  const auto lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 1 + find_builtin_provider("anthropic")->models.size()) << run.out;
  EXPECT_TRUE(lines[0].starts_with("MODEL")) << lines[0];
  for (const char* column : {"API", "CONTEXT", "MAX OUT", "THINKS", "INPUT", "$/M IN", "KEY", "CONFIGURED"}) {
    EXPECT_TRUE(contains(lines[0], column)) << column;
  }
  const std::string opus = line_with(run.out, "anthropic/claude-opus-5-5 ");
  ASSERT_FALSE(opus.empty()) << run.out;
  for (const char* cell : {"anthropic-messages", "1M", "128K", "yes", "text,image", "ANTHROPIC_API_KEY (set)",
                           "built-in"}) {
    EXPECT_TRUE(contains(opus, cell)) << cell << " in " << opus;
  }
  EXPECT_FALSE(contains(run.out, "openai/")) << "no key, not listed without --all";
}

TEST_F(ModelsCliTest, AllListsEveryKnownModelWithItsMissingKey) {
  CliOutput run = models({"--all"}, {std::string("ANTHROPIC_API_KEY=") + kCliAnthropicKey});
  ASSERT_EQ(run.status, 0) << run.err;
  std::size_t known = 0;
  for (const auto& provider : builtin_providers()) known += provider.models.size();
  EXPECT_EQ(lines_of(run.out).size(), 1 + known);
  EXPECT_TRUE(contains(line_with(run.out, "openai/gpt-6.2-sol "), "OPENAI_API_KEY (not set)"));
  EXPECT_TRUE(contains(line_with(run.out, "google/gemini-3.8-flash "), "GEMINI_API_KEY (not set)"));
  EXPECT_TRUE(contains(line_with(run.out, "openrouter/anthropic/claude-opus-5.5 "), "OPENROUTER_API_KEY"));
}

TEST_F(ModelsCliTest, JsonHasOneObjectPerModel) {
  CliOutput run = models({"--json", "--all"}, {std::string("ANTHROPIC_API_KEY=") + kCliAnthropicKey});
  ASSERT_EQ(run.status, 0) << run.err;
  bool saw_opus = false;
  for (const auto& line : lines_of(run.out)) {
    auto json = Json::parse(line);
    for (const char* field : {"provider", "id", "api", "baseUrl", "contextWindow", "maxTokens", "reasoning", "input",
                              "cost", "configured", "key", "available"}) {
      EXPECT_TRUE(json.contains(field)) << field << " in " << line;
    }
    if (json["provider"] == "anthropic" && json["id"] == "claude-opus-5-5") {
      saw_opus = true;
      EXPECT_EQ(json["contextWindow"], 1'000'000);
      EXPECT_EQ(json["cost"]["input"], 4.0);
      EXPECT_EQ(json["key"], (Json{{"source", "environment"}, {"env", "ANTHROPIC_API_KEY"}, {"present", true}}));
      EXPECT_EQ(json["available"], true);
      EXPECT_EQ(json["configured"], "built-in");
    }
    if (json["provider"] == "openai") {
      EXPECT_EQ(json["available"], false);
    }
  }
  EXPECT_TRUE(saw_opus);
}

TEST_F(ModelsCliTest, ShowsWhereModelsJsonConfiguresAModel) {
  write_config(std::string(R"({"providers": {
      "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                 "models": [{"id": "qwen3:32b", "contextWindow": 40960, "maxTokens": 8192}]},
      "vllm": {"baseUrl": "http://gpu:8000/v1", "api": "openai-completions", "apiKey": ")") +
               kCliFileKey + R"(", "models": [{"id": "big"}]},
      "anthropic": {"baseUrl": "https://proxy.example/v1"}}})");
  CliOutput run = models({}, {std::string("ANTHROPIC_API_KEY=") + kCliAnthropicKey});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string path = config_file().string();
  const std::string qwen = line_with(run.out, "ollama/qwen3:32b");
  EXPECT_TRUE(contains(qwen, "not needed")) << qwen;
  EXPECT_TRUE(contains(qwen, "41K")) << qwen;
  EXPECT_TRUE(qwen.ends_with(path)) << qwen;
  const std::string big = line_with(run.out, "vllm/big");
  EXPECT_TRUE(contains(big, "apiKey in models.json")) << big;
  const std::string opus = line_with(run.out, "anthropic/claude-opus-5-5 ");
  EXPECT_TRUE(opus.ends_with("built-in, changed in " + path)) << opus;

  Json qwen_json;
  CliOutput json = models({"--json"}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  for (const auto& line : lines_of(json.out)) {
    auto parsed = Json::parse(line);
    if (parsed["id"] == "qwen3:32b") qwen_json = parsed;
  }
  EXPECT_EQ(qwen_json["configured"], path);
  EXPECT_EQ(qwen_json["key"], (Json{{"source", "none"}, {"present", false}}));
  EXPECT_EQ(qwen_json["available"], true);

  // --models-file names another file.
  const auto other = dir_.path() / "other.json";
  std::ofstream(other) << R"({"providers": {"lmstudio": {"baseUrl": "http://127.0.0.1:1234/v1",
      "api": "openai-completions", "models": [{"id": "local-model"}]}}})";
  CliOutput other_run = models({"--models-file", other.string()}, {});
  ASSERT_EQ(other_run.status, 0) << other_run.err;
  EXPECT_TRUE(contains(other_run.out, "lmstudio/local-model"));
  EXPECT_FALSE(contains(other_run.out, "ollama/"));

  CliOutput missing = models({"--models-file", (dir_.path() / "nope.json").string()}, {});
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "cairn: " + (dir_.path() / "nope.json").string() + " does not exist\n");
}

TEST_F(ModelsCliTest, ABrokenModelsJsonIsOneLineNamingFileAndPath) {
  write_config(std::string(R"({"providers": {"vllm": {"baseUrl": "http://gpu:8000/v1", "api": "openai-completions",)") +
               R"( "apiKey": ")" + kCliFileKey + R"(", "models": [{"id": "big", "maxTokens": "lots"}]}}})");
  CliOutput run = models({}, {std::string("ANTHROPIC_API_KEY=") + kCliAnthropicKey});
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(run.out.empty()) << run.out;
  ASSERT_EQ(lines_of(run.err).size(), 1u) << run.err;
  EXPECT_EQ(run.err, "cairn: " + config_file().string() +
                         ": providers.vllm.models[0].maxTokens: expected a positive integer, found string\n");

  // Not JSON at all, with the key right where the parser stops.
  write_config(std::string(R"({"providers": {"vllm": {"apiKey": ")") + kCliFileKey + R"(" }} oops)");
  CliOutput syntax = models({"--json"}, {});
  EXPECT_EQ(syntax.status, 1);
  ASSERT_EQ(lines_of(syntax.err).size(), 1u) << syntax.err;
  EXPECT_TRUE(contains(syntax.err, config_file().string() + ": not valid JSON at line 1")) << syntax.err;
}

TEST_F(ModelsCliTest, WithNoKeyAnywhereItSaysHowToConfigureOne) {
  CliOutput run = models({}, {});
  EXPECT_EQ(run.status, 0);
  EXPECT_TRUE(run.out.empty()) << run.out;
  for (const auto& provider : builtin_providers()) EXPECT_TRUE(contains(run.err, provider.api_key_env));
  EXPECT_TRUE(contains(run.err, config_file().string())) << run.err;
  EXPECT_TRUE(contains(run.err, "--base-url")) << run.err;
}

TEST_F(ModelsCliTest, HelpDocumentsEveryOption) {
  CliOutput help = run_cairn({"models", "--help"}, env());
  EXPECT_EQ(help.status, 0);
  for (const char* option : {"--json", "--all", "--models-file"}) EXPECT_TRUE(contains(help.out, option)) << option;
  CliOutput bad = run_cairn({"models", "--bogus"}, env());
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(lines_of(bad.err).size(), 1u) << bad.err;
}

}  // namespace
}  // namespace cairn
