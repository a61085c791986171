// The interactive mode's controller. One UI thread owns the terminal and
// everything here; the harness's events (from its threads) and the end of
// each operation (run on a worker thread) reach it through a queue whose
// self-pipe wakes the UI thread's poll loop.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "agent_setup.hpp"
#include "interactive_terminal.hpp"
#include "tui/event_renderer.hpp"
#include "tui/input.hpp"
#include "tui/status_line.hpp"
#include "tui/tree_view.hpp"

namespace cairn::cli {

// An operation the worker thread ran, and how it ended.
struct WorkDone {
  std::string kind;  // run, resume, compaction, navigation
  RunResult result;
};

// Events and ends of work, handed from any thread to the UI thread.
class UiQueue {
 public:
  using Item = std::variant<Event, WorkDone>;
  UiQueue();
  ~UiQueue();
  UiQueue(const UiQueue&) = delete;
  UiQueue& operator=(const UiQueue&) = delete;

  void push(Item item);
  // Everything queued so far; clears the wake-up.
  std::deque<Item> take();
  int fd() const { return read_fd_; }

 private:
  std::mutex mu_;
  std::deque<Item> items_;
  bool signalled_ = false;
  int read_fd_ = -1, write_fd_ = -1;
};

class InteractiveApp {
 public:
  explicit InteractiveApp(AgentSetup& setup);
  ~InteractiveApp();
  int run();

 private:
  struct Question {
    std::string prompt;
    std::function<void(const std::string& answer)> on_answer;
  };

  // input
  void on_line(std::optional<std::string> line, bool alt);
  void on_interrupt();
  void submit(const std::string& line, bool alt);
  void ask(std::string prompt, std::function<void(const std::string&)> on_answer);

  // events and work
  void subscribe();
  void drain();
  void start_work(std::string kind, std::function<RunResult(AgentRef&)> work);
  void finish_work(WorkDone done);
  void request_exit();

  // screen
  void say(const std::string& text);  // one or more lines, newline added
  void warn(const std::string& text);
  void refresh();
  std::string prompt_text() const;
  void reset_status();
  void show_transcript();
  void offer_resume();
  void ask_resume_or_abort();
  // interactive_approval.cpp: asks the pending inputs one by one, records
  // each answer, then resumes the run.
  void ask_input(std::vector<PendingInput> pending);
  Result<Json> edit_arguments(const Json& arguments);

  // slash commands (interactive_commands.cpp)
  void command(const tui::SlashCommand& command);
  void cmd_model(const std::string& args);
  void cmd_thinking(const std::string& args);
  void cmd_compact(const std::string& args);
  void cmd_tree();
  void cmd_fork();
  void cmd_label(const std::string& args);
  void cmd_name(const std::string& args);
  void cmd_session();
  void cmd_sessions();
  void cmd_new();
  void cmd_resume(const std::string& args);
  void cmd_ref(const std::string& args);
  bool refuse_while_busy(const std::string& what);
  // Rebuilds the setup on the session `options` name; false (and the
  // current session kept) when that fails.
  bool switch_session(AgentCommandOptions options);
  AgentCommandOptions options_for_switch() const;

  AgentSetup& setup_;
  // The command line's options: every switch starts from them, not from the
  // options of the session switched to last.
  const AgentCommandOptions launch_options_;
  std::shared_ptr<UiQueue> queue_;
  Terminal terminal_;
  tui::EventRenderer renderer_;
  tui::StatusTracker status_;
  tui::InterruptPolicy interrupts_;
  tui::Style style_;
  Subscription subscription_;
  std::thread worker_;
  bool busy_ = false;
  std::optional<Question> question_;
  bool asking_input_ = false;  // question_ asks for a parked run's input: Ctrl+C aborts the run
  std::optional<std::string> pending_prompt_;  // a line sent as the run ended: the next prompt
  tui::TreeView last_tree_;
  bool quit_ = false;
  bool exit_when_idle_ = false;
};

}  // namespace cairn::cli
