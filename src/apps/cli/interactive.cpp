// Interactive mode: the poll loop, input, the harness's events, the worker.
//
// Threads: the UI thread runs the loop and owns the terminal, the renderer
// and this object's state. An operation (prompt, resume, compaction,
// navigation) runs on one worker thread at a time; its end and every event
// of the ref come back through UiQueue. steer, follow_up and abort are
// called from the UI thread while the worker runs — the harness allows that.
#include "interactive.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "interactive_app.hpp"
#include "tui/utf8_check.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {

UiQueue::UiQueue() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    read_fd_ = fds[0];
    write_fd_ = fds[1];
  }
}

UiQueue::~UiQueue() {
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

void UiQueue::push(Item item) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(item));
    wake = !std::exchange(signalled_, true);
  }
  if (wake) {
    const char byte = 1;
    const ssize_t written = ::write(write_fd_, &byte, 1);
    (void)written;  // non-blocking: a full pipe already wakes the loop
  }
}

std::deque<UiQueue::Item> UiQueue::take() {
  char bytes[64];
  while (::read(read_fd_, bytes, sizeof bytes) > 0) {
  }
  std::lock_guard lock(mu_);
  signalled_ = false;
  return std::exchange(items_, {});
}

namespace {

const char* getenv_fn(const char* name) { return std::getenv(name); }

}  // namespace

InteractiveApp::InteractiveApp(AgentSetup& setup)
    : setup_(setup),
      launch_options_(setup.options),
      queue_(std::make_shared<UiQueue>()),
      terminal_(
          Terminal::Handlers{
              .on_line = [this](std::optional<std::string> line, bool alt) { on_line(std::move(line), alt); },
              .on_interrupt = [this] { on_interrupt(); },
              .on_toggle_thinking =
                  [this] {
                    renderer_.set_show_thinking(!renderer_.show_thinking());
                    say(renderer_.show_thinking() ? "(thinking shown in full)" : "(thinking collapsed to one line)");
                  },
              .on_other_key = [this] { interrupts_.on_other_key(); },
              .on_resize = [this] { renderer_.set_width(terminal_.width() - 1); },
          },
          tui::history_path(getenv_fn)),
      renderer_(tui::RenderOptions{.width = 80, .color = terminal_.color()}),
      style_{terminal_.color()} {
  renderer_.set_width(terminal_.width() - 1);
}

InteractiveApp::~InteractiveApp() {
  subscription_.reset();
  if (worker_.joinable()) {
    // Whatever abort answers, the worker's run ends: aborted, or faulted if
    // appends stopped working (which a run sees too); join waits for it.
    (void)setup_.ref.abort();
    worker_.join();
  }
}

std::string InteractiveApp::prompt_text() const {
  if (question_) return question_->prompt;
  return busy_ ? "steer> " : "> ";
}

// What is said quotes names, ids, prompts and errors from the log, the
// model and the store: shown visibly (the interactive mode's output is a
// terminal), styled after that.
void InteractiveApp::say(const std::string& text) { terminal_.print(visible_text(text) + "\n"); }

void InteractiveApp::warn(const std::string& text) { terminal_.print(style_.red(visible_text(text)) + "\n"); }

void InteractiveApp::refresh() {
  terminal_.set_prompt(prompt_text());
  terminal_.set_status(tui::format_status(status_.state(), terminal_.width() - 1));
}

void InteractiveApp::subscribe() {
  subscription_.reset();
  std::weak_ptr<UiQueue> queue = queue_;
  subscription_ = setup_.ref.on_event([queue](const Event& event) {
    if (auto q = queue.lock()) q->push(event);
  });
}

void InteractiveApp::reset_status() {
  tui::StatusState& state = status_.state();
  const Model model = setup_.ref.model();
  state.model = model.provider.empty() ? std::string() : model.provider + "/" + model.id;
  state.thinking_level = to_string(setup_.ref.thinking_level());
  state.ref = setup_.ref.name();
  state.sandbox_off = setup_.sandbox == SandboxMode::off;
  state.activity.clear();
  state.queued_steer = state.queued_follow_up = 0;
  state.context_percent.reset();
  // The session's spend so far: every response in it, on any branch.
  std::int64_t input = 0, output = 0;
  double cost = 0;
  EntryQuery query{.type = RecordType::message, .order = Order::oldest_first};
  for (;;) {
    auto page = setup_.session->find_entries(query);
    if (!page) break;
    for (const TreeEntry& entry : page->items) {
      const auto* body = std::get_if<MessageBody>(&entry.body);
      const auto* assistant = body ? std::get_if<AssistantMessage>(&body->message) : nullptr;
      if (!assistant) continue;
      input += assistant->usage.input + assistant->usage.cache_read + assistant->usage.cache_write;
      output += assistant->usage.output;
      cost += assistant->usage.cost.total;
    }
    if (!page->next_cursor) break;
    query.cursor = page->next_cursor;
  }
  status_.set_totals(input, output, cost);
}

void InteractiveApp::show_transcript() {
  auto context = setup_.session->build_context(setup_.ref.name());
  if (!context || context->messages.empty()) return;
  constexpr std::size_t kShown = 20;
  const auto& messages = context->messages;
  std::string out;
  const std::size_t first = messages.size() > kShown ? messages.size() - kShown : 0;
  if (first > 0) out += style_.dim(fmt::format("({} earlier messages; /tree lists every entry)", first)) + "\n";
  for (std::size_t i = first; i < messages.size(); ++i) out += renderer_.render_message(messages[i]);
  terminal_.print(out);
}

void InteractiveApp::offer_resume() {
  const SuspendedOperation* suspended = nullptr;
  for (const auto& op : setup_.suspended) {
    if (op.ref == setup_.ref.name()) suspended = &op;
  }
  if (!suspended) return;
  // Still suspended? (a ref switched to later may have been resumed since.)
  bool still = false;
  for (const RefStatus& ref : setup_.harness->refs()) {
    if (ref.name != setup_.ref.name() || !ref.run) continue;
    if (ref.run->status == OperationStatus::awaiting_input) {
      say(fmt::format("this ref's run waits for your answer: {}", describe_suspended(*suspended)));
      ask_input(setup_.ref.pending_inputs());
      return;
    }
    if (ref.run->status == OperationStatus::suspended) still = true;
  }
  if (!still) return;
  say(fmt::format("this ref has an unfinished operation: {}", describe_suspended(*suspended)));
  ask_resume_or_abort();
}

void InteractiveApp::ask_resume_or_abort() {
  ask("resume or abort? [r/a] ", [this](const std::string& reply) {
    const std::string choice = tui::trim(reply);
    if (choice == "r" || choice == "resume") {
      start_work("resume", [](AgentRef& ref) { return ref.resume(); });
    } else if (choice == "a" || choice == "abort") {
      AbortResult aborted = setup_.ref.abort();
      if (!aborted.ok()) {
        warn(fmt::format("abort failed: {}", aborted.error ? aborted.error->message : "unknown error"));
      } else {
        say("(the operation was aborted; its log records it)");
      }
    } else {
      ask_resume_or_abort();
    }
  });
}

void InteractiveApp::ask(std::string prompt, std::function<void(const std::string&)> on_answer) {
  question_ = Question{visible_text(prompt), std::move(on_answer)};  // it may quote a command
  refresh();
}

void InteractiveApp::on_line(std::optional<std::string> line, bool alt) {
  if (!line) {  // Ctrl+D on an empty line
    if (question_) {
      question_.reset();
      refresh();
      return;
    }
    request_exit();
    // In the line handler, readline shows no prompt again once its handler
    // is removed: the screen stays as it is.
    if (quit_) terminal_.stop();
    return;
  }
  if (question_) {
    Question question = std::move(*question_);
    question_.reset();
    asking_input_ = false;  // the answer may ask again (ask_input sets it)
    refresh();
    question.on_answer(*line);
    refresh();
    return;
  }
  if (!tui::trim(*line).empty()) terminal_.remember(*line);
  submit(*line, alt);
  refresh();
}

void InteractiveApp::submit(const std::string& line, bool alt) {
  const tui::InputAction action = tui::classify_line(line, busy_, alt);
  using Kind = tui::InputAction::Kind;
  if (action.kind == Kind::prompt || action.kind == Kind::steer || action.kind == Kind::follow_up) {
    if (auto bad = tui::first_invalid_utf8(action.text)) {
      warn(fmt::format("not sent: the line is not valid UTF-8 ({})", *bad));
      return;
    }
  }
  switch (action.kind) {
    case Kind::nothing:
      return;
    case Kind::command:
      command(action.command);
      return;
    case Kind::prompt: {
      std::string text = action.text;
      start_work("run", [text](AgentRef& ref) { return ref.prompt(text); });
      return;
    }
    case Kind::steer:
    case Kind::follow_up: {
      const bool steer = action.kind == Kind::steer;
      QueueResult queued = steer ? setup_.ref.steer(action.text) : setup_.ref.follow_up(action.text);
      if (!queued.ok() && queued.error && queued.error->is(Errc::no_active_run)) {
        // The run ended between the key and the call; its end has not
        // reached this thread yet. The line becomes the next prompt.
        pending_prompt_ = action.text;
        return;
      }
      if (!queued.ok()) {
        warn(fmt::format("could not queue the {}: {}", steer ? "steering message" : "follow-up",
                         queued.error ? queued.error->message : "rejected"));
        return;
      }
      terminal_.print(style_.dim(tui::truncate_to_width(
                          fmt::format("(queued {}: {})", steer ? "to steer" : "as a follow-up",
                                      visible_text(tui::collapse_whitespace(action.text))),
                          terminal_.width() - 1)) +
                      "\n");
      return;
    }
  }
}

void InteractiveApp::on_interrupt() {
  const bool line_empty = terminal_.input().empty();
  if (question_) {
    question_.reset();
    terminal_.set_input("");
    if (std::exchange(asking_input_, false)) {
      // The run waits for this answer: Ctrl+C ends it, durably.
      if (AbortResult aborted = setup_.ref.abort(); !aborted.ok()) {
        warn(fmt::format("abort failed: {}", aborted.error ? aborted.error->message : "unknown error"));
      }
    } else {
      say("(cancelled)");
    }
    refresh();
    return;
  }
  switch (interrupts_.on_interrupt(busy_, line_empty)) {
    case tui::InterruptPolicy::Action::abort: {
      AbortResult aborted = setup_.ref.abort();
      if (!aborted.ok()) {
        warn(fmt::format("abort failed: {}", aborted.error ? aborted.error->message : "unknown error"));
        return;
      }
      // Queued messages the run will not read: back into the input line, so
      // nothing typed is lost.
      std::string returned;
      for (const auto* list : {&aborted.cleared_steer, &aborted.cleared_follow_up}) {
        for (const AgentMessage& message : *list) {
          if (const auto* user = std::get_if<UserMessage>(&message)) {
            std::string text = std::visit(
                [](const auto& content) -> std::string {
                  if constexpr (std::is_same_v<std::decay_t<decltype(content)>, std::string>) {
                    return content;
                  } else {
                    std::string joined;
                    for (const auto& block : content) {
                      if (const auto* t = std::get_if<TextContent>(&block)) joined += (joined.empty() ? "" : " ") + t->text;
                    }
                    return joined;
                  }
                },
                user->content);
            returned += (returned.empty() ? "" : " ") + text;
          }
        }
      }
      if (!returned.empty()) {
        say("(queued messages the run did not read are back in the input line)");
        terminal_.set_input(returned);
      }
      return;
    }
    case tui::InterruptPolicy::Action::clear_line:
      terminal_.set_input("");
      return;
    case tui::InterruptPolicy::Action::arm_exit:
      say("(press Ctrl+C again to exit, or Ctrl+D)");
      return;
    case tui::InterruptPolicy::Action::exit:
      request_exit();
      return;
  }
}

void InteractiveApp::request_exit() {
  if (busy_) {
    // The worker must end before the harness goes: abort the run (durably;
    // `cairn resume` is not needed afterwards) and leave once it has ended.
    if (const AbortResult aborted = setup_.ref.abort(); !aborted.ok() && aborted.error) {
      warn(fmt::format("abort: {}", aborted.error->message));  // the run still ends, faulted
    }
    exit_when_idle_ = true;
    say("(aborting the run to exit)");
    return;
  }
  quit_ = true;
}

void InteractiveApp::start_work(std::string kind, std::function<RunResult(AgentRef&)> work) {
  if (busy_) {
    warn("an operation is going on this ref: wait for it, or Ctrl+C to abort it");
    return;
  }
  if (worker_.joinable()) worker_.join();
  busy_ = true;
  AgentRef ref = setup_.ref;
  std::shared_ptr<UiQueue> queue = queue_;
  worker_ = std::thread([queue, ref, kind = std::move(kind), work = std::move(work)]() mutable {
    RunResult result = work(ref);
    queue->push(WorkDone{std::move(kind), std::move(result)});
  });
  refresh();
}

void InteractiveApp::finish_work(WorkDone done) {
  if (worker_.joinable()) worker_.join();
  busy_ = false;
  const RunResult& result = done.result;
  // Failures the events showed (a run_end, a compaction_end, a
  // navigation_end) are not repeated; a rejected call has no events.
  if (result.outcome == cairn::Outcome::rejected && result.error) {
    warn(fmt::format("{} rejected: {}", done.kind, result.error->message));
  } else if (result.outcome == cairn::Outcome::faulted && result.error) {
    warn(fmt::format("the session stopped writing: {}", result.error->message));
  }
  if (done.kind == "navigation" && result.ok() && result.editor_text) terminal_.set_input(*result.editor_text);
  if (result.outcome == cairn::Outcome::awaiting_input && !exit_when_idle_) {
    ask_input(result.awaiting_input);
  } else if (exit_when_idle_) {
    quit_ = true;
  } else if (pending_prompt_) {
    std::string text = std::move(*pending_prompt_);
    pending_prompt_.reset();
    start_work("run", [text](AgentRef& ref) { return ref.prompt(text); });
  }
  refresh();
}

void InteractiveApp::drain() {
  std::string printed;
  bool status_changed = false;
  for (auto& item : queue_->take()) {
    if (auto* event = std::get_if<Event>(&item)) {
      printed += renderer_.render(*event);
      status_.apply(*event);
      status_changed = true;
    } else {
      if (!printed.empty()) {
        terminal_.print(std::exchange(printed, {}));
      }
      finish_work(std::move(std::get<WorkDone>(item)));
    }
  }
  if (!printed.empty() || status_changed) {
    terminal_.update(printed, renderer_.live_line(), tui::format_status(status_.state(), terminal_.width() - 1));
  }
}

int InteractiveApp::run() {
  reset_status();
  show_transcript();
  terminal_.set_status(tui::format_status(status_.state(), terminal_.width() - 1));
  terminal_.start(prompt_text());
  terminal_.print(style_.dim("cairn interactive: /help lists commands and keys; Ctrl+D exits") + "\n");
  subscribe();
  offer_resume();

  while (!quit_) {
    pollfd fds[3] = {{terminal_.input_fd(), POLLIN, 0}, {queue_->fd(), POLLIN, 0}, {terminal_.signal_fd(), POLLIN, 0}};
    const int ready = ::poll(fds, 3, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents & POLLIN) terminal_.on_signal();
    if (fds[1].revents & POLLIN) drain();
    if (quit_) break;
    if (fds[0].revents & POLLIN) {
      terminal_.on_input();
    } else if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      request_exit();
      if (!quit_) {
        // The terminal is gone: wait for the aborted run without input.
        while (busy_) {
          pollfd wait{queue_->fd(), POLLIN, 0};
          if (::poll(&wait, 1, -1) > 0) drain();
        }
        quit_ = true;
      }
    }
  }
  subscription_.reset();
  terminal_.stop();
  print_untrusted(stderr, "cairn: session {}\n", setup_.session->id());
  return kOk;
}

int run_interactive(AgentSetup& setup) {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) {
    return report(kUsage, "interactive mode needs a terminal; use cairn -p PROMPT for one prompt without a UI");
  }
  InteractiveApp app(setup);
  return app.run();
}

}  // namespace cairn::cli
