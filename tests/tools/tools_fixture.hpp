// A temporary working directory with the coding tools made for it.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/tools/coding_tools.hpp"
#include "support/test_support.hpp"

namespace cairn::testing {

class ToolsFixture : public ::testing::Test {
 protected:
  ToolsFixture() {
    std::filesystem::create_directories(cwd());
    tools_ = make_coding_tools(CodingToolsOptions{.cwd = cwd(), .spill_dir = spill_dir()});
  }

  std::filesystem::path cwd() const { return temp_.path() / "work"; }
  std::filesystem::path spill_dir() const { return temp_.path() / "spill"; }

  const Tool& tool(const std::string& name) const {
    for (const auto& t : tools_) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("no tool " + name);
  }

  ToolResult run(const std::string& name, const Json& args, const ToolContext& context = {}) const {
    return tool(name).execute(args, context);
  }

  void put(const std::string& relative, const std::string& content) const {
    const auto path = cwd() / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
  }

  std::string get(const std::string& relative) const {
    std::ifstream in(cwd() / relative, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  // The result's text blocks, joined.
  static std::string text(const ToolResult& result) {
    std::string out;
    for (const auto& block : result.content) {
      if (const auto* t = std::get_if<TextContent>(&block)) out += t->text;
    }
    return out;
  }

  TempDir temp_;
  std::vector<Tool> tools_;
};

}  // namespace cairn::testing
