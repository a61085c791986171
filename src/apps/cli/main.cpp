// `cairn`: the coding agent (interactive, or one prompt with -p) and the
// commands that resume, abort, inspect, verify, fork, import and repair
// sessions.
//
// Exit status: 0 ok, 1 failure, 2 usage (bad options, unknown session). No
// exception leaves main: CLI11's parse errors map to 2, anything else to 1.
#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "agent_setup.hpp"
#include "cli.hpp"
#include "interactive.hpp"
#include "cairn/version.hpp"
#include "interactive_picker.hpp"
#include "print_mode.hpp"
#include "tracing.hpp"
#include "util/untrusted_text.hpp"

namespace {

// Options given before a subcommand's name belong to the agent, not to the
// subcommand: said instead of silently ignored. --store is every command's,
// wherever it stands.
bool agent_options_given(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    const std::string name = option->get_name();
    if (option->count() > 0 && name != "--help" && name != "--version" && name != "--store") return true;
  }
  return false;
}

// --store before a command's name applies to the command. Given on both
// sides with different values, which one was meant is not cairn's to guess.
cairn::cli::Outcome<void> apply_leading_store(const CLI::App& app, CLI::App& command) {
  const CLI::Option* leading = app.get_option_no_throw("--store");
  CLI::Option* own = command.get_option_no_throw("--store");
  if (leading == nullptr || own == nullptr || leading->count() == 0) return {};
  const std::string uri = leading->as<std::string>();
  if (own->count() == 0) {
    own->add_result(uri);
    own->run_callback();
  } else if (own->as<std::string>() != uri) {
    return std::unexpected(cairn::cli::report(
        cairn::cli::kUsage, fmt::format("--store is given twice, as {} before `{}` and as {} after it; give it once",
                                        uri, command.get_name(), own->as<std::string>())));
  }
  return {};
}

// CLI11 takes a word that names a command for that command even right after
// -p, whose value is optional: `cairn -p new` would run `cairn new`. A word
// right after -p (or --print) is its prompt: it is bound to it here, before
// parsing. Returns the arguments in the reversed order CLI11 parses.
std::vector<std::string> bind_print_word(const CLI::App& app, std::vector<std::string> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') {
      const auto named = [&](const CLI::App* command) { return command->check_name(arg); };
      if (!app.get_subcommands(named).empty()) break;  // a command: the rest is its own
      continue;                                        // a word of the prompt
    }
    if (arg.find('=') != std::string::npos) continue;
    if (arg == "-p" || arg == "--print") {
      if (i + 1 < args.size() && !args[i + 1].starts_with("-")) {
        args[i] = "--print=" + args[i + 1];
        args.erase(args.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      }
      continue;
    }
    // Another option: step over its value, which may look like a command.
    const CLI::Option* option = app.get_option_no_throw(arg);
    if (option != nullptr && option->get_type_size() > 0 && option->get_expected_min() > 0) ++i;
  }
  std::reverse(args.begin(), args.end());
  return args;
}

int run(int argc, char** argv) {
  using namespace cairn::cli;
  // The trace sinks outlive everything the command does, and flush at its end.
  std::vector<std::string> args(argv + 1, argv + argc);
  auto tracing = start_tracing(args);
  if (!tracing) return tracing.error();
  const ActiveTracing active(*tracing);
  CLI::App app{
      "cairn: a coding agent whose sessions survive anything. Run it in a directory: `cairn -p PROMPT` for one "
      "prompt, `cairn` for the interactive mode; kill it at any moment and `cairn resume SESSION` (or `cairn -c`) "
      "goes on where its log says it was. The commands below inspect, verify, fork, import and repair sessions.",
      "cairn"};
  app.set_version_flag("--version", std::string("cairn ") + CAIRN_VERSION_STRING);
  // Taken out of the arguments before parsing (start_tracing), so every
  // command has them wherever they stand; said here, where users look.
  app.footer(
      "Tracing, every command, anywhere on the line:\n"
      "  --trace FILE             append spans to FILE as JSON lines (or CAIRN_TRACE=FILE); OTLP/HTTP when\n"
      "                           OTEL_EXPORTER_OTLP_ENDPOINT is set\n"
      "  --trace-content          put message text, tool arguments and results in the spans (or CAIRN_TRACE_CONTENT=1)");
  app.require_subcommand(0, 1);
  app.fallthrough(false);

  AgentCommandOptions agent;
  add_agent_options(&app, agent);
  std::optional<std::string> print;
  bool json = false;
  std::vector<std::string> words;
  app.add_option("-p,--print", print,
                 "Print mode: run PROMPT (else the text on standard input) to its end without a UI, stream the "
                 "answer to stdout and progress to stderr; exit 0 completed, 1 failed or aborted (Ctrl-C aborts it "
                 "durably)")
      ->expected(0, 1)
      ->type_name("[PROMPT]");
  app.add_flag("--json", json, "With -p: every event as one JSON line on stdout, nothing else there");
  app.add_option("PROMPT", words, "With -p: the prompt, when it does not follow -p directly (words are joined)");

  Commands commands;
  register_agent_commands(app, commands);
  register_approval_commands(app, commands);
  register_session_commands(app, commands);
  register_log_command(app, commands);
  register_tree_command(app, commands);
  register_context_command(app, commands);
  register_verify_command(app, commands);
  register_fork_command(app, commands);
  register_import_command(app, commands);
  register_repair_command(app, commands);
  register_serve_command(app, commands);
  register_agent_demo_command(app, commands);
  register_demo_command(app, commands);
  register_models_command(app, commands);
  register_mcp_command(app, commands);
  register_worker_command(app, commands);

  try {
    app.parse(bind_print_word(app, std::move(args)));
  } catch (const CLI::ParseError& error) {
    // --help and --version arrive as "errors" with status 0 and print
    // themselves; every other parse error is a usage error, said in one line.
    if (error.get_exit_code() == 0) return app.exit(error);
    return report(kUsage, fmt::format("{} (see cairn --help)", error.what()));
  }
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    if (agent_options_given(app)) {
      return report(kUsage, fmt::format("options before `{}` belong to the agent; put the command's options after "
                                        "its name (see cairn {} --help)",
                                        command.app->get_name(), command.app->get_name()));
    }
    if (auto applied = apply_leading_store(app, *command.app); !applied) return applied.error();
    return command.run();
  }

  if (print) {
    std::string prompt = *print;
    for (const auto& word : words) prompt += (prompt.empty() ? "" : " ") + word;
    return run_print_mode(agent, print->empty() && words.empty() ? std::nullopt : std::optional(prompt), json);
  }
  if (json) return report(kUsage, "--json goes with -p (see cairn --help)");
  if (!words.empty()) {
    return report(kUsage, fmt::format("unexpected argument '{}': a prompt goes with -p, a command is one of the "
                                      "commands in cairn --help",
                                      words.front()));
  }
  // Interactive mode; -r without an id picks a session first.
  SetupMode mode;
  mode.pick_session = pick_session;
  auto setup = setup_agent(agent, mode);
  if (!setup) return setup.error();
  return run_interactive(*setup);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    cairn::print_untrusted(stderr, "cairn: {}\n", error.what());
  } catch (...) {
    fmt::print(stderr, "cairn: unexpected error\n");
  }
  return cairn::cli::kFailure;
}
