// Terminal rendering of a run's events, and signals as durable aborts.
#include "agent_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "text.hpp"

namespace cairn::cli {
namespace {

std::string string_arg(const Json& args, const char* key) {
  if (!args.is_object()) return {};
  auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The first text of a tool result, in one line.
std::string result_text(const ToolResultMessage& result) {
  for (const auto& block : result.content) {
    if (const auto* text = std::get_if<TextContent>(&block)) return one_line(text->text, 100);
  }
  return {};
}

void write_out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

std::string seconds(std::int64_t ms) { return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0); }

}  // namespace

std::string summarize_tool_call(const std::string& tool, const Json& args) {
  std::string summary;
  if (tool == "bash") {
    summary = string_arg(args, "command");
  } else if (tool == "read" || tool == "write" || tool == "edit" || tool == "ls") {
    summary = string_arg(args, "path");
    if (summary.empty() && tool == "ls") summary.push_back('.');  // (an assignment trips g++ 12's -Wrestrict)
  } else if (tool == "grep" || tool == "find") {
    summary = string_arg(args, "pattern");
    if (auto path = string_arg(args, "path"); !path.empty()) summary = fmt::format("{} in {}", summary, path);
  }
  if (summary.empty()) summary = args.is_null() ? std::string() : args.dump();
  return one_line(summary, 100);
}

// ---- EventPrinter -------------------------------------------------------------

PrintFormat text_format_for_stdout() {
  return ::isatty(STDOUT_FILENO) ? PrintFormat::text_streamed : PrintFormat::text_final;
}

EventPrinter::EventPrinter(AgentHarness& harness, std::string ref, PrintFormat format, std::FILE* progress)
    : ref_(std::move(ref)), format_(format), progress_(progress) {
  // Every ref's events, so that a fault (which names no ref) is seen too.
  subscription_ = harness.on_event([this](const Event& event) {
    if (!event.ref.empty() && event.ref != ref_) return;
    on_event(event);
  });
}

EventPrinter::~EventPrinter() {
  subscription_.reset();
  finish();
}

void EventPrinter::finish() {
  std::lock_guard lock(mu_);
  if (format_ == PrintFormat::json) return;
  if (format_ == PrintFormat::text_final && !finished_ && answer_ && !answer_->empty()) {
    text_out_.write(*answer_);
    wrote_text_ = true;
    at_line_start_ = answer_->back() == '\n';
  }
  finished_ = true;
  end_text_line();
}

void EventPrinter::end_text_line() {
  text_out_.finish();  // a character the text broke off in shows before what follows
  if (wrote_text_ && !at_line_start_) {
    write_out("\n");
    at_line_start_ = true;
  }
}

void EventPrinter::on_event(const Event& event) {
  std::lock_guard lock(mu_);
  if (format_ == PrintFormat::json) {
    write_out(encode(event).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
    return;
  }
  if (format_ == PrintFormat::text_final && event.type == EventType::message_end && event.message) {
    // Failed attempts that are retried end no message; one that failed for
    // good, or was aborted, ends the run without an answer.
    if (const auto* assistant = std::get_if<AssistantMessage>(event.message.get())) {
      answer_.reset();
      if (assistant->stop_reason != StopReason::error && assistant->stop_reason != StopReason::aborted) {
        std::string text;
        for (const auto& block : assistant->content) {
          if (const auto* t = std::get_if<TextContent>(&block)) text += t->text;
        }
        answer_ = std::move(text);
      }
    }
  }
  text_event(event);
}

void EventPrinter::text_event(const Event& event) {
  const EventType type = event.type;
  const Json& data = event.data;
  if (type == EventType::message_update) {
    if (format_ == PrintFormat::text_final) return;
    const Json& delta = data.value("assistantMessageEvent", Json::object());
    if (delta.value("type", "") != "text_delta") return;
    const std::string text = delta.value("delta", "");
    if (text.empty()) return;
    if (!text_open_ && wrote_text_) {
      // A new message: a blank line apart from the one before.
      end_text_line();
      write_out("\n");
    }
    text_open_ = true;
    wrote_text_ = true;
    text_out_.write(text);
    at_line_start_ = text.back() == '\n';
    return;
  }
  if (type == EventType::message_end && text_open_) {
    text_open_ = false;
    end_text_line();
    return;
  }
  std::string line;  // progress, if this event makes any
  if (type == EventType::message_end) {
    if (!event.message) return;
    if (const auto* result = std::get_if<ToolResultMessage>(event.message.get()); result && result->is_error) {
      line = fmt::format("  [{}] error: {}\n", result->tool_name, result_text(*result));
    }
  } else if (type == EventType::tool_start) {
    const std::string tool = data.value("toolName", "");
    line = fmt::format("[{}] {}\n", tool, summarize_tool_call(tool, data.value("args", Json::object())));
  } else if (type == EventType::run_resume) {
    line = fmt::format("cairn: resuming {}\n", event.run_id.value_or("the operation"));
  } else if (type == EventType::run_cancel) {
    line = fmt::format("cairn: aborting\n");
  } else if (type == EventType::retry_scheduled) {
    // The failed attempt's text stays on a terminal; the next attempt's
    // begins apart from it.
    text_open_ = false;
    line = fmt::format("cairn: attempt {} of {} failed ({}); retrying in {}\n", data.value("attempt", 0),
               data.value("maxAttempts", 0), one_line(data.value("errorMessage", ""), 120),
               seconds(data.value("delayMs", std::int64_t{0})));
  } else if (type == EventType::compaction_start) {
    line = fmt::format("cairn: compacting the context ({})\n", data.value("reason", "manual"));
  } else if (type == EventType::compaction_end) {
    const std::string outcome = data.value("outcome", "");
    if (outcome == "completed" && data.contains("entry")) {
      line = fmt::format("cairn: compacted ({} tokens before)\n",
                 data["entry"].value("tokensBefore", std::int64_t{0}));
    } else if (outcome == "failed") {
      line = fmt::format("cairn: compaction failed: {}\n",
                 data.contains("error") ? data["error"].value("message", "") : std::string());
    }
  } else if (type == EventType::run_end) {
    const std::string outcome = data.value("outcome", "");
    if (outcome == "failed") {
      line = fmt::format("cairn: run failed: {}\n",
                 data.contains("error") ? data["error"].value("message", "") : std::string("unknown error"));
    } else if (outcome == "aborted") {
      line = fmt::format("cairn: run aborted\n");
    }
  } else if (type == EventType::fault) {
    line = fmt::format("cairn: the session stopped accepting writes: {}\n", data.value("message", ""));
  }
  if (line.empty()) return;
  end_text_line();  // on a line of its own
  // Tool names, arguments, results and errors are the model's and the tools' words.
  write_untrusted(progress_, line);
  std::fflush(progress_);
}

// ---- SignalAbort -------------------------------------------------------------

namespace {

// The handler's only channel: a pipe written with one byte per signal.
int g_signal_pipe[2] = {-1, -1};
std::atomic<int> g_signals{0};
std::atomic<bool> g_fired{false};
struct sigaction g_previous_int, g_previous_term, g_previous_pipe;

extern "C" void on_abort_signal(int) {
  const int saved = errno;
  if (g_signals.fetch_add(1) >= 1) _exit(1);  // the second one: out now; the log is consistent
  const char byte = 's';
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

extern "C" void on_sigpipe(int) {}

}  // namespace

SignalAbort::SignalAbort(std::function<void()> on_signal) : on_signal_(std::move(on_signal)) {
  g_signals = 0;
  g_fired = false;
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) return;
  struct sigaction action {};
  action.sa_handler = on_abort_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &g_previous_int);
  ::sigaction(SIGTERM, &action, &g_previous_term);
  // A handler, not SIG_IGN: an ignored SIGPIPE would be inherited by the
  // commands the bash tool runs.
  struct sigaction pipe_action {};
  pipe_action.sa_handler = on_sigpipe;
  sigemptyset(&pipe_action.sa_mask);
  ::sigaction(SIGPIPE, &pipe_action, &g_previous_pipe);

  watcher_ = std::thread([this] {
    char byte = 0;
    for (;;) {
      const ssize_t n = ::read(g_signal_pipe[0], &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == 'q') return;
      g_fired = true;
      if (on_signal_) on_signal_();
    }
  });
}

SignalAbort::~SignalAbort() {
  if (g_signal_pipe[0] < 0) return;
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  ::sigaction(SIGPIPE, &g_previous_pipe, nullptr);
  const char quit = 'q';
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &quit, 1);
  if (watcher_.joinable()) watcher_.join();
  ::close(g_signal_pipe[0]);
  ::close(g_signal_pipe[1]);
  g_signal_pipe[0] = g_signal_pipe[1] = -1;
}

bool SignalAbort::fired() const { return g_fired; }

}  // namespace cairn::cli
