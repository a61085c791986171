// A server's lifecycle on the client's own thread: connect, initialize,
// list the tools; when the server dies, start it again after a backoff that
// doubles up to ClientOptions::max_backoff; when it says its tools changed,
// list them again.

#include <condition_variable>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "cairn/version.hpp"
#include "connection.hpp"

namespace cairn::mcp {

namespace {

using namespace std::chrono_literals;

// A server whose pagination never ends (a cursor handed back forever) is a
// broken server, not a reason to list forever.
constexpr int kMaxToolPages = 100;

// A server's string, or empty when it sent none or something else
// (Json::value would throw, and on the client's thread that ends cairn).
std::string server_string(const Json& object, const char* key) {
  if (auto it = object.find(key); it != object.end() && it->is_string()) return it->get<std::string>();
  return {};
}

Result<std::vector<ServerTool>> list_tools(Connection& connection, const std::string& server,
                                           std::chrono::milliseconds timeout) {
  std::vector<ServerTool> tools;
  std::set<std::string> seen_cursors;
  std::optional<std::string> cursor;
  for (int page = 0; page < kMaxToolPages; ++page) {
    Json params = Json::object();
    if (cursor) params["cursor"] = *cursor;
    auto listed = connection.request("tools/list", std::move(params), timeout);
    if (!listed) return std::unexpected(listed.error());
    const auto list = listed->find("tools");
    if (list == listed->end() || !list->is_array()) {
      return std::unexpected(Error(Errc::server_error, fmt::format("MCP server '{}' answered tools/list without a tools array", server)));
    }
    for (const Json& entry : *list) {
      if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) continue;
      ServerTool tool;
      tool.name = entry["name"].get<std::string>();
      tool.description = server_string(entry, "description");
      if (auto schema = entry.find("inputSchema"); schema != entry.end() && schema->is_object()) tool.input_schema = *schema;
      if (!tool.input_schema.contains("type")) tool.input_schema["type"] = "object";
      if (auto notes = entry.find("annotations"); notes != entry.end() && notes->is_object()) {
        const auto flag = [&](const char* key) -> std::optional<bool> {
          if (auto it = notes->find(key); it != notes->end() && it->is_boolean()) return it->get<bool>();
          return std::nullopt;
        };
        tool.annotations.read_only = flag("readOnlyHint");
        tool.annotations.destructive = flag("destructiveHint");
        tool.annotations.idempotent = flag("idempotentHint");
        tool.annotations.open_world = flag("openWorldHint");
        if (auto title = notes->find("title"); title != notes->end() && title->is_string()) tool.annotations.title = title->get<std::string>();
      }
      if (!tool.annotations.title) {
        if (auto title = entry.find("title"); title != entry.end() && title->is_string()) tool.annotations.title = title->get<std::string>();
      }
      tools.push_back(std::move(tool));
    }
    const auto next = listed->find("nextCursor");
    if (next == listed->end() || !next->is_string() || next->get<std::string>().empty()) return tools;
    cursor = next->get<std::string>();
    if (!seen_cursors.insert(*cursor).second) break;
  }
  return std::unexpected(Error(Errc::server_error, fmt::format("MCP server '{}' paginated tools/list without end", server)));
}

}  // namespace

std::string_view to_string(ServerState state) {
  switch (state) {
    case ServerState::starting: return "starting";
    case ServerState::ready: return "ready";
    case ServerState::failed: return "failed";
  }
  return "failed";
}

struct Client::Impl : std::enable_shared_from_this<Client::Impl> {
  ServerConfig config;
  ClientOptions options;

  mutable std::mutex mu;
  mutable std::condition_variable changed;
  ServerState state = ServerState::starting;
  std::string message;
  bool first_start_done = false;
  std::vector<ServerTool> tools;
  std::string protocol_version;
  std::shared_ptr<Connection> connection;
  bool stopping = false;
  bool tools_dirty = false;
  bool connection_lost = false;
  std::thread thread;

  std::unique_ptr<Transport> make_transport() const {
    if (const auto* stdio = std::get_if<StdioTransport>(&config.transport)) {
      return make_stdio_transport(*stdio, options.stderr_log, options.withhold_variable);
    }
    return make_http_transport(std::get<HttpTransport>(config.transport));
  }

  // One start: the transport, initialize, the tool list.
  Result<std::shared_ptr<Connection>> connect() {
    std::weak_ptr<Impl> weak = weak_from_this();
    Connection::Callbacks callbacks{
        .on_tools_changed =
            [weak] {
              if (auto self = weak.lock()) {
                std::lock_guard lock(self->mu);
                self->tools_dirty = true;
                self->changed.notify_all();
              }
            },
        .on_closed =
            [weak](std::string why) {
              if (auto self = weak.lock()) {
                std::lock_guard lock(self->mu);
                self->connection_lost = true;
                self->message = std::move(why);
                self->changed.notify_all();
              }
            }};
    auto opened = Connection::open(make_transport(), config.name, std::move(callbacks));
    if (!opened) return std::unexpected(opened.error());
    std::shared_ptr<Connection> link = *opened;
    Json init = {{"protocolVersion", kProtocolVersions[0]},
                 {"capabilities", Json::object()},
                 {"clientInfo", {{"name", "cairn"}, {"version", CAIRN_VERSION_STRING}}}};
    auto answer = link->request("initialize", std::move(init), options.request_timeout);
    if (!answer) {
      link->close();
      return std::unexpected(answer.error());
    }
    const std::string version = server_string(*answer, "protocolVersion");
    if (std::find(std::begin(kProtocolVersions), std::end(kProtocolVersions), version) == std::end(kProtocolVersions)) {
      link->close();
      return std::unexpected(Error(Errc::server_error, fmt::format("MCP server '{}' speaks protocol version '{}', which cairn does not",
                                                                   config.name, version)));
    }
    link->set_protocol_version(version);
    if (auto sent = link->notify("notifications/initialized", Json()); !sent) {
      link->close();
      return std::unexpected(sent.error());
    }
    std::vector<ServerTool> listed;
    if (answer->contains("capabilities") && (*answer)["capabilities"].contains("tools")) {
      auto got = list_tools(*link, config.name, options.request_timeout);
      if (!got) {
        link->close();
        return std::unexpected(got.error());
      }
      listed = std::move(*got);
    }
    std::lock_guard lock(mu);
    protocol_version = version;
    tools = std::move(listed);
    return link;
  }

  void notify_tools_changed() {
    if (options.on_tools_changed) options.on_tools_changed();
  }

  void run() {
    auto backoff = 250ms;
    bool started_once = false;
    std::unique_lock lock(mu);
    while (!stopping) {
      lock.unlock();
      auto connected = connect();
      lock.lock();
      if (!connected) {
        state = ServerState::failed;
        message = connected.error().message;
        first_start_done = true;
        changed.notify_all();
        changed.wait_for(lock, backoff, [&] { return stopping; });
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, options.max_backoff);
        continue;
      }
      connection = *connected;
      connection_lost = connection->closed();
      tools_dirty = false;
      state = ServerState::ready;
      message.clear();
      first_start_done = true;
      backoff = 250ms;
      changed.notify_all();
      // A restarted server may have other tools than before.
      if (started_once) {
        lock.unlock();
        notify_tools_changed();
        lock.lock();
      }
      started_once = true;
      while (!stopping && !connection_lost) {
        changed.wait(lock, [&] { return stopping || connection_lost || tools_dirty; });
        if (tools_dirty && !stopping && !connection_lost) {
          tools_dirty = false;
          std::shared_ptr<Connection> link = connection;
          lock.unlock();
          auto listed = list_tools(*link, config.name, options.request_timeout);
          lock.lock();
          if (listed) {
            tools = std::move(*listed);
            lock.unlock();
            notify_tools_changed();
            lock.lock();
          }
        }
      }
      std::shared_ptr<Connection> old = std::move(connection);
      if (stopping) {
        lock.unlock();
        old->close();
        lock.lock();
        break;
      }
      // The server died: calls in flight have failed with its reason.
      state = ServerState::starting;
      changed.notify_all();
      lock.unlock();
      old->close();
      lock.lock();
      changed.wait_for(lock, backoff, [&] { return stopping; });
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, options.max_backoff);
    }
  }
};

std::shared_ptr<Client> Client::start(ServerConfig config, ClientOptions options) {
  auto impl = std::make_shared<Impl>();
  impl->config = std::move(config);
  impl->options = std::move(options);
  impl->thread = std::thread([raw = impl.get()] { raw->run(); });
  return std::shared_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->changed.notify_all();
  impl_->thread.join();
}

const ServerConfig& Client::config() const { return impl_->config; }

ServerState Client::state() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state;
}

std::string Client::state_message() const {
  std::lock_guard lock(impl_->mu);
  return impl_->message;
}

ServerState Client::wait_started(std::chrono::milliseconds limit) const {
  std::unique_lock lock(impl_->mu);
  impl_->changed.wait_for(lock, limit, [&] { return impl_->first_start_done; });
  return impl_->state;
}

std::vector<ServerTool> Client::tools() const {
  std::lock_guard lock(impl_->mu);
  return impl_->tools;
}

std::string Client::protocol_version() const {
  std::lock_guard lock(impl_->mu);
  return impl_->protocol_version;
}

Result<Json> Client::call_tool(const std::string& name, const Json& arguments,
                               const std::function<void(const CallProgress&)>& progress, std::stop_token cancel,
                               std::chrono::milliseconds timeout) {
  std::shared_ptr<Connection> link;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->state == ServerState::ready) link = impl_->connection;
    if (!link) {
      return std::unexpected(Error(Errc::server_unavailable,
                                   fmt::format("MCP server '{}' is not running{}", impl_->config.name,
                                               impl_->message.empty() ? "" : ": " + impl_->message)));
    }
  }
  return link->request("tools/call", {{"name", name}, {"arguments", arguments.is_object() ? arguments : Json::object()}},
                       timeout, std::move(cancel), progress ? progress : [](const CallProgress&) {});
}

Status Client::ping() {
  std::shared_ptr<Connection> link;
  {
    std::lock_guard lock(impl_->mu);
    link = impl_->connection;
    if (!link) return fail(Errc::server_unavailable, fmt::format("MCP server '{}' is not running", impl_->config.name));
  }
  auto answer = link->request("ping", Json::object(), impl_->options.request_timeout);
  if (!answer) return std::unexpected(answer.error());
  return {};
}

}  // namespace cairn::mcp
