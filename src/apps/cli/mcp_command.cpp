// `cairn mcp list`: each configured MCP server, its state and its tools with
// their annotations and the replay policy and approval cairn derived. Never a
// header or an environment value: those are often credentials.
#include <fmt/format.h>

#include "agent/environment_policy.hpp"
#include "agent/mcp_servers.hpp"
#include "cairn/json.hpp"
#include "cairn/llm/models_file.hpp"
#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {

namespace {

struct McpListOptions {
  std::vector<std::string> mcp_configs;
  bool json = false;
  double wait_seconds = 10;
};

std::string transport_of(const mcp::ServerConfig& server, const Secrets& secrets) {
  if (const auto* stdio = std::get_if<mcp::StdioTransport>(&server.transport)) {
    std::string line = stdio->command;
    for (const auto& arg : stdio->args) line += " " + arg;
    return secrets.redact("stdio: " + line);
  }
  return secrets.redact("http: " + std::get<mcp::HttpTransport>(server.transport).url);
}

std::string hints_of(const mcp::Annotations& a) {
  std::string hints;
  auto add = [&](const char* name, const std::optional<bool>& value) {
    if (value) hints += fmt::format("{}{}={}", hints.empty() ? "" : " ", name, *value ? "true" : "false");
  };
  add("readOnly", a.read_only);
  add("destructive", a.destructive);
  add("idempotent", a.idempotent);
  add("openWorld", a.open_world);
  return hints.empty() ? "no annotations" : hints;
}

Json annotations_json(const mcp::Annotations& a) {
  Json out = Json::object();
  if (a.title) out["title"] = *a.title;
  if (a.read_only) out["readOnlyHint"] = *a.read_only;
  if (a.destructive) out["destructiveHint"] = *a.destructive;
  if (a.idempotent) out["idempotentHint"] = *a.idempotent;
  if (a.open_world) out["openWorldHint"] = *a.open_world;
  return out;
}

int run_mcp_list(const McpListOptions& options) {
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  const auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(options.wait_seconds * 1000));
  // The servers get what the agent's would (the default --tool-env filter).
  auto registry = ModelRegistry::load(std::nullopt, process_environment());
  if (!registry) return report(kUsage, registry.error().message);
  // No warnings: a server that is not up shows as such in the listing.
  auto started = agent::McpServers::start(options.mcp_configs, cwd, wait,
                                          agent::mcp_withheld_variables(agent::AgentOptions{}, *registry, std::nullopt),
                                          /*warn=*/{});
  if (!started) return report(kUsage, started.error().message);
  const auto& servers = *started;
  if (!servers) {
    if (!options.json) {
      fmt::print("No MCP server is configured (in $XDG_CONFIG_HOME/cairn/mcp.json, ./.mcp.json or --mcp-config).\n");
    }
    return kOk;
  }
  const Secrets& secrets = servers->config().secrets;
  const auto tools = servers->tools();
  for (const auto& client : servers->clients()) {
    const auto& server = client->config();
    const auto state = client->state();
    const std::string message = secrets.redact(client->state_message());
    if (options.json) {
      Json line{{"server", server.name},
                {"transport", transport_of(server, secrets)},
                {"source", server.source.string()},
                {"state", std::string(mcp::to_string(state))},
                {"protocolVersion", client->protocol_version()},
                {"tools", Json::array()}};
      if (!message.empty()) line["message"] = message;
      for (const auto& tool : tools) {
        if (tool.server != server.name) continue;
        line["tools"].push_back(Json{{"name", tool.tool.name},
                                     {"serverTool", tool.server_tool},
                                     {"annotations", annotations_json(tool.annotations)},
                                     {"replay", std::string(to_string(tool.tool.replay))},
                                     {"approval", std::string(to_string(tool.approval))}});
      }
      fmt::print("{}\n", line.dump());
      continue;
    }
    // A server's message, protocol version and tool names are its own words.
    print_untrusted(stdout, "{}  {}  ({}; from {})\n", server.name, mcp::to_string(state),
                    transport_of(server, secrets), server.source.string());
    if (!message.empty()) print_untrusted(stdout, "  {}\n", message);
    if (state == mcp::ServerState::ready) print_untrusted(stdout, "  protocol {}\n", client->protocol_version());
    for (const auto& tool : tools) {
      if (tool.server != server.name) continue;
      print_untrusted(stdout, "  {}  replay {}, approval {}  [{}]\n", tool.tool.name, to_string(tool.tool.replay),
                      to_string(tool.approval), hints_of(tool.annotations));
    }
  }
  return kOk;
}

}  // namespace

void register_mcp_command(CLI::App& app, Commands& commands) {
  CLI::App* mcp = app.add_subcommand("mcp", "MCP servers: see what is configured and what cairn makes of it");
  mcp->require_subcommand(1);
  auto [sub, options] = add_command(*mcp, commands, "list",
      "Start each configured MCP server and show its state and its tools, with their annotations and the replay "
      "policy and approval cairn derived (never a header or an environment value)", run_mcp_list);
  sub->add_option("--mcp-config", options->mcp_configs,
                  "MCP servers from FILE too (repeatable; after $XDG_CONFIG_HOME/cairn/mcp.json and ./.mcp.json)")
      ->type_name("FILE");
  sub->add_flag("--json", options->json, "One JSON object per server, a line each");
  sub->add_option("--wait", options->wait_seconds, "How long to wait for the servers to start, in seconds. Default: 10")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.0, 600.0));
}

}  // namespace cairn::cli
