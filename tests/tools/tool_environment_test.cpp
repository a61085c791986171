// What the tools' processes get of the agent's environment: by default
// everything but the variables named as provider keys and every name with
// KEY, SECRET or TOKEN in it (any case), plus the call's marker; allowed
// names come through; Inherit::all passes everything.
#include <cstdlib>

#include "tools/tool_environment.hpp"
#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

using tools::tool_environment;

const char* const kEnvironment[] = {"PATH=/usr/bin",        "OPENAI_API_KEY=sk-1",   "my_secret_thing=s",
                                    "GH_Token=t",           "WORK_PROVIDER_VAR=w",   "PLAIN=plain",
                                    "CAIRN_TOOL_CALL=outer", "LANG=C.UTF-8",         nullptr};

TEST(ToolsEnvironment, TheFilterWithholdsKeysSecretsTokensAndNamedVariables) {
  ToolEnvironmentPolicy policy;
  policy.exclude = {"WORK_PROVIDER_VAR"};
  EXPECT_EQ(tool_environment(policy, kEnvironment, "run:call"),
            (std::vector<std::string>{"PATH=/usr/bin", "PLAIN=plain", "LANG=C.UTF-8", "CAIRN_TOOL_CALL=run:call"}));
}

TEST(ToolsEnvironment, AllowedNamesPassTheFilter) {
  ToolEnvironmentPolicy policy;
  policy.exclude = {"WORK_PROVIDER_VAR"};
  policy.allow = {"GH_Token", "WORK_PROVIDER_VAR"};
  EXPECT_EQ(tool_environment(policy, kEnvironment, "run:call"),
            (std::vector<std::string>{"PATH=/usr/bin", "GH_Token=t", "WORK_PROVIDER_VAR=w", "PLAIN=plain",
                                      "LANG=C.UTF-8", "CAIRN_TOOL_CALL=run:call"}));
}

TEST(ToolsEnvironment, InheritAllPassesEverythingButTheOuterMarker) {
  ToolEnvironmentPolicy policy;
  policy.inherit = ToolEnvironmentPolicy::Inherit::all;
  policy.exclude = {"WORK_PROVIDER_VAR"};
  EXPECT_EQ(tool_environment(policy, kEnvironment, "run:call"),
            (std::vector<std::string>{"PATH=/usr/bin", "OPENAI_API_KEY=sk-1", "my_secret_thing=s", "GH_Token=t",
                                      "WORK_PROVIDER_VAR=w", "PLAIN=plain", "LANG=C.UTF-8",
                                      "CAIRN_TOOL_CALL=run:call"}));
}

// The same through a real command: what `env` shows the model.
class ToolsEnvironmentBash : public ToolsFixture {
 protected:
  ToolsEnvironmentBash() {
    ::setenv("CAIRN_TEST_ENV_ACCESS_TOKEN", "token-value", 1);
    ::setenv("CAIRN_TEST_ENV_PROVIDER", "provider-value", 1);
    ::setenv("CAIRN_TEST_ENV_PLAIN", "plain-value", 1);
  }
  ~ToolsEnvironmentBash() override {
    for (const char* name : {"CAIRN_TEST_ENV_ACCESS_TOKEN", "CAIRN_TEST_ENV_PROVIDER", "CAIRN_TEST_ENV_PLAIN"}) {
      ::unsetenv(name);
    }
  }
  std::string env_shown(ToolEnvironmentPolicy policy) const {
    const auto tools = make_coding_tools(CodingToolsOptions{.cwd = cwd(), .spill_dir = spill_dir(), .environment = std::move(policy)});
    return text(tools.at(1).execute({{"command", "env | grep CAIRN_TEST_ENV_ | sort"}}, ToolContext{}));
  }
};

TEST_F(ToolsEnvironmentBash, TheCommandSeesWhatThePolicyPasses) {
  ToolEnvironmentPolicy filtered;
  filtered.exclude = {"CAIRN_TEST_ENV_PROVIDER"};
  EXPECT_EQ(env_shown(filtered), "CAIRN_TEST_ENV_PLAIN=plain-value\n");
  ToolEnvironmentPolicy all = filtered;
  all.inherit = ToolEnvironmentPolicy::Inherit::all;
  EXPECT_EQ(env_shown(all),
            "CAIRN_TEST_ENV_ACCESS_TOKEN=token-value\nCAIRN_TEST_ENV_PLAIN=plain-value\nCAIRN_TEST_ENV_PROVIDER=provider-value\n");
  // The default: the library withholds secret-looking names on its own.
  EXPECT_EQ(env_shown(ToolEnvironmentPolicy{}), "CAIRN_TEST_ENV_PLAIN=plain-value\nCAIRN_TEST_ENV_PROVIDER=provider-value\n");
}

}  // namespace
}  // namespace cairn::testing
