#include "api.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cairn/trace.hpp"
#include "inbox_relay.hpp"
#include "names.hpp"
#include "routes.hpp"
#include "web_assets.hpp"

namespace cairn::serve {

namespace {

// Equal in time that depends on neither string's content.
bool same_secret(std::string_view given, std::string_view token) {
  unsigned char diff = given.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ token[i % std::max<std::size_t>(token.size(), 1)]);
  return diff == 0;
}

}  // namespace

Api::Api(SessionPool& pool, std::vector<std::string> tokens, ApiLimits limits)
    : pool_(pool), tokens_(std::move(tokens)), router_(api_routes()),
      state_(std::make_unique<ApiState>(ApiState{pool_, metrics_, limits, *activity_, work_})) {
  // What GET /v1/sessions/{id} says of a session's activity is read from
  // its whole log: read where it was opened, not on a worker.
  pool_.set_on_open([activity = activity_](const std::string& id, const SessionHost& host) {
    (void)activity->facts(id, *host.session);
  });
  if (Inbox* inbox = pool_.inbox()) {
    relay_ = std::make_unique<InboxRelay>(*inbox, work_, limits.inbox_wait);
    applier_ = std::make_shared<InboxApplier>(*inbox, pool_, work_,
                                              [this](const HttpRequest& request, const std::shared_ptr<SessionHost>& host) {
                                                return routed(request, router_.match(request.method, request.path),
                                                              Opened(host));
                                              });
    pool_.set_on_hosted([applier = applier_](const std::shared_ptr<SessionHost>& host) { applier->opened(host); });
  }
}

Api::~Api() {
  if (applier_) applier_->stop();
}

void Api::sweep_inbox() {
  if (applier_) applier_->sweep();
}

bool Api::authorized(const HttpRequest& request, HttpResponse& refusal) const {
  auto header = request.header("authorization");
  constexpr std::string_view kScheme = "Bearer ";
  if (!header || header->size() <= kScheme.size() || !std::equal(kScheme.begin(), kScheme.end(), header->begin(),
                                                                  [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
    refusal = error_response(http_error(HttpErrc::unauthorized, "this route needs an Authorization: Bearer token"));
    refusal.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"cairn\"");
    return false;
  }
  const std::string_view given = std::string_view(*header).substr(kScheme.size());
  bool match = false;
  for (const auto& token : tokens_) match |= same_secret(given, token);
  if (!match) {
    refusal = error_response(http_error(HttpErrc::forbidden, "the bearer token is not one this server accepts"));
    return false;
  }
  return true;
}

void Api::count(std::string_view route_name, int status) {
  std::lock_guard lock(metrics_.mu);
  ++metrics_.requests[{std::string(route_name), status}];
}

void Api::set_scheduler(Scheduler* scheduler) { work_->attach(scheduler); }

std::optional<HttpResponse> Api::answer_from_head(const HttpRequest& head) {
  return answer_early(head, router_.match(head.method, head.path));
}

std::optional<HttpResponse> Api::answer_early(const HttpRequest& head, const RouteMatch& match) {
  // A route anyone may call holds no data and reads no body.
  if (match.path_known() && match.access == Access::anyone) return routed(head, match).response;
  // The viewer's own files hold no data either: the token is asked for by
  // the page, and every request it makes carries it.
  if (auto page = web_response(head.method, head.path)) {
    count("/ui", page->status);
    return std::move(*page);
  }
  HttpResponse refusal;
  if (!authorized(head, refusal)) {
    count("auth", refusal.status);
    return refusal;
  }
  return std::nullopt;
}

Reply Api::handle(const HttpRequest& request) {
  RouteMatch match = router_.match(request.method, request.path);
  if (auto early = answer_early(request, match)) return Reply{std::move(*early)};
  if (auto id = session_named(request, match); id && work_->attached() && !pool_.find_open(*id)) {
    return Reply{.deferred = route_when_open(request, std::move(match), *id)};
  }
  return routed(request, match);
}

std::optional<std::string> Api::session_named(const HttpRequest& request, const RouteMatch& match) const {
  if (!match.route) return std::nullopt;
  if (match.route->session != SessionUse::none && match.params.id) {
    auto id = path_name(*match.params.id, "session");
    return id ? std::optional<std::string>(std::move(*id)) : std::nullopt;
  }
  if (match.route->locate) return match.route->locate(request, match.params);
  return std::nullopt;
}

std::shared_ptr<DeferredReply> Api::route_when_open(const HttpRequest& request, RouteMatch match, const std::string& id) {
  auto deferred = std::make_shared<DeferredReply>();
  // The opener's thread only hands the request on: to a worker, or back
  // with 503 once the server stops (then this Api may be gone).
  pool_.open_async(id, [this, work = work_, deferred, request, match = std::move(match)](
                           const Result<std::shared_ptr<SessionHost>>& opened) {
    const bool posted = work->post([this, deferred, request, match, opened = Opened(opened)] {
      if (deferred->abandoned()) return;
      Reply reply = routed(request, match, opened);
      if (reply.deferred) {
        deferred->forward_from(reply.deferred);
      } else {
        deferred->fulfil(std::move(reply));
      }
    });
    if (!posted) deferred->fulfil(Reply{error_response(http_error(HttpErrc::unavailable, "the server is stopping"))});
  });
  return deferred;
}

Reply Api::routed(const HttpRequest& request, const RouteMatch& match, const Opened& opened) {
  Reply reply;
  // W3C Trace Context: the operations this request starts join its
  // caller's trace (run_detached carries the context to their threads).
  std::optional<trace::ContextScope> caller;
  if (auto header = request.header("traceparent")) {
    if (auto parent = trace::parse_traceparent(*header)) caller.emplace(std::move(*parent));
  }
  try {
    reply = dispatch(request, match, opened);
  } catch (const std::exception& error) {
    // A bug, not the client's fault: said without the request's content.
    reply = Reply{error_response(500, "internal_error", fmt::format("the server failed: {}", error.what()))};
  }
  count(match.name, reply.stream || reply.deferred ? 200 : reply.response.status);
  return reply;
}

Reply Api::dispatch(const HttpRequest& request, const RouteMatch& match, const Opened& opened) {
  if (!match.path_known()) return error_reply(http_error(HttpErrc::no_route, fmt::format("no route {}", request.path)));
  if (!match.route) {
    Reply refused = error_reply(http_error(HttpErrc::method_not_allowed, fmt::format("{} is not allowed on {}", request.method, request.path)));
    refused.response.headers.emplace_back("Allow", allow_header(match.allowed));
    return refused;
  }
  const Route& route = *match.route;
  RouteCall call{.request = request, .api = *state_};
  for (auto [raw, out, what] : {std::tuple{&match.params.id, &call.session_id, "session"},
                                std::tuple{&match.params.ref, &call.ref_name, "ref"},
                                std::tuple{&match.params.input, &call.input_id, "input"}}) {
    if (!*raw) continue;
    auto name = path_name(**raw, what);
    if (!name) return error_reply(name.error());
    *out = std::move(*name);
  }
  call.rest = match.params.rest.value_or("");
  if (route.session == SessionUse::none) {
    // A request a route locates its session for (A2A), held elsewhere.
    if (route.locate && opened && !*opened && opened->error().is(Errc::locked) && relay_ && relayed(request)) {
      if (auto id = route.locate(request, match.params)) return relay_->relay(request, *id, opened->error());
    }
    return route.handler(call);
  }

  auto host = opened ? *opened : pool_.get(call.session_id);
  if (host) {
    call.host = std::move(*host);
    if (route.session == SessionUse::open_or_followed) call.view.emplace(call.host);
  } else if (route.session == SessionUse::open_or_followed && host.error().is(Errc::locked)) {
    // A session another process writes (here or on another machine sharing
    // the store) cannot be opened, but it can be read and watched.
    call.view.emplace(pool_, call.session_id, host.error());
  } else if (host.error().is(Errc::locked) && relay_ && relayed(request)) {
    // Held by another process sharing the store: it answers, through the
    // session's inbox.
    return relay_->relay(request, call.session_id, host.error());
  } else {
    return error_reply(host.error());
  }
  if (call.host && match.params.ref) {
    auto found = call.host->harness->ref(call.ref_name);
    if (!found) return error_reply(Error{Errc::unknown_ref, fmt::format("session {} has no ref '{}'", call.session_id, call.ref_name)});
    call.ref = std::move(*found);
  }
  return route.handler(call);
}

}  // namespace cairn::serve
