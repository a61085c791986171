#include "llm/tool_arguments.hpp"

#include <gtest/gtest.h>

#include <string>

#include "llm/wire_support.hpp"

namespace cairn {
namespace {

// An object holding arrays, `levels` deep in all.
std::string nested(std::size_t levels) {
  return "{\"a\":" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
}

TEST(ToolArguments, AnObjectIsTheArguments) {
  ToolArguments read = read_tool_arguments(R"({"path": "a.txt", "n": [1, {"x": null}]})");
  EXPECT_EQ(read.arguments, Json::parse(R"({"path": "a.txt", "n": [1, {"x": null}]})"));
  EXPECT_FALSE(read.raw);
  EXPECT_EQ(tool_arguments_problem(R"({"path": "a.txt"})"), "");
}

TEST(ToolArguments, BlankTextIsNoArguments) {
  for (const char* text : {"", "  \n\t"}) {
    ToolArguments read = read_tool_arguments(text);
    EXPECT_EQ(read.arguments, Json::object());
    EXPECT_FALSE(read.raw);
    EXPECT_EQ(tool_arguments_problem(text), "");
  }
}

TEST(ToolArguments, TextThatIsNotAnObjectIsKeptAsSentAndSaysWhy) {
  struct Case {
    std::string text, problem;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"[1]", "a JSON array, not an object"},
           {R"("x")", "a JSON string, not an object"},
           {"3", "a JSON number, not an object"},
           {"null", "a JSON null, not an object"},
           {R"({"path": "a)",
            "not valid JSON at line 1, column 12: syntax error while parsing value - invalid string: missing closing "
            "quote; last read: '\"a'"},
       }) {
    SCOPED_TRACE(c.text);
    ToolArguments read = read_tool_arguments(c.text);
    EXPECT_EQ(read.arguments, Json::object());
    EXPECT_EQ(read.raw, c.text);
    EXPECT_EQ(tool_arguments_problem(c.text), c.problem);
  }
}

TEST(ToolArguments, NestingPast64LevelsIsKeptRawWithoutBuildingIt) {
  EXPECT_FALSE(read_tool_arguments(nested(64)).raw);
  EXPECT_EQ(read_tool_arguments(nested(64)).arguments.dump(), nested(64));
  for (std::size_t levels : {65, 200'000}) {
    const std::string text = nested(levels);
    ToolArguments read = read_tool_arguments(text);
    EXPECT_EQ(read.arguments, Json::object());
    EXPECT_EQ(read.raw, text);
    EXPECT_EQ(tool_arguments_problem(text), "nested deeper than 64 levels");
  }
  // Brackets inside strings, escaped quotes included, are not nesting.
  const std::string brackets = "{\"a\":\"" + std::string(100, '[') + "\\\"" + std::string(100, '{') + "\"}";
  EXPECT_FALSE(read_tool_arguments(brackets).raw);
}

TEST(ToolArguments, AProblemQuotesLittleOfALongText) {
  const std::string text = "{\"content\": \"" + std::string(100'000, 'x');
  std::string problem = tool_arguments_problem(text);
  EXPECT_TRUE(problem.starts_with("not valid JSON at line 1")) << problem;
  EXPECT_LE(problem.size(), 310u);
}

TEST(NestsDeeperThan, CountsOnlyBracketsOutsideStrings) {
  EXPECT_FALSE(wire::nests_deeper_than("[[]]", 2));
  EXPECT_TRUE(wire::nests_deeper_than("[[[]]]", 2));
  EXPECT_TRUE(wire::nests_deeper_than("[[[", 2));  // the start of a text nests as deep
  EXPECT_FALSE(wire::nests_deeper_than(R"(["[[[", "\"[[["])", 2));
}

}  // namespace
}  // namespace cairn
