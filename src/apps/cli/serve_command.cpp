// `cairn serve`: every session of one store over HTTP (cairn::serve's
// Server), each running the coding agent as the CLI's options shape it; a
// signal stops the server.
#include <malloc.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "agent/chosen_tools.hpp"
#include "agent/environment_policy.hpp"
#include "agent/harness_options.hpp"
#include "agent/named_model.hpp"
#include "agent_run.hpp"
#include "agent_setup.hpp"
#include "cairn/agent/coding_agent.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/llm/models_file.hpp"
#include "cairn/serve/server.hpp"
#include "cli.hpp"
#include "tracing.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct ServeOptions {
  AgentCommandOptions agent;
  std::string listen = "127.0.0.1:8420";
  std::string token_file;
  bool no_resume = false;
  double idle_close_seconds = 300;
  double claim_poll_seconds = 1;
  double inbox_wait_seconds = 5;
  std::size_t max_body = 16u << 20;
  int workers = 16;
  double request_timeout_seconds = 30;
  std::size_t stream_queue = 4096;
  std::size_t stream_queue_bytes = 8u << 20;
  std::size_t max_connections = 4096;
  std::size_t max_pending = 256;
  std::size_t max_descriptors = 0;
};

// Every session's harness: the coding agent (the agent library's) as the
// server's factory. The agent knows nothing of the server, which is a
// higher layer: this is where the two meet.
class CodingAgentFactory : public serve::HarnessFactory {
 public:
  explicit CodingAgentFactory(agent::CodingAgent coding_agent) : agent_(std::move(coding_agent)) {}

  Result<Made> make(const std::shared_ptr<Session>& session, const std::shared_ptr<Store>& store) override {
    auto made = agent_.harness_options(session, store);
    if (!made) return std::unexpected(made.error());
    return Made{.options = std::move(made->options), .attach = std::move(made->attach)};
  }

  std::vector<ConfiguredModel> models() const override { return agent_.registry().models(); }
  std::optional<ConfiguredModel> default_model() const override { return agent_.default_model(); }
  std::filesystem::path default_cwd() const override { return agent_.cwd(); }

 private:
  const agent::CodingAgent agent_;
};

std::filesystem::path default_token_file() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "cairn" / "serve-tokens";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".config" / "cairn" / "serve-tokens";
  return "serve-tokens";
}

int run_serve(const ServeOptions& options) {
  // Large buffers (a snapshot's frame, a long record) come from and go back
  // to the system: glibc's adaptive threshold would keep them in the heap
  // after the first was freed, where freeing them gives nothing back.
  ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  serve::ServerOptions server;
  {
    const auto colon = options.listen.rfind(':');
    if (colon == std::string::npos) return report(kUsage, "--listen takes HOST:PORT, e.g. 127.0.0.1:8420");
    server.host = options.listen.substr(0, colon);
    if (server.host.size() > 2 && server.host.front() == '[' && server.host.back() == ']') {
      server.host = server.host.substr(1, server.host.size() - 2);
    }
    const std::string port = options.listen.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value > 65535) {
      return report(kUsage, fmt::format("--listen: bad port '{}'", port));
    }
    server.port = static_cast<std::uint16_t>(value);
  }
  server.max_body = options.max_body;
  server.worker_threads = options.workers;
  server.max_connections = options.max_connections;
  server.max_pending = options.max_pending;
  // As many descriptors as the system lets this process have: a server
  // runs out of them long before it runs out of memory.
  const std::size_t limit = serve::raise_descriptor_limit();
  server.max_descriptors = options.max_descriptors == 0 ? limit : std::min(options.max_descriptors, limit);
  server.request_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options.request_timeout_seconds * 1000));
  server.stream_queue = options.stream_queue;
  server.stream_queue_bytes = options.stream_queue_bytes;
  server.idle_close = std::chrono::milliseconds(static_cast<std::int64_t>(options.idle_close_seconds * 1000));
  server.claim_poll = std::chrono::milliseconds(static_cast<std::int64_t>(options.claim_poll_seconds * 1000));
  server.inbox_wait = std::chrono::milliseconds(static_cast<std::int64_t>(options.inbox_wait_seconds * 1000));
  server.resume = !options.no_resume;

  const std::filesystem::path token_file =
      options.token_file.empty() ? default_token_file() : std::filesystem::path(options.token_file);
  bool created = false;
  auto tokens = serve::load_tokens(token_file, created);
  if (!tokens) return report(kUsage, tokens.error().message);
  if (created) print_untrusted(stderr, "cairn serve: created {} with a new token (mode 0600)\n", token_file.string());
  server.tokens = *tokens;

  // The agent: as the CLI would set it up, once for every session.
  auto tool_names = agent::chosen_tools(options.agent);
  if (!tool_names) return report(kUsage, tool_names.error().message);
  std::optional<std::filesystem::path> models_file;
  if (!options.agent.models_file.empty()) models_file = options.agent.models_file;
  auto registry = ModelRegistry::load(models_file, process_environment());
  if (!registry) return report(kUsage, registry.error().message);
  auto named = agent::named_model(*registry, options.agent);
  if (!named) return report(kUsage, named.error().message);
  std::optional<ConfiguredModel> model = std::move(*named);
  if (!model && !registry->available().empty()) model = *registry->available().front();
  if (!model) fmt::print(stderr, "cairn serve: warning: no model is configured; runs will be refused (see cairn models)\n");

  auto store = open_store_for(options.agent.store);
  if (!store) return store.error();
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  agent::AgentOptions shape = options.agent;
  if (auto sandboxed = resolve_sandbox(shape, options.agent.sandbox_flags, options.agent.store, !options.agent.no_tools);
      !sandboxed) {
    return sandboxed.error();
  }
  shape.sandbox_hide.push_back(token_file.string());  // wherever --token-file put it
  std::shared_ptr<agent::McpServers> mcp;
  if (!options.agent.no_tools) {
    auto started = process_mcp_servers(options.agent.mcp_configs, cwd,
                                       agent::mcp_withheld_variables(options.agent, *registry, model),
                                       agent::agent_sandbox_policy(shape));
    if (!started) return started.error();
    mcp = std::move(*started);
  }
  shape.secrets = *tokens;  // a tool that reads the token file shows "[redacted]"
  shape.warn = print_warning;
  auto factory = std::make_shared<CodingAgentFactory>(agent::CodingAgent({.options = std::move(shape),
                                                                          .registry = std::move(*registry),
                                                                          .default_model = std::move(model),
                                                                          .tool_names = std::move(*tool_names),
                                                                          .cwd = cwd,
                                                                          .mcp = std::move(mcp)}));

  // SIGTERM or SIGINT: stop accepting, end the streams, return from wait().
  // Installed before the server says it listens, so that a signal sent as
  // soon as it does is a stop, not a kill.
  std::mutex mu;
  serve::Server* running = nullptr;  // under mu
  bool stop_asked = false;           // under mu
  SignalAbort on_signal([&] {
    std::lock_guard lock(mu);
    stop_asked = true;
    if (running != nullptr) running->stop();
  });
  auto started = serve::Server::start(std::move(*store), std::move(factory), server);
  if (!started) return report(kFailure, started.error().message);
  {
    std::lock_guard lock(mu);
    running = started->get();
    if (stop_asked) running->stop();
  }
  const std::string shown_host = server.host.find(':') != std::string::npos ? "[" + server.host + "]" : server.host;
  print_untrusted(stderr, "cairn serve: listening on http://{}:{}\n", shown_host, (*started)->port());
  std::fflush(stderr);
  (*started)->wait();
  fmt::print(stderr, "cairn serve: stopped\n");
  std::fflush(stderr);
  std::fflush(stdout);
  // Operations still running are left to their log: every step they took is
  // durable, and the next start resumes them. Nothing waits for them but
  // the spans already made, which get the sinks' flush timeout.
  flush_active_tracing();
  ::_exit(kOk);
}

}  // namespace

void register_serve_command(CLI::App& app, Commands& commands) {
  auto [sub, options] = add_command(app, commands, "serve",
                                    "Serve every session of the store over HTTP: a JSON API, live event streams, "
                                    "bearer-token auth (see the README's `cairn serve`)",
                                    run_serve);
  add_agent_options(sub, options->agent, kModelChoice | kAgentShape);
  sub->add_option("--listen", options->listen, "Where to listen, HOST:PORT (port 0 picks a free one). Default: 127.0.0.1:8420")
      ->type_name("HOST:PORT");
  sub->add_option("--token-file", options->token_file,
                  "The bearer tokens, one per line (mode 0600); created with a random token when missing. "
                  "Default: $XDG_CONFIG_HOME/cairn/serve-tokens")
      ->type_name("FILE");
  sub->add_flag("--no-resume", options->no_resume,
                "Leave the store's suspended operations suspended at start (and, on a shared store, claim none "
                "later)");
  sub->add_option("--claim-poll", options->claim_poll_seconds,
                  "On a shared store (postgres://…): seconds between looks for runs other processes left suspended. "
                  "Default: 1")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.05, 3600.0));
  sub->add_option("--inbox-wait", options->inbox_wait_seconds,
                  "On a shared store (postgres://…): how long a request for a session another process holds waits "
                  "for that process's answer through the session's inbox before it is answered 202 {queued}. "
                  "Default: 5")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.05, 3600.0));
  sub->add_option("--idle-close", options->idle_close_seconds,
                  "Close a session this many seconds after its last use (nothing running or watching). Default: 300")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--max-body", options->max_body, "The largest request body taken, in bytes. Default: 16777216")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 32));
  sub->add_option("--request-timeout", options->request_timeout_seconds,
                  "Seconds a client has to send a whole request (and a kept-alive connection may idle). Default: 30")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.1, 86400.0));
  sub->add_option("--stream-queue", options->stream_queue,
                  "Events a stream holds for a client that reads too slowly; past that its stream ends with "
                  "stream_overflow and the client reconnects with its cursor. Default: 4096")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  sub->add_option("--workers", options->workers, "Threads that handle requests. Default: 16")
      ->type_name("N")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--stream-queue-bytes", options->stream_queue_bytes,
                  "Bytes of events a stream holds for a client that reads too slowly; past that it ends as with "
                  "--stream-queue. Default: 8388608")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 32));
  sub->add_option("--max-connections", options->max_connections,
                  "Connections held at once (at most half the descriptors); past that the one idle the longest is "
                  "dropped. Default: 4096")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{2}, std::size_t{1} << 24));
  sub->add_option("--max-pending", options->max_pending,
                  "Connections that have not yet sent a request with a valid token; past that the oldest is dropped. "
                  "Default: 256")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  sub->add_option("--max-descriptors", options->max_descriptors,
                  "File descriptors the server may use (connections take at most half, sessions the rest). "
                  "Default: the open-file limit, raised at start to its hard limit")
      ->type_name("N")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 24));
}

}  // namespace cairn::cli
