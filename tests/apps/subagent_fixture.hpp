// What the tests of the `task` tool as a process share: a response that
// delegates two tasks, a call's result in `cairn log --json`, and a
// session's subagent sessions as `cairn sessions --json` lists them.
#pragma once

#include <string>
#include <vector>

#include "apps/agent_cli_fixture.hpp"
#include "support/openai_script.hpp"

namespace cairn::cli_testing {

inline bool has_tool_result(const Json& body) { return testing::openai_tool_results(body) > 0; }

// Two task calls in one response.
inline ScriptedResponse two_tasks(const Json& first, const Json& second) {
  Json calls = Json::array();
  int index = 0;
  for (const auto& [id, args] : {std::pair{"t_a", first}, std::pair{"t_b", second}}) {
    calls.push_back({{"index", index++}, {"id", id}, {"type", "function"},
                     {"function", {{"name", "task"}, {"arguments", args.dump()}}}});
  }
  return testing::openai_stream(
      {testing::openai_chunk({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}}),
       testing::openai_chunk(Json::object(), "tool_calls")});
}

// The result message of call `id` in `cairn log --json` output (null: none).
inline Json result_of(const std::string& log, const std::string& id) {
  for (const auto& entry : log_of(log, "message")) {
    const Json& message = entry["message"];
    if (message.value("role", "") == "toolResult" && message.value("toolCallId", "") == id) return message;
  }
  return nullptr;
}

// Its text.
inline std::string result_text(const std::string& log, const std::string& id) {
  const Json message = result_of(log, id);
  if (message.is_null()) return "(no result)";
  std::string text;
  for (const auto& block : message["content"]) text += block.value("text", "");
  return text;
}

class SubagentTest : public AgentCliTest {
 protected:
  // The subagent sessions of `parent` in the store at `uri`.
  std::vector<std::string> children_of(const std::string& parent, const std::string& uri) {
    Finished listed = finish(start({"sessions", "--json", "--store", uri}, path("work")));
    EXPECT_EQ(listed.status, 0) << listed.err;
    std::vector<std::string> ids;
    for (const auto& line : lines_of(listed.out)) {
      Json header = Json::parse(line);
      if (header.value("parentSession", "") == parent && header.contains("child")) ids.push_back(header["id"]);
    }
    return ids;
  }
  std::vector<std::string> children_of(const std::string& parent) { return children_of(parent, store()); }
};

}  // namespace cairn::cli_testing
