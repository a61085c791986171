// Secrets in what the coding tools return: bash redacts its output as it
// streams, so that neither its result, nor an update, nor its spill file
// holds a secret, even one its command wrote in two pieces; the other tools'
// results (a file read, a match found) are redacted too.
#include <mutex>

#include <fmt/format.h>

#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

constexpr const char* kSecret = "sk-split-secret-0123456789";

class ToolsRedaction : public ToolsFixture {
 protected:
  ToolsRedaction() {
    CodingToolsOptions options{.cwd = cwd(), .spill_dir = spill_dir()};
    options.secrets.add(kSecret);
    tools_ = make_coding_tools(options);
  }
};

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_F(ToolsRedaction, BashRedactsASecretSplitAcrossWritesFromTheResultTheUpdatesAndTheSpillFile) {
  std::mutex mu;
  std::vector<std::string> updates;
  ToolContext context;
  context.update = [&](const ToolResult& partial) {
    std::lock_guard lock(mu);
    updates.push_back(text(partial));
  };
  const std::string command = fmt::format("printf 'head sk-split-se'; sleep 0.3; printf 'cret-0123456789\\n'; "
                                          "seq 1 3000; echo {} tail",
                                          kSecret);
  const ToolResult result = run("bash", {{"command", command}}, context);
  ASSERT_FALSE(result.is_error) << text(result);
  EXPECT_EQ(text(result).find(kSecret), std::string::npos);
  EXPECT_NE(text(result).find("\n[redacted] tail\n"), std::string::npos) << text(result).substr(0, 200);
  const std::string spilled = read_whole(result.details->at("fullOutputPath").get<std::string>());
  EXPECT_TRUE(spilled.starts_with("head [redacted]\n1\n2\n")) << spilled.substr(0, 100);
  EXPECT_EQ(spilled.find(kSecret), std::string::npos);
  std::lock_guard lock(mu);
  ASSERT_FALSE(updates.empty());
  for (const auto& update : updates) {
    // Not even the beginning of it while the rest was still to come.
    EXPECT_EQ(update.find("sk-split-se"), std::string::npos) << update.substr(0, 100);
  }
}

TEST_F(ToolsRedaction, WhatTheOtherToolsReturnIsRedacted) {
  put("notes/key.txt", fmt::format("the key is {}\n", kSecret));
  EXPECT_EQ(text(run("read", {{"path", "notes/key.txt"}})), "     1\tthe key is [redacted]\n");
  const std::string found = text(run("grep", {{"pattern", "the key"}}));
  EXPECT_EQ(found.find(kSecret), std::string::npos) << found;
  EXPECT_NE(found.find("[redacted]"), std::string::npos) << found;
}

}  // namespace
}  // namespace cairn::testing
