// cairn's HTTP server as a library: every session of one store over HTTP —
// the JSON API, live event streams with resumable cursors, A2A over
// JSON-RPC and HTTP+JSON, the web viewer — behind bearer tokens. A program
// that embeds cairn serves its own harness with it; the `cairn serve`
// command is this server with the coding agent's harness and a signal
// handler. The routes are listed in the README ("cairn serve") and in
// docs/openapi.json.
//
//   class Mine : public cairn::serve::HarnessFactory { ... make() ... };
//   auto server = cairn::serve::Server::start(std::move(store), std::make_shared<Mine>(),
//                                             {.port = 8420, .tokens = {token}});
//   if (!server) ...;                // could not listen: the error says why
//   (*server)->wait();               // until stop(), from another thread
//
// The server installs no signal handler and owns its threads; stop() may be
// called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/harness.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/serve/http.hpp"
#include "cairn/store/store.hpp"

namespace cairn::serve {

// How the server makes the harness of each session it opens: the model,
// the tools, the approval policy, the system prompt.
class HarnessFactory {
 public:
  struct Made {
    // HarnessOptions::session is set by the server.
    HarnessOptions options;
    // Called once the harness exists; what it returns lives as long as the
    // harness and is let go just before it (tools that must know their
    // harness, say). May be empty.
    std::function<std::shared_ptr<void>(AgentHarness&)> attach;
  };
  virtual ~HarnessFactory() = default;
  // The harness of `session`, open for writing. `store` is the server's
  // (a tool that runs subagents in child sessions makes them there). Called
  // on the server's threads, several at once for different sessions.
  virtual Result<Made> make(const std::shared_ptr<Session>& session, const std::shared_ptr<Store>& store) = 0;
  // GET /v1/models: the models a client may choose, and the default.
  virtual std::vector<ConfiguredModel> models() const { return {}; }
  virtual std::optional<ConfiguredModel> default_model() const { return std::nullopt; }
  // Where a session created without a `cwd` works.
  virtual std::filesystem::path default_cwd() const;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8420;  // 0: a free one (Server::port says which)
  // The bearer tokens every route but /healthz and the viewer's files asks
  // for (at least one). They are kept out of every record, event and tool
  // result as provider keys are.
  std::vector<std::string> tokens;
  int io_threads = 2;       // move the connections' bytes
  int worker_threads = 16;  // run requests (none waits for a run)
  std::size_t max_body = 16u << 20;
  std::chrono::milliseconds request_timeout{30000};  // to send a whole request, and to idle between two
  std::size_t max_connections = 4096;  // at most half the descriptors
  std::size_t max_pending = 256;       // connections without a request with a valid token yet
  std::size_t max_descriptors = 0;     // 0: the process's open-file limit
  std::size_t stream_queue = 4096;          // events a stream holds for a slow client
  std::size_t stream_queue_bytes = 8u << 20;  // and their bytes
  std::chrono::milliseconds idle_close{300000};  // a session unused this long is closed
  // At start, resume the store's suspended operations that wait for no
  // answer; on a store many processes share, also claim the runs other
  // processes left, every `claim_poll`.
  bool resume = true;
  std::chrono::milliseconds claim_poll{1000};
  // On a store many servers share (PostgreSQL), a request for a session
  // another live process holds is left in the session's inbox for that
  // process to apply; the client is answered with its outcome, or after
  // this long with 202 {queued: ITEM} (GET /v1/inbox/{ITEM} tells its fate
  // later). Every claim_poll, sessions whose items nobody live holds are
  // opened here and their items applied.
  std::chrono::milliseconds inbox_wait{5000};
};

class Server {
 public:
  // Listens and serves on threads of its own. Errors: no token, an address
  // that cannot be listened on.
  static Result<std::unique_ptr<Server>> start(std::unique_ptr<Store> store, std::shared_ptr<HarnessFactory> factory,
                                               ServerOptions options);
  ~Server();  // stop() and wait()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const;
  // Stops accepting, ends every stream with its final event and answers
  // the requests still waiting with 503. Any thread; more than once is
  // fine. Operations still running are left to their log: the next start
  // resumes them.
  void stop();
  // Until the server has stopped.
  void wait();

  // A request answered in process, as a client with a valid token would
  // have it answered over a socket (the token is not asked for): a reply
  // that waits for a run is waited for; a stream route answers with what
  // its stream has at once (its snapshot, or the events after the cursor)
  // and ends there.
  HttpResponse handle(const HttpRequest& request);

 private:
  struct Impl;
  struct Key {
    explicit Key() = default;
  };

 public:
  Server(Key, std::unique_ptr<Impl> impl);  // start()'s alone: Key is private

 private:
  std::unique_ptr<Impl> impl_;
};

// Reads a token file: one token per line, blank lines and # comments
// skipped. Created with one random token (mode 0600) when missing
// (`created`); refused when others than its owner may read it.
Result<std::vector<std::string>> load_tokens(const std::filesystem::path& file, bool& created);

// Raises the process's soft limit on open files to its hard limit (the
// kernel lets any process do that) and returns the soft limit in force
// after: a server runs out of descriptors long before it runs out of
// memory. The server never changes the limit itself.
std::size_t raise_descriptor_limit();

}  // namespace cairn::serve
