// `cairn`: inspect, verify, fork, import and repair sessions.
//
// Exit status: 0 ok, 1 failure, 2 usage (bad options, unknown session). No
// exception leaves main: CLI11's parse errors map to 2, anything else to 1.
#include <exception>

#include <fmt/format.h>

#include "cli.hpp"

// The build may pass the project's version; this is the one it was written for.
#ifndef CAIRN_VERSION_STRING
#define CAIRN_VERSION_STRING "0.1.0"
#endif

namespace {

int run(int argc, char** argv) {
  using namespace cairn::cli;
  CLI::App app{"cairn: durable agent sessions. Inspect, verify, fork, import and repair session logs.", "cairn"};
  app.set_version_flag("--version", std::string("cairn ") + CAIRN_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough(false);

  Commands commands;
  register_session_commands(app, commands);
  register_log_command(app, commands);
  register_tree_command(app, commands);
  register_context_command(app, commands);
  register_verify_command(app, commands);
  register_fork_command(app, commands);
  register_import_command(app, commands);
  register_repair_command(app, commands);
  register_demo_command(app, commands);
  register_models_command(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version arrive as "errors" with status 0 and print
    // themselves; every other parse error is a usage error, said in one line.
    if (error.get_exit_code() == 0) return app.exit(error);
    return report(kUsage, fmt::format("{} (see cairn --help)", error.what()));
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return report(kUsage, "no command given (see cairn --help)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "cairn: {}\n", error.what());
  } catch (...) {
    fmt::print(stderr, "cairn: unexpected error\n");
  }
  return cairn::cli::kFailure;
}
