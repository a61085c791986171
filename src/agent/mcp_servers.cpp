#include "mcp_servers.hpp"

#include <unistd.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "cairn/harness/tool.hpp"
#include "directories.hpp"

extern char** environ;

namespace cairn::agent {

// Two locks: the listener runs (and may take the harness's lock) holding
// only listener_mu, so a run asking approval() under the harness's lock
// cannot wait for it.
struct McpServers::Hub {
  std::mutex mu;  // tools and clients
  std::vector<mcp::McpTool> tools;
  std::vector<std::shared_ptr<mcp::Client>> clients;
  std::mutex listener_mu;  // held while a listener runs
  std::map<std::uint64_t, Listener> listeners;
  std::uint64_t next_listener = 1;
};

namespace {

std::vector<std::string> environment_entries() {
  std::vector<std::string> entries;
  for (char** entry = environ; entry && *entry; ++entry) entries.emplace_back(*entry);
  return entries;
}

// Why an MCP tool has the approval it has.
std::string approval_reason(const mcp::ServerConfig& server, const mcp::McpTool& tool) {
  auto it = server.tools.find(tool.server_tool);
  if ((it != server.tools.end() && it->second.approval) || server.all_tools.approval) {
    return fmt::format("{} (MCP server {}'s setting in {})", to_string(tool.approval), server.name,
                       server.source.string());
  }
  return fmt::format("{} (MCP {})", to_string(tool.approval),
                     tool.annotations.read_only.value_or(false) ? "readOnlyHint" : "tool that is not read-only");
}

}  // namespace

Result<std::shared_ptr<McpServers>> McpServers::start(const std::vector<std::string>& extra_files,
                                                      const std::filesystem::path& cwd, std::chrono::milliseconds wait,
                                                      std::function<bool(std::string_view)> withhold, Warn warn,
                                                      const SandboxPolicy& sandbox) {
  std::vector<std::filesystem::path> files;
  if (auto dir = global_config_dir()) files.push_back(*dir / "mcp.json");
  files.push_back(cwd / ".mcp.json");
  for (const auto& file : extra_files) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return fail(Errc::invalid_config, fmt::format("--mcp-config {}: no such file", file));
    files.emplace_back(file);
  }
  auto config = mcp::load_config(files, environment_entries());
  if (!config) return std::unexpected(config.error());
  // Every stdio server under the agent's sandbox, unless its entry says
  // "sandbox": false.
  for (auto& server : config->servers) {
    if (auto* stdio = std::get_if<mcp::StdioTransport>(&server.transport); stdio && stdio->sandboxed) {
      stdio->sandbox = sandbox;
    }
  }
  if (config->servers.empty()) return std::shared_ptr<McpServers>();

  auto servers = std::make_shared<McpServers>(Key{});
  servers->config_ = std::move(*config);
  servers->hub_ = std::make_shared<Hub>();
  servers->warn_ = std::move(warn);
  const std::filesystem::path logs = cache_dir() / "mcp";
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  for (const auto& server : servers->config_.servers) {
    mcp::ClientOptions options;
    if (!ec) options.stderr_log = logs / (server.name + ".log");
    options.withhold_variable = withhold;
    options.on_tools_changed = [hub = std::weak_ptr<Hub>(servers->hub_)] {
      if (auto held = hub.lock()) refresh(*held, true);
    };
    servers->clients_.push_back(mcp::Client::start(server, std::move(options)));
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (const auto& client : servers->clients_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const mcp::ServerState state = client->wait_started(std::max(left, std::chrono::milliseconds(0)));
    if (!servers->warn_ || state == mcp::ServerState::ready) continue;
    const std::string why = state == mcp::ServerState::failed ? client->state_message()
                                                               : fmt::format("not started after {} s", wait.count() / 1000);
    servers->warn_(fmt::format("MCP server {} is not available ({}); its tools join when it starts",
                               client->config().name, servers->config_.secrets.redact(why)));
  }
  {
    std::lock_guard lock(servers->hub_->mu);
    servers->hub_->clients = servers->clients_;
  }
  refresh(*servers->hub_, false);
  return servers;
}

McpServers::~McpServers() {
  std::lock_guard lock(hub_->listener_mu);
  hub_->listeners.clear();
}

void McpServers::refresh(Hub& hub, bool notify) {
  std::vector<mcp::McpTool> tools;
  {
    std::lock_guard lock(hub.mu);
    hub.tools = mcp::make_tools(hub.clients);
    tools = hub.tools;
  }
  if (!notify) return;
  std::lock_guard lock(hub.listener_mu);
  for (const auto& [id, listener] : hub.listeners) listener(tools);
}

std::vector<mcp::McpTool> McpServers::tools() const {
  std::lock_guard lock(hub_->mu);
  return hub_->tools;
}

std::optional<ApprovalVerdict> McpServers::approval(std::string_view tool_name) const {
  std::lock_guard lock(hub_->mu);
  for (const auto& tool : hub_->tools) {
    if (tool.tool.name != tool_name) continue;
    for (const auto& server : config_.servers) {
      if (server.name == tool.server) return ApprovalVerdict{tool.approval, approval_reason(server, tool)};
    }
  }
  return std::nullopt;
}

std::optional<ApprovalDecision> McpServers::approval_override(std::string_view tool_name) const {
  std::lock_guard lock(hub_->mu);
  for (const auto& tool : hub_->tools) {
    if (tool.tool.name != tool_name) continue;
    for (const auto& server : config_.servers) {
      if (server.name != tool.server) continue;
      if (auto it = server.tools.find(tool.server_tool); it != server.tools.end() && it->second.approval) {
        return it->second.approval;
      }
      return server.all_tools.approval;
    }
  }
  return std::nullopt;
}

std::optional<std::string> McpServers::describe_missing(std::string_view tool_name) const {
  return mcp::describe_missing_tool(tool_name, clients_);
}

std::uint64_t McpServers::add_listener(Listener listener) {
  std::lock_guard lock(hub_->listener_mu);
  const std::uint64_t id = hub_->next_listener++;
  hub_->listeners.emplace(id, std::move(listener));
  return id;
}

void McpServers::remove_listener(std::uint64_t id) {
  std::lock_guard lock(hub_->listener_mu);
  hub_->listeners.erase(id);
}

std::vector<Tool> McpServers::usable_tools(const std::vector<mcp::McpTool>& tools) const {
  std::vector<Tool> usable;
  for (const auto& tool : tools) {
    if (auto compiled = ArgumentValidator::compile(tool.tool.parameters); !compiled) {
      std::lock_guard lock(reported_mu_);
      if (reported_.insert(tool.tool.name).second && warn_) {
        warn_(fmt::format("MCP tool {} of server {} is left out: its input schema: {}", tool.server_tool, tool.server,
                          compiled.error().message));
      }
      continue;
    }
    usable.push_back(tool.tool);
  }
  return usable;
}

McpToolsBinding::McpToolsBinding(std::shared_ptr<McpServers> servers, AgentHarness& harness, std::vector<Tool> own)
    : servers_(std::move(servers)) {
  if (!servers_) return;
  // The binding holds the servers, and removes this listener before it lets
  // go of them: the listener may use them by plain pointer.
  auto keep = [&harness, servers = servers_.get(), own = std::move(own)](const std::vector<mcp::McpTool>& tools) {
    std::vector<Tool> all = own;
    for (auto& tool : servers->usable_tools(tools)) all.push_back(std::move(tool));
    if (auto set = harness.set_tools(std::move(all)); !set && servers->warn()) {
      servers->warn()(fmt::format("the MCP servers' new tools are not used: {}", set.error().message));
    }
  };
  id_ = servers_->add_listener(keep);
  // A server that started between the harness's making and now.
  keep(servers_->tools());
}

void McpToolsBinding::reset() {
  if (servers_ && id_) servers_->remove_listener(id_);
  servers_.reset();
  id_ = 0;
}

}  // namespace cairn::agent
