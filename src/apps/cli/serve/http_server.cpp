#include "http_server.hpp"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <list>
#include <mutex>
#include <thread>

#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

namespace cairn::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::experimental::as_tuple(asio::use_awaitable);

struct HttpServer::Impl {
  Api& api;
  ServerOptions options;
  asio::io_context io;
  asio::thread_pool workers;
  // The accept loop runs on this strand, and the stop closes the acceptor
  // there: an acceptor is not to be touched from two threads at once.
  asio::strand<asio::io_context::executor_type> accept_strand = asio::make_strand(io);
  tcp::acceptor acceptor{accept_strand};
  asio::signal_set signals{io, SIGTERM, SIGINT};
  std::atomic<bool> stopping{false};
  std::mutex streams_mu;
  std::list<std::function<void()>> stream_wakeups;  // of the open streams, to end them on stop
  std::atomic<int> open_streams{0};

  Impl(Api& a, ServerOptions o) : api(a), options(std::move(o)), workers(static_cast<std::size_t>(options.worker_threads)) {}

  HttpRequest convert(const http::request<http::string_body>& request) {
    HttpRequest out;
    out.method = std::string(request.method_string());
    std::string_view target = request.target();
    const auto question = target.find('?');
    out.path = std::string(target.substr(0, question));
    if (question != std::string_view::npos) {
      std::string_view query = target.substr(question + 1);
      while (!query.empty()) {
        const auto amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        const auto eq = pair.find('=');
        std::string key(pair.substr(0, eq));
        std::string value(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        std::replace(value.begin(), value.end(), '+', ' ');
        bool ok_key = false, ok_value = false;
        key = percent_decode(key, ok_key);
        value = percent_decode(value, ok_value);
        if (ok_key && ok_value && !key.empty()) out.query[key] = value;
      }
    }
    for (const auto& field : request) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      out.headers[name] = std::string(field.value());
    }
    out.body = request.body();
    return out;
  }

  static http::response<http::string_body> to_beast(const HttpResponse& response, unsigned version, bool keep_alive) {
    http::response<http::string_body> out{static_cast<http::status>(response.status), version};
    out.set(http::field::server, "cairn");
    out.set(http::field::content_type, response.content_type);
    out.set(http::field::cache_control, "no-store");
    for (const auto& [name, value] : response.headers) out.set(name, value);
    out.body() = response.body;
    out.keep_alive(keep_alive);
    out.prepare_payload();
    return out;
  }

  asio::awaitable<void> write_error(beast::tcp_stream& stream, int status, std::string_view code, std::string message) {
    auto response = to_beast(error_response(status, code, message), 11, false);
    stream.expires_after(options.write_timeout);
    co_await http::async_write(stream, response, kTuple);
  }

  // Sets `gone` (and wakes the stream) once a stream's client hangs up, or
  // sends anything, which a stream's client never does. Readiness alone does
  // not say so: an edge the reactor saw for the request's own bytes, already
  // read, can complete a later wait — then the socket holds nothing, and the
  // wait is taken again. `over` is set once the stream has ended: the
  // socket may be gone then, even when this wait completed without error
  // (its completion was queued before the connection closed the socket), so
  // nothing touches it after. Both run on the connection's strand.
  asio::awaitable<void> watch_peer(tcp::socket& socket, std::shared_ptr<std::atomic<bool>> gone,
                                   std::shared_ptr<std::atomic<bool>> over, std::function<void()> wakeup) {
    for (;;) {
      auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, kTuple);
      if (over->load() || ec == asio::error::operation_aborted) co_return;
      if (!ec) {
        char byte = 0;
        const ssize_t peeked = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      }
      gone->store(true);
      wakeup();
      co_return;
    }
  }

  asio::awaitable<void> serve_stream(beast::tcp_stream& stream, unsigned version, std::shared_ptr<LiveStream> live) {
    http::response<http::empty_body> head{http::status::ok, version};
    head.set(http::field::server, "cairn");
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-store");
    head.set("X-Accel-Buffering", "no");
    head.keep_alive(false);  // the body runs until the stream ends
    http::response_serializer<http::empty_body> serializer{head};
    stream.expires_after(options.write_timeout);
    if (auto [ec, n] = co_await http::async_write_header(stream, serializer, kTuple); ec) co_return;

    auto executor = co_await asio::this_coro::executor;
    auto timer = std::make_shared<asio::steady_timer>(executor);
    auto woken = std::make_shared<std::atomic<bool>>(false);
    auto wakeup = [timer, woken, executor] {
      if (woken->exchange(true)) return;  // one wakeup pending is enough
      asio::post(executor, [timer] { timer->cancel(); });
    };
    std::list<std::function<void()>>::iterator registered;
    {
      std::lock_guard lock(streams_mu);
      registered = stream_wakeups.insert(stream_wakeups.end(), wakeup);
    }
    ++open_streams;
    api.metrics().streams_open++;
    api.metrics().streams_total++;
    live->set_wakeup(wakeup);
    // A client that hangs up is noticed now, not at the next heartbeat: the
    // stream lets go of its session (which may then close when idle). A
    // client sends nothing on a stream, so anything readable ends it too.
    auto peer_gone = std::make_shared<std::atomic<bool>>(false);
    auto stream_over = std::make_shared<std::atomic<bool>>(false);
    asio::co_spawn(executor, watch_peer(stream.socket(), peer_gone, stream_over, wakeup), asio::detached);
    bool quiet = false;
    std::string_view ended = "client_closed";  // why the stream ended, for /metrics
    for (;;) {
      if (peer_gone->load()) break;
      woken->store(false);
      LiveStream::Batch batch;
      if (stopping.load()) {
        batch.text() = live->final_frame();
        batch.done = true;
        ended = "server_stopped";
      } else {
        batch = live->take(std::exchange(quiet, false));
      }
      const bool done = batch.done;
      std::vector<asio::const_buffer> buffers;
      for (const std::string_view bytes : batch.views()) buffers.emplace_back(bytes.data(), bytes.size());
      const bool wrote = !buffers.empty();
      if (wrote) {
        stream.expires_after(options.write_timeout);
        auto [ec, n] = co_await asio::async_write(stream, buffers, kTuple);
        if (ec) {
          ended = "write_failed";
          break;
        }
      }
      if (done) {
        if (ended != "server_stopped") ended = "ended_by_server";  // an overflow, or a log that could not be read
        break;
      }
      // Something was written: take again before sleeping (what came
      // meanwhile woke nobody, since the stream had frames queued).
      if (wrote || woken->load()) continue;
      timer->expires_after(options.heartbeat);
      auto [ec] = co_await timer->async_wait(kTuple);
      if (!ec && !woken->load()) {
        static constexpr std::string_view kHeartbeat = ": heartbeat\n\n";
        stream.expires_after(options.write_timeout);
        auto [write_ec, n] = co_await asio::async_write(stream, asio::buffer(kHeartbeat), kTuple);
        if (write_ec) {
          ended = "write_failed";
          break;
        }
        quiet = true;  // take again: records no event announced go out at each heartbeat
        continue;
      }
    }
    stream_over->store(true);
    live->set_wakeup(nullptr);
    {
      std::lock_guard lock(streams_mu);
      stream_wakeups.erase(registered);
    }
    --open_streams;
    api.metrics().streams_open--;
    {
      std::lock_guard lock(api.metrics().mu);
      ++api.metrics().streams_ended[std::string(ended)];
    }
  }

  // A member, not a lambda: g++ 12 frees a coroutine lambda's captures twice.
  asio::awaitable<Reply> handle(HttpRequest request) { co_return api.handle(request); }

  asio::awaitable<void> serve_connection(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      if (stopping.load()) break;
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(options.max_header));
      parser.body_limit(options.max_body);
      stream.expires_after(options.request_timeout);
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
      if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
          ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
        break;
      }
      if (ec == http::error::body_limit) {
        co_await write_error(stream, 413, "body_too_large", fmt::format("the body is larger than {} bytes", options.max_body));
        break;
      }
      if (ec == http::error::header_limit) {
        co_await write_error(stream, 431, "header_too_large", fmt::format("the header is larger than {} bytes", options.max_header));
        break;
      }
      if (ec) {
        co_await write_error(stream, 400, "bad_request", fmt::format("malformed HTTP request: {}", ec.message()));
        break;
      }
      const auto& request = parser.get();
      const bool keep_alive = request.keep_alive();
      const unsigned version = request.version();
      HttpRequest converted = convert(request);
      // The handler may wait on a disk or a lock: on a worker, not on the
      // threads that move every connection's bytes.
      Reply reply = co_await asio::co_spawn(workers, handle(std::move(converted)), asio::use_awaitable);
      if (reply.stream) {
        co_await serve_stream(stream, version, std::move(reply.stream));
        break;
      }
      auto response = to_beast(reply.response, version, keep_alive && !stopping.load());
      stream.expires_after(options.write_timeout);
      auto [write_ec, written] = co_await http::async_write(stream, response, kTuple);
      if (write_ec || !response.keep_alive()) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kTuple);
      if (ec) {
        if (stopping.load() || !acceptor.is_open()) co_return;
        continue;  // EMFILE and the like: the next accept may succeed
      }
      // Frames are small and must go at once: no Nagle (with the client's
      // delayed ACK it held each one back for tens of milliseconds).
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      // Each connection on a strand of its own: its coroutine and the
      // wakeups of its stream never run at once.
      auto strand = asio::make_strand(io);
      asio::co_spawn(strand, serve_connection(std::move(socket)), asio::detached);
    }
  }

  void begin_stop() {
    if (stopping.exchange(true)) return;
    asio::post(accept_strand, [this] {
      beast::error_code ignored;
      acceptor.close(ignored);
    });
    beast::error_code ignored;
    signals.cancel(ignored);
    std::lock_guard lock(streams_mu);
    for (auto& wakeup : stream_wakeups) wakeup();
  }
};

HttpServer::HttpServer(Api& api, ServerOptions options) : impl_(std::make_unique<Impl>(api, std::move(options))) {}

HttpServer::~HttpServer() {
  impl_->io.stop();
  impl_->workers.stop();
  impl_->workers.join();
}

Result<std::uint16_t> HttpServer::listen() {
  beast::error_code ec;
  auto address = asio::ip::make_address(impl_->options.host, ec);
  if (ec) return fail(Errc::invalid_argument, fmt::format("--listen: '{}' is not an IP address", impl_->options.host));
  tcp::endpoint endpoint(address, impl_->options.port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return fail(Errc::io_error, fmt::format("cannot listen on {}:{}: {}", impl_->options.host, impl_->options.port, ec.message()));
  }
  return acceptor.local_endpoint().port();
}

void HttpServer::run() {
  Impl& impl = *impl_;
  impl.signals.async_wait([&impl](const beast::error_code& ec, int) {
    if (!ec) impl.begin_stop();
  });
  asio::co_spawn(impl.accept_strand, impl.accept_loop(), asio::detached);
  std::vector<std::thread> threads;
  for (int i = 1; i < impl.options.io_threads; ++i) threads.emplace_back([&impl] { impl.io.run(); });
  // This thread watches for the stop: once asked, the streams get a moment
  // to write their final frames, then the loop ends.
  std::thread watcher([&impl] {
    while (!impl.stopping.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (impl.open_streams.load() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    impl.io.stop();
  });
  impl.io.run();
  for (auto& thread : threads) thread.join();
  watcher.join();
}

void HttpServer::stop() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin_stop(); });
}

}  // namespace cairn::serve
