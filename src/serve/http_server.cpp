#include "http_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
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

#include "connection_table.hpp"

namespace cairn::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::experimental::as_tuple(asio::use_awaitable);

namespace {

// What a refused client may still send after its answer, read and dropped
// so that closing does not reset the connection before it has read the
// answer (a reset can throw away what the client has not read yet).
constexpr std::size_t kLingerBytes = 256u << 10;
constexpr std::chrono::milliseconds kLingerTime{1000};

// The accept loop's pause after it failed for want of descriptors.
constexpr std::chrono::milliseconds kFirstBackoff{5};
constexpr std::chrono::milliseconds kLongestBackoff{500};

// How long the stop waits for streams and deferred replies to write their
// last bytes.
constexpr std::chrono::seconds kStopGrace{2};

// A comment, every heartbeat of a quiet stream.
constexpr std::string_view kHeartbeat = ": heartbeat\n\n";

// The deferred replies waiting now: answered (or forgotten) when the server
// stops, so that nothing fulfils one into an io_context that is gone.
class DeferredRegistry {
 public:
  void add(const std::shared_ptr<DeferredReply>& deferred) {
    std::lock_guard lock(mu_);
    if (waiting_.size() >= 2 * swept_at_ + 64) {
      std::erase_if(waiting_, [](const std::weak_ptr<DeferredReply>& held) { return held.expired(); });
      swept_at_ = waiting_.size();
    }
    waiting_.push_back(deferred);
  }
  std::vector<std::shared_ptr<DeferredReply>> take() {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<DeferredReply>> out;
    for (auto& held : waiting_) {
      if (auto deferred = held.lock()) out.push_back(std::move(deferred));
    }
    waiting_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<DeferredReply>> waiting_;
  std::size_t swept_at_ = 0;
};

}  // namespace

struct HttpServer::Impl {
  Api& api;
  HttpOptions options;
  asio::io_context io;
  asio::thread_pool workers;
  // The accept loop runs on this strand, and the stop closes the acceptor
  // there: an acceptor is not to be touched from two threads at once.
  asio::strand<asio::io_context::executor_type> accept_strand = asio::make_strand(io);
  tcp::acceptor acceptor{accept_strand};
  ConnectionTable connections;
  std::atomic<bool> stopping{false};
  std::mutex streams_mu;
  std::list<std::function<void()>> stream_wakeups;  // of the open streams, to end them on stop
  std::atomic<int> open_streams{0};
  DeferredRegistry deferred;
  std::atomic<bool> shedding{false};  // a call of on_descriptors_short is under way

  Impl(Api& a, HttpOptions o)
      : api(a),
        options(std::move(o)),
        workers(static_cast<std::size_t>(options.worker_threads)),
        connections(options.max_connections, options.max_pending) {}

  static void parse_query(std::string_view query, HttpRequest& out) {
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

  // The request's head (its body comes later, if at all).
  static HttpRequest convert_head(const http::request<http::string_body>& request) {
    HttpRequest out;
    out.method = std::string(request.method_string());
    std::string_view target = request.target();
    const auto question = target.find('?');
    out.path = std::string(target.substr(0, question));
    if (question != std::string_view::npos) parse_query(target.substr(question + 1), out);
    for (const auto& field : request) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      out.headers[name] = std::string(field.value());
    }
    return out;
  }

  // `head_only`: the answer to HEAD: its length said, its body not sent.
  static http::response<http::string_body> to_beast(HttpResponse response, unsigned version, bool keep_alive,
                                                    bool head_only = false) {
    http::response<http::string_body> out{static_cast<http::status>(response.status), version};
    out.set(http::field::server, "cairn");
    out.set(http::field::content_type, response.content_type);
    out.set(http::field::cache_control, "no-store");
    for (const auto& [name, value] : response.headers) out.set(name, value);
    out.body() = std::move(response.body);
    out.keep_alive(keep_alive);
    out.prepare_payload();
    if (head_only) out.body().clear();
    return out;
  }

  asio::awaitable<bool> write_response(beast::tcp_stream& stream, HttpResponse response, unsigned version,
                                       bool keep_alive, bool head_only = false) {
    auto out = to_beast(std::move(response), version, keep_alive, head_only);
    stream.expires_after(options.write_timeout);
    auto [ec, n] = co_await http::async_write(stream, out, kTuple);
    co_return !ec;
  }

  asio::awaitable<void> write_error(beast::tcp_stream& stream, int status, std::string_view code, std::string message) {
    co_await write_response(stream, error_response(status, code, message), 11, false);
  }

  // After a refusal: no more answers on this connection; what the client
  // still sends is read and dropped, for a moment and up to a limit, so that
  // the close does not reset the connection under the answer. Meanwhile it
  // is one the server may drop first (a flood of refused clients must not
  // hold the connections the others need).
  asio::awaitable<void> linger(beast::tcp_stream& stream, ConnectionTable::Id id) {
    connections.set_state(id, ConnectionTable::State::pending);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    std::array<char, 4096> sink;
    std::size_t drained = 0;
    stream.expires_after(kLingerTime);
    while (drained < kLingerBytes) {
      auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), kTuple);
      if (ec) break;
      drained += n;
    }
  }

  // Sets `gone` (and calls `on_gone`) once the client hangs up, or sends
  // anything, which a client waiting for a stream or a deferred answer never
  // does. Readiness alone does not say so: an edge the reactor saw for the
  // request's own bytes, already read, can complete a later wait — then the
  // socket holds nothing, and the wait is taken again. `over` is set once
  // the wait is no longer wanted: the socket may be gone then, even when
  // this wait completed without error (its completion was queued before
  // the connection closed the socket), so nothing touches it after. Both
  // run on the connection's strand.
  asio::awaitable<void> watch_peer(std::shared_ptr<beast::tcp_stream> held, std::shared_ptr<std::atomic<bool>> gone,
                                   std::shared_ptr<std::atomic<bool>> over, std::function<void()> on_gone) {
    tcp::socket& socket = held->socket();
    for (;;) {
      auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, kTuple);
      if (over->load() || ec == asio::error::operation_aborted) co_return;
      if (!ec) {
        char byte = 0;
        const ssize_t peeked = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      }
      gone->store(true);
      on_gone();
      co_return;
    }
  }

  // A member, not a lambda: g++ 12 frees a coroutine lambda's captures twice.
  asio::awaitable<Reply> handle(HttpRequest request) { co_return api.handle(request); }
  asio::awaitable<LiveStream::Batch> take(std::shared_ptr<LiveStream> live, bool quiet) { co_return live->take(quiet); }

  // Hands the reply, once it is there, to the coroutine waiting for it, on
  // that coroutine's executor (the fulfilling thread may be any).
  struct ReplyWhenReady {
    std::shared_ptr<DeferredReply> pending;
    asio::any_io_executor executor;
    template <class Handler>
    void operator()(Handler handler) {
      pending->on_ready([handler = std::move(handler), executor = executor](Reply ready) mutable {
        asio::post(executor, [handler = std::move(handler), ready = std::move(ready)]() mutable {
          std::move(handler)(std::move(ready));
        });
      });
    }
  };

  // Waits, holding no thread, for a deferred reply; a client that hangs up
  // meanwhile abandons it (whoever waits for the run stops).
  asio::awaitable<Reply> await_deferred(std::shared_ptr<beast::tcp_stream> held, std::shared_ptr<DeferredReply> pending) {
    deferred.add(pending);
    if (stopping.load()) pending->fulfil(Reply{error_response(503, "closed", "the server is stopping")});
    auto executor = co_await asio::this_coro::executor;
    auto gone = std::make_shared<std::atomic<bool>>(false);
    auto over = std::make_shared<std::atomic<bool>>(false);
    asio::co_spawn(executor, watch_peer(held, gone, over, [pending] { pending->abandon(); }), asio::detached);
    // A named initiation: g++ 12 destroys a lambda's captures twice when
    // the lambda is a temporary in a co_await expression.
    ReplyWhenReady when_ready{pending, executor};
    Reply reply = co_await asio::async_initiate<decltype(asio::use_awaitable), void(Reply)>(when_ready, asio::use_awaitable);
    over->store(true);
    beast::error_code ignored;
    held->socket().cancel(ignored);  // the watch's wait: nothing else is pending here now
    if (reply.deferred) reply = Reply{error_response(500, "internal_error", "a deferred reply deferred again")};
    co_return reply;
  }

  // One piece of a stream's body: a chunk, or (HTTP/1.0) the bytes as they are.
  asio::awaitable<bool> send_piece(beast::tcp_stream& stream, std::vector<asio::const_buffer> buffers, bool chunked) {
    stream.expires_after(options.write_timeout);
    if (chunked) {
      // Named, not a temporary of the co_await (see ReplyWhenReady).
      const auto chunk = http::make_chunk(buffers);
      auto [ec, n] = co_await asio::async_write(stream, chunk, kTuple);
      co_return !ec;
    }
    auto [ec, n] = co_await asio::async_write(stream, buffers, kTuple);
    co_return !ec;
  }

  asio::awaitable<void> serve_stream(std::shared_ptr<beast::tcp_stream> held, unsigned version, std::shared_ptr<LiveStream> live) {
    beast::tcp_stream& stream = *held;
    // Chunked (HTTP/1.1): a client tells the stream's end, a last chunk,
    // from a cut. An HTTP/1.0 client gets the body until the close.
    const bool chunked = version >= 11;
    http::response<http::empty_body> head{http::status::ok, version};
    head.set(http::field::server, "cairn");
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-store");
    head.set("X-Accel-Buffering", "no");
    head.keep_alive(false);  // the body runs until the stream ends
    if (chunked) head.chunked(true);
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
    // stream lets go of its session (which may then close when idle).
    auto peer_gone = std::make_shared<std::atomic<bool>>(false);
    auto stream_over = std::make_shared<std::atomic<bool>>(false);
    asio::co_spawn(executor, watch_peer(held, peer_gone, stream_over, wakeup), asio::detached);
    bool quiet = false;
    bool ended_cleanly = false;
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
        const bool quiet_turn = std::exchange(quiet, false);
        if (live->slow_take()) {
          batch = co_await asio::co_spawn(workers, take(live, quiet_turn), asio::use_awaitable);
        } else {
          batch = live->take(quiet_turn);
        }
        if (peer_gone->load()) break;
      }
      const bool done = batch.done;
      std::vector<asio::const_buffer> buffers;
      for (const std::string_view bytes : batch.views()) buffers.emplace_back(bytes.data(), bytes.size());
      const bool wrote = !buffers.empty();
      if (wrote && !co_await send_piece(stream, std::move(buffers), chunked)) {
        ended = "write_failed";
        break;
      }
      if (done) {
        if (ended != "server_stopped") ended = "ended_by_server";  // an overflow, a deletion, a log that could not be read
        ended_cleanly = true;
        break;
      }
      // Something was written: take again before sleeping (what came
      // meanwhile woke nobody, since the stream had frames queued).
      if (wrote || woken->load()) continue;
      timer->expires_after(options.heartbeat);
      auto [ec] = co_await timer->async_wait(kTuple);
      if (!ec && !woken->load()) {
        std::vector<asio::const_buffer> heartbeat{asio::buffer(kHeartbeat)};
        if (!co_await send_piece(stream, std::move(heartbeat), chunked)) {
          ended = "write_failed";
          break;
        }
        quiet = true;  // take again: records no event announced go out at each heartbeat
        continue;
      }
    }
    stream_over->store(true);
    if (ended_cleanly && chunked) {
      stream.expires_after(options.write_timeout);
      const auto last_chunk = http::make_chunk_last();
      co_await asio::async_write(stream, last_chunk, kTuple);
    }
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

  asio::awaitable<void> serve_connection(std::shared_ptr<beast::tcp_stream> held, ConnectionTable::Id id) {
    beast::tcp_stream& stream = *held;
    beast::flat_buffer buffer;
    for (;;) {
      if (stopping.load()) break;
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(options.max_header));
      parser.body_limit(options.max_body);
      stream.expires_after(options.request_timeout);
      auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kTuple);
      if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
          ec == asio::error::connection_reset || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) {
        break;
      }
      if (ec == http::error::header_limit) {
        co_await write_error(stream, 431, "header_too_large", fmt::format("the header is larger than {} bytes", options.max_header));
        co_await linger(stream, id);
        break;
      }
      if (ec == http::error::body_limit) {  // a Content-Length over the limit, told in the head
        co_await write_error(stream, 413, "body_too_large", fmt::format("the body is larger than {} bytes", options.max_body));
        co_await linger(stream, id);
        break;
      }
      if (ec) {
        co_await write_error(stream, 400, "bad_request", fmt::format("malformed HTTP request: {}", ec.message()));
        co_await linger(stream, id);
        break;
      }
      connections.set_state(id, ConnectionTable::State::busy);
      const unsigned version = parser.get().version();
      const bool keep_alive = parser.get().keep_alive();
      HttpRequest request = convert_head(parser.get());

      // Answered from the head alone: no body is read for them.
      if (auto early = api.answer_from_head(request)) {
        const bool refused = early->status == 401 || early->status == 403;
        const bool body_unread = !parser.is_done();
        const bool again = keep_alive && !refused && !body_unread && !stopping.load();
        const bool head_only = request.method == "HEAD";
        if (!co_await write_response(stream, std::move(*early), version, again, head_only)) break;
        if (refused || body_unread) co_await linger(stream, id);
        if (!again) break;
        connections.set_state(id, ConnectionTable::State::pending);
        continue;
      }
      if (!parser.is_done()) {
        stream.expires_after(options.request_timeout);
        auto [body_ec, body_n] = co_await http::async_read(stream, buffer, parser, kTuple);
        if (body_ec == http::error::body_limit) {
          co_await write_error(stream, 413, "body_too_large", fmt::format("the body is larger than {} bytes", options.max_body));
          co_await linger(stream, id);
          break;
        }
        if (body_ec) break;  // cut off, or too slow: nothing to answer
      }
      request.body = std::move(parser.get().body());
      // The handler may wait on a disk or a lock: on a worker, not on the
      // threads that move every connection's bytes.
      Reply reply = co_await asio::co_spawn(workers, handle(std::move(request)), asio::use_awaitable);
      if (reply.deferred) {
        auto pending = std::move(reply.deferred);
        reply = co_await await_deferred(held, pending);
        if (pending->abandoned()) break;  // the client is gone
      }
      if (reply.stream) {
        co_await serve_stream(held, version, std::move(reply.stream));
        break;
      }
      const bool again = keep_alive && !stopping.load();
      if (!co_await write_response(stream, std::move(reply.response), version, again) || !again) break;
      connections.set_state(id, ConnectionTable::State::idle);
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.socket().close(ignored);
    connections.remove(id);
  }

  // Descriptors ran out: the sessions are asked to give some back (once at
  // a time, on a worker). The connections the server has keep being served.
  void descriptors_short() {
    if (!options.on_descriptors_short || shedding.exchange(true)) return;
    asio::post(workers, [this] {
      options.on_descriptors_short();
      shedding.store(false);
    });
  }

  asio::awaitable<void> accept_loop() {
    asio::steady_timer backoff_timer(accept_strand);
    std::chrono::milliseconds backoff = kFirstBackoff;
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kTuple);
      if (ec) {
        if (stopping.load() || !acceptor.is_open()) co_return;
        if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec == asio::error::no_memory ||
            ec == asio::error::no_buffer_space) {
          // The connection stays queued in the kernel, and the listening
          // socket stays readable: accepting again at once would spin.
          descriptors_short();
          backoff_timer.expires_after(backoff);
          co_await backoff_timer.async_wait(kTuple);
          backoff = std::min(backoff * 2, kLongestBackoff);
        }
        continue;  // a connection that went away before it was taken, and the like
      }
      backoff = kFirstBackoff;
      // Frames are small and must go at once: no Nagle (with the client's
      // delayed ACK it held each one back for tens of milliseconds).
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      // Each connection on a strand of its own: its coroutine and the
      // wakeups of its stream never run at once.
      auto strand = asio::make_strand(io);
      auto held = std::make_shared<beast::tcp_stream>(std::move(socket));
      const auto close = [strand, weak = std::weak_ptr<beast::tcp_stream>(held)] {
        asio::post(strand, [weak] {
          if (auto stream = weak.lock()) {
            beast::error_code ignored;
            stream->socket().close(ignored);  // its pending read ends with operation_aborted
          }
        });
      };
      // Bytes in the socket's buffer, asked of the kernel. The descriptor is
      // the connection's while the table holds it (closing it removes it
      // from the table); a number reused in that moment at worst chooses
      // another connection to drop.
      const auto has_input = [fd = held->socket().native_handle()] {
        int waiting = 0;
        return ::ioctl(fd, FIONREAD, &waiting) == 0 && waiting > 0;
      };
      const ConnectionTable::Id id = connections.admit(close, has_input);
      if (id == 0) {
        held->socket().close(ignored);  // every connection is busy: this one is refused
        continue;
      }
      asio::co_spawn(strand, serve_connection(std::move(held), id), asio::detached);
    }
  }

  // Once asked to stop, the streams and deferred replies get a moment to
  // write their last bytes, then the loop ends.
  asio::awaitable<void> finish_stop() {
    asio::steady_timer tick(io);
    const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
    while ((open_streams.load() > 0 || connections.size() > 0) && std::chrono::steady_clock::now() < deadline) {
      tick.expires_after(std::chrono::milliseconds(10));
      co_await tick.async_wait(kTuple);
    }
    io.stop();
  }

  void begin_stop() {
    if (stopping.exchange(true)) return;
    asio::post(accept_strand, [this] {
      beast::error_code ignored;
      acceptor.close(ignored);
    });
    for (auto& pending : deferred.take()) pending->fulfil(Reply{error_response(503, "closed", "the server is stopping")});
    connections.shed_all();
    {
      std::lock_guard lock(streams_mu);
      for (auto& wakeup : stream_wakeups) wakeup();
    }
    asio::co_spawn(io, finish_stop(), asio::detached);
  }
};

HttpServer::HttpServer(Api& api, HttpOptions options) {
  if (options.max_descriptors == 0) options.max_descriptors = descriptor_limit();
  if (options.max_descriptors > 0) {
    options.max_connections = std::min(options.max_connections, std::max<std::size_t>(options.max_descriptors / 2, 1));
  }
  options.max_pending = std::min(options.max_pending, options.max_connections);
  impl_ = std::make_unique<Impl>(api, std::move(options));
  api.set_scheduler(this);
}

HttpServer::~HttpServer() {
  impl_->api.set_scheduler(nullptr);
  impl_->io.stop();
  impl_->workers.stop();
  impl_->workers.join();
  // No thread runs the io_context now: whatever fulfils a deferred reply
  // from here on (a run that ends later) must not reach it.
  for (auto& pending : impl_->deferred.take()) pending->forget_ready();
}

Result<std::uint16_t> HttpServer::listen() {
  beast::error_code ec;
  auto address = asio::ip::make_address(impl_->options.host, ec);
  if (ec) return fail(Errc::invalid_argument, fmt::format("cannot listen on '{}': not an IP address", impl_->options.host));
  tcp::endpoint endpoint(address, impl_->options.port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) {
    // A connection is handed to accept only once its first bytes have come
    // (or after the request timeout): a flood of connections that send
    // nothing stays in the kernel and takes no place in the table, and a
    // client that connects during one cannot be dropped as idle in the
    // moment between its connect and its request.
    const int seconds = static_cast<int>(std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::seconds>(impl_->options.request_timeout).count()));
    if (::setsockopt(acceptor.native_handle(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds) != 0) {
      ec = beast::error_code(errno, asio::error::get_system_category());
    }
  }
  if (ec) {
    return fail(Errc::io_error, fmt::format("cannot listen on {}:{}: {}", impl_->options.host, impl_->options.port, ec.message()));
  }
  return acceptor.local_endpoint().port();
}

void HttpServer::run() {
  Impl& impl = *impl_;
  asio::co_spawn(impl.accept_strand, impl.accept_loop(), asio::detached);
  std::vector<std::thread> threads;
  for (int i = 1; i < impl.options.io_threads; ++i) threads.emplace_back([&impl] { impl.io.run(); });
  impl.io.run();
  for (auto& thread : threads) thread.join();
}

void HttpServer::stop() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin_stop(); });
}

DescriptorBudget HttpServer::descriptor_budget() const {
  DescriptorBudget budget;
  budget.total = impl_->options.max_descriptors;
  budget.for_connections = impl_->options.max_connections;
  budget.connections_open = [impl = impl_.get()] { return impl->connections.size(); };
  return budget;
}

void HttpServer::post(std::function<void()> work) { asio::post(impl_->workers, std::move(work)); }

void HttpServer::post_after(std::chrono::milliseconds delay, std::function<void()> work) {
  auto timer = std::make_shared<asio::steady_timer>(impl_->io, delay);
  timer->async_wait([timer, work = std::move(work), impl = impl_.get()](const beast::error_code& ec) mutable {
    if (!ec) asio::post(impl->workers, std::move(work));
  });
}

}  // namespace cairn::serve
