// The two halves of a fleet's hand-over of a request (cairn/store/inbox.hpp):
//
// - InboxRelay, on the server a client asked: a request for a session that
//   another live process holds is left in the session's inbox, and answered
//   with the outcome the holder records — the status and body the holder
//   would have given its own client — or, when the holder does not decide
//   within the bound, 202 {queued: ITEM} (a request that changes nothing is
//   withdrawn instead and answered 409 locked, said as unreachable).
// - InboxApplier, on the holder: the items of each session it has open are
//   applied in order, through the same route code as a local request, under
//   an InboxMark so that the records they append mark them applied in the
//   same transaction; then decided. A session opened here (a takeover after
//   a crash, a worker's claim, an open after an idle close) has its items
//   applied before any request waiting for the open is answered.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>

#include "cairn/store/inbox.hpp"
#include "http_types.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

// Whether a request for a session held elsewhere is handed over through
// the inbox: what acts on or reads an open session, but not what answers
// with a stream (a stream is followed on any server; an A2A streaming send
// goes to the holder).
bool relayed(const HttpRequest& request);

// The request as an inbox item keeps it: no credentials. Refused when its
// body is not UTF-8 (every relayed route reads JSON).
Result<Json> inbox_request(const HttpRequest& request);
// And back, on the holder.
Result<HttpRequest> request_of(const Json& stored);

// An item's outcome as an HTTP answer (decided, failed), and its state as
// GET /v1/inbox/{item} tells it.
HttpResponse outcome_response(const InboxItem& item);
Json item_json(const InboxItem& item);

class InboxRelay {
 public:
  InboxRelay(Inbox& inbox, std::shared_ptr<WorkQueue> work, std::chrono::milliseconds wait)
      : inbox_(inbox), work_(std::move(work)), wait_(wait) {}
  // Leaves `request` in the inbox of session `id` (held by another process,
  // as `locked` says) and answers once the holder decides it or the bound
  // passes. No thread waits meanwhile.
  Reply relay(const HttpRequest& request, const std::string& id, const Error& locked);

 private:
  Inbox& inbox_;
  std::shared_ptr<WorkQueue> work_;
  std::chrono::milliseconds wait_;
};

class InboxApplier : public std::enable_shared_from_this<InboxApplier> {
 public:
  // How an item's request is answered here: the API's own routing, with
  // the session already open.
  using Route = std::function<Reply(const HttpRequest&, const std::shared_ptr<SessionHost>&)>;
  InboxApplier(Inbox& inbox, SessionPool& pool, std::shared_ptr<WorkQueue> work, Route route)
      : inbox_(inbox), pool_(pool), work_(std::move(work)), route_(std::move(route)) {}

  // A session was opened here: watch its inbox, and apply what waits in it
  // now, on this thread (the pool answers nobody waiting for the open
  // meanwhile).
  void opened(const std::shared_ptr<SessionHost>& host);
  // Every so often: sessions whose items nobody live holds are opened here
  // (their holder died, or let go with items left); decided items a day
  // old are forgotten.
  void sweep();
  // No item is begun from here on; waits for the applications under way
  // to be routed (their answers may come later). The route's owner calls
  // it before it goes.
  void stop();

 private:
  // Applies the open items of session `id`, in order, if it is open here.
  void drain(const std::string& id, std::shared_ptr<SessionHost> host);
  void apply(const InboxItem& item, const std::shared_ptr<SessionHost>& host);
  void decide(std::int64_t item, std::int64_t generation, const Reply& reply);
  void done_with(std::int64_t item);

  Inbox& inbox_;
  SessionPool& pool_;
  std::shared_ptr<WorkQueue> work_;
  Route route_;
  std::shared_mutex stop_mu_;  // held shared by each application while it is routed
  bool stopped_ = false;       // under stop_mu_
  std::mutex mu_;
  std::set<std::int64_t> in_flight_;  // begun here, not yet decided
  std::set<std::string> draining_;    // sessions a thread drains now
  std::set<std::string> again_;       // and that got more meanwhile
  std::chrono::steady_clock::time_point next_forget_{};
};

}  // namespace cairn::serve
