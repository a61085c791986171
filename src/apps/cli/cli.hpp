// Shared pieces of the `cairn` commands: exit codes, the store option,
// opening a session by id or prefix, and the registry of commands.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cairn/error.hpp"
#include "cairn/store/store.hpp"

namespace cairn::cli {

// The process's exit status, the contract scripts rely on.
enum Exit : int {
  kOk = 0,
  kFailure = 1,  // the command ran and something failed (message on stderr)
  kUsage = 2,    // bad options, unknown session or ref (one line on stderr)
  kAwaitingInput = 3,  // the run is parked durably on a question to a human (the commands to answer it on stderr)
};

// A command's result, or the exit status it has already reported.
template <class T>
using Outcome = std::expected<T, int>;

// Prints "cairn: <message>" on stderr and returns `code`.
int report(int code, std::string_view message);
// The exit status for a library error: usage for what the caller named wrong
// (unknown session, bad argument), failure for the rest.
int exit_code_for(const Error& error);
int report(const Error& error);
// Prints "cairn: warning: <message>" on stderr: the agent library's
// warnings (agent::AgentOptions::warn), which stop nothing.
void print_warning(const std::string& message);

// One subcommand and what running it does.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
using Commands = std::vector<Command>;

// Registers the subcommand `name` of `parent` (`description` is its --help
// text), whose options fill a shared Options that `run` gets when it is the
// one chosen. Returns the subcommand, for its options, and that Options.
template <class Options>
std::pair<CLI::App*, std::shared_ptr<Options>> add_command(CLI::App& parent, Commands& commands, std::string name,
                                                           std::string description, int (*run)(const Options&)) {
  auto options = std::make_shared<Options>();
  CLI::App* sub = parent.add_subcommand(std::move(name), std::move(description));
  commands.push_back({sub, [options, run] { return run(*options); }});
  return {sub, options};
}
// SESSION, the positional argument of the commands that work on one session.
void add_session_argument(CLI::App* command, std::string& session);

// --store URI, documented the same way on every command.
void add_store_option(CLI::App* command, std::string& uri);

// A command on one session of a store: add_command with --store and SESSION
// (into Options::store and Options::session).
template <class Options>
std::pair<CLI::App*, std::shared_ptr<Options>> add_session_command(CLI::App& parent, Commands& commands, std::string name,
                                                                   std::string description, int (*run)(const Options&)) {
  auto added = add_command(parent, commands, std::move(name), std::move(description), run);
  add_store_option(added.first, added.second->store);
  add_session_argument(added.first, added.second->session);
  return added;
}
// The store the user named, else $CAIRN_STORE, else the default SQLite file
// under $XDG_DATA_HOME/cairn (whose directory is created).
Outcome<std::string> store_uri(const std::string& option);
Outcome<std::unique_ptr<Store>> open_store_for(const std::string& option);

// Opens the session named by an id or a unique id prefix. Inspection opens
// are read-only, so they never change a damaged file. A torn tail found while
// opening is reported on stderr as a warning.
Outcome<std::shared_ptr<Session>> open_session(Store& store, std::string_view id_or_prefix, bool read_only);

// An entry id or a unique prefix of one (the tree prints short ids).
Outcome<std::string> resolve_entry_id(const Session& session, std::string_view id_or_prefix);

// Every command, in the order `cairn --help` lists them.
void register_session_commands(CLI::App& app, Commands& commands);  // sessions, new
void register_log_command(CLI::App& app, Commands& commands);
void register_approval_commands(CLI::App& app, Commands& commands);  // approve, deny, answer
void register_tree_command(CLI::App& app, Commands& commands);
void register_context_command(CLI::App& app, Commands& commands);
void register_verify_command(CLI::App& app, Commands& commands);
void register_fork_command(CLI::App& app, Commands& commands);
void register_import_command(CLI::App& app, Commands& commands);
void register_repair_command(CLI::App& app, Commands& commands);
void register_demo_command(CLI::App& app, Commands& commands);
void register_models_command(CLI::App& app, Commands& commands);
void register_agent_commands(CLI::App& app, Commands& commands);  // resume, abort, compact
void register_agent_demo_command(CLI::App& app, Commands& commands);  // demo (and its hidden child)
void register_serve_command(CLI::App& app, Commands& commands);
void register_mcp_command(CLI::App& app, Commands& commands);  // mcp list
void register_worker_command(CLI::App& app, Commands& commands);

}  // namespace cairn::cli
