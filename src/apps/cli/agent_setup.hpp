// What every mode of the coding agent shares (print mode, resume / abort /
// compact, the interactive UI): its command-line options, and turning them
// into an open session with a harness ready to run on one ref.
//
//   AgentOptions options;
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

#include "cairn/harness/harness.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/store/store.hpp"
#include "cli.hpp"
#include "mcp_servers.hpp"
#include "system_prompt.hpp"

namespace cairn::cli {

// The options as given; empty strings and nullopt mean "not given".
struct AgentOptions {
  std::string store;                  // --store URI
  std::string session;                // --session ID: open it, or create it with that id
  bool continue_latest = false;       // -c/--continue: the newest session whose cwd is this directory
  std::optional<std::string> resume;  // -r/--resume [ID]: "" when given without an id
  std::string ref = "main";           // --ref NAME
  std::string model;                  // --model PROVIDER/ID (an ID alone when unambiguous; with --api: the endpoint's ID)
  std::string thinking;               // --thinking off|minimal|low|medium|high|xhigh
  std::string api;                    // --api KIND (an ad-hoc endpoint, with --base-url and --model)
  std::string base_url;               // --base-url URL
  std::optional<std::string> api_key; // --api-key KEY
  std::string models_file;            // --models-file FILE
  std::optional<std::string> system_prompt;         // --system-prompt TEXT|FILE
  std::optional<std::string> append_system_prompt;  // --append-system-prompt TEXT|FILE
  std::optional<std::string> tools;   // --tools LIST: comma-separated coding tool names
  bool no_tools = false;              // --no-tools
  std::string tool_env = "filtered";  // --tool-env filtered|inherit
  std::vector<std::string> tool_env_allow;  // --tool-env-allow NAME,...: let through the filter
  std::string approval = "ask";       // --approval ask|auto-edit|never-ask (approval_settings.hpp)
  std::vector<std::string> mcp_configs;     // --mcp-config FILE, repeatable (mcp_servers.hpp)
  // Values no record, event or tool output may hold, beside the provider
  // keys (cairn serve's bearer tokens): redacted as the keys are.
  std::vector<std::string> secrets;
};

// Which options a command takes. --store is always there.
enum AgentOptionGroups : unsigned {
  kSessionChoice = 1u << 0,  // --session, -c/--continue, -r/--resume
  kRefChoice = 1u << 1,      // --ref
  kModelChoice = 1u << 2,    // --model, --thinking, --api, --base-url, --api-key, --models-file
  kAgentShape = 1u << 3,     // --system-prompt, --append-system-prompt, --tools, --no-tools, --tool-env, --tool-env-allow, --approval, --mcp-config
  kAllAgentOptions = kSessionChoice | kRefChoice | kModelChoice | kAgentShape,
};

// Registers the options on `app`, each documented for --help; `options`
// must outlive parsing.
void add_agent_options(CLI::App* app, AgentOptions& options, unsigned groups = kAllAgentOptions);

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
  AgentOptions options;
  std::shared_ptr<Store> store;  // shared with the task tool
  std::shared_ptr<Session> session;
  bool created = false;               // the session was created by this setup
  std::filesystem::path cwd;          // where the tools work: the current directory
  ModelRegistry registry;             // every configured model (for a model picker)
  std::optional<ConfiguredModel> model;  // the model in use; empty only when !need_model and none was found
  std::vector<std::string> tool_names;   // the registered tools, in order
  std::vector<ContextFile> context_files;  // what the system prompt includes
  std::shared_ptr<McpServers> mcp;     // null: no MCP server is configured (or mode.mcp was false)
  std::unique_ptr<AgentHarness> harness;
  McpToolsBinding mcp_binding;         // goes before the harness
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
Outcome<AgentSetup> setup_agent(const AgentOptions& options, const SetupMode& mode = {});

// The harness options of the coding agent over `session`, its tools working
// in `cwd`: the models (with `model` first), the chosen coding tools, the
// system prompt with the context files found from `cwd`, the approval
// policy, and the keys kept out of everything written. Errors: a bad
// approval setting or model (the message says which).
// With `mcp`, the servers' tools are added, with their approval (in ask and
// auto-edit: the user's override, else the annotations' default, after the
// settings files' rules; in never-ask only an override's deny stops a call),
// what to say of a call of a server's tool that is gone, and the secrets
// the MCP configuration holds.
struct CodingHarnessOptions {
  HarnessOptions harness;
  std::vector<ContextFile> context_files;  // what the system prompt includes
  std::vector<Tool> own_tools;             // the coding tools alone, without the MCP servers'
};
// With `store` and "task" among the tool names, the task tool runs
// subagents in child sessions of `store` (make_task_tool).
Result<CodingHarnessOptions> coding_harness_options(const AgentOptions& options, const ModelRegistry& registry,
                                                    const std::optional<ConfiguredModel>& model,
                                                    const std::vector<std::string>& tool_names,
                                                    std::shared_ptr<Session> session, const std::filesystem::path& cwd,
                                                    const std::shared_ptr<McpServers>& mcp = nullptr,
                                                    const std::shared_ptr<Store>& store = nullptr);
// The same before the session is open (a subagent's, whose session the
// task tool opens itself): HarnessOptions::session is left empty.
Result<CodingHarnessOptions> coding_harness_options_for(const AgentOptions& options, const ModelRegistry& registry,
                                                        const std::optional<ConfiguredModel>& model,
                                                        const std::vector<std::string>& tool_names,
                                                        const std::string& session_id, const std::filesystem::path& cwd,
                                                        const std::shared_ptr<McpServers>& mcp,
                                                        const std::shared_ptr<Store>& store);

// Every tool name --tools takes: the coding tools and task.
std::vector<std::string> agent_tool_names();

// The `task` tool (task_tool.cpp): each call runs its prompt as a subagent
// in a child session of `store` (make_child_session_tool), as the agent
// definition its `agent` argument names says (subagents.hpp), or else with
// `tool_names` but task; the model, thinking level, approval mode and
// tool environment are the parent's unless the definition names a model.
Tool make_task_tool(const AgentOptions& options, const ModelRegistry& registry,
                    const std::optional<ConfiguredModel>& model, const std::vector<std::string>& tool_names,
                    const std::filesystem::path& cwd, const std::shared_ptr<McpServers>& mcp,
                    const std::shared_ptr<Store>& store);
// The tools --tools / --no-tools leave (reported: an unknown name).
Outcome<std::vector<std::string>> chosen_tools(const AgentOptions& options);
// The model --model or the ad-hoc endpoint options name; nullopt when none is (reported: a bad one).
Outcome<std::optional<ConfiguredModel>> named_model(const ModelRegistry& registry, const AgentOptions& options);

// The text shown when no model is configured: the key variables, models.json
// with an example, a local server on the command line.
std::string no_model_help(const ModelRegistry& registry);

// What of cairn's environment a stdio MCP server does not inherit: what the
// coding tools' processes do not (--tool-env, --tool-env-allow, the provider
// key variables of `registry` and `model`).
std::function<bool(std::string_view)> mcp_withheld_variables(const AgentOptions& options, const ModelRegistry& registry,
                                                             const std::optional<ConfiguredModel>& model);

// $XDG_CONFIG_HOME/cairn (default ~/.config/cairn); nullopt without HOME.
std::optional<std::filesystem::path> global_config_dir();

// Where bash spills long outputs of `session_id`:
// $XDG_CACHE_HOME/cairn/spill/<id> (default ~/.cache), else under the data dir.
std::filesystem::path spill_dir_for(const std::string& session_id);

// "Cancelled before the crash" or "suspended" and the prompt, in one line,
// for telling a user what is waiting on a ref.
std::string describe_suspended(const SuspendedOperation& operation);

}  // namespace cairn::cli
