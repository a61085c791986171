// The coding agent's setup: options to an open session with a harness.
#include "agent_setup.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/chosen_tools.hpp"
#include "agent/environment_policy.hpp"
#include "agent/harness_options.hpp"
#include "agent/named_model.hpp"
#include "cairn/llm/model_catalog.hpp"
#include "cairn/llm/models_file.hpp"
#include "text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

const std::vector<std::string> kThinkingLevels = {"off", "minimal", "low", "medium", "high", "xhigh"};

// The newest session whose header names `cwd`, if any.
Outcome<std::optional<std::string>> latest_session_in(Store& store, const std::filesystem::path& cwd) {
  auto headers = store.list();
  if (!headers) return std::unexpected(report(headers.error()));
  for (const SessionHeader& header : *headers) {  // newest first
    if (!header.cwd.empty() && std::filesystem::path(header.cwd).lexically_normal() == cwd.lexically_normal()) {
      return std::optional<std::string>(header.id);
    }
  }
  return std::optional<std::string>();
}

Outcome<std::shared_ptr<Session>> create_session(Store& store, const std::filesystem::path& cwd,
                                                 std::optional<std::string> id) {
  CreateOptions create;
  create.id = std::move(id);
  create.cwd = cwd.string();
  auto session = store.create(create);
  if (!session) {
    if (session.error().is(Errc::already_exists) || session.error().is(Errc::invalid_argument)) {
      return std::unexpected(report(kUsage, session.error().message));
    }
    return std::unexpected(report(session.error()));
  }
  return std::move(*session);
}

struct OpenedSession {
  std::shared_ptr<Session> session;
  bool created = false;
};

Outcome<OpenedSession> choose_session(Store& store, const AgentCommandOptions& options, const SetupMode& mode,
                                      const std::filesystem::path& cwd) {
  auto open = [&](std::string_view id) -> Outcome<OpenedSession> {
    auto session = open_session(store, id, /*read_only=*/false);
    if (!session) return std::unexpected(session.error());
    return OpenedSession{std::move(*session), false};
  };
  if (mode.opened) return OpenedSession{mode.opened, false};
  if (mode.existing_session) return open(*mode.existing_session);

  const int chosen = (options.session.empty() ? 0 : 1) + (options.continue_latest ? 1 : 0) + (options.resume ? 1 : 0);
  if (chosen > 1) return std::unexpected(report(kUsage, "--session, --continue and --resume exclude each other"));

  if (!options.session.empty()) {
    // An exact id: open it, or start a session with that id.
    OpenOptions peek;
    peek.read_only = true;
    auto exact = store.open(options.session, peek);
    if (exact) {
      exact->reset();
      return open(options.session);  // for writing, through open_session and its warnings
    }
    if (!exact.error().is(Errc::not_found)) return std::unexpected(report(kFailure, exact.error().message));
    auto created = create_session(store, cwd, options.session);
    if (!created) return std::unexpected(created.error());
    return OpenedSession{std::move(*created), true};
  }
  if (options.resume) {
    if (!options.resume->empty()) return open(*options.resume);
    if (!mode.pick_session) {
      return std::unexpected(report(kUsage, "--resume needs a session id here (see cairn sessions)"));
    }
    auto picked = mode.pick_session(store);
    if (!picked) return std::unexpected(picked.error());
    return open(*picked);
  }
  if (options.continue_latest) {
    auto latest = latest_session_in(store, cwd);
    if (!latest) return std::unexpected(latest.error());
    if (*latest) return open(**latest);
    // Nothing to continue here: start afresh, as pi does.
    print_untrusted(stderr, "cairn: no earlier session in {}; starting a new one\n", cwd.string());
  }
  auto created = create_session(store, cwd, std::nullopt);
  if (!created) return std::unexpected(created.error());
  return OpenedSession{std::move(*created), true};
}

}  // namespace

void add_agent_options(CLI::App* app, AgentCommandOptions& options, unsigned groups) {
  add_store_option(app, options.store);
  if (groups & kSessionChoice) {
    app->add_option("--session", options.session,
                    "The session to use: opened when it exists, else created with this id. Default: a new session")
        ->type_name("ID");
    app->add_flag("-c,--continue", options.continue_latest,
                  "Continue the newest session started in this directory (a new one when there is none)");
    app->add_option("-r,--resume", options.resume,
                    "Continue the session ID (an id or a unique prefix; see cairn sessions)")
        ->expected(0, 1)
        ->type_name("[ID]");
  }
  if (groups & kRefChoice) {
    app->add_option("--ref", options.ref,
                    "The ref (named cursor into the session's tree) to run on. Default: main")
        ->type_name("NAME");
  }
  if (groups & kModelChoice) {
    app->add_option("--model", options.model,
                    "The model, PROVIDER/ID or an ID one provider serves (see cairn models). Default: the model the "
                    "ref's branch last used, else the first available one. With --api: the endpoint's model id")
        ->type_name("MODEL");
    // Here and below, the check refuses a name before the callback reads it.
    app->add_option_function<std::string>(
           "--thinking", [&options](const std::string& level) { options.thinking = parse_thinking_level(level); },
           "Thinking level: off, minimal, low, medium, high, xhigh. Default: the branch's, else off")
        ->type_name("LEVEL")
        ->check(CLI::IsMember(kThinkingLevels));
    app->add_option("--api", options.api,
                    "Call an endpoint not in the model table: its API kind (openai-completions, openai-responses, "
                    "anthropic-messages); needs --base-url and --model")
        ->type_name("KIND");
    app->add_option("--base-url", options.base_url, "The ad-hoc endpoint's base URL, e.g. http://localhost:11434/v1")
        ->type_name("URL");
    app->add_option("--api-key", options.api_key,
                    "The key for --model or the ad-hoc endpoint (default: the provider's environment variable)")
        ->type_name("KEY");
    app->add_option("--models-file", options.models_file,
                    "Custom providers and overrides. Default: $XDG_CONFIG_HOME/cairn/models.json "
                    "($XDG_CONFIG_HOME defaults to ~/.config)")
        ->type_name("FILE");
  }
  if (groups & kAgentShape) {
    app->add_option("--system-prompt", options.system_prompt,
                    "Replace the base system prompt (identity, tools, guidelines) with TEXT, or a file's content; "
                    "AGENTS.md files, date and directory still follow")
        ->type_name("TEXT");
    app->add_option("--append-system-prompt", options.append_system_prompt,
                    "Append TEXT (or a file's content) to the system prompt")
        ->type_name("TEXT");
    // The names from the list the option is checked against: --help cannot
    // leave one out (it once left out task).
    app->add_option("--tools", options.tools,
                    fmt::format("Only these tools, comma-separated ({}). Default: all",
                                fmt::join(agent::agent_tool_names(), ",")))
        ->type_name("LIST");
    app->add_flag("--no-tools", options.no_tools, "No tools at all: the model only talks");
    app->add_option_function<std::string>(
           "--tool-env",
           [&options](const std::string& mode) {
             if (auto parsed = agent::parse_tool_environment(mode)) options.tool_env = *parsed;
           },
           "What the tools' processes get of cairn's environment: filtered (everything but the provider key "
           "variables and names containing KEY, SECRET or TOKEN) or inherit (everything). Default: filtered")
        ->type_name("MODE")
        ->check(CLI::IsMember({"filtered", "inherit"}));
    app->add_option_function<std::string>(
           "--approval",
           [&options](const std::string& mode) {
             if (auto parsed = agent::parse_approval_mode(mode)) options.approval = *parsed;
           },
           "Which tool calls wait for your approval: ask (bash, edit and write ask; read, grep, find and ls "
           "do not), auto-edit (edit and write inside this directory do not ask either), auto (what the "
           "sandbox bounds does not ask: bash under a sandbox, edit and write inside the workspace under "
           "workspace-write; a command that asks for the network the sandbox keeps off, and anything else, "
           "asks), never-ask. Rules from $XDG_CONFIG_HOME/cairn/settings.json and .cairn/settings.json come "
           "first. Default: ask")
        ->type_name("MODE")
        ->check(CLI::IsMember({"ask", "auto-edit", "auto", "never-ask"}));
    app->add_option("--mcp-config", options.mcp_configs,
                    "MCP servers from FILE too (repeatable; after $XDG_CONFIG_HOME/cairn/mcp.json and ./.mcp.json, "
                    "a server named again replaces the earlier one). See cairn mcp list")
        ->type_name("FILE");
    add_sandbox_options(app, options.sandbox_flags);
    app->add_option("--tool-env-allow", options.tool_env_allow,
                    "Variables the filter lets through after all, comma-separated or repeated (e.g. GITHUB_TOKEN)")
        ->type_name("NAMES")
        ->delimiter(',');
  }
}

const SuspendedOperation* AgentSetup::suspended_here() const {
  for (const auto& operation : suspended) {
    if (operation.ref == ref.name()) return &operation;
  }
  return nullptr;
}

std::string no_model_help(const ModelRegistry& registry) {
  std::vector<std::string> variables;
  for (const auto& provider : builtin_providers()) variables.push_back(provider.api_key_env);
  const std::string models_file =
      registry.models_file() ? registry.models_file()->string() : std::string("~/.config/cairn/models.json");
  return fmt::format(
      "cairn: no model is configured. Any one of these makes one callable:\n"
      "\n"
      "  1. A provider's key in the environment: {}.\n"
      "     e.g. export ANTHROPIC_API_KEY=sk-ant-...\n"
      "\n"
      "  2. A provider or local server in {}, e.g.\n"
      "       {{\"providers\": {{\"ollama\": {{\"baseUrl\": \"http://localhost:11434/v1\", \"api\": "
      "\"openai-completions\",\n"
      "                                \"models\": [{{\"id\": \"qwen3\"}}]}}}}}}\n"
      "\n"
      "  3. An endpoint on the command line:\n"
      "       cairn --api openai-completions --base-url http://localhost:11434/v1 --model qwen3 -p \"hello\"\n"
      "\n"
      "`cairn models --all` lists every known model and the variable holding its key.\n",
      agent::joined(variables, ", "), models_file);
}

std::string describe_suspended(const SuspendedOperation& operation) {
  std::string prompt;
  for (const auto& block : operation.prompt) {
    if (const auto* text = std::get_if<TextContent>(&block)) prompt += text->text;
  }
  std::string what = fmt::format("{} {} on ref {}, started {}", operation.cancelled ? "a cancelled" : "a suspended",
                                 to_string(operation.kind), operation.ref, operation.started_at);
  if (!prompt.empty()) what += fmt::format(" (\"{}\")", one_line(prompt, 50));
  if (!operation.awaiting_input.empty()) {
    what += fmt::format(", waiting for {} answer{} (cairn approve, deny or answer)", operation.awaiting_input.size(),
                        operation.awaiting_input.size() == 1 ? "" : "s");
  }
  return what;
}

Outcome<AgentSetup> setup_agent(const AgentCommandOptions& options, const SetupMode& mode) {
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) return std::unexpected(report(kFailure, fmt::format("cannot read the current directory: {}", ec.message())));

  // Everything the options alone decide, before anything is opened.
  auto tool_names = agent::chosen_tools(options);
  if (!tool_names) return std::unexpected(report(kUsage, tool_names.error().message));
  std::optional<std::filesystem::path> models_file;
  if (!options.models_file.empty()) models_file = options.models_file;
  auto registry = ModelRegistry::load(models_file, process_environment());
  if (!registry) return std::unexpected(report(kUsage, registry.error().message));
  auto named = agent::named_model(*registry, options);
  if (!named) return std::unexpected(report(kUsage, named.error().message));
  if (mode.need_model && !*named && registry->available().empty() && !mode.existing_session) {
    // Nothing could be called, whatever the session's branch names: say how
    // to configure a model before creating a session for nothing.
    print_untrusted(stderr, "{}", no_model_help(*registry));
    return std::unexpected(kUsage);
  }

  auto opened_store = open_store_for(options.store);
  if (!opened_store) return std::unexpected(opened_store.error());
  std::shared_ptr<Store> store = std::move(*opened_store);
  auto opened = choose_session(*store, options, mode, cwd);
  if (!opened) return std::unexpected(opened.error());
  std::shared_ptr<Session> session = opened->session;

  // The ref: it exists, or it starts at main's leaf.
  const auto refs = session->refs();
  const bool ref_exists =
      std::any_of(refs.begin(), refs.end(), [&](const RefInfo& info) { return info.name == options.ref; });
  if (!ref_exists && !mode.create_missing_ref) {
    return std::unexpected(report(kUsage, fmt::format("session {} has no ref '{}'", session->id(), options.ref)));
  }

  // The model: named, else the branch's, else the first available.
  std::optional<ConfiguredModel> model = std::move(*named);
  auto settings = session->branch_settings(ref_exists ? options.ref : "main");
  if (!settings) return std::unexpected(report(settings.error()));
  if (!model && settings->model) {
    const std::string spec = fmt::format("{}/{}", settings->model->provider, settings->model->model_id);
    auto found = registry->find(spec);
    if (found && (*found)->available()) {
      model = **found;
    } else if (mode.need_model) {
      // An ad-hoc endpoint or a model whose key is gone: say so, then fall
      // back like a fresh session would.
      print_untrusted(stderr, "cairn: the branch's model {} is not available here{}\n", spec,
                      registry->available().empty() ? "" : "; using another (pass --model to choose)");
    }
  }
  if (!model && !registry->available().empty()) model = *registry->available().front();
  if (!model && mode.need_model) {
    print_untrusted(stderr, "{}", no_model_help(*registry));
    return std::unexpected(kUsage);
  }

  agent::AgentOptions shape = options;
  shape.warn = print_warning;
  if (auto sandboxed = resolve_sandbox(shape, options.sandbox_flags, options.store, mode.mcp && !options.no_tools);
      !sandboxed) {
    return std::unexpected(sandboxed.error());
  }
  std::shared_ptr<agent::McpServers> mcp;
  if (mode.mcp && !options.no_tools) {
    auto started = process_mcp_servers(options.mcp_configs, cwd, agent::mcp_withheld_variables(options, *registry, model),
                                       agent::agent_sandbox_policy(shape));
    if (!started) return std::unexpected(started.error());
    mcp = std::move(*started);
  }
  auto harness_options =
      agent::coding_harness_options(shape, *registry, model, *tool_names, session, cwd, mcp, store);
  if (!harness_options) return std::unexpected(report(kUsage, harness_options.error().message));
  std::vector<agent::ContextFile> context_files = std::move(harness_options->context_files);

  auto created = AgentHarness::create(std::move(harness_options->harness));
  if (!created) return std::unexpected(report(kFailure, created.error().message));
  auto harness = std::make_unique<AgentHarness>(std::move(created->harness));
  agent::McpToolsBinding mcp_binding(mcp, *harness, std::move(harness_options->own_tools));

  if (!ref_exists) {
    auto made = harness->create_ref(options.ref, session->leaf("main"));
    if (!made) return std::unexpected(report(made.error()));
    print_untrusted(stderr, "cairn: created ref {} at main's leaf\n", options.ref);
  }
  AgentRef ref = *harness->ref(options.ref);
  const bool suspended_here = std::any_of(created->suspended.begin(), created->suspended.end(),
                                          [&](const SuspendedOperation& s) { return s.ref == options.ref; });
  if (mode.need_suspended && !suspended_here) {
    return std::unexpected(report(
        kUsage, fmt::format("nothing is suspended on ref {} of session {}", options.ref, session->id())));
  }
  if (mode.announce_session) print_untrusted(stderr, "cairn: session {}\n", session->id());

  // The choice goes on the branch, so that the next resume or continue uses
  // it without flags. Not under a suspended operation: its resume decides.
  if (!suspended_here) {
    if (model && (!settings->model || settings->model->provider != model->model.provider ||
                  settings->model->model_id != model->model.id)) {
      if (auto set = ref.set_model(model->model.provider, model->model.id); !set) {
        return std::unexpected(report(set.error()));
      }
    }
    if (options.thinking && (!settings->has_thinking_level || settings->thinking_level != *options.thinking)) {
      if (auto set = ref.set_thinking_level(*options.thinking); !set) return std::unexpected(report(set.error()));
    }
  }

  std::vector<std::string> registered;
  for (const auto& name : harness->tool_names()) registered.push_back(name);
  return AgentSetup{
      .options = options,
      .store = std::move(store),
      .session = std::move(session),
      .created = opened->created,
      .cwd = cwd,
      .registry = std::move(*registry),
      .model = std::move(model),
      .tool_names = std::move(registered),
      .context_files = std::move(context_files),
      .mcp = std::move(mcp),
      .sandbox = shape.sandbox,
      .harness = std::move(harness),
      .mcp_binding = std::move(mcp_binding),
      .ref = std::move(ref),
      .suspended = std::move(created->suspended),
  };
}

Outcome<std::shared_ptr<agent::McpServers>> process_mcp_servers(const std::vector<std::string>& extra_files,
                                                                const std::filesystem::path& cwd,
                                                                std::function<bool(std::string_view)> withhold,
                                                                const SandboxPolicy& sandbox) {
  // Once per process: interactive mode's /new, /resume and /fork make new
  // setups, which keep the servers (and their tools' state) they had.
  static std::mutex mu;
  static std::optional<std::shared_ptr<agent::McpServers>> started;
  std::lock_guard lock(mu);
  if (started) return *started;
  auto servers =
      agent::McpServers::start(extra_files, cwd, std::chrono::seconds(10), std::move(withhold), print_warning, sandbox);
  if (!servers) return std::unexpected(report(kUsage, servers.error().message));
  started = *servers;
  return *servers;
}

}  // namespace cairn::cli
