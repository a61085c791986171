// Tools from Model Context Protocol servers (modelcontextprotocol.io,
// protocol revisions 2024-11-05 to 2025-11-25) as ordinary cairn Tools: the
// harness knows nothing of MCP. A server is reached over stdio (a process of
// our own, in its own process group, newline-delimited JSON-RPC) or over
// Streamable HTTP (POST, answered with JSON or an SSE stream, resumed with
// Last-Event-ID).
//
// What a call may do after a crash comes from the tool's annotations:
// readOnlyHint, or idempotentHint without destructiveHint, makes it `safe`
// to run again; anything else, or no annotations, `never` — a user's
// override wins. The same annotations give the approval default: read-only
// tools run unasked, the others ask.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <variant>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/approval.hpp"
#include "cairn/harness/tool.hpp"
#include "cairn/json.hpp"
#include "cairn/secrets.hpp"
#include "cairn/tools/sandbox.hpp"

namespace cairn::mcp {

// The protocol revisions this client speaks, newest first: it offers the
// first, and accepts any of them in the server's answer.
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

// ---- configuration ------------------------------------------------------------

struct StdioTransport {
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // added to the server's environment
  std::filesystem::path cwd;               // empty: ours
  // "sandbox": false in its configuration: the server runs unconfined.
  bool sandboxed = true;
  // The sandbox it runs under when sandboxed, its workspace being `cwd`
  // (else ours): set by whoever starts the servers (McpServers::start, from
  // the agent's options); off unless they do.
  SandboxPolicy sandbox;
};

struct HttpTransport {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // often credentials: never printed
};

// A user's say over one tool, or (in ServerConfig) over all of a server's.
struct ToolOverride {
  std::optional<Replay> replay;
  std::optional<ApprovalDecision> approval;
};

struct ServerConfig {
  std::string name;
  std::variant<StdioTransport, HttpTransport> transport;
  ToolOverride all_tools;                     // "replay" / "approval" beside the transport
  std::map<std::string, ToolOverride> tools;  // "tools": {"NAME": {"replay", "approval"}}, by the server's names
  std::chrono::milliseconds timeout{600000};  // "timeout" (ms): the longest a call may take
  std::filesystem::path source;               // the file it came from
};

struct Config {
  std::vector<ServerConfig> servers;  // sorted by name
  // Every value a ${VAR} reference put into the configuration: it may be a
  // credential, so nothing cairn writes may hold it.
  Secrets secrets;
};

// Reads `files` in order; a server named again replaces the earlier one
// (the user's file, then the project's, then --mcp-config). A file that
// does not exist is skipped. Values may hold ${VAR} and ${VAR:-default},
// replaced from `environment` (NAME=VALUE entries); an unset variable
// without default is an error. Errors are invalid_config, naming the file
// and the server.
Result<Config> load_config(const std::vector<std::filesystem::path>& files,
                           const std::vector<std::string>& environment);

// ---- a server's tools ---------------------------------------------------------------

struct Annotations {
  std::optional<std::string> title;
  std::optional<bool> read_only;    // readOnlyHint
  std::optional<bool> destructive;  // destructiveHint (the protocol's default: true)
  std::optional<bool> idempotent;   // idempotentHint (default: false)
  std::optional<bool> open_world;   // openWorldHint (default: true)
};

struct ServerTool {
  std::string name;  // the server's
  std::string description;
  Json input_schema = Json::object();
  Annotations annotations;
};

// The replay policy and the approval default the annotations give, before
// any override.
Replay replay_from(const Annotations& annotations);
ApprovalDecision approval_from(const Annotations& annotations);

// `mcp__SERVER__TOOL` with every character outside [A-Za-z0-9_-] made `_`,
// at most 64 characters (a cut name ends in a hash of the whole, so two
// long names stay apart), and made unique against `taken` (which it joins).
std::string cairn_tool_name(std::string_view server, std::string_view tool, std::set<std::string>& taken);

// ---- a connection to one server -------------------------------------------------------

struct CallProgress {
  double progress = 0;
  std::optional<double> total;
  std::string message;
};

struct ClientOptions {
  // Where a stdio server's stderr goes (appended); empty: /dev/null.
  std::filesystem::path stderr_log;
  // The variables of this process's environment a stdio server does not
  // inherit (provider keys, say); its configured `env` it gets anyway.
  // Empty: it inherits everything.
  std::function<bool(std::string_view name)> withhold_variable;
  std::chrono::milliseconds request_timeout{30000};  // initialize, tools/list, ping
  // A server that dies is started again after 0.25 s, 0.5 s, 1 s … up to
  // this, and then keeps being tried at this interval.
  std::chrono::milliseconds max_backoff{30000};
  // Told (on the client's thread) when the server's tool list changed.
  std::function<void()> on_tools_changed;
};

enum class ServerState { starting, ready, failed };
std::string_view to_string(ServerState state);

// One server: started (and, when it dies, restarted with backoff) on its own
// thread. Calls from many threads at once. Destroying it ends the server
// (its process group is killed; an HTTP session is deleted).
class Client {
 public:
  // Starts connecting; returns at once.
  static std::shared_ptr<Client> start(ServerConfig config, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ServerConfig& config() const;
  ServerState state() const;
  std::string state_message() const;  // why it failed, when it did
  // Waits until the server is ready or failed (its first start), up to `limit`.
  ServerState wait_started(std::chrono::milliseconds limit) const;
  std::vector<ServerTool> tools() const;  // as last listed
  std::string protocol_version() const;   // as negotiated; empty before

  // tools/call. Progress notifications reach `progress`; a stop request on
  // `cancel` sends notifications/cancelled and returns at once; past
  // `timeout` the same. The result is the server's `result` object; an
  // error is a JSON-RPC error, a dead server, a timeout or a cancel.
  Result<Json> call_tool(const std::string& name, const Json& arguments,
                         const std::function<void(const CallProgress&)>& progress, std::stop_token cancel,
                         std::chrono::milliseconds timeout);
  Status ping();

  struct Impl;

 private:
  explicit Client(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// ---- as cairn tools -------------------------------------------------------------------------

// A server's `result` as a tool result: text and image blocks kept, audio,
// resources and resource links described in text, structuredContent in
// details (and as text when the server gave no content), isError kept.
ToolResult to_tool_result(const Json& result);

struct McpTool {
  Tool tool;
  std::string server;       // the server's configured name
  std::string server_tool;  // the server's name of it
  Annotations annotations;
  ApprovalDecision approval = ApprovalDecision::ask;  // after overrides
};

// Every ready server's tools as cairn Tools, names made unique across them
// (in the order of `clients`). A call goes to the server's current
// connection; one made while it is down is an error result naming it.
std::vector<McpTool> make_tools(const std::vector<std::shared_ptr<Client>>& clients);

// The approval rules the tools' defaults and overrides give (`NAME: allow`
// or `NAME: ask`), for an ApprovalPolicy's rules after the user's own.
std::vector<ApprovalRule> approval_rules(const std::vector<McpTool>& tools);

// What to say of a call to `name` that no registered tool answers, when the
// name is an MCP tool's (`mcp__SERVER__…`): the server is not configured, or
// is not running (and why), or no longer has the tool. nullopt: not an MCP name.
std::optional<std::string> describe_missing_tool(std::string_view name,
                                                 const std::vector<std::shared_ptr<Client>>& clients);

}  // namespace cairn::mcp
