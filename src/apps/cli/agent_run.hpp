// Running an operation of the coding agent in the terminal without a UI
// (print mode, resume, compact): its events rendered as they arrive, and
// SIGINT / SIGTERM turned into a durable abort.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cairn/harness/harness.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {

// What goes to stdout.
enum class PrintFormat {
  // The assistant's text as it streams, every message of the run (a
  // terminal, where a person reads along).
  text_streamed,
  // Only the run's final answer, the text of its last assistant message,
  // once that message is complete: what a script captures holds no
  // half-streamed attempt that failed and was retried, and no message that
  // merely led to a tool call. Nothing when the run ends without an answer.
  text_final,
  // Each event as one line of JSON (encode(Event)), and nothing else.
  json,
};

// text_streamed when stdout is a terminal, else text_final.
PrintFormat text_format_for_stdout();

// Renders one ref's events while alive: stdout as `format` says; progress
// (tool calls with a short summary of their arguments, failed tool results,
// retries, compaction, the run's failure) to `progress` in the text formats
// (stderr; the demo tells everything on stdout). In the text formats what
// the model and the tools said reaches a terminal in visible form
// (util/untrusted_text.hpp); --json and pipes get it byte for byte.
class EventPrinter {
 public:
  EventPrinter(AgentHarness& harness, std::string ref, PrintFormat format, std::FILE* progress = stderr);
  ~EventPrinter();
  EventPrinter(const EventPrinter&) = delete;
  EventPrinter& operator=(const EventPrinter&) = delete;

  // Ends the text on stdout with a newline when it does not end in one; in
  // text_final, writes the final answer first.
  void finish();

 private:
  void on_event(const Event& event);
  void text_event(const Event& event);
  // Ends a line of streamed text before anything else is printed.
  void end_text_line();

  std::string ref_;
  PrintFormat format_;
  UntrustedWriter text_out_{stdout};  // the answer's text
  std::FILE* progress_;
  std::mutex mu_;
  std::optional<std::string> answer_;  // text_final: the last complete assistant message's text
  bool finished_ = false;
  bool text_open_ = false;      // the current assistant message has written text
  bool wrote_text_ = false;     // some text was written to stdout
  bool at_line_start_ = true;   // the last character written to stdout was a newline
  Subscription subscription_;
};

// While alive, the first SIGINT or SIGTERM calls `on_signal` (on a thread of
// its own, never in the handler); a second one ends the process at once with
// status 1. SIGPIPE no longer kills the process (writes fail instead), and
// child processes still start with every signal at its default.
class SignalAbort {
 public:
  explicit SignalAbort(std::function<void()> on_signal);
  ~SignalAbort();
  SignalAbort(const SignalAbort&) = delete;
  SignalAbort& operator=(const SignalAbort&) = delete;

  bool fired() const;

 private:
  std::function<void()> on_signal_;
  std::thread watcher_;
};

// A one-line summary of a tool call's arguments: the command, path or
// pattern for the coding tools, compact JSON for others.
std::string summarize_tool_call(const std::string& tool, const Json& args);

}  // namespace cairn::cli
