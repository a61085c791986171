// grep, find and ls: results, .gitignore, limits and their notes, errors.
#include <fmt/format.h>

#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

class ToolsSearch : public ToolsFixture {
 protected:
  ToolsSearch() {
    put(".gitignore", "build/\n*.log\n");
    put("src/main.cpp", "int main() {\n  return helper();\n}\n");
    put("src/helper.cpp", "int helper() { return 42; }\n// TODO: more helpers\n");
    put("src/deep/util.hpp", "#pragma once\nint Helper_count();\n");
    put("build/generated.cpp", "int helper_generated();\n");
    put("debug.log", "helper called\n");
    put(".config/settings.json", "{\"helper\": true}\n");
    put("README.md", "# demo\nuses helper\n");
  }
};

using ToolsLs = ToolsFixture;

TEST_F(ToolsSearch, GrepReturnsPathLineAndTextRespectingGitignore) {
  const ToolResult result = run("grep", {{"pattern", "helper"}});
  ASSERT_FALSE(result.is_error) << text(result);
  const std::string out = text(result);
  EXPECT_NE(out.find("src/main.cpp:2:   return helper();"), std::string::npos) << out;
  EXPECT_NE(out.find("src/helper.cpp:1: int helper() { return 42; }"), std::string::npos) << out;
  EXPECT_NE(out.find("src/helper.cpp:2: // TODO: more helpers"), std::string::npos) << out;
  EXPECT_NE(out.find(".config/settings.json:1: {\"helper\": true}"), std::string::npos) << out;  // hidden files count
  EXPECT_NE(out.find("README.md:2: uses helper"), std::string::npos) << out;
  EXPECT_EQ(out.find("build/"), std::string::npos) << out;      // ignored directory
  EXPECT_EQ(out.find("debug.log"), std::string::npos) << out;   // ignored file
  EXPECT_EQ(out.find("Helper_count"), std::string::npos) << out;  // case matters by default
}

TEST_F(ToolsSearch, GrepOptionsIgnoreCaseLiteralGlobContextAndPath) {
  EXPECT_NE(text(run("grep", {{"pattern", "helper_COUNT"}, {"ignoreCase", true}})).find("src/deep/util.hpp:2: int Helper_count();"),
            std::string::npos);
  // A regex metacharacter taken literally.
  EXPECT_EQ(text(run("grep", {{"pattern", "helper();"}, {"literal", true}})), "src/main.cpp:2:   return helper();");
  EXPECT_EQ(text(run("grep", {{"pattern", "helper();"}})), "No matches found");
  const std::string globbed = text(run("grep", {{"pattern", "helper"}, {"glob", "*.md"}}));
  EXPECT_EQ(globbed, "README.md:2: uses helper");
  const std::string with_context = text(run("grep", {{"pattern", "return helper"}, {"context", 1}}));
  EXPECT_EQ(with_context, "src/main.cpp-1- int main() {\nsrc/main.cpp:2:   return helper();\nsrc/main.cpp-3- }");
  // Paths are relative to the directory searched; a file searches just it.
  EXPECT_EQ(text(run("grep", {{"pattern", "pragma"}, {"path", "src"}})), "deep/util.hpp:1: #pragma once");
  EXPECT_EQ(text(run("grep", {{"pattern", "42"}, {"path", "src/helper.cpp"}})), "helper.cpp:1: int helper() { return 42; }");
}

TEST_F(ToolsSearch, GrepLimitsMatchesAndSaysSo) {
  std::string many;
  for (int i = 0; i < 150; ++i) many += fmt::format("needle {}\n", i);
  put("many.txt", many);
  const ToolResult result = run("grep", {{"pattern", "needle"}});
  const std::string out = text(result);
  EXPECT_NE(out.find("many.txt:100: needle 99\n"), std::string::npos);
  EXPECT_EQ(out.find("needle 100"), std::string::npos);
  EXPECT_TRUE(out.ends_with("[100 matches limit reached. Use limit=200 for more, or refine pattern]")) << out.substr(out.size() - 100);
  const std::string five = text(run("grep", {{"pattern", "needle"}, {"limit", 5}}));
  EXPECT_NE(five.find("many.txt:5: needle 4\n\n[5 matches limit reached. Use limit=10"), std::string::npos) << five;
}

TEST_F(ToolsSearch, GrepCutsLongLinesAndBoundsOutputSize) {
  put("wide.txt", "needle " + std::string(3000, 'w') + "\n");
  const std::string out = text(run("grep", {{"pattern", "needle"}, {"path", "wide.txt"}}));
  EXPECT_NE(out.find("... [truncated]"), std::string::npos);
  EXPECT_NE(out.find("[Some lines truncated to 500 chars. Use read to see full lines]"), std::string::npos);
  EXPECT_LT(out.size(), 700u);
  std::string big;
  for (int i = 0; i < 400; ++i) big += "needle " + std::string(400, 'z') + "\n";
  put("big.txt", big);
  const std::string capped = text(run("grep", {{"pattern", "needle"}, {"path", "big.txt"}, {"limit", 1000}}));
  EXPECT_LE(capped.size(), 50u * 1024 + 200);
  EXPECT_NE(capped.find("[50.0KB limit reached]"), std::string::npos);
}

TEST_F(ToolsSearch, GrepErrorsAndEmptyResults) {
  EXPECT_EQ(text(run("grep", {{"pattern", "no-such-text-anywhere"}})), "No matches found");
  const ToolResult bad = run("grep", {{"pattern", "foo("}});
  EXPECT_TRUE(bad.is_error);
  EXPECT_NE(text(bad).find("grep foo( in .: "), std::string::npos) << text(bad);
  EXPECT_NE(text(bad).find("regex"), std::string::npos) << text(bad);
  const ToolResult missing = run("grep", {{"pattern", "x"}, {"path", "nowhere"}});
  EXPECT_TRUE(missing.is_error);
  EXPECT_EQ(text(missing), "Path not found: nowhere");
}

TEST_F(ToolsSearch, FindListsFilesByGlobRespectingGitignore) {
  const ToolResult result = run("find", {{"pattern", "*.cpp"}});
  ASSERT_FALSE(result.is_error) << text(result);
  EXPECT_EQ(text(result), "src/helper.cpp\nsrc/main.cpp");
  EXPECT_EQ(text(run("find", {{"pattern", "src/**/*.hpp"}})), "src/deep/util.hpp");
  EXPECT_EQ(text(run("find", {{"pattern", "*.json"}})), ".config/settings.json");
  EXPECT_EQ(text(run("find", {{"pattern", "*.hpp"}, {"path", "src"}})), "deep/util.hpp");
  EXPECT_EQ(text(run("find", {{"pattern", "*.rs"}})), "No files found matching pattern *.rs");
  EXPECT_EQ(text(run("find", {{"pattern", "*"}, {"path", "missing"}})), "Path not found: missing");
}

TEST_F(ToolsSearch, FindLimitsResults) {
  for (int i = 0; i < 30; ++i) put(fmt::format("many/f{:02}.txt", i), "x");
  const std::string out = text(run("find", {{"pattern", "many/*.txt"}, {"limit", 10}}));
  EXPECT_TRUE(out.starts_with("many/f00.txt\nmany/f01.txt\n")) << out;
  EXPECT_NE(out.find("many/f09.txt\n\n[10 results limit reached. Use limit=20 for more, or refine pattern]"), std::string::npos) << out;
  EXPECT_EQ(out.find("f10"), std::string::npos);
}

TEST_F(ToolsLs, ListsSortedWithDirectoriesMarkedAndDotfiles) {
  put("b.txt", "");
  put("A.txt", "");
  put(".hidden", "");
  put("sub/x", "");
  const ToolResult result = run("ls", Json::object());
  ASSERT_FALSE(result.is_error) << text(result);
  EXPECT_EQ(text(result), ".hidden\nA.txt\nb.txt\nsub/");
  EXPECT_EQ(text(run("ls", {{"path", "sub"}})), "x");
  std::filesystem::create_directories(cwd() / "empty");
  EXPECT_EQ(text(run("ls", {{"path", "empty"}})), "(empty directory)");
}

TEST_F(ToolsLs, LimitsEntriesAndReportsErrors) {
  for (int i = 0; i < 12; ++i) put(fmt::format("f{:02}", i), "");
  EXPECT_EQ(text(run("ls", {{"limit", 3}})), "f00\nf01\nf02\n\n[3 entries limit reached: showing 3 of 12. Use limit=6 for more]");
  const ToolResult missing = run("ls", {{"path", "nope"}});
  EXPECT_TRUE(missing.is_error);
  EXPECT_EQ(text(missing), "Path not found: nope");
  const ToolResult file = run("ls", {{"path", "f00"}});
  EXPECT_TRUE(file.is_error);
  EXPECT_EQ(text(file), "Not a directory: f00");
}

}  // namespace
}  // namespace cairn::testing
