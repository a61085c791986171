// The MCP servers of the coding agent: configured from the user's
// $XDG_CONFIG_HOME/cairn/mcp.json, the project's .mcp.json and --mcp-config
// files, started once, their tools offered to every harness made with
// them. The harness knows nothing of MCP: it gets ordinary tools, an
// approval callback and a describe_missing_tool callback from here.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/agent/options.hpp"
#include "cairn/error.hpp"
#include "cairn/harness/approval.hpp"
#include "cairn/harness/harness.hpp"
#include "cairn/tools/mcp.hpp"

namespace cairn::agent {

class McpServers {
 public:
  // Loads the configuration files in order (the user's, the project's, then
  // `extra_files`, which must exist), starts every server and waits up to
  // `wait` for them to start. A server that fails to start is told to
  // `warn` and left restarting in the background. Errors: a configuration
  // file that is bad, or, of `extra_files`, missing (invalid_config). Null
  // when no server is configured.
  // A stdio server inherits cairn's environment but what `withhold` names
  // (the tools' filter: provider keys, names with KEY, SECRET or TOKEN).
  // `warn` is also told of a tool left out (usable_tools) and of a harness
  // whose tools could not follow a change (McpToolsBinding).
  static Result<std::shared_ptr<McpServers>> start(const std::vector<std::string>& extra_files,
                                                   const std::filesystem::path& cwd, std::chrono::milliseconds wait,
                                                   std::function<bool(std::string_view)> withhold, Warn warn,
                                                   const SandboxPolicy& sandbox = {});
  // Made by start(); public for make_shared only (the key is private).
  struct Key {
   private:
    Key() = default;
    friend class McpServers;
  };
  explicit McpServers(Key) {}
  ~McpServers();

  const mcp::Config& config() const { return config_; }
  const Warn& warn() const { return warn_; }
  const std::vector<std::shared_ptr<mcp::Client>>& clients() const { return clients_; }

  // The ready servers' tools, as of now.
  std::vector<mcp::McpTool> tools() const;
  // Those of `tools` usable as harness tools: one whose input schema cannot
  // be compiled is left out (told to `warn` once per name).
  std::vector<Tool> usable_tools(const std::vector<mcp::McpTool>& tools) const;
  // The approval an MCP tool has (its annotations' default or the user's
  // override), with what decided it; nullopt: not an MCP tool of these servers.
  std::optional<ApprovalVerdict> approval(std::string_view tool_name) const;
  // The override's approval alone (the mode never-ask honours only a deny).
  std::optional<ApprovalDecision> approval_override(std::string_view tool_name) const;
  std::optional<std::string> describe_missing(std::string_view tool_name) const;

  // Called on a server's thread, with the tools as they are now, whenever
  // a server's tool list changed (a restart, list_changed). Removing a
  // listener waits for a call of it in progress, so it may be removed just
  // before what it touches is destroyed.
  using Listener = std::function<void(const std::vector<mcp::McpTool>& tools)>;
  std::uint64_t add_listener(Listener listener);
  void remove_listener(std::uint64_t id);

 private:
  // What the clients' threads reach: it outlives McpServers when a harness
  // still holds a tool (and so a client) after the servers object is gone.
  struct Hub;
  static void refresh(Hub& hub, bool notify);

  mcp::Config config_;
  std::vector<std::shared_ptr<mcp::Client>> clients_;
  std::shared_ptr<Hub> hub_;
  Warn warn_;
  mutable std::mutex reported_mu_;
  mutable std::set<std::string> reported_;  // the tools usable_tools told `warn` of
};

// Keeps `harness`'s tools `own` + the servers' tools as the servers' lists
// change, until it goes: a member of whatever owns the harness, declared
// after it (so it goes first).
class McpToolsBinding {
 public:
  McpToolsBinding() = default;
  McpToolsBinding(std::shared_ptr<McpServers> servers, AgentHarness& harness, std::vector<Tool> own);
  McpToolsBinding(McpToolsBinding&& other) noexcept
      : servers_(std::move(other.servers_)), id_(std::exchange(other.id_, 0)) {}
  McpToolsBinding& operator=(McpToolsBinding&& other) noexcept {
    reset();
    servers_ = std::move(other.servers_);
    id_ = std::exchange(other.id_, 0);
    return *this;
  }
  ~McpToolsBinding() { reset(); }
  void reset();

 private:
  std::shared_ptr<McpServers> servers_;
  std::uint64_t id_ = 0;
};

}  // namespace cairn::agent
