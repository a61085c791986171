// Server (cairn/serve/server.hpp): one store's session pool, the API over
// it and the HTTP layer, with the sweeper that closes idle sessions and, on
// a store many processes share, claims the runs others left.
#include "cairn/serve/server.hpp"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "api.hpp"
#include "cairn/tools/sandbox.hpp"
#include "http_server.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

std::filesystem::path HarnessFactory::default_cwd() const {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  return ec ? std::filesystem::path("/") : cwd;
}

struct Server::Impl {
  ServerOptions options;
  SessionPool pool;
  Api api;
  HttpServer http;
  std::uint16_t port = 0;

  std::mutex mu;
  std::mutex join_mu;  // serializes joining `serving`
  std::condition_variable ended;
  bool stopped = false;  // under mu: run() returned
  std::atomic<bool> done{false};
  std::atomic<bool> stop_asked{false};
  std::thread serving;
  std::thread sweeper;

  Impl(std::unique_ptr<Store> store, std::shared_ptr<HarnessFactory> factory, ServerOptions o)
      : options(std::move(o)),
        pool(std::move(store), std::move(factory), options.tokens, options.idle_close),
        api(pool, options.tokens,
            ApiLimits{.max_stream_queue = options.stream_queue,
                      .max_stream_bytes = options.stream_queue_bytes,
                      .inbox_wait = options.inbox_wait}),
        http(api, with_shedding(options)) {}

  HttpOptions with_shedding(const ServerOptions& server_options) {
    HttpOptions http_options{server_options};
    // Descriptors ran out for a connection: idle sessions give some back.
    http_options.on_descriptors_short = [this] { pool.shed_idle(); };
    return http_options;
  }

  void sweep() {
    bool claims = options.resume;
    auto next_claim = std::chrono::steady_clock::now();
    std::int64_t streams_ended = 0;
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      pool.close_idle();
      // Streams ended: what they held goes back to the system, not only to
      // the heap (a thousand watchers that left should leave no trace).
      if (const std::int64_t ended_now = api.metrics().streams_total.load() - api.metrics().streams_open.load();
          ended_now != streams_ended) {
        streams_ended = ended_now;
        ::malloc_trim(0);
      }
      // On a store many processes share the server is a worker too.
      if (std::chrono::steady_clock::now() >= next_claim) {
        if (claims) claims = pool.claim_suspended(ClaimOptions{});
        // Requests left for sessions whose holder is gone are applied here.
        api.sweep_inbox();
        next_claim = std::chrono::steady_clock::now() + options.claim_poll;
      }
    }
  }

  void serve() {
    http.run();
    pool.set_descriptor_budget({});  // it counts the server's connections, which are gone
    done = true;
    sweeper.join();
    {
      std::lock_guard lock(mu);
      stopped = true;
    }
    ended.notify_all();
  }
};

Server::Server(Key, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Server>> Server::start(std::unique_ptr<Store> store, std::shared_ptr<HarnessFactory> factory,
                                              ServerOptions options) {
  if (!store) return fail(Errc::invalid_argument, "a server needs a store");
  if (!factory) return fail(Errc::invalid_argument, "a server needs a harness factory");
  if (options.tokens.empty() || std::any_of(options.tokens.begin(), options.tokens.end(),
                                            [](const std::string& token) { return token.empty(); })) {
    return fail(Errc::invalid_argument, "a server needs at least one bearer token, and no empty one");
  }
  auto impl = std::make_unique<Impl>(std::move(store), std::move(factory), std::move(options));
  impl->pool.set_descriptor_budget(impl->http.descriptor_budget());
  auto port = impl->http.listen();
  if (!port) return std::unexpected(port.error());
  impl->port = *port;
  // A tool given the network must still not reach this server's API.
  close_port_to_sandbox(impl->port);
  if (impl->options.resume) impl->pool.resume_suspended();
  impl->pool.set_resume_on_open(impl->options.resume && impl->pool.inbox() != nullptr);
  impl->sweeper = std::thread([raw = impl.get()] { raw->sweep(); });
  impl->serving = std::thread([raw = impl.get()] { raw->serve(); });
  return std::make_unique<Server>(Key{}, std::move(impl));
}

Server::~Server() {
  stop();
  wait();
}

std::uint16_t Server::port() const { return impl_->port; }

void Server::stop() {
  if (!impl_->stop_asked.exchange(true)) impl_->http.stop();
}

void Server::wait() {
  {
    std::unique_lock lock(impl_->mu);
    impl_->ended.wait(lock, [this] { return impl_->stopped; });
  }
  // Joined here too, so that a program that ends right after (as `cairn
  // serve` does, with _exit) leaves no thread unjoined.
  std::lock_guard join(impl_->join_mu);
  if (impl_->serving.joinable()) impl_->serving.join();
}

HttpResponse Server::handle(const HttpRequest& request) {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped) return error_response(503, "unavailable", "the server has stopped");
  }
  HttpRequest trusted = request;
  trusted.headers["authorization"] = "Bearer " + impl_->options.tokens.front();
  Reply reply = impl_->api.handle(trusted);
  while (reply.deferred) {
    std::promise<Reply> answered;
    std::future<Reply> answer = answered.get_future();
    reply.deferred->on_ready([&answered](Reply ready) { answered.set_value(std::move(ready)); });
    reply = answer.get();
  }
  if (!reply.stream) return reply.response;
  // What the stream has now, and no more: it ends here.
  reply.stream->set_wakeup([] {});
  const LiveStream::Batch batch = reply.stream->take(false);
  HttpResponse response{.status = 200, .content_type = "text/event-stream"};
  for (std::string_view bytes : batch.views()) response.body += bytes;
  return response;
}

}  // namespace cairn::serve
