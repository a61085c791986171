// What every mode of the coding agent shares (print mode, resume / abort /
// compact, the interactive UI): its command-line options, and turning them
// into an open session with a harness ready to run on one ref. The harness
// itself is the agent library's (src/agent); this is the command's side:
// the flags, choosing the session and ref, and saying what happened.
//
//   AgentCommandOptions options;
//   add_agent_options(app, options);            // before parsing
//   ...parse...
//   auto setup = setup_agent(options);          // after parsing
//   if (!setup) return setup.error();           // already reported; the exit status
//   AgentRef ref = setup->ref;                  // prompt, resume, abort, watch...
//
// setup_agent reports every problem itself (one line on stderr, or the
// "how to configure a model" text) and returns the exit status to use.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "agent/mcp_servers.hpp"
#include "agent/system_prompt.hpp"
#include "cairn/agent/options.hpp"
#include "cairn/harness/harness.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/store/store.hpp"
#include "cli.hpp"
#include "sandbox_options.hpp"

namespace cairn::cli {

// The options as given: the agent's (the model, the tools, the approval,
// the system prompt, the MCP servers) and which session and ref to run on.
// Empty strings and nullopt mean "not given".
struct AgentCommandOptions : agent::AgentOptions {
  std::string store;                  // --store URI
  std::string session;                // --session ID: open it, or create it with that id
  bool continue_latest = false;       // -c/--continue: the newest session whose cwd is this directory
  std::optional<std::string> resume;  // -r/--resume [ID]: "" when given without an id
  std::string ref = "main";           // --ref NAME
  SandboxFlags sandbox_flags;         // --sandbox MODE, --sandbox-network
};

// Which options a command takes. --store is always there.
enum AgentOptionGroups : unsigned {
  kSessionChoice = 1u << 0,  // --session, -c/--continue, -r/--resume
  kRefChoice = 1u << 1,      // --ref
  kModelChoice = 1u << 2,    // --model, --thinking, --api, --base-url, --api-key, --models-file
  kAgentShape = 1u << 3,     // --system-prompt, --append-system-prompt, --tools, --no-tools, --tool-env, --tool-env-allow, --approval, --mcp-config, --sandbox, --sandbox-network
  kAllAgentOptions = kSessionChoice | kRefChoice | kModelChoice | kAgentShape,
};

// Registers the options on `app`, each documented for --help; `options`
// must outlive parsing.
void add_agent_options(CLI::App* app, AgentCommandOptions& options, unsigned groups = kAllAgentOptions);

// How a mode wants the session, ref and model found.
struct SetupMode {
  // The session named by a command's SESSION argument (an id or a unique
  // prefix). It must exist; the options' session choice is ignored.
  std::optional<std::string> existing_session;
  // -r without an id: chooses a session (the interactive picker). It reports
  // its own errors and returns the exit status when nothing was chosen. Not
  // set: a usage error asking for an id.
  std::function<Outcome<std::string>(Store& store)> pick_session;
  // A --ref that does not exist is created at main's leaf (print and
  // interactive mode); false: it is a usage error (resume, abort, compact).
  bool create_missing_ref = true;
  // False: no model is needed (abort). One is still resolved when it can be.
  bool need_model = true;
  // resume and abort: the ref must have a suspended operation; when it has
  // none, that is a usage error ("nothing is suspended on ref ...").
  bool need_suspended = false;
  // "cairn: session <id>" on stderr once the session is open and the ref
  // and operation choices hold.
  bool announce_session = true;
  // Start the MCP servers (once per process) and offer their tools; false
  // where no tool runs (abort). --no-tools starts none either.
  bool mcp = true;
  // A session already open for writing (a worker's claim): used as it is,
  // and the options' session choice is ignored.
  std::shared_ptr<Session> opened;
};

// An open session with a harness over it, for one ref. Members are
// destroyed in reverse order: the harness before the session before the store.
struct AgentSetup {
  // The options it was made from: interactive mode's /new, /resume and
  // /fork make the next setup from them.
  AgentCommandOptions options;
  std::shared_ptr<Store> store;  // shared with the task tool
  std::shared_ptr<Session> session;
  bool created = false;               // the session was created by this setup
  std::filesystem::path cwd;          // where the tools work: the current directory
  ModelRegistry registry;             // every configured model (for a model picker)
  std::optional<ConfiguredModel> model;  // the model in use; empty only when !need_model and none was found
  std::vector<std::string> tool_names;   // the registered tools, in order
  std::vector<agent::ContextFile> context_files;  // what the system prompt includes
  std::shared_ptr<agent::McpServers> mcp;  // null: no MCP server is configured (or mode.mcp was false)
  SandboxMode sandbox = SandboxMode::off;  // the tools' sandbox, from the flags and the user's settings
  std::unique_ptr<AgentHarness> harness;
  agent::McpToolsBinding mcp_binding;  // goes before the harness
  AgentRef ref;
  // Every ref's suspended operation found on opening; see suspended_here().
  std::vector<SuspendedOperation> suspended;

  // The suspended operation of `ref`, if any.
  const SuspendedOperation* suspended_here() const;
};

// Opens the store and the session (creating it when none is chosen; a new
// session's header records the current directory), resolves the model —
// --model or the ad-hoc endpoint, else the model the ref's branch names,
// else the registry's first available one — builds the harness with the
// coding tools and the system prompt, and writes the chosen model and
// thinking level onto the ref's branch when they differ from what it holds
// (not while an operation is suspended there).
//
// Errors are reported here; the result is then the exit status: 2 for what
// the user named wrong (unknown session, ref, model; bad option values; no
// model configured), 1 for the rest.
Outcome<AgentSetup> setup_agent(const AgentCommandOptions& options, const SetupMode& mode = {});

// The process's MCP servers (agent::McpServers), started on the first call
// and waited for up to 10 s; later calls get the same ones, whatever they
// pass. Null when none is configured. A bad configuration is reported.
Outcome<std::shared_ptr<agent::McpServers>> process_mcp_servers(const std::vector<std::string>& extra_files,
                                                                const std::filesystem::path& cwd,
                                                                std::function<bool(std::string_view)> withhold,
                                                                const SandboxPolicy& sandbox);

// The text shown when no model is configured: the key variables, models.json
// with an example, a local server on the command line.
std::string no_model_help(const ModelRegistry& registry);

// "Cancelled before the crash" or "suspended" and the prompt, in one line,
// for telling a user what is waiting on a ref.
std::string describe_suspended(const SuspendedOperation& operation);

}  // namespace cairn::cli
