// The parked run's questions on stderr, and `cairn approve`, `deny` and
// `answer`, which record an answer without running anything.
#include "approval_cli.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "agent/approval_settings.hpp"
#include "agent_setup.hpp"
#include "cairn/tools/sandbox.hpp"
#include "cli.hpp"
#include "text.hpp"
#include "tui/utf8_check.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {

std::string describe_input(const PendingInput& input) {
  // A subagent's request is answered here all the same; say whose it is.
  const std::string whose = input.child_session ? fmt::format("  (subagent session {})", *input.child_session) : "";
  if (input.kind == InputKind::question) {
    std::string text = fmt::format("question ({}): {}", input.tool_call_id, input.question.value_or(""));
    if (!input.choices.empty()) {
      text += " [";
      for (std::size_t i = 0; i < input.choices.size(); ++i) text += (i ? " | " : "") + input.choices[i];
      text += "]";
    }
    return text + whose;
  }
  std::string what;
  if (auto it = input.arguments.find("command"); it != input.arguments.end() && it->is_string()) {
    what = it->get<std::string>();
  } else if (auto path = input.arguments.find("path"); path != input.arguments.end() && path->is_string()) {
    what = path->get<std::string>();
  } else {
    what = input.arguments.dump();
  }
  const std::string sandbox = input.sandbox ? fmt::format("  [sandbox {}]", describe_sandbox(*input.sandbox)) : "";
  return fmt::format("{} ({}): {}  [asked by rule {}]{}{}", input.tool_name, input.tool_call_id, one_line(what, 400),
                     input.rule.value_or("default"), sandbox, whose);
}

std::string answered_by() {
  const char* user = std::getenv("USER");
  return user && *user ? std::string(user) : std::string("user");
}

std::optional<std::string> input_subject(const PendingInput& input) {
  for (const char* key : {"command", "path"}) {
    if (auto it = input.arguments.find(key); it != input.arguments.end() && it->is_string()) return it->get<std::string>();
  }
  return std::nullopt;
}

int report_awaiting_input(const std::string& session_id, const std::string& ref,
                          const std::vector<PendingInput>& pending) {
  const std::string ref_flag = ref == "main" ? "" : " --ref " + ref;
  // The question, the call's arguments, its id and the ref are the model's
  // or a client's words: every line goes out as untrusted text.
  print_untrusted(stderr, "cairn: session {} waits for input:\n", session_id);
  for (const auto& input : pending) {
    print_untrusted(stderr, "  {}\n", describe_input(input));
    const std::string call = pending.size() > 1 ? " --call " + input.tool_call_id : "";
    if (input.kind == InputKind::question) {
      print_untrusted(stderr, "    answer:   cairn answer {}{}{} TEXT\n", session_id, ref_flag, call);
      print_untrusted(stderr, "    decline:  cairn deny {}{}{} [--reason TEXT]\n", session_id, ref_flag, call);
    } else {
      print_untrusted(stderr, "    allow:    cairn approve {}{}{} [--always]\n", session_id, ref_flag, call);
      print_untrusted(stderr, "    deny:     cairn deny {}{}{} [--reason TEXT]\n", session_id, ref_flag, call);
    }
  }
  print_untrusted(stderr, "  then:       cairn resume {}{}\n", session_id, ref_flag);
  return kAwaitingInput;
}

}  // namespace cairn::cli

// ---- cairn approve / deny / answer ------------------------------------------------

namespace cairn::cli {
namespace {

struct AnswerOptions {
  AgentCommandOptions agent;
  std::string session;
  std::string call;  // --call: a tool call id or a request id
  bool always = false;
  std::string args;    // approve --args JSON
  std::string reason;  // deny --reason
  std::string text;    // answer TEXT
};

enum class Verb { approve, deny, answer };

// The request the command answers: --call names it, or it is the only one.
Outcome<PendingInput> chosen_input(const AgentSetup& setup, const std::string& call) {
  const auto pending = setup.ref.pending_inputs();
  if (pending.empty()) {
    return std::unexpected(report(kUsage, fmt::format("session {} has no input request waiting on ref {}",
                                                      setup.session->id(), setup.ref.name())));
  }
  std::string listed;
  for (const auto& input : pending) listed += fmt::format("\n  {}", describe_input(input));
  if (call.empty()) {
    if (pending.size() == 1) return pending.front();
    return std::unexpected(report(kUsage, fmt::format("session {} waits for {} answers; name one with --call:{}",
                                                      setup.session->id(), pending.size(), listed)));
  }
  for (const auto& input : pending) {
    if (input.tool_call_id == call || input.id == call) return input;
  }
  return std::unexpected(report(kUsage, fmt::format("no input request for call '{}' waits in session {}; waiting:{}",
                                                    call, setup.session->id(), listed)));
}

int run_answer_verb(const AnswerOptions& options, Verb verb) {
  for (const std::string* text : {&options.reason, &options.text, &options.args}) {
    if (auto bad = tui::first_invalid_utf8(*text)) return report(kUsage, fmt::format("not valid UTF-8 ({})", *bad));
  }
  SetupMode mode{.existing_session = options.session,
                 .create_missing_ref = false,
                 .need_model = false,
                 .need_suspended = true,
                 .announce_session = false,
                 .mcp = false};  // an answer runs nothing
  auto setup = setup_agent(options.agent, mode);
  if (!setup) return setup.error();
  auto input = chosen_input(*setup, options.call);
  if (!input) return input.error();
  const bool question = input->kind == InputKind::question;
  if (question && verb == Verb::approve) {
    return report(kUsage, fmt::format("{} is a question: `cairn answer {} TEXT` answers it", input->tool_call_id,
                                      setup->session->id()));
  }
  if (!question && verb == Verb::answer) {
    return report(kUsage, fmt::format("{} asks to approve a call: `cairn approve` or `cairn deny` it",
                                      input->tool_call_id));
  }
  InputResponse response{.by = answered_by()};
  switch (verb) {
    case Verb::approve:
      response.decision = InputResponse::Decision::allow;
      if (!options.args.empty()) {
        Json edited = Json::parse(options.args, nullptr, false);
        if (edited.is_discarded() || !edited.is_object()) return report(kUsage, "--args: expected a JSON object");
        response.arguments = std::move(edited);
      }
      if (options.always) response.remember = agent::always_rule(input->tool_name, input_subject(*input));
      break;
    case Verb::deny:
      response.decision = InputResponse::Decision::deny;
      if (!options.reason.empty()) response.reason = options.reason;
      break;
    case Verb::answer:
      response.decision = InputResponse::Decision::answer;
      response.answer = options.text;
      break;
  }
  const auto remembered = response.remember;
  InputResult result = setup->ref.respond(input->id, std::move(response));
  if (!result.ok()) {
    return report(result.outcome == cairn::Outcome::rejected ? kUsage : kFailure,
                  result.error ? result.error->message : std::string("the answer was not recorded"));
  }
  const std::string ref_flag = setup->ref.name() == "main" ? "" : " --ref " + setup->ref.name();
  const char* done = verb == Verb::approve ? "allowed" : verb == Verb::deny ? (question ? "declined" : "denied") : "answered";
  print_untrusted(stderr, "cairn: {} {}{}; `cairn resume {}{}` continues the run\n", done, describe_input(*input),
                  remembered ? fmt::format(" (and from now on: {})", *remembered) : "", setup->session->id(),
                  ref_flag);
  return kOk;
}

int run_approve(const AnswerOptions& options) { return run_answer_verb(options, Verb::approve); }
int run_deny(const AnswerOptions& options) { return run_answer_verb(options, Verb::deny); }
int run_answer(const AnswerOptions& options) { return run_answer_verb(options, Verb::answer); }

void add_common(CLI::App* sub, AnswerOptions& options) {
  add_session_argument(sub, options.session);
  add_agent_options(sub, options.agent, kRefChoice);
  sub->add_option("--call", options.call, "The tool call (or request) id, when the run waits for several answers")
      ->type_name("ID");
}

}  // namespace

void register_approval_commands(CLI::App& app, Commands& commands) {
  {
    auto [sub, options] = add_command(app, commands, "approve",
        "Allow the tool call a session's run waits for (exit 3 of -p or resume said which); the answer is "
        "recorded in the log, then `cairn resume` runs the call. Exit 0 when recorded, 2 when nothing waits",
        run_approve);
    add_common(sub, *options);
    sub->add_flag("--always", options->always,
                  "Also allow every later call of this tool with the same command or path in this session");
    sub->add_option("--args", options->args, "Run the call with these arguments instead (a JSON object)")
        ->type_name("JSON");
  }
  {
    auto [sub, options] = add_command(app, commands, "deny",
        "Refuse the tool call a session's run waits for (or decline its question); the model reads the reason "
        "and goes on after `cairn resume`. Exit 0 when recorded, 2 when nothing waits",
        run_deny);
    add_common(sub, *options);
    sub->add_option("--reason", options->reason, "Why, for the model to read")->type_name("TEXT");
  }
  {
    auto [sub, options] = add_command(app, commands, "answer",
        "Answer the question (ask_user) a session's run waits for; `cairn resume` goes on with it. Exit 0 when "
        "recorded, 2 when no question waits",
        run_answer);
    add_common(sub, *options);
    sub->add_option("TEXT", options->text, "The answer")->required();
  }
}

}  // namespace cairn::cli
