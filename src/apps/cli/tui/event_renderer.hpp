// The interactive mode's transcript: harness events turned into terminal
// lines. Streamed text arrives in fragments; the renderer hands back only
// complete lines (wrapped to the width, each ending in '\n') and keeps the
// line being streamed as the "live" line, which the screen shows above the
// prompt until it completes. So the screen never has to rewrite a line it
// scrolled away.
//
// What is shown:
//   > text                    a user message (a prompt, a steering message
//                             when the run consumes it, a follow-up)
//   streamed assistant text   wrapped to the width
//   ~ thinking: ...           thinking, collapsed to one dim line; with
//                             show_thinking, the whole thinking, dim
//   -> tool {"arg":...}       a tool call with its arguments, one line
//      | result line          its result: the first few lines, then
//      | ... N more lines     how many were left out ("!" for an error)
//   (run aborted) etc.        operations' ends, retries, compactions
//
// Every piece of text that is not the renderer's own (the model's, a
// tool's, the user's, the log's) is shown with its control characters
// visible (util/untrusted_text.hpp), before it is styled.
//
// Pure: no terminal, no clock; the tests feed it events.
#pragma once

#include <cstddef>
#include <set>
#include <string>

#include "cairn/harness/events.hpp"
#include "terminal_text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli::tui {

struct RenderOptions {
  std::size_t width = 80;
  bool color = true;
  bool show_thinking = false;
  std::size_t tool_result_lines = 4;
};

class EventRenderer {
 public:
  explicit EventRenderer(RenderOptions options = {});

  // Complete lines to print for `event` ("" when it shows nothing).
  std::string render(const Event& event);
  // The line being streamed, styled; empty when none.
  std::string live_line() const;
  // Ends the live line: returns it as a complete line ("" when none).
  std::string flush();

  void set_width(std::size_t width) { options_.width = width < 10 ? 10 : width; }
  void set_show_thinking(bool show) { options_.show_thinking = show; }
  bool show_thinking() const { return options_.show_thinking; }
  const RenderOptions& options() const { return options_; }

  // One message as the transcript shows it (used for events, and to replay
  // a branch when a session is opened).
  std::string render_message(const AgentMessage& message);

 private:
  enum class Kind { text, thinking };
  std::string append_live(std::string_view fragment, Kind kind);
  std::string take_complete_lines(bool force);
  std::string styled(std::string_view line, Kind kind) const;
  std::string thinking_line(std::string_view thinking) const;
  std::string tool_call_line(const ToolCall& call) const;
  std::string tool_result_lines(const ToolResultMessage& result) const;
  std::string user_lines(std::string_view text) const;
  std::string render_update(const Event& event);
  std::string render_end(const Event& event);

  RenderOptions options_;
  Style style_;
  std::string live_;  // in visible form (util/untrusted_text.hpp)
  VisibleStream live_visible_;
  Kind live_kind_ = Kind::text;
  // The assistant message being streamed: what has been shown of it, so
  // message_end prints only what streaming did not (a resumed run's message,
  // a provider that streams nothing).
  bool streamed_text_ = false;
  std::set<std::string> shown_calls_;
  std::set<int> shown_thinking_;
  std::string last_error_;  // the last failed response's error, not repeated by the run's end
};

}  // namespace cairn::cli::tui
