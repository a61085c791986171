// The interactive mode's side of durable input requests: a run that parks
// awaiting input shows what it asks and takes the answer from the input
// line — allow? [y]es [n]o [a]lways [e]dit, or a question's answer — then
// records it and resumes. The answer is in the log before anything acts on
// it; Ctrl+C while asking aborts the run, durably.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "agent/approval_settings.hpp"
#include "approval_cli.hpp"
#include "cairn/tools/sandbox.hpp"
#include "interactive_app.hpp"
#include "tui/terminal_text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

std::string text_arg(const Json& args, const char* key) {
  auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Each line of `text` with `mark` before it, at most `limit` lines.
std::string marked(std::string_view text, std::string_view mark, std::size_t limit = 40) {
  std::string out;
  std::size_t lines = 0;
  std::size_t start = 0;
  while (start <= text.size() && lines < limit) {
    const std::size_t end = text.find('\n', start);
    out += fmt::format("  {}{}\n", mark, text.substr(start, end == std::string_view::npos ? end : end - start));
    ++lines;
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
  if (start < text.size()) out += fmt::format("  {}...\n", mark);
  return out;
}

// What the call would do, as a person checks it: the command, or the diff.
std::string call_preview(const PendingInput& input) {
  const Json& args = input.arguments;
  if (input.tool_name == "bash") return fmt::format("  $ {}\n", text_arg(args, "command"));
  if (input.tool_name == "edit") {
    std::string out = fmt::format("  edit {}\n", text_arg(args, "path"));
    std::vector<Json> edits;
    if (auto it = args.find("edits"); it != args.end() && it->is_array()) edits.assign(it->begin(), it->end());
    if (args.contains("oldText")) edits.push_back(args);
    for (const Json& edit : edits) {
      out += marked(text_arg(edit, "oldText"), "- ");
      out += marked(text_arg(edit, "newText"), "+ ");
    }
    return out;
  }
  if (input.tool_name == "write") {
    return fmt::format("  write {}\n", text_arg(args, "path")) + marked(text_arg(args, "content"), "+ ");
  }
  return fmt::format("  {} {}\n", input.tool_name, args.dump());
}

// Adds `rule` to the allow list of the project's .cairn/settings.json,
// keeping whatever else the file holds.
Status remember_in_project(const std::filesystem::path& cwd, const std::string& rule) {
  const auto dir = cwd / ".cairn";
  const auto file = dir / "settings.json";
  Json settings = Json::object();
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    settings = Json::parse(text.str(), nullptr, false);
    if (settings.is_discarded() || !settings.is_object()) {
      return fail(Errc::invalid_config, fmt::format("{}: not a JSON object; the rule was not added", file.string()));
    }
  }
  Json& allow = settings["approval"]["allow"];
  if (!allow.is_array()) allow = Json::array();
  allow.push_back(rule);
  std::filesystem::create_directories(dir, ec);
  const auto temporary = dir / "settings.json.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << settings.dump(2) << "\n";
    if (!out.flush()) return fail(Errc::io_error, fmt::format("{}: cannot be written", temporary.string()));
  }
  std::filesystem::rename(temporary, file, ec);
  if (ec) return fail(Errc::io_error, fmt::format("{}: {}", file.string(), ec.message()));
  return {};
}

}  // namespace

void InteractiveApp::ask_input(std::vector<PendingInput> pending) {
  if (pending.empty()) {
    start_work("resume", [](AgentRef& ref) { return ref.resume(); });
    return;
  }
  const PendingInput input = pending.front();
  pending.erase(pending.begin());
  auto answer = [this, input, pending](InputResponse response) {
    response.by = answered_by();
    InputResult recorded = setup_.ref.respond(input.id, std::move(response));
    if (!recorded.ok()) {
      warn(fmt::format("the answer was not recorded: {}", recorded.error ? recorded.error->message : "rejected"));
      asking_input_ = false;
      return;
    }
    ask_input(pending);
  };
  asking_input_ = true;
  if (input.kind == InputKind::question) {
    // The question and its choices are the model's words.
    std::string shown = style_.bold(visible_text(fmt::format("? {}", input.question.value_or("")))) + "\n";
    for (std::size_t i = 0; i < input.choices.size(); ++i) {
      shown += visible_text(fmt::format("  {}. {}\n", i + 1, input.choices[i]));
    }
    terminal_.print(shown);
    ask("answer (Enter declines): ", [this, input, answer](const std::string& reply) {
      const std::string text = tui::trim(reply);
      if (text.empty()) return answer(InputResponse{.decision = InputResponse::Decision::deny});
      std::string chosen = text;
      // A choice's number stands for the choice.
      if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) && text.size() < 4) {
        const std::size_t n = std::stoul(text);
        if (n >= 1 && n <= input.choices.size()) chosen = input.choices[n - 1];
      }
      answer(InputResponse{.decision = InputResponse::Decision::answer, .answer = chosen});
    });
    return;
  }
  // The call as the model asked for it: shown visibly, so that what is
  // approved is what can be read.
  const std::string sandbox =
      input.sandbox ? fmt::format(", sandbox {}", describe_sandbox(*input.sandbox)) : std::string();
  terminal_.print(style_.bold(visible_text(fmt::format("{} wants to run (rule {}{}):", input.tool_name,
                                                       input.rule.value_or("default"), sandbox))) +
                  "\n" + visible_text(call_preview(input)));
  ask("allow? [y]es [n]o [a]lways [e]dit ", [this, input, answer, pending](const std::string& reply) {
    const std::string choice = tui::trim(reply);
    if (choice == "y" || choice == "yes") return answer(InputResponse{.decision = InputResponse::Decision::allow});
    if (choice == "n" || choice == "no") {
      ask("why (for the model; Enter: no reason): ", [answer](const std::string& why) {
        InputResponse response{.decision = InputResponse::Decision::deny};
        if (!tui::trim(why).empty()) response.reason = tui::trim(why);
        answer(std::move(response));
      });
      return;
    }
    if (choice == "a" || choice == "always") {
      const std::string rule = agent::always_rule(input.tool_name, input_subject(input));
      ask(fmt::format("always allow {} in this [s]ession or this [p]roject? ", rule),
          [this, rule, answer](const std::string& where) {
            const std::string place = tui::trim(where);
            if (place == "p" || place == "project") {
              if (auto saved = remember_in_project(setup_.cwd, rule); !saved) {
                warn(saved.error().message);
              } else {
                say(fmt::format("(added {} to .cairn/settings.json)", rule));
              }
            }
            // Either way the session remembers it: this run's next calls too.
            answer(InputResponse{.decision = InputResponse::Decision::allow, .remember = rule});
          });
      return;
    }
    if (choice == "e" || choice == "edit") {
      auto edited = edit_arguments(input.arguments);
      if (!edited) {
        warn(edited.error().message);
        std::vector<PendingInput> again = pending;
        again.insert(again.begin(), input);
        return ask_input(std::move(again));
      }
      return answer(InputResponse{.decision = InputResponse::Decision::allow, .arguments = std::move(*edited)});
    }
    std::vector<PendingInput> again = pending;
    again.insert(again.begin(), input);
    ask_input(std::move(again));
  });
}

// The arguments in $EDITOR (else vi), as JSON; the edited object, or why not.
Result<Json> InteractiveApp::edit_arguments(const Json& arguments) {
  char path[] = "/tmp/cairn-args-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return fail(Errc::io_error, "cannot make a temporary file for the arguments");
  const std::string text = arguments.dump(2) + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) {
    ::unlink(path);
    return fail(Errc::io_error, "cannot write the arguments to a temporary file");
  }
  const char* editor = std::getenv("EDITOR");
  const std::string command = fmt::format("{} '{}'", editor && *editor ? editor : "vi", path);
  int status = 0;
  terminal_.run_outside([&] { status = std::system(command.c_str()); });
  std::ifstream in(path);
  std::stringstream read;
  read << in.rdbuf();
  ::unlink(path);
  if (status != 0) return fail(Errc::invalid_argument, fmt::format("the editor ({}) failed; nothing was answered", command));
  Json edited = Json::parse(read.str(), nullptr, false);
  if (edited.is_discarded() || !edited.is_object()) {
    return fail(Errc::invalid_argument, "the edited arguments are not a JSON object; nothing was answered");
  }
  return edited;
}

}  // namespace cairn::cli
