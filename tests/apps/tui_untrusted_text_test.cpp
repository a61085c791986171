// The interactive mode's pieces that show what the model, the tools and the
// log said — the transcript, the status line, /tree — show it visibly
// (util/untrusted_text.hpp): no escape of theirs reaches the terminal, only
// the renderer's own colours.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/cli/tui/event_renderer.hpp"
#include "apps/cli/tui/status_line.hpp"
#include "apps/cli/tui/tree_view.hpp"

namespace cairn::cli::tui {
namespace {

const std::string kHostile = "\x1b]52;c;eA==\x07\x1b[2J\xC2\x9B" "31m\r";
const std::string kShown = "␛]52;c;eA==␇␛[2J\\u009B31m";  // (\r: dropped or collapsed)

// No raw escape of the hostile text: the only ESCs are the renderer's own SGR.
void expect_no_hostile_bytes(const std::string& out) {
  EXPECT_EQ(out.find("\x1b]"), std::string::npos) << out;
  EXPECT_EQ(out.find("\x1b[2J"), std::string::npos) << out;
  EXPECT_EQ(out.find("\xC2\x9B"), std::string::npos) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
}

TEST(TuiUntrustedText, TheTranscriptShowsWhatTheModelAndTheToolsSaidVisibly) {
  EventRenderer renderer(RenderOptions{.width = 200, .color = true});
  AssistantMessage message;
  message.content = {TextContent{.text = "a" + kHostile + "z"}, ThinkingContent{.thinking = kHostile},
                     ToolCall{.id = "c1", .name = "read", .arguments = {{"path", kHostile}}}};
  const auto event = [&](EventType type, Json data = Json::object()) {
    Event e{.type = type, .ref = "main", .data = std::move(data)};
    e.message = std::make_shared<const AgentMessage>(message);
    return e;
  };
  std::string out = renderer.render(event(EventType::message_start));
  // The text streams in pieces cut inside the ESC sequence and inside the C1 character.
  const std::string text = "a" + kHostile + "z";
  for (std::size_t at = 0; at < text.size(); at += 3) {
    out += renderer.render(event(EventType::message_update,
                                 {{"assistantMessageEvent",
                                   {{"type", "text_delta"}, {"contentIndex", 0}, {"delta", text.substr(at, 3)}}}}));
  }
  out += renderer.render(event(EventType::message_update, {{"assistantMessageEvent", {{"type", "text_end"}, {"contentIndex", 0}}}}));
  out += renderer.render(event(EventType::message_end));
  ToolResultMessage result{.tool_call_id = "c1", .tool_name = "read", .content = {TextContent{.text = kHostile}}};
  out += renderer.render_message(result);
  out += renderer.render_message(UserMessage{.content = kHostile});
  AssistantMessage failed{.stop_reason = StopReason::error, .error_message = kHostile};
  out += renderer.render_message(failed);
  expect_no_hostile_bytes(out);
  EXPECT_NE(out.find("a" + kShown + "z"), std::string::npos) << out;             // the answer
  EXPECT_NE(out.find("~ thinking: " + kShown), std::string::npos) << out;        // thinking
  EXPECT_NE(out.find("-> read {\"path\":\"\\u001b]52;"), std::string::npos) << out;  // JSON escapes its own
  EXPECT_NE(out.find("| " + kShown), std::string::npos) << out;                  // the tool's output
  EXPECT_NE(out.find("> " + kShown), std::string::npos) << out;                  // a prompt from the log
  EXPECT_NE(out.find("! " + kShown), std::string::npos) << out;                  // the model's error
}

TEST(TuiUntrustedText, TheStatusLineAndTheTreeShowNamesAndLabelsVisibly) {
  StatusState state{.model = "custom/" + kHostile, .ref = kHostile};
  state.subagents.push_back({.session = "s", .label = kHostile, .activity = "thinking"});
  const std::string status = format_status(state, 400);
  EXPECT_EQ(status.find('\x1b'), std::string::npos) << status;
  EXPECT_NE(status.find("custom/" + kShown), std::string::npos) << status;
  EXPECT_NE(status.find("↳ " + kShown), std::string::npos) << status;

  TreeEntry prompt{.id = "e1\x1b[2J", .body = MessageBody{UserMessage{.content = kHostile}}};
  TreeEntry label{.id = "l1", .parent_id = prompt.id, .body = Label{.target_id = prompt.id, .label = kHostile}};
  const TreeView view = build_tree_view({prompt, label}, {{prompt.id, {kHostile}}}, prompt.id, 400);
  ASSERT_EQ(view.lines.size(), 1u);
  const std::string& line = view.lines.front();
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_NE(line.find("e1␛[2J"), std::string::npos) << line;               // the id
  EXPECT_NE(line.find("[" + kShown), std::string::npos) << line;           // the label
  EXPECT_NE(line.find("user: " + kShown), std::string::npos) << line;      // the summary
  EXPECT_NE(line.find("<- " + kShown), std::string::npos) << line;         // the ref
}

}  // namespace
}  // namespace cairn::cli::tui
