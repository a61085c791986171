// cairn serve's HTTP API: a request matched to its route (route_table.cpp),
// its path's session opened or followed as the route asks, then answered by
// the route's function. Each answers JSON, errors as {"error": {"code",
// "message"}} with the harness's codes. The routes are listed in the README
// ("cairn serve").
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "http_types.hpp"
#include "router.hpp"
#include "session_activity.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

struct ApiLimits {
  std::size_t max_json_depth = 64;
  std::size_t max_stream_queue = 4096;        // events a stream may hold for a slow client
  std::size_t max_stream_bytes = 8u << 20;    // and their bytes
  std::size_t max_page = 10000;         // records per GET …/records
  // A request relayed through a session's inbox (a store many servers
  // share): how long its sender waits for the holder's outcome before it
  // answers 202 {queued}.
  std::chrono::milliseconds inbox_wait{5000};
};

// Counters for GET /metrics (Prometheus text).
struct Metrics {
  std::mutex mu;
  std::map<std::pair<std::string, int>, std::int64_t> requests;  // (route, status) → count
  std::map<std::string, std::int64_t> runs;                      // outcome → count
  std::atomic<std::int64_t> streams_open{0};
  std::atomic<std::int64_t> streams_total{0};
  std::map<std::string, std::int64_t> streams_ended;  // why (under mu) → count
  std::atomic<std::int64_t> input_tokens{0}, output_tokens{0};
  std::atomic<std::int64_t> cost_microdollars{0};
};

struct ApiState;
class InboxRelay;
class InboxApplier;

class Api {
 public:
  Api(SessionPool& pool, std::vector<std::string> tokens, ApiLimits limits);
  ~Api();
  // Any thread; blocks no longer than an operation's acceptance (a reply
  // that waits for more is deferred).
  Reply handle(const HttpRequest& request);
  // What is answered from a request's head alone, before its body is read:
  // the routes anyone may call (/healthz), the viewer's files, and the
  // refusal of a request without a valid token. Cheap: the HTTP layer calls
  // it on its own threads.
  std::optional<HttpResponse> answer_from_head(const HttpRequest& head);
  Metrics& metrics() { return metrics_; }
  // Where deferred replies wait and retry; set by the HTTP layer for its
  // lifetime (null: none, and replies that would wait are refused).
  void set_scheduler(Scheduler* scheduler);
  // On a store with an inbox, every so often: the items nobody live holds
  // are applied here (InboxApplier::sweep).
  void sweep_inbox();

 private:
  using Opened = std::optional<Result<std::shared_ptr<SessionHost>>>;
  std::optional<HttpResponse> answer_early(const HttpRequest& head, const RouteMatch& match);
  // Answers and counts on the calling thread; `opened`: the pool's open of
  // the session the path names, when it was made beforehand.
  Reply routed(const HttpRequest& request, const RouteMatch& match, const Opened& opened = std::nullopt);
  // The session the request acts on, to open before it is routed: its
  // path's {id}, or what its route's locator finds.
  std::optional<std::string> session_named(const HttpRequest& request, const RouteMatch& match) const;
  // A request for a session this server has not open: the pool opens it on
  // its own threads (a long log takes a while), and the request is routed
  // on a worker once it is; no worker waits for the open.
  std::shared_ptr<DeferredReply> route_when_open(const HttpRequest& request, RouteMatch match, const std::string& id);
  // The route's parameters checked, its session and ref found, then its function.
  Reply dispatch(const HttpRequest& request, const RouteMatch& match, const Opened& opened);
  bool authorized(const HttpRequest& request, HttpResponse& refusal) const;
  void count(std::string_view route_name, int status);

  SessionPool& pool_;
  std::vector<std::string> tokens_;
  Metrics metrics_;
  Router router_;
  // Shared with the pool's opener threads, which warm it (they may outlive this).
  std::shared_ptr<SessionActivity> activity_ = std::make_shared<SessionActivity>();
  std::shared_ptr<WorkQueue> work_ = std::make_shared<WorkQueue>();
  std::unique_ptr<ApiState> state_;
  // On a store with an inbox: requests for sessions held elsewhere are
  // relayed, and the items of the sessions open here applied.
  std::unique_ptr<InboxRelay> relay_;
  // Shared with the pool's hook, which outlives the Api: stopped by the
  // destructor, after which it routes nothing here.
  std::shared_ptr<InboxApplier> applier_;
};

}  // namespace cairn::serve
