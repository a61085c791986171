// What the server's HTTP layer hands the API and gets back: plain values, no
// Beast, so that everything but http_server.cpp compiles without it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/serve/http.hpp"
#include "cairn/store/inbox.hpp"

namespace cairn::serve {

// The server's own error codes, beside the harness's Errc: what a request
// can get wrong before any harness sees it.
enum class HttpErrc {
  no_route,                // 404: no route has that path
  method_not_allowed,      // 405: its route does not take that method
  unauthorized,            // 401: no bearer token
  forbidden,               // 403: a token the server does not accept
  body_too_large,          // 413
  unsupported_media_type,  // 415: a body that is not application/json
  unavailable,             // 503: the server is stopping, or short of descriptors
};
std::string_view to_string(HttpErrc code);
Error http_error(HttpErrc code, std::string message);

// The HTTP status of each code, one switch each (a new code is a compile
// error until it has one); a code neither knows (one a log recorded, say) is 500.
int http_status(Errc code);
int http_status(HttpErrc code);
int http_status(const Error& error);

// {"error": {"code", "message"}} with the HTTP status the code maps to.
HttpResponse error_response(int status, std::string_view code, std::string_view message);
HttpResponse error_response(const Error& error);
HttpResponse json_response(int status, const Json& body);

// A Server-Sent Events stream the API opens instead of a response. The HTTP
// layer writes what take() returns, waits for the wakeup (or a heartbeat's
// time), and takes again until a batch says done. take() runs on one thread
// at a time; wakeup may be called from any thread, often.
class LiveStream {
 public:
  virtual ~LiveStream() = default;
  // Whole SSE frames to write, in order: text of the batch's own, and
  // frames shared with other streams, which are written from where they
  // are rather than copied (a thousand watchers of one event share its bytes).
  class Batch {
   public:
    // The batch's own text after what it holds so far, to append to.
    std::string& text() {
      if (segments_.empty() || segments_.back().holder) segments_.emplace_back();
      return segments_.back().own;
    }
    // `bytes`, which `holder` keeps alive, after what it holds so far.
    void share(std::shared_ptr<const void> holder, std::string_view bytes) {
      if (!bytes.empty()) segments_.push_back(Segment{std::move(holder), bytes, {}});
    }
    // The bytes in order; valid while the batch lives and is not changed.
    std::vector<std::string_view> views() const {
      std::vector<std::string_view> out;
      for (const auto& segment : segments_) {
        const std::string_view bytes = segment.holder ? segment.shared : std::string_view(segment.own);
        if (!bytes.empty()) out.push_back(bytes);
      }
      return out;
    }
    bool done = false;  // end the stream once these are written

   private:
    struct Segment {
      std::shared_ptr<const void> holder;  // set: `shared`; else `own`
      std::string_view shared;
      std::string own;
    };
    std::vector<Segment> segments_;
  };
  // Called once, before the first take(): how the stream says it has more.
  virtual void set_wakeup(std::function<void()> wakeup) = 0;
  // `quiet`: nothing woke the stream for a heartbeat's time; it may look
  // for what no event announced.
  virtual Batch take(bool quiet) = 0;
  // The server stops: the last frame to write.
  virtual std::string final_frame() = 0;
  // Whether take() may wait on a store or spend long on the CPU (a store's
  // read, records parsed): then it runs on a worker, not on the threads
  // that move every connection's bytes. A take that only hands over frames
  // already made runs where it is.
  virtual bool slow_take() const { return true; }
};

class DeferredReply;

// What a route answers: a response, a stream, or a reply that comes later.
struct Reply {
  HttpResponse response;
  std::shared_ptr<LiveStream> stream;      // set: the response is ignored
  std::shared_ptr<DeferredReply> deferred;  // set: the response and stream come from it
};

// The answer to a request that waits for a run (a blocking A2A send, a
// prompt waiting for a run to end): no thread is held while it waits. The
// route hands it back at once; whoever learns the answer (an event
// listener, an operation's thread, a timer) fulfils it, once, from any
// thread.
class DeferredReply : public std::enable_shared_from_this<DeferredReply> {
 public:
  using Ready = std::move_only_function<void(Reply)>;
  // The first call wins; later ones are dropped. The reply must not be
  // deferred itself.
  void fulfil(Reply reply);
  // The HTTP layer's: `ready` runs once, on the thread that fulfils (at
  // once, here, when that has happened already).
  void on_ready(Ready ready);
  // The client went away, or the server stops: fulfils with nothing, and
  // tells whoever waits to stop waiting.
  void abandon();
  bool abandoned() const;
  // The server is gone: nothing it registered may run any more.
  void forget_ready();
  // This reply is `inner`'s (a route deferred in its turn): fulfilled with
  // what fulfils it, and abandoning this one abandons it.
  void forward_from(const std::shared_ptr<DeferredReply>& inner);

 private:
  mutable std::mutex mu_;
  std::optional<Reply> reply_;
  Ready ready_;
  std::shared_ptr<DeferredReply> inner_;  // forward_from's
  bool done_ = false;
  bool abandoned_ = false;
};

// Where the API runs what comes later: bounded work on the server's
// workers, now or after a delay. Implemented by the HTTP layer.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void post(std::function<void()> work) = 0;
  virtual void post_after(std::chrono::milliseconds delay, std::function<void()> work) = 0;
};

// The scheduler as the API's waiters hold it: an event listener may fire
// long after a request (a run that ends hours later), when the HTTP layer
// may be gone. Work posted then is dropped; detaching waits for posts
// under way.
class WorkQueue {
 public:
  // Work posted while a thread applies an inbox item applies it too (a
  // retry of its request): it carries the item's mark.
  static std::function<void()> carry_mark(std::function<void()> work) {
    auto mark = InboxMark::current();
    if (!mark) return work;
    return [mark = std::move(mark), work = std::move(work)] {
      InboxMark::Scope scope(mark);
      work();
    };
  }

  void attach(Scheduler* scheduler) {
    std::lock_guard lock(mu_);
    scheduler_ = scheduler;
  }
  bool attached() {
    std::lock_guard lock(mu_);
    return scheduler_ != nullptr;
  }
  // False when nothing runs work any more.
  bool post(std::function<void()> work) {
    std::lock_guard lock(mu_);
    if (!scheduler_) return false;
    scheduler_->post(carry_mark(std::move(work)));
    return true;
  }
  bool post_after(std::chrono::milliseconds delay, std::function<void()> work) {
    std::lock_guard lock(mu_);
    if (!scheduler_) return false;
    scheduler_->post_after(delay, carry_mark(std::move(work)));
    return true;
  }

 private:
  std::mutex mu_;
  Scheduler* scheduler_ = nullptr;
};

// %XX decoded; ok is false on a bad escape.
std::string percent_decode(std::string_view text, bool& ok);

// One SSE frame: optional id, one data line (the JSON has no newline).
std::string sse_frame(const Json& data, std::optional<std::int64_t> id = std::nullopt);

}  // namespace cairn::serve
