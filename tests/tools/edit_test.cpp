// edit: several edits at once against the original file, every error
// message (not found with the closest match, found several times, overlap,
// empty, identical) with nothing applied, line endings kept, the diff.
#include "tools/tools_fixture.hpp"

namespace cairn::testing {
namespace {

using ToolsEdit = ToolsFixture;

const std::string kSource =
    "int main() {\n"
    "  int total = 0;\n"
    "  for (int i = 0; i < 10; ++i) {\n"
    "    total += i;\n"
    "  }\n"
    "  return total;\n"
    "}\n";

Json edit(std::string old_text, std::string new_text) { return {{"oldText", std::move(old_text)}, {"newText", std::move(new_text)}}; }

TEST_F(ToolsEdit, AppliesSeveralEditsMatchedAgainstTheOriginal) {
  put("main.cpp", kSource);
  const ToolResult result = run("edit", {{"path", "main.cpp"},
                                         {"edits", {edit("  return total;\n", "  std::printf(\"%d\\n\", total);\n  return 0;\n"),
                                                    edit("int total = 0;", "long total = 0;"),
                                                    edit("    total += i;\n", "")}}});
  ASSERT_FALSE(result.is_error) << text(result);
  EXPECT_EQ(get("main.cpp"),
            "int main() {\n"
            "  long total = 0;\n"
            "  for (int i = 0; i < 10; ++i) {\n"
            "  }\n"
            "  std::printf(\"%d\\n\", total);\n"
            "  return 0;\n"
            "}\n");
  EXPECT_EQ(text(result), "Applied 3 edits to main.cpp (new line numbers: 2, 4 (deleted), 5-6).") << text(result);
  const std::string diff = result.details->at("diff").get<std::string>();
  EXPECT_NE(diff.find("-  int total = 0;\n+  long total = 0;\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("-    total += i;\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("-  return total;\n+  std::printf(\"%d\\n\", total);\n+  return 0;\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("@@ -1,4 +1,4 @@\n int main() {\n"), std::string::npos) << diff;
  EXPECT_EQ(result.details->at("firstChangedLine"), 2);
}

TEST_F(ToolsEdit, AcceptsTheSingleEditForm) {
  put("a.txt", "hello world\n");
  const ToolResult result = run("edit", {{"path", "a.txt"}, {"oldText", "world"}, {"newText", "there"}});
  ASSERT_FALSE(result.is_error) << text(result);
  EXPECT_EQ(get("a.txt"), "hello there\n");
  EXPECT_EQ(text(result), "Applied 1 edit to a.txt (new line numbers: 1).");
}

TEST_F(ToolsEdit, NotFoundShowsTheClosestLinesWithTheirNumbers) {
  put("main.cpp", kSource);
  const ToolResult result = run("edit", {{"path", "main.cpp"}, {"edits", {edit("  for (int j = 0; j < 10; ++j) {\n    total += j;\n", "x")}}});
  ASSERT_TRUE(result.is_error);
  const std::string out = text(result);
  EXPECT_NE(out.find("No edits were applied; main.cpp is unchanged."), std::string::npos) << out;
  EXPECT_NE(out.find("edits[0]: oldText was not found in main.cpp."), std::string::npos) << out;
  EXPECT_NE(out.find("Closest match (lines 3-4, "), std::string::npos) << out;
  EXPECT_NE(out.find("     3\t  for (int i = 0; i < 10; ++i) {\n     4\t    total += i;\n"), std::string::npos) << out;
  EXPECT_EQ(get("main.cpp"), kSource);
}

TEST_F(ToolsEdit, NotFoundSaysWhenOnlyWhitespaceDiffers) {
  put("main.cpp", kSource);
  const std::string out = text(run("edit", {{"path", "main.cpp"}, {"edits", {edit("total += i;\n}", "x")}}}));
  EXPECT_NE(out.find("Closest match (lines 4-5"), std::string::npos) << out;
  EXPECT_NE(out.find("differs from oldText only in whitespace"), std::string::npos) << out;
}

TEST_F(ToolsEdit, AnAmbiguousOldTextNamesItsLines) {
  put("main.cpp", kSource);
  const ToolResult result = run("edit", {{"path", "main.cpp"}, {"edits", {edit("total", "sum")}}});
  ASSERT_TRUE(result.is_error);
  EXPECT_NE(text(result).find("edits[0]: oldText was found 3 times in main.cpp (at lines 2, 4, 6); it must occur exactly once"),
            std::string::npos)
      << text(result);
  EXPECT_EQ(get("main.cpp"), kSource);
}

TEST_F(ToolsEdit, OverlappingEditsAreRefused) {
  put("main.cpp", kSource);
  const ToolResult result =
      run("edit", {{"path", "main.cpp"}, {"edits", {edit("int total = 0;\n  for", "x"), edit("for (int i", "y")}}});
  ASSERT_TRUE(result.is_error);
  EXPECT_NE(text(result).find("edits[1] overlaps edits[0] (both change line 3)"), std::string::npos) << text(result);
  EXPECT_EQ(get("main.cpp"), kSource);
}

TEST_F(ToolsEdit, EmptyAndIdenticalEditsAreRefused) {
  put("a.txt", "abc\n");
  const std::string out = text(run("edit", {{"path", "a.txt"}, {"edits", {edit("", "x"), edit("abc", "abc")}}}));
  EXPECT_NE(out.find("edits[0]: oldText is empty"), std::string::npos) << out;
  EXPECT_NE(out.find("edits[1]: oldText and newText are identical"), std::string::npos) << out;
}

TEST_F(ToolsEdit, OneBadEditMeansNoneIsApplied) {
  put("main.cpp", kSource);
  const ToolResult result =
      run("edit", {{"path", "main.cpp"}, {"edits", {edit("int main()", "int start()"), edit("missing text", "x")}}});
  ASSERT_TRUE(result.is_error);
  const std::string out = text(result);
  EXPECT_EQ(out.find("edits[0]"), std::string::npos) << out;  // only the failing edit is named
  EXPECT_NE(out.find("edits[1]: oldText was not found"), std::string::npos) << out;
  EXPECT_EQ(get("main.cpp"), kSource);
}

TEST_F(ToolsEdit, KeepsCrlfLineEndingsAndTheBom) {
  put("dos.txt", "\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n");
  // The model writes LF (read shows no carriage returns).
  const ToolResult result = run("edit", {{"path", "dos.txt"}, {"edits", {edit("two\nthree", "2\n3\n3.5")}}});
  ASSERT_FALSE(result.is_error) << text(result);
  EXPECT_EQ(get("dos.txt"), "\xEF\xBB\xBFone\r\n2\r\n3\r\n3.5\r\n");
  EXPECT_EQ(result.details->at("lineEnding"), "crlf");
}

TEST_F(ToolsEdit, ErrorsForMissingFilesAndMalformedArguments) {
  ToolResult missing = run("edit", {{"path", "nope.txt"}, {"oldText", "a"}, {"newText", "b"}});
  EXPECT_TRUE(missing.is_error);
  EXPECT_EQ(text(missing), "File not found: nope.txt");
  put("a.txt", "a");
  EXPECT_TRUE(run("edit", {{"path", "a.txt"}}).is_error);
  EXPECT_TRUE(run("edit", {{"path", "a.txt"}, {"edits", Json::array()}}).is_error);
  EXPECT_TRUE(run("edit", {{"path", "a.txt"}, {"edits", {{{"oldText", "a"}}}}}).is_error);
  EXPECT_EQ(get("a.txt"), "a");
}

}  // namespace
}  // namespace cairn::testing
