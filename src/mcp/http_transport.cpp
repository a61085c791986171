// Streamable HTTP (MCP 2025-03-26 to 2025-11-25): every message the client
// sends is a POST of its own. A request's POST runs on a thread of its own,
// so that a long tool call holds back nothing else; its answer, a JSON body
// or an event stream, is delivered from that thread. Notifications and
// responses go out one after another from one sender thread, and a request
// waits until everything handed over before it was sent: the server sees
// `notifications/initialized` before the requests that follow it.
//
// Everything the threads share lives in an HttpChannel held by shared_ptr, so a
// thread that is inside a callback when the client closes (or destroys) the
// transport finishes on memory that is still there.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <stop_token>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "cairn/llm/http.hpp"
#include "cairn/secrets.hpp"
#include "mcp/http_answer.hpp"
#include "mcp/messages.hpp"
#include "mcp/transport.hpp"

namespace cairn::mcp {
namespace {

using namespace std::chrono_literals;

// A long tool call may be silent for as long as the client lets it run;
// the client's own timeout ends it (with notifications/cancelled), and TCP
// keep-alive finds a peer that vanished.
constexpr auto kHttpStreamIdleTimeout = std::chrono::milliseconds(24h);
// A notification or response is accepted at once by a working server.
constexpr auto kHttpAcceptTimeout = std::chrono::milliseconds(30s);
// The DELETE that ends the session at close: a courtesy, never a wait.
constexpr auto kHttpDeleteTimeout = std::chrono::milliseconds(2s);
// A request's broken stream is resumed this many times in a row without a
// new event before its answer is given up for lost.
constexpr int kHttpMaxResumeFailures = 5;
// The longest a server's `retry:` may make a resumption wait.
constexpr auto kHttpMaxRetryDelay = std::chrono::milliseconds(30s);

// What a transfer's HttpResult says of why it ended, for an error message.
// curl's text names the host and port, never the headers.
std::string describe_http_end(const HttpResult& result) {
  if (result.ok()) return "the server closed it";
  return fmt::format("{} ({})", result.message, to_string(result.failure));
}

// A request POST in flight: the responses it waits for.
struct HttpPendingRequest {
  std::vector<Json> awaited;  // ids; guarded by HttpChannel::mu_
  bool abandoned = false;     // the client cancelled it; guarded by HttpChannel::mu_
  std::stop_source stop;      // ends its transfers: close, loss, cancel or completion
};

// A notification or response waiting for the sender thread.
struct HttpOutgoing {
  std::uint64_t seq = 0;
  std::string body;
  bool initialized = false;  // notifications/initialized: the session may open its GET stream after it
};

class HttpChannel : public std::enable_shared_from_this<HttpChannel> {
 public:
  explicit HttpChannel(HttpTransport config) : config_(std::move(config)) {
    for (const auto& header : config_.headers) {
      secrets_.add(header.second);
      // "Bearer TOKEN": a server that quotes the credential back quotes
      // the token alone. (Secrets skips words too short to be one.)
      std::string_view rest = header.second;
      while (!rest.empty()) {
        std::size_t end = rest.find(' ');
        secrets_.add(rest.substr(0, end));
        if (end == std::string_view::npos) break;
        rest.remove_prefix(end + 1);
      }
    }
  }

  Status open(Transport::OnMessage on_message, Transport::OnClosed on_closed);
  Status send(const Json& message);
  void set_protocol_version(const std::string& version) {
    std::lock_guard lock(mu_);
    protocol_version_ = version;
  }
  void close();

 private:
  enum class Report { message, closed };

  bool spawn(std::function<void()> work);
  void reap_locked();
  HttpHeaders headers(std::string_view accept, bool json_body, bool* with_session) const;
  bool report(Report kind, const std::function<void()>& call);
  void deliver(Json message) {
    report(Report::message, [&] {
      if (on_message_) on_message_(std::move(message));
    });
  }
  void lose_session();
  bool stopping() const {
    std::lock_guard lock(mu_);
    return closing_ || lost_;
  }
  bool sleep(std::stop_token stop, std::chrono::milliseconds delay);

  void run_request(const std::shared_ptr<HttpPendingRequest>& pending, const std::string& body, bool initialize,
                   std::uint64_t seq);
  void resume_request(const std::shared_ptr<HttpPendingRequest>& pending, std::optional<std::string> last_event_id,
                      std::optional<int> retry_ms, std::string why);
  HttpResult stream(const std::string& method, const std::string& body, const HttpHeaders& headers,
                    std::chrono::milliseconds idle_timeout, HttpAnswer& answer, std::stop_source& own,
                    const std::function<void(const HttpHeaders&)>& on_headers = {});
  void fail_request(const std::shared_ptr<HttpPendingRequest>& pending, const std::string& why);
  bool note_answer(const std::shared_ptr<HttpPendingRequest>& pending, const Json& message);
  void run_sender();
  void post_outgoing(const HttpOutgoing& item);
  void run_listener();
  void delete_session(const std::string& session_id);

  const HttpTransport config_;
  Secrets secrets_;
  HttpClient http_;
  Transport::OnMessage on_message_;
  Transport::OnClosed on_closed_;

  mutable std::mutex mu_;
  std::condition_variable_any changed_;  // any of the state below changed
  bool opened_ = false;
  bool closing_ = false;     // close() began: no callback, no new work
  bool lost_ = false;        // the server ended the session: nothing more is delivered
  bool delivering_ = false;  // a callback runs
  bool listening_ = false;   // the GET stream for the server's own messages was started
  std::string session_id_;
  std::string protocol_version_;
  std::uint64_t next_seq_ = 0;
  std::deque<HttpOutgoing> outbox_;
  std::optional<std::uint64_t> sending_;  // the seq the sender thread is posting
  std::list<std::shared_ptr<HttpPendingRequest>> pending_;
  std::list<std::thread> threads_;
  std::vector<std::thread::id> finished_;  // threads whose work is done, to join
  std::stop_source stop_;                  // close() and a lost session end every transfer
};

Status HttpChannel::open(Transport::OnMessage on_message, Transport::OnClosed on_closed) {
  std::string scheme =
      config_.url.substr(0, config_.url.find("://") == std::string::npos ? 0 : config_.url.find("://"));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
  std::string_view host = std::string_view(config_.url).substr(scheme.empty() ? 0 : scheme.size() + 3);
  // The URL is not quoted: its query may hold a key.
  if ((scheme != "http" && scheme != "https") || host.empty() || host.front() == '/') {
    return std::unexpected(
        Error{Errc::invalid_config, "an MCP server's URL must begin with http:// or https:// and a host"});
  }
  {
    std::lock_guard lock(mu_);
    if (opened_ || closing_)
      return std::unexpected(Error{Errc::invalid_argument, "the MCP HTTP transport was opened already"});
    opened_ = true;
    on_message_ = std::move(on_message);
    on_closed_ = std::move(on_closed);
  }
  try {
    if (spawn([this] { run_sender(); })) return {};
  } catch (const std::system_error& error) {
    return std::unexpected(
        Error{Errc::io_error, fmt::format("could not start the MCP HTTP sender thread: {}", error.what())});
  }
  return std::unexpected(Error{Errc::closed, "the MCP HTTP transport was closed"});
}

Status HttpChannel::send(const Json& message) {
  std::string body;
  try {
    body = message.dump();
  } catch (const Json::exception& error) {
    return std::unexpected(
        Error{Errc::invalid_argument, fmt::format("an MCP message that is not JSON: {}", error.what())});
  }
  std::vector<Json> ids;
  if (is_request(message)) ids.push_back(message["id"]);
  if (message.is_array()) {
    for (const Json& item : message) {
      if (is_request(item)) ids.push_back(item["id"]);
    }
  }

  std::unique_lock lock(mu_);
  if (!opened_) return std::unexpected(Error{Errc::invalid_argument, "the MCP HTTP transport is not open"});
  if (closing_) return std::unexpected(Error{Errc::closed, "the MCP HTTP transport was closed"});
  if (lost_) return std::unexpected(Error{Errc::closed, "the server ended the MCP session (HTTP 404)"});
  std::uint64_t seq = next_seq_++;

  if (ids.empty()) {
    // A cancelled request's stream is dropped at once: the client has
    // stopped waiting, and the server learns it from the notification.
    if (method_of(message) == "notifications/cancelled" && message.contains("params") &&
        message["params"].is_object() && message["params"].contains("requestId")) {
      const Json& cancelled = message["params"]["requestId"];
      for (const auto& pending : pending_) {
        if (std::find(pending->awaited.begin(), pending->awaited.end(), cancelled) != pending->awaited.end()) {
          pending->abandoned = true;
          pending->stop.request_stop();
        }
      }
    }
    bool initialized = method_of(message) == "notifications/initialized";
    outbox_.push_back(HttpOutgoing{seq, std::move(body), initialized});
    lock.unlock();
    changed_.notify_all();
    return {};
  }

  auto pending = std::make_shared<HttpPendingRequest>();
  pending->awaited = ids;
  bool initialize = method_of(message) == "initialize";
  pending_.push_back(pending);
  lock.unlock();
  try {
    if (spawn([this, pending, body = std::move(body), initialize, seq] {
          run_request(pending, body, initialize, seq);
          std::lock_guard done(mu_);
          pending_.remove(pending);
        })) {
      return {};
    }
  } catch (const std::system_error& error) {
    std::lock_guard undo(mu_);
    pending_.remove(pending);
    return std::unexpected(
        Error{Errc::io_error, fmt::format("could not start a thread for an MCP request: {}", error.what())});
  }
  std::lock_guard undo(mu_);
  pending_.remove(pending);
  return std::unexpected(Error{Errc::closed, "the MCP HTTP transport was closed"});
}

void HttpChannel::close() {
  std::list<std::thread> threads;
  std::string session_id;
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
    threads = std::move(threads_);
    threads_.clear();
    if (opened_ && !lost_) session_id = session_id_;
  }
  stop_.request_stop();
  changed_.notify_all();
  for (auto& thread : threads) {
    // A callback of ours that closes the transport runs on one of these
    // threads: it cannot wait for itself, and touches only this HttpChannel,
    // which it keeps alive, once the callback returns.
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();
    } else {
      thread.join();
    }
  }
  if (!session_id.empty()) delete_session(session_id);
}

// Starts `work` on a thread of the channel's own; false when it is closing.
// May throw std::system_error.
bool HttpChannel::spawn(std::function<void()> work) {
  std::lock_guard lock(mu_);
  if (closing_) return false;
  reap_locked();
  threads_.emplace_back([self = shared_from_this(), work = std::move(work)] {
    work();
    std::lock_guard done(self->mu_);
    self->finished_.push_back(std::this_thread::get_id());
  });
  return true;
}

// Joins the threads whose work has ended: each has only to return, so the
// join is short even under the lock.
void HttpChannel::reap_locked() {
  for (std::thread::id id : finished_) {
    auto thread =
        std::find_if(threads_.begin(), threads_.end(), [&](const std::thread& t) { return t.get_id() == id; });
    if (thread == threads_.end()) continue;
    thread->join();
    threads_.erase(thread);
  }
  finished_.clear();
}

HttpHeaders HttpChannel::headers(std::string_view accept, bool json_body, bool* with_session) const {
  HttpHeaders headers;
  if (json_body) headers.emplace_back("Content-Type", "application/json");
  headers.emplace_back("Accept", std::string(accept));
  {
    std::lock_guard lock(mu_);
    if (!session_id_.empty()) headers.emplace_back("Mcp-Session-Id", session_id_);
    if (!protocol_version_.empty()) headers.emplace_back("MCP-Protocol-Version", protocol_version_);
    if (with_session != nullptr) *with_session = !session_id_.empty();
  }
  for (const auto& header : config_.headers) {
    if (!is_mcp_protocol_header(header.first)) headers.push_back(header);
  }
  return headers;
}

// Runs a callback of the client's, one at a time (the client sees its
// messages as from one reader), and none once close() began or, for a
// message, once the session was lost. The lock is not held while the
// callback runs: it may send, and it may close the transport.
bool HttpChannel::report(Report kind, const std::function<void()>& call) {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return !delivering_ || closing_; });
  if (closing_ || (kind == Report::message && lost_)) return false;
  delivering_ = true;
  lock.unlock();
  struct Done {
    HttpChannel& channel;
    ~Done() {
      {
        std::lock_guard relock(channel.mu_);
        channel.delivering_ = false;
      }
      channel.changed_.notify_all();
    }
  } done{*this};
  call();
  return true;
}

// A 404 to a request that carried the session id: the server forgot the
// session, and only a new one (a new transport, initialized again) helps.
void HttpChannel::lose_session() {
  {
    std::lock_guard lock(mu_);
    if (closing_ || lost_) return;
    lost_ = true;
  }
  stop_.request_stop();
  changed_.notify_all();
  report(Report::closed, [&] {
    if (on_closed_) on_closed_("the server ended the MCP session (HTTP 404)");
  });
}

// Waits `delay`; false when `stop` (or close) ended the wait first.
bool HttpChannel::sleep(std::stop_token stop, std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, stop, delay, [&] { return closing_; });
  return !stop.stop_requested() && !closing_;
}

HttpResult HttpChannel::stream(const std::string& method, const std::string& body, const HttpHeaders& headers,
                               std::chrono::milliseconds idle_timeout, HttpAnswer& answer, std::stop_source& own,
                               const std::function<void(const HttpHeaders&)>& on_headers) {
  HttpRequest request;
  request.method = method;
  request.url = config_.url;
  request.headers = headers;
  request.body = body;
  request.idle_timeout = idle_timeout;
  // The transfer ends on the channel's stop, and on its own: a complete or
  // malformed answer stops it from inside on_body.
  std::stop_callback on_close(stop_.get_token(), [&own] { own.request_stop(); });
  return http_.stream(
      request,
      [&](int status, const HttpHeaders& response_headers) {
        answer.on_headers(status, response_headers);
        if (on_headers) on_headers(response_headers);
      },
      [&](std::string_view chunk) {
        if (!answer.on_body(chunk)) own.request_stop();
      },
      own.get_token());
}

// Notes a message of a request's stream; true once every response the
// request awaits has arrived.
bool HttpChannel::note_answer(const std::shared_ptr<HttpPendingRequest>& pending, const Json& message) {
  std::lock_guard lock(mu_);
  if (is_response(message)) std::erase(pending->awaited, message["id"]);
  return pending->awaited.empty();
}

// The answer to a request will not come: says so at once, as the response
// itself, so that the client fails the call instead of waiting out its timeout.
void HttpChannel::fail_request(const std::shared_ptr<HttpPendingRequest>& pending, const std::string& why) {
  std::vector<Json> ids;
  {
    std::lock_guard lock(mu_);
    if (pending->abandoned) return;
    ids = std::exchange(pending->awaited, {});
  }
  for (const Json& id : ids) deliver(lost_answer_response(id, secrets_.redact(why)));
}

void HttpChannel::run_request(const std::shared_ptr<HttpPendingRequest>& pending, const std::string& body,
                              bool initialize, std::uint64_t seq) {
  {
    // After every notification and response handed over before it.
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] {
      bool queued_before = !outbox_.empty() && outbox_.front().seq < seq;
      bool sending_before = sending_ && *sending_ < seq;
      return closing_ || lost_ || pending->abandoned || (!queued_before && !sending_before);
    });
    if (closing_ || lost_ || pending->abandoned) return;
  }

  bool with_session = false;
  HttpHeaders request_headers = headers("application/json, text/event-stream", true, &with_session);
  bool complete = false;
  HttpAnswer answer(
      [&](Json message) {
        complete = note_answer(pending, message);
        deliver(std::move(message));
        if (complete) pending->stop.request_stop();  // the stream has nothing more for us
      },
      secrets_);
  HttpResult result = stream("POST", body, request_headers, kHttpStreamIdleTimeout, answer, pending->stop,
                             [&](const HttpHeaders& response_headers) {
                               // Kept before the answer is delivered: the client's next
                               // message, sent as soon as it has the answer, carries it.
                               if (!initialize || !answer.success()) return;
                               auto id = find_header(response_headers, "mcp-session-id");
                               bool visible = id && !id->empty() && std::all_of(id->begin(), id->end(), [](char c) {
                                                return c >= 0x21 && c <= 0x7E;
                                              });
                               if (!visible) return;
                               std::lock_guard lock(mu_);
                               session_id_ = std::string(*id);
                             });
  // Done, or ended by close, a lost session or the client's cancel.
  if (complete || stopping()) return;
  {
    std::lock_guard lock(mu_);
    if (pending->abandoned) return;
  }

  if (answer.status() == 0) {
    fail_request(pending, fmt::format("the HTTP request for this call failed: {}", describe_http_end(result)));
    return;
  }
  if (answer.status() == 404 && with_session) {
    lose_session();
    return;
  }
  if (!answer.success()) {
    std::string excerpt = answer.excerpt();
    fail_request(pending, fmt::format("the MCP server answered HTTP {}{}{}", answer.status(),
                                      excerpt.empty() ? "" : ": ", excerpt));
    return;
  }
  if (!answer.malformed().empty()) {
    fail_request(pending, answer.malformed());
    return;
  }
  switch (answer.body()) {
    case HttpAnswer::Body::json:
      if (!result.ok()) {
        fail_request(pending,
                     fmt::format("the server's answer to this request broke off: {}", describe_http_end(result)));
        return;
      }
      answer.finish();
      if (!answer.malformed().empty()) {
        fail_request(pending, answer.malformed());
      } else if (!complete) {
        fail_request(pending, "the server's answer held no response to this request");
      }
      return;
    case HttpAnswer::Body::events:
      if (answer.last_event_id()) {
        resume_request(pending, answer.last_event_id(), answer.retry_ms(), describe_http_end(result));
      } else {
        fail_request(pending, fmt::format("the HTTP stream of this request ended before its answer: {}",
                                          describe_http_end(result)));
      }
      return;
    case HttpAnswer::Body::none:
      fail_request(pending,
                   fmt::format("the server accepted this request (HTTP {}) but sent no answer to it", answer.status()));
      return;
    case HttpAnswer::Body::other:
      fail_request(pending, fmt::format("the server answered with Content-Type '{}', neither JSON nor an event stream",
                                        secrets_.redact(answer.content_type())));
      return;
  }
}

// A request's event stream broke (or the server ended it to be polled)
// before the answer: GET with Last-Event-ID replays what came after.
void HttpChannel::resume_request(const std::shared_ptr<HttpPendingRequest>& pending,
                                 std::optional<std::string> last_event_id, std::optional<int> retry_ms,
                                 std::string why) {
  int failures = 0;
  for (;;) {
    if (failures >= kHttpMaxResumeFailures) {
      fail_request(pending, fmt::format("the HTTP stream of this request ended before its answer, and resuming it "
                                        "failed {} times: {}",
                                        failures, why));
      return;
    }
    auto delay = retry_ms ? std::min(std::chrono::milliseconds(*retry_ms), kHttpMaxRetryDelay)
                          : std::chrono::milliseconds(50) * (1 << failures);
    if (!sleep(pending->stop.get_token(), delay)) return;

    bool with_session = false;
    HttpHeaders request_headers = headers("text/event-stream", false, &with_session);
    request_headers.emplace_back("Last-Event-ID", *last_event_id);
    bool complete = false;
    HttpAnswer answer(
        [&](Json message) {
          complete = note_answer(pending, message);
          deliver(std::move(message));
          if (complete) pending->stop.request_stop();
        },
        secrets_);
    HttpResult result = stream("GET", {}, request_headers, kHttpStreamIdleTimeout, answer, pending->stop);
    if (complete || stopping()) return;
    {
      std::lock_guard lock(mu_);
      if (pending->abandoned) return;
    }

    if (answer.status() == 404 && with_session) {
      lose_session();
      return;
    }
    if (answer.status() == 405) {
      fail_request(pending, fmt::format("the HTTP stream of this request ended before its answer ({}), and the "
                                        "server does not resume streams (HTTP 405)",
                                        why));
      return;
    }
    if (!answer.malformed().empty()) {
      fail_request(pending, answer.malformed());
      return;
    }
    if (answer.status() == 0) {
      why = describe_http_end(result);
      ++failures;
      continue;
    }
    if (!answer.success() || answer.body() != HttpAnswer::Body::events) {
      std::string excerpt = answer.excerpt();
      why = answer.success() ? fmt::format("the resumed stream came as '{}'", secrets_.redact(answer.content_type()))
                             : fmt::format("HTTP {}{}{}", answer.status(), excerpt.empty() ? "" : ": ", excerpt);
      // A refusal (4xx) will not change by asking again; a server error may.
      bool retryable = answer.status() >= 500 || answer.status() == 408 || answer.status() == 429;
      if (!retryable) {
        fail_request(
            pending,
            fmt::format("the HTTP stream of this request ended before its answer, and resuming it failed: {}", why));
        return;
      }
      ++failures;
      continue;
    }
    failures = answer.delivered() > 0 ? 0 : failures + 1;
    if (answer.last_event_id()) last_event_id = answer.last_event_id();
    if (answer.retry_ms()) retry_ms = answer.retry_ms();
    why = describe_http_end(result);
  }
}

// Notifications and responses, one at a time, in the order they were handed over.
void HttpChannel::run_sender() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return closing_ || lost_ || !outbox_.empty(); });
    if (closing_ || lost_) return;
    HttpOutgoing item = std::move(outbox_.front());
    outbox_.pop_front();
    sending_ = item.seq;
    lock.unlock();
    post_outgoing(item);
    lock.lock();
    sending_.reset();
    changed_.notify_all();
  }
}

void HttpChannel::post_outgoing(const HttpOutgoing& item) {
  bool with_session = false;
  HttpHeaders request_headers = headers("application/json, text/event-stream", true, &with_session);
  std::stop_source own;
  // A server may stream messages in answer to a notification too; they are delivered like any.
  HttpAnswer answer([&](Json message) { deliver(std::move(message)); }, secrets_);
  HttpResult result = stream("POST", item.body, request_headers, kHttpAcceptTimeout, answer, own);
  if (stopping()) return;
  if (answer.status() == 404 && with_session) {
    lose_session();
    return;
  }
  if (answer.success() && answer.body() == HttpAnswer::Body::json && result.ok()) answer.finish();
  // A notification has no answer to carry an error: a refused one leaves the
  // server to refuse what depends on it, and that refusal reaches the client.
  if (item.initialized && answer.success()) {
    bool start = false;
    {
      std::lock_guard lock(mu_);
      start = !listening_;
      listening_ = true;
    }
    try {
      if (start) spawn([this] { run_listener(); });
    } catch (const std::system_error&) {
      // Without the GET stream the session still works: the server's own
      // messages then come only on the streams of requests.
    }
  }
}

// The GET stream on which the server sends messages of its own (a changed
// tool list, its requests), kept open, and opened again when it ends, for
// as long as the session lasts. A server that offers none answers 405.
void HttpChannel::run_listener() {
  std::optional<std::string> last_event_id;
  std::optional<int> retry_ms;
  int failures = 0;
  std::stop_source own;
  for (;;) {
    bool with_session = false;
    HttpHeaders request_headers = headers("text/event-stream", false, &with_session);
    if (last_event_id) request_headers.emplace_back("Last-Event-ID", *last_event_id);
    HttpAnswer answer([&](Json message) { deliver(std::move(message)); }, secrets_);
    HttpResult result = stream("GET", {}, request_headers, kHttpStreamIdleTimeout, answer, own);
    if (stopping()) return;
    if (answer.status() == 404 && with_session) {
      lose_session();
      return;
    }
    // 405: no such stream here. Any other refusal will not change either.
    if (answer.status() >= 400 && answer.status() < 500 && answer.status() != 408 && answer.status() != 429) return;
    bool fruitful = answer.success() && answer.body() == HttpAnswer::Body::events && answer.delivered() > 0;
    failures = fruitful ? 0 : failures + 1;
    if (answer.last_event_id()) last_event_id = answer.last_event_id();
    if (answer.retry_ms()) retry_ms = answer.retry_ms();
    own = std::stop_source();
    auto backoff = std::chrono::milliseconds(250) * (1 << std::min(failures, 7));
    auto delay = retry_ms && failures == 0 ? std::min(std::chrono::milliseconds(*retry_ms), kHttpMaxRetryDelay)
                                           : std::min(backoff, kHttpMaxRetryDelay);
    if (!sleep(stop_.get_token(), delay)) return;
  }
}

void HttpChannel::delete_session(const std::string& session_id) {
  HttpRequest request;
  request.method = "DELETE";
  request.url = config_.url;
  request.headers.emplace_back("Mcp-Session-Id", session_id);
  {
    std::lock_guard lock(mu_);
    if (!protocol_version_.empty()) request.headers.emplace_back("MCP-Protocol-Version", protocol_version_);
  }
  for (const auto& header : config_.headers) {
    if (!is_mcp_protocol_header(header.first)) request.headers.push_back(header);
  }
  request.connect_timeout = kHttpDeleteTimeout;
  request.idle_timeout = kHttpDeleteTimeout;
  // Its outcome changes nothing: a server that keeps the session lets it expire.
  (void)http_.stream(
      request, [](int, const HttpHeaders&) {}, [](std::string_view) {});
}

class HttpTransportImpl final : public Transport {
 public:
  explicit HttpTransportImpl(const HttpTransport& config) : channel_(std::make_shared<HttpChannel>(config)) {}
  ~HttpTransportImpl() override { channel_->close(); }

  Status open(OnMessage on_message, OnClosed on_closed) override {
    return channel_->open(std::move(on_message), std::move(on_closed));
  }
  Status send(const Json& message) override { return channel_->send(message); }
  void set_protocol_version(const std::string& version) override { channel_->set_protocol_version(version); }
  void close() override { channel_->close(); }

 private:
  std::shared_ptr<HttpChannel> channel_;
};

}  // namespace

std::unique_ptr<Transport> make_http_transport(const HttpTransport& config) {
  return std::make_unique<HttpTransportImpl>(config);
}

}  // namespace cairn::mcp
