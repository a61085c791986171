#include "inbox_relay.hpp"

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "cairn/utf8.hpp"
#include "store/lease_holder.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::serve {

namespace {

// How often a waiting sender looks at its item whatever it was told, and a
// holder at its sessions' inboxes (a lost notification costs this much).
constexpr std::chrono::milliseconds kInboxPoll{500};
// Decided items are kept this long for GET /v1/inbox/{item}.
constexpr std::chrono::hours kKeepDecided{24};

// The headers that shape a request's meaning (never its credentials).
constexpr std::array<std::string_view, 4> kKeptHeaders{"content-type", "traceparent", "last-event-id", "a2a-version"};

bool valid_utf8(std::string_view text) { return !invalid_utf8_at(text).has_value(); }

// The A2A methods whose answer is a stream.
bool streams(const HttpRequest& request) {
  if (request.path.ends_with("/message:stream") || request.path.ends_with(":subscribe")) return true;
  if (request.path != "/a2a/jsonrpc") return false;
  const Json envelope = Json::parse(request.body, nullptr, false);
  if (!envelope.is_object()) return false;
  const Json method = envelope.value("method", Json());
  return method == "SendStreamingMessage" || method == "SubscribeToTask";
}

}  // namespace

bool relayed(const HttpRequest& request) { return !streams(request); }

Result<Json> inbox_request(const HttpRequest& request) {
  if (!valid_utf8(request.body)) return fail(Errc::invalid_argument, "the body is not UTF-8");
  Json headers = Json::object();
  for (const auto name : kKeptHeaders) {
    if (auto value = request.header(std::string(name)); value && valid_utf8(*value)) headers[std::string(name)] = *value;
  }
  Json query = Json::object();
  for (const auto& [key, value] : request.query) {
    if (!valid_utf8(key) || !valid_utf8(value)) return fail(Errc::invalid_argument, "the query is not UTF-8");
    query[key] = value;
  }
  if (!valid_utf8(request.path)) return fail(Errc::invalid_argument, "the path is not UTF-8");
  return Json{{"method", request.method}, {"path", request.path}, {"query", std::move(query)},
              {"headers", std::move(headers)}, {"body", request.body}};
}

Result<HttpRequest> request_of(const Json& stored) {
  const auto text = [&](const char* key) -> const Json& {
    static const Json none;
    auto it = stored.find(key);
    return it == stored.end() ? none : *it;
  };
  if (!stored.is_object() || !text("method").is_string() || !text("path").is_string() || !text("body").is_string() ||
      !text("query").is_object() || !text("headers").is_object()) {
    return fail(Errc::invalid_argument, "the stored request is not one cairn left");
  }
  HttpRequest request{.method = text("method").get<std::string>(), .path = text("path").get<std::string>(),
                      .body = text("body").get<std::string>()};
  for (const auto& [key, value] : text("query").items()) {
    if (value.is_string()) request.query[key] = value.get<std::string>();
  }
  for (const auto& [key, value] : text("headers").items()) {
    if (value.is_string()) request.headers[key] = value.get<std::string>();
  }
  return request;
}

HttpResponse outcome_response(const InboxItem& item) {
  HttpResponse response{.status = item.status.value_or(500),
                        .content_type = item.content_type.empty() ? "application/json" : item.content_type,
                        .body = item.response};
  response.headers.emplace_back("Cairn-Inbox-Item", std::to_string(item.id));
  return response;
}

Json item_json(const InboxItem& item) {
  Json body = {{"id", item.id},
               {"session", item.session_id},
               {"state", to_string(item.state)},
               {"created", item.created},
               {"request", {{"method", item.request.value("method", "")}, {"path", item.request.value("path", "")}}}};
  if (!item.decided.empty()) body["decided"] = item.decided;
  if (item.applied_seq) body["appliedSeq"] = *item.applied_seq;
  if (item.status) {
    Json answer = {{"status", *item.status}};
    const Json parsed = Json::parse(item.response, nullptr, false);
    answer["body"] = parsed.is_discarded() ? Json(item.response) : parsed;
    body["response"] = std::move(answer);
  }
  return body;
}

// ---- the sender's side ---------------------------------------------------------

namespace {

// One relayed request waiting for its item's outcome.
class RelayWait : public std::enable_shared_from_this<RelayWait> {
 public:
  RelayWait(Inbox& inbox, std::shared_ptr<WorkQueue> work, std::int64_t item, std::string session, bool changes,
            std::string holder, std::chrono::milliseconds bound)
      : inbox_(inbox), work_(std::move(work)), item_(item), session_(std::move(session)), changes_(changes),
        holder_(std::move(holder)), bound_(bound) {}

  std::shared_ptr<DeferredReply> start() {
    auto self = shared_from_this();
    auto follow = inbox_.follow_item(item_, kInboxPoll, [weak = weak_from_this()] {
      // On the store's listener thread: hand the look on.
      if (auto wait = weak.lock()) wait->work_->post([wait] { wait->look(); });
    });
    {
      std::lock_guard lock(mu_);
      if (follow) follow_ = std::move(*follow);
    }
    if (!work_->post_after(bound_, [self] { self->timed_out(); })) {
      finish(Reply{error_response(503, "closed", "the server is stopping")});
    }
    look();  // it may have been decided already
    return deferred_;
  }

 private:
  void look() {
    if (finished()) return;
    if (deferred_->abandoned()) return finish(std::nullopt);
    auto item = inbox_.item(item_);
    if (!item || !*item) return;  // looked at again at the next poll, or at the bound
    const InboxItem& got = **item;
    if (got.state == InboxState::decided || got.state == InboxState::failed) finish(Reply{outcome_response(got)});
  }

  void timed_out() {
    look();
    if (finished()) return;
    const std::string waited = fmt::format("{} ms", bound_.count());
    if (!changes_) {
      // A read is only worth its answer now: withdrawn, unless the holder
      // has begun it (then its answer is on the way, and said as queued).
      if (auto withdrawn = inbox_.withdraw(item_); withdrawn && *withdrawn) {
        return finish(Reply{error_response(
            409, "locked",
            fmt::format("session {} is held by {}, which did not answer within {}; try again", session_, holder_, waited))});
      }
    }
    Json body = {{"queued", item_},
                 {"session", session_},
                 {"message", fmt::format("session {} is held by {}, which has not decided this request within {}; it "
                                         "will be applied once, whoever holds the session then: GET /v1/inbox/{} "
                                         "tells its fate",
                                         session_, holder_, waited, item_)}};
    HttpResponse response = json_response(202, body);
    response.headers.emplace_back("Cairn-Inbox-Item", std::to_string(item_));
    finish(Reply{std::move(response)});
  }

  bool finished() {
    std::lock_guard lock(mu_);
    return finished_;
  }
  void finish(std::optional<Reply> reply) {
    std::unique_ptr<LogFollow> follow;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
      follow = std::move(follow_);
    }
    follow.reset();  // not on the listener's thread: look() runs on a worker
    if (reply) deferred_->fulfil(std::move(*reply));
  }

  Inbox& inbox_;
  std::shared_ptr<WorkQueue> work_;
  const std::int64_t item_;
  const std::string session_;
  const bool changes_;
  const std::string holder_;
  const std::chrono::milliseconds bound_;
  std::shared_ptr<DeferredReply> deferred_ = std::make_shared<DeferredReply>();
  std::mutex mu_;
  bool finished_ = false;
  std::unique_ptr<LogFollow> follow_;
};

// "session pg1 is held by pid 12 on host-a (generation 3; …)": who, for a person.
std::string holder_of(const Error& locked) {
  const auto at = locked.message.find(" is held by ");
  if (at == std::string::npos) return "another process";
  std::string who = locked.message.substr(at + 12);
  if (const auto end = who.find(" ("); end != std::string::npos) who.resize(end);
  return who;
}

}  // namespace

Reply InboxRelay::relay(const HttpRequest& request, const std::string& id, const Error& locked) {
  auto stored = inbox_request(request);
  if (!stored) return Reply{error_response(stored.error())};
  auto item = inbox_.submit(id, *stored);
  if (!item) return Reply{error_response(503, "unavailable", item.error().message)};
  const bool changes = request.method != "GET" && request.method != "HEAD";
  auto wait = std::make_shared<RelayWait>(inbox_, work_, *item, id, changes, holder_of(locked), wait_);
  return Reply{.deferred = wait->start()};
}

// ---- the holder's side ----------------------------------------------------------

void InboxApplier::opened(const std::shared_ptr<SessionHost>& host) {
  const std::string id = host->session->id();
  auto follow = inbox_.follow_session(id, kInboxPoll, [weak = weak_from_this(), id] {
    auto self = weak.lock();
    if (!self) return;
    self->work_->post([self, id] { self->drain(id, self->pool_.find_open(id)); });
  });
  if (follow) host->inbox_watch = std::move(*follow);
  drain(id, host);
}

void InboxApplier::drain(const std::string& id, std::shared_ptr<SessionHost> host) {
  if (!host) return;  // closed here: whoever opens it next applies what waits
  {
    std::lock_guard lock(mu_);
    if (!draining_.insert(id).second) {
      again_.insert(id);  // the thread draining it looks once more
      return;
    }
  }
  for (;;) {
    auto items = inbox_.open_items(id);
    if (items) {
      for (const InboxItem& item : *items) apply(item, host);
    } else {
      print_untrusted(stderr, "cairn serve: session {}: {}\n", id, items.error().message);
    }
    std::lock_guard lock(mu_);
    if (!again_.erase(id)) {
      draining_.erase(id);
      return;
    }
  }
}

void InboxApplier::apply(const InboxItem& item, const std::shared_ptr<SessionHost>& host) {
  {
    std::lock_guard lock(mu_);
    if (in_flight_.contains(item.id)) return;  // begun here: its answer is on the way
  }
  if (item.state == InboxState::applied) {
    // A holder before this one applied it and stopped before deciding.
    if (auto settled = inbox_.settle_applied(item); !settled) {
      print_untrusted(stderr, "cairn serve: inbox item {}: {}\n", item.id, settled.error().message);
    }
    return;
  }
  std::shared_lock running(stop_mu_);
  if (stopped_) return;  // left for whoever holds the session next
  auto begun = inbox_.begin(item.id);
  if (!begun) {
    print_untrusted(stderr, "cairn serve: inbox item {}: {}\n", item.id, begun.error().message);
    return;
  }
  if (!*begun) return;  // withdrawn, or the session is no longer ours
  const std::int64_t generation = (*begun)->generation;
  {
    std::lock_guard lock(mu_);
    in_flight_.insert(item.id);
  }
  auto request = request_of(item.request);
  if (!request) {
    decide(item.id, generation, Reply{error_response(request.error())});
    return;
  }
  Reply reply;
  {
    // The records the request appends name the item: the first to land
    // marks it applied in its own transaction.
    InboxMark::Scope mark(std::make_shared<InboxMark>(item.id));
    reply = route_(*request, host);
  }
  if (!reply.deferred) return decide(item.id, generation, reply);
  reply.deferred->on_ready([self = shared_from_this(), id = item.id, generation, deferred = reply.deferred](Reply ready) {
    // Abandoned (the server stops): left undecided; whoever holds the
    // session next settles it from what landed.
    if (deferred->abandoned()) return self->done_with(id);
    self->decide(id, generation, ready);
  });
}

void InboxApplier::decide(std::int64_t item, std::int64_t generation, const Reply& reply) {
  HttpResponse response = reply.response;
  if (reply.stream) {
    response = error_response(500, "internal_error", "this request answers with a stream, which the inbox cannot carry");
  }
  if (auto decided = inbox_.decide(item, generation, response.status, response.content_type, response.body); !decided) {
    print_untrusted(stderr, "cairn serve: inbox item {}: {}\n", item, decided.error().message);
  }
  done_with(item);
}

void InboxApplier::done_with(std::int64_t item) {
  std::lock_guard lock(mu_);
  in_flight_.erase(item);
}

void InboxApplier::stop() {
  std::unique_lock lock(stop_mu_);
  stopped_ = true;
}

void InboxApplier::sweep() {
  auto waiting = inbox_.waiting_sessions();
  if (!waiting) {
    print_untrusted(stderr, "cairn serve: {}\n", waiting.error().message);
    return;
  }
  for (const auto& [id, owner] : *waiting) {
    if (auto host = pool_.find_open(id)) {
      work_->post([self = shared_from_this(), id = id, host] { self->drain(id, host); });
    } else if (owner.empty() || pg::holder_is_gone(owner)) {
      // Nobody live holds it: opened here, which applies its items.
      pool_.open_async(id, [](const Result<std::shared_ptr<SessionHost>>&) {});
    }
  }
  if (const auto now = std::chrono::steady_clock::now(); now >= next_forget_) {
    next_forget_ = now + std::chrono::minutes(10);
    (void)inbox_.forget_older_than(std::chrono::duration_cast<std::chrono::seconds>(kKeepDecided));
  }
}

}  // namespace cairn::serve
