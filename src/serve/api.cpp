#include "api.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "a2a.hpp"
#include "cairn/trace.hpp"
#include "cairn/utf8.hpp"
#include "event_stream.hpp"
#include "json_views.hpp"
#include "names.hpp"
#include "openapi.hpp"
#include "request_json.hpp"
#include "stream_hub.hpp"
#include "web_assets.hpp"

namespace cairn::serve {

// ---- responses ----------------------------------------------------------------------

namespace {

int status_for(std::string_view code) {
  static const std::map<std::string_view, int> statuses = {
      {"invalid_argument", 400},  {"invalid_message", 400},  {"invalid_entry", 400},     {"invalid_response", 400},
      {"invalid_arguments", 400}, {"bad_request", 400},      {"unauthorized", 401},      {"forbidden", 403},
      {"not_found", 404},         {"unknown_ref", 404},      {"unknown_input", 404},     {"unknown_entry", 404},
      {"unknown_model", 404},     {"unknown_tool", 404},     {"unknown_skill", 404},     {"unknown_template", 404},
      {"no_route", 404},          {"method_not_allowed", 405}, {"already_exists", 409},  {"ref_exists", 409},
      {"locked", 409},            {"busy", 409},             {"operation_open", 409},    {"already_resolved", 409},
      {"ref_active", 409},        {"main_ref", 409},         {"not_suspended", 409},     {"no_active_run", 409},
      {"missing_identities", 409}, {"damaged_log", 409},     {"ambiguous_id", 409},      {"ambiguous_model", 409},
      {"body_too_large", 413},    {"unsupported_media_type", 415}, {"faulted", 503},     {"closed", 503},
      {"unavailable", 503},
      {"read_only", 409},         {"nothing_to_compact", 409}, {"would_split_tool_call", 409},         {"stale_writer", 409},     {"corrupt_log", 500},       {"newer_version", 500},
  };
  auto it = statuses.find(code);
  return it == statuses.end() ? 500 : it->second;
}

}  // namespace

HttpResponse json_response(int status, const Json& body) {
  return HttpResponse{.status = status, .body = body.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

HttpResponse error_response(int status, std::string_view code, std::string_view message) {
  return json_response(status, Json{{"error", {{"code", code}, {"message", message}}}});
}

HttpResponse error_response(const Error& error) {
  return error_response(status_for(error.code), error.code, error.message);
}

std::string sse_frame(const Json& data, std::optional<std::int64_t> id) {
  std::string frame;
  if (id) frame = fmt::format("id: {}\n", *id);
  frame += "data: ";
  frame += data.dump(-1, ' ', false, Json::error_handler_t::replace);
  frame += "\n\n";
  return frame;
}

// ---- tokens -------------------------------------------------------------------------

Result<std::vector<std::string>> load_tokens(const std::filesystem::path& file, bool& created) {
  created = false;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno != ENOENT) return fail(Errc::io_error, fmt::format("token file {}: {}", file.string(), std::strerror(errno)));
    std::error_code ec;
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
    std::random_device random;
    std::string token;
    for (int i = 0; i < 8; ++i) token += fmt::format("{:08x}", random());
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return fail(Errc::io_error, fmt::format("cannot create token file {}: {}", file.string(), std::strerror(errno)));
    const std::string line = token + "\n";
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!written) return fail(Errc::io_error, fmt::format("cannot write token file {}", file.string()));
    created = true;
    return std::vector<std::string>{token};
  }
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::invalid_argument,
                fmt::format("token file {} may be read by others (mode {:o}); chmod 600 it", file.string(), st.st_mode & 0777));
  }
  std::ifstream in(file);
  if (!in) return fail(Errc::io_error, fmt::format("cannot read token file {}", file.string()));
  std::vector<std::string> tokens;
  for (std::string line; std::getline(in, line);) {
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line.front() == '#') continue;
    if (line.size() < 16) return fail(Errc::invalid_argument, fmt::format("token file {}: a token is shorter than 16 characters", file.string()));
    tokens.push_back(line);
  }
  if (tokens.empty()) return fail(Errc::invalid_argument, fmt::format("token file {} holds no token", file.string()));
  return tokens;
}

namespace {

// A session's state as the viewer shows it: faulted, else its most pressing
// ref's operation (waiting for a human first), else idle.
std::string_view live_status(AgentHarness& harness) {
  if (harness.faulted()) return "faulted";
  std::vector<OperationStatus> statuses;
  for (const auto& ref : harness.refs()) {
    if (ref.run) statuses.push_back(ref.run->status);
  }
  for (const OperationStatus wanted : {OperationStatus::awaiting_input, OperationStatus::running,
                                       OperationStatus::cancelling, OperationStatus::suspended}) {
    if (std::find(statuses.begin(), statuses.end(), wanted) != statuses.end()) return to_string(wanted);
  }
  return "idle";
}

// What the sessions list shows beside a header. A session this server has
// open: its live state. Another: what its log says, read from the store
// without opening it for writing, so that looking at a list neither holds a
// session another process might resume nor keeps it open here. A session
// that cannot be read says why instead.
Json list_summary(SessionPool& pool, SessionActivity& activity, const SessionHeader& header) {
  const std::shared_ptr<SessionHost> host = pool.find_open(header.id);
  Result<SessionFacts> facts = [&]() -> Result<SessionFacts> {
    if (host) return activity.facts(header.id, *host->session);
    auto stamp = pool.log_stamp(header.id);
    if (!stamp) return std::unexpected(stamp.error());
    return activity.facts(header.id, header.timestamp, *stamp, [&](std::int64_t after, std::size_t limit) {
      return pool.read_log(header.id, after, limit);
    });
  }();
  if (!facts) return Json{{"error", to_json(facts.error())}};
  Json summary = {{"open", host != nullptr},
                  {"status", host ? live_status(*host->harness) : facts->log_status()},
                  {"name", facts->name ? Json(*facts->name) : Json(nullptr)},
                  {"activity", facts->activity()}};
  std::optional<Model> model;
  if (host) {
    if (auto main = host->harness->ref("main")) model = main->model();
  }
  if (model) {
    summary["model"] = {{"provider", model->provider}, {"id", model->id}};
  } else if (facts->provider && facts->model) {
    summary["model"] = {{"provider", *facts->provider}, {"id", *facts->model}};
  } else {
    summary["model"] = nullptr;
  }
  return summary;
}

// A ref's transcript before an entry, as a snapshot's would hold it (back to
// the newest compaction, inclusive): `{entries, next}`, at most `count`
// entries, oldest first; `next` is the `before` of the page before, null at
// the start.
Result<Json> branch_before(const Session& session, const std::string& session_id, const std::string& ref,
                           const std::string& before, std::size_t count) {
  auto entry = session.get_entry(before);
  if (!entry) return std::unexpected(entry.error());
  if (!*entry) return fail(Errc::unknown_entry, fmt::format("session {} has no entry '{}'", session_id, before));
  // Only the ref's own branch: another branch's entries are not this
  // transcript's (and after a navigate the client's snapshot is stale).
  const auto path = session.path_to(session.leaf(ref));
  if (std::find(path.begin(), path.end(), before) == path.end()) {
    return fail(Errc::unknown_entry, fmt::format("entry '{}' is not on ref '{}''s branch (if the ref moved, open its "
                                                 "stream again)",
                                                 before, ref));
  }
  const std::optional<std::string> parent = (*entry)->parent_id;
  Json entries = Json::array();
  bool more = false;
  // A compaction is where a transcript starts: nothing is before it.
  if (parent && !std::holds_alternative<Compaction>((*entry)->body)) {
    auto page = session.find_entries_on_branch(EntryQuery{.order = Order::newest_first, .limit = count + 1},
                                               BranchBounds{.start = *parent, .stop_at_type = RecordType::compaction});
    if (!page) return std::unexpected(page.error());
    more = page->items.size() > count;
    if (more) page->items.pop_back();
    for (auto it = page->items.rbegin(); it != page->items.rend(); ++it) entries.push_back(encode(*it));
  }
  Json next = more && !entries.empty() ? entries.front()["id"] : Json(nullptr);
  return Json{{"entries", std::move(entries)}, {"next", std::move(next)}};
}

// A line a tree shows for a message: its first line of text (a tool call's
// name when it has none), at most 80 bytes, cut on a character boundary.
std::string message_preview(const Json& message) {
  std::string text;
  auto take = [&](const Json& content) {
    if (content.is_string()) {
      text += content.get<std::string>();
      return;
    }
    if (!content.is_array()) return;
    for (const auto& block : content) {
      if (!block.is_object()) continue;
      const std::string type = block.value("type", "");
      if (type == "text" && block.contains("text") && block["text"].is_string()) text += block["text"].get<std::string>();
      if (type == "toolCall" && text.empty() && block.contains("name") && block["name"].is_string()) {
        text = "→ " + block["name"].get<std::string>();
      }
      if (!text.empty()) break;
    }
  };
  if (auto content = message.find("content"); content != message.end()) take(*content);
  if (text.empty() && message.contains("summary") && message["summary"].is_string()) text = message["summary"].get<std::string>();
  if (text.empty() && message.contains("command") && message["command"].is_string()) text = "$ " + message["command"].get<std::string>();
  const auto start = text.find_first_not_of(" \n\t");
  if (start == std::string::npos) return {};
  text = text.substr(start, text.find('\n', start) - start);
  if (text.size() > 80) text = text.substr(0, utf8_floor(text, 79)) + "…";
  return text;
}

// Equal in time that depends on neither string's content.
bool same_secret(std::string_view given, std::string_view token) {
  unsigned char diff = given.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ token[i % std::max<std::size_t>(token.size(), 1)]);
  return diff == 0;
}

// ---- request bodies -----------------------------------------------------------------

struct Body {
  Json json = Json::object();

  Result<std::optional<std::string>> string(const char* key) const {
    auto it = json.find(key);
    if (it == json.end() || it->is_null()) return std::optional<std::string>();
    if (!it->is_string()) return fail(Errc::invalid_argument, fmt::format("field '{}' must be a string", key));
    return std::optional<std::string>(it->get<std::string>());
  }
  Result<std::string> required_string(const char* key) const {
    auto value = string(key);
    if (!value) return std::unexpected(value.error());
    if (!*value) return fail(Errc::invalid_argument, fmt::format("field '{}' is required", key));
    return **value;
  }
  Result<bool> boolean(const char* key, bool fallback = false) const {
    auto it = json.find(key);
    if (it == json.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return fail(Errc::invalid_argument, fmt::format("field '{}' must be true or false", key));
    return it->get<bool>();
  }
};

Result<Body> parse_body(const HttpRequest& request, std::initializer_list<std::string_view> allowed,
                        std::size_t max_depth) {
  Body body;
  if (request.body.empty()) return body;
  if (auto type = request.header("content-type"); type && type->find("application/json") == std::string::npos) {
    return std::unexpected(Error::recorded("unsupported_media_type", "the body must be application/json"));
  }
  auto parsed = parse_request_json(request.body, max_depth);
  if (!parsed) return std::unexpected(parsed.error());
  body.json = std::move(*parsed);
  if (!body.json.is_object()) return fail(Errc::invalid_argument, "the body must be a JSON object");
  for (const auto& [key, value] : body.json.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string known;
      for (auto name : allowed) known += (known.empty() ? "" : ", ") + std::string(name);
      return fail(Errc::invalid_argument, fmt::format("unknown field '{}' (this route takes: {})", key,
                                                      known.empty() ? "nothing" : known));
    }
  }
  return body;
}

Result<std::optional<std::int64_t>> query_int(const HttpRequest& request, const std::string& key) {
  auto it = request.query.find(key);
  if (it == request.query.end()) return std::optional<std::int64_t>();
  std::int64_t value = 0;
  const auto& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return fail(Errc::invalid_argument, fmt::format("query parameter '{}' must be an integer", key));
  }
  return std::optional<std::int64_t>(value);
}

// A count in the query (a page's limit, a snapshot's transcript), 1 to `max`:
// absent, it is `fallback` (none when that is none).
Result<std::optional<std::size_t>> query_count(const HttpRequest& request, const std::string& key, std::size_t max,
                                               std::optional<std::size_t> fallback) {
  auto value = query_int(request, key);
  if (!value) return std::unexpected(value.error());
  if (!*value) return fallback;
  if (**value < 1 || static_cast<std::uint64_t>(**value) > max) {
    return fail(Errc::invalid_argument, fmt::format("{} must be 1 to {}", key, max));
  }
  return std::optional<std::size_t>(static_cast<std::size_t>(**value));
}

}  // namespace

std::string percent_decode(std::string_view text, bool& ok) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  ok = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {
      ok = false;
      return out;
    }
    const int high = hex(text[i + 1]), low = hex(text[i + 2]);
    if (high < 0 || low < 0) {
      ok = false;
      return out;
    }
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

namespace {

Result<std::string> segment(std::string_view raw, std::string_view what) { return path_name(raw, what); }

// ---- operations ---------------------------------------------------------------------

}  // namespace

OperationStart start_and_wait(SessionPool& pool, Metrics& metrics, const std::shared_ptr<SessionHost>& host, AgentRef ref,
                              std::vector<EventType> start_types, std::function<RunResult(AgentRef&)> operation) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    OperationStart state;
  };
  auto wait = std::make_shared<Wait>();
  std::unique_lock start_lock(host->start_mu);
  Subscription subscription = ref.on_event([wait, start_types](const Event& event) {
    if (std::find(start_types.begin(), start_types.end(), event.type) == start_types.end()) return;
    std::lock_guard lock(wait->mu);
    if (!wait->state.started) wait->state.started = event;
    wait->cv.notify_all();
  });
  pool.run_detached(host, [wait, ref, operation = std::move(operation), &metrics]() mutable {
    RunResult result = operation(ref);
    {
      std::lock_guard lock(metrics.mu);
      ++metrics.runs[std::string(to_string(result.outcome))];
    }
    if (result.final_message) {
      metrics.input_tokens += result.final_message->usage.input;
      metrics.output_tokens += result.final_message->usage.output;
      metrics.cost_microdollars += static_cast<std::int64_t>(result.final_message->usage.cost.total * 1e6);
    }
    std::lock_guard lock(wait->mu);
    wait->state.done = std::move(result);
    wait->cv.notify_all();
  });
  std::unique_lock lock(wait->mu);
  wait->cv.wait(lock, [&] { return wait->state.started || wait->state.done; });
  subscription.reset();
  return wait->state;
}

namespace {

// How long a prompt sent with whileRunning waits for a run that has stopped
// taking messages to end, before it says busy.
constexpr auto kEndingRunWait = std::chrono::seconds(2);

Reply started_reply(const OperationStart& start) {
  if (start.started) {
    Json body = {{"runId", start.started->run_id ? Json(*start.started->run_id) : Json(nullptr)},
                 {"event", to_string(start.started->type)}};
    body["seq"] = start.started->seq ? Json(*start.started->seq) : Json(nullptr);
    return Reply{json_response(202, body)};
  }
  const RunResult& result = *start.done;
  // Ended before it started durably: a refusal, or a compaction with
  // nothing to shed. Said as the error it is.
  if (!result.ok() && result.run_id.empty() && result.error) return Reply{error_response(*result.error)};
  return Reply{json_response(200, to_json(result))};
}

Reply start_operation(SessionPool& pool, Metrics& metrics, const std::shared_ptr<SessionHost>& host, AgentRef ref,
                      std::vector<EventType> start_types, std::function<RunResult(AgentRef&)> operation) {
  return started_reply(start_and_wait(pool, metrics, host, std::move(ref), std::move(start_types), std::move(operation)));
}

// A prompt sent with whileRunning: a run on an idle ref, or the text queued
// on the running one. A client's idea of the ref's state is always a moment
// old: a run can end between its look and its message. Each refusal below
// changed nothing, so the other way is tried, and the client sees one
// answer. Busy and yet no run to queue on: a run writing its end
// (milliseconds), or another operation (a compaction), which is still busy
// after a while. The retries wait on the scheduler, holding no thread.
class WhileRunning : public std::enable_shared_from_this<WhileRunning> {
 public:
  WhileRunning(SessionPool& pool, Metrics& metrics, std::shared_ptr<WorkQueue> work, std::shared_ptr<SessionHost> host,
               AgentRef ref, std::string text, bool steer)
      : pool_(pool), metrics_(metrics), work_(std::move(work)), host_(std::move(host)), ref_(std::move(ref)),
        text_(std::move(text)), steer_(steer), give_up_(std::chrono::steady_clock::now() + kEndingRunWait) {}

  // The first try, on the request's worker: most answers come from it.
  Reply first() {
    if (auto reply = attempt()) return std::move(*reply);
    retry_later();
    return Reply{.deferred = deferred_};
  }

 private:
  std::optional<Reply> attempt() {
    OperationStart started = start_and_wait(pool_, metrics_, host_, ref_, {EventType::run_start},
                                            [text = text_](AgentRef& r) { return r.prompt(text); });
    const bool busy = !started.started && started.done && !started.done->ok() && started.done->run_id.empty() &&
                      started.done->error && started.done->error->is(Errc::busy);
    if (!busy) return started_reply(started);
    QueueResult queued = steer_ ? ref_.steer(text_) : ref_.follow_up(text_);
    if (queued.ok()) return Reply{json_response(200, Json{{"queued", steer_ ? "steer" : "follow-up"}})};
    if (!queued.error || !queued.error->is(Errc::no_active_run)) {
      return Reply{error_response(queued.error.value_or(Error{Errc::internal_error, "not queued"}))};
    }
    if (std::chrono::steady_clock::now() >= give_up_) return started_reply(started);
    return std::nullopt;
  }

  void retry_later() {
    pause_ = std::min(pause_ * 2, std::chrono::milliseconds(50));
    const bool posted = work_->post_after(pause_, [self = shared_from_this()] {
      if (self->deferred_->abandoned()) return;
      if (auto reply = self->attempt()) return self->deferred_->fulfil(std::move(*reply));
      self->retry_later();
    });
    if (!posted) deferred_->fulfil(Reply{error_response(503, "closed", "the server is stopping")});
  }

  SessionPool& pool_;
  Metrics& metrics_;
  std::shared_ptr<WorkQueue> work_;
  std::shared_ptr<SessionHost> host_;
  AgentRef ref_;
  std::string text_;
  bool steer_;
  std::chrono::steady_clock::time_point give_up_;
  std::chrono::milliseconds pause_{1};
  std::shared_ptr<DeferredReply> deferred_ = std::make_shared<DeferredReply>();
};

}  // namespace

// ---- the routes ---------------------------------------------------------------------

Api::Api(SessionPool& pool, std::vector<std::string> tokens, ApiLimits limits)
    : pool_(pool), tokens_(std::move(tokens)), limits_(limits), a2a_(std::make_unique<A2a>(pool_, metrics_, work_)) {
  // What GET /v1/sessions/{id} says of a session's activity is read from
  // its whole log: read where it was opened, not on a worker.
  pool_.set_on_open([activity = activity_](const std::string& id, const SessionHost& host) {
    (void)activity->facts(id, *host.session);
  });
}

Api::~Api() = default;

bool Api::authorized(const HttpRequest& request, HttpResponse& refusal) const {
  auto header = request.header("authorization");
  constexpr std::string_view kScheme = "Bearer ";
  if (!header || header->size() <= kScheme.size() || !std::equal(kScheme.begin(), kScheme.end(), header->begin(),
                                                                  [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
    refusal = error_response(401, "unauthorized", "this route needs an Authorization: Bearer token");
    refusal.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"cairn\"");
    return false;
  }
  const std::string_view given = std::string_view(*header).substr(kScheme.size());
  bool match = false;
  for (const auto& token : tokens_) match |= same_secret(given, token);
  if (!match) {
    refusal = error_response(403, "forbidden", "the bearer token is not one this server accepts");
    return false;
  }
  return true;
}

void Api::count(const std::string& route_name, int status) {
  std::lock_guard lock(metrics_.mu);
  ++metrics_.requests[{route_name, status}];
}

void Api::set_scheduler(Scheduler* scheduler) { work_->attach(scheduler); }

std::optional<HttpResponse> Api::answer_from_head(const HttpRequest& head) {
  if (head.path == "/healthz") {
    if (head.method != "GET" && head.method != "HEAD") {
      count("/healthz", 405);
      return error_response(405, "method_not_allowed", fmt::format("{} is not allowed on /healthz", head.method));
    }
    count("/healthz", 200);
    return json_response(200, Json{{"status", "ok"}});
  }
  // The viewer's own files hold no data: the token is asked for by the
  // page, and every request it makes carries it.
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

namespace {
// The session a request under /v1/sessions/{id}/ opens (a DELETE of the
// session itself opens nothing); none when the path names none or names it
// wrong (the route says what is wrong).
std::optional<std::string> session_to_open(const HttpRequest& request) {
  constexpr std::string_view prefix = "/v1/sessions/";
  std::string_view rest = request.path;
  if (!rest.starts_with(prefix)) return std::nullopt;
  rest.remove_prefix(prefix.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos && request.method == "DELETE") return std::nullopt;
  auto id = segment(rest.substr(0, slash), "session");
  if (!id) return std::nullopt;
  return *id;
}
}  // namespace

Reply Api::handle(const HttpRequest& request) {
  if (auto early = answer_from_head(request)) return Reply{std::move(*early)};
  if (auto id = session_to_open(request); id && work_->attached() && !pool_.find_open(*id)) {
    if (auto deferred = route_when_open(request, *id)) return Reply{.deferred = std::move(deferred)};
  }
  return routed(request);
}

std::shared_ptr<DeferredReply> Api::route_when_open(const HttpRequest& request, const std::string& id) {
  auto deferred = std::make_shared<DeferredReply>();
  // The opener's thread only hands the request on: to a worker, or back
  // with 503 once the server stops (then this Api may be gone).
  pool_.open_async(id, [this, work = work_, deferred, request](const Result<std::shared_ptr<SessionHost>>& opened) {
    const bool posted = work->post([this, deferred, request, opened = Opened(opened)] {
      if (deferred->abandoned()) return;
      Reply reply = routed(request, opened);
      if (reply.deferred) {
        deferred->forward_from(reply.deferred);
      } else {
        deferred->fulfil(std::move(reply));
      }
    });
    if (!posted) deferred->fulfil(Reply{error_response(503, "unavailable", "the server is stopping")});
  });
  return deferred;
}

Reply Api::routed(const HttpRequest& request, const Opened& opened) {
  std::string route_name = "unmatched";
  Reply reply;
  // W3C Trace Context: the operations this request starts join its
  // caller's trace (run_detached carries the context to their threads).
  std::optional<trace::ContextScope> caller;
  if (auto header = request.header("traceparent")) {
    if (auto parent = trace::parse_traceparent(*header)) caller.emplace(std::move(*parent));
  }
  try {
    reply = route(request, route_name, opened);
  } catch (const std::exception& error) {
    // A bug, not the client's fault: said without the request's content.
    reply = Reply{error_response(500, "internal_error", fmt::format("the server failed: {}", error.what()))};
  }
  count(route_name, reply.stream || reply.deferred ? 200 : reply.response.status);
  return reply;
}

Reply Api::route(const HttpRequest& request, std::string& route_name, const Opened& opened) {
  const std::string& method = request.method;
  std::vector<std::string_view> parts;
  {
    std::string_view path = request.path;
    if (path.empty() || path.front() != '/') return Reply{error_response(404, "no_route", "no such route")};
    path.remove_prefix(1);
    while (!path.empty()) {
      auto slash = path.find('/');
      parts.push_back(path.substr(0, slash));
      if (slash == std::string_view::npos) break;
      path.remove_prefix(slash + 1);
    }
  }
  auto error = [](const Error& e) { return Reply{error_response(e)}; };
  auto ok = [](const Json& body, int status = 200) { return Reply{json_response(status, body)}; };
  auto not_allowed = [&] {
    return Reply{error_response(405, "method_not_allowed", fmt::format("{} is not allowed on {}", method, request.path))};
  };
  auto stream_limits = [&] { return EventStream::Limits{limits_.max_stream_queue, limits_.max_stream_bytes}; };
  auto body_of = [&](std::initializer_list<std::string_view> allowed) { return parse_body(request, allowed, limits_.max_json_depth); };

  if (request.path == "/openapi.json") {
    route_name = "/openapi.json";
    if (method != "GET") return not_allowed();
    return Reply{HttpResponse{.status = 200, .body = std::string(openapi_document())}};
  }
  if (parts.size() == 1 && parts[0] == "metrics") {
    route_name = "/metrics";
    if (method != "GET") return not_allowed();
    std::string text;
    text += "# TYPE cairn_http_requests_total counter\n";
    {
      std::lock_guard lock(metrics_.mu);
      for (const auto& [key, count] : metrics_.requests) {
        text += fmt::format("cairn_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, count);
      }
      text += "# TYPE cairn_runs_total counter\n";
      for (const auto& [outcome, count] : metrics_.runs) text += fmt::format("cairn_runs_total{{outcome=\"{}\"}} {}\n", outcome, count);
    }
    text += fmt::format("# TYPE cairn_streams_open gauge\ncairn_streams_open {}\n", metrics_.streams_open.load());
    text += fmt::format("# TYPE cairn_streams_total counter\ncairn_streams_total {}\n", metrics_.streams_total.load());
    {
      std::lock_guard lock(metrics_.mu);
      text += "# TYPE cairn_streams_ended_total counter\n";
      for (const auto& [reason, count] : metrics_.streams_ended) {
        text += fmt::format("cairn_streams_ended_total{{reason=\"{}\"}} {}\n", reason, count);
      }
    }
    text += fmt::format("# TYPE cairn_stream_overflows_total counter\ncairn_stream_overflows_total {}\n", StreamHub::overflows());
    text += fmt::format("# TYPE cairn_stream_updates_coalesced_total counter\ncairn_stream_updates_coalesced_total {}\n",
                        StreamHub::coalesced());
    text += fmt::format("# TYPE cairn_sessions_open gauge\ncairn_sessions_open {}\n", pool_.open_count());
    text += fmt::format("# TYPE cairn_session_opens_total counter\ncairn_session_opens_total {}\n", pool_.opens_total());
    text += fmt::format("# TYPE cairn_tokens_total counter\ncairn_tokens_total{{kind=\"input\"}} {}\ncairn_tokens_total{{kind=\"output\"}} {}\n",
                        metrics_.input_tokens.load(), metrics_.output_tokens.load());
    text += fmt::format("# TYPE cairn_cost_dollars_total counter\ncairn_cost_dollars_total {:.6f}\n",
                        static_cast<double>(metrics_.cost_microdollars.load()) / 1e6);
    const AppendStats appends = pool_.append_stats();
    text += "# TYPE cairn_append_seconds histogram\n";
    std::int64_t cumulative = 0;
    for (std::size_t i = 0; i < AppendStats::kBounds.size(); ++i) {
      cumulative += appends.buckets[i];
      text += fmt::format("cairn_append_seconds_bucket{{le=\"{}\"}} {}\n", AppendStats::kBounds[i], cumulative);
    }
    text += fmt::format("cairn_append_seconds_bucket{{le=\"+Inf\"}} {}\n", appends.count);
    text += fmt::format("cairn_append_seconds_sum {:.6f}\ncairn_append_seconds_count {}\n", appends.seconds, appends.count);
    return Reply{HttpResponse{.status = 200, .content_type = "text/plain; version=0.0.4", .body = std::move(text)}};
  }
  // A2A v1.0 (a2a.hpp): the card, and its two bindings.
  if (request.path == "/.well-known/agent-card.json") {
    route_name = "/.well-known/agent-card.json";
    if (method != "GET") return not_allowed();
    return a2a_->card(request);
  }
  if (parts.size() == 2 && parts[0] == "a2a" && parts[1] == "jsonrpc") {
    route_name = "/a2a/jsonrpc";
    return a2a_->jsonrpc(request);
  }
  if (parts.size() >= 2 && parts[0] == "a2a" && parts[1] == "rest") {
    route_name = "/a2a/rest";
    return a2a_->rest(request, std::string_view(request.path).substr(std::string_view("/a2a/rest").size()));
  }
  if (parts.empty() || parts[0] != "v1") return Reply{error_response(404, "no_route", fmt::format("no route {}", request.path))};

  // /v1/models
  if (parts.size() == 2 && parts[1] == "models") {
    route_name = "/v1/models";
    if (method != "GET") return not_allowed();
    Json models = Json::array();
    std::vector<ConfiguredModel> listed = pool_.factory().models();
    const std::optional<ConfiguredModel> chosen_model = pool_.factory().default_model();
    if (const auto& chosen = chosen_model;
        chosen && std::none_of(listed.begin(), listed.end(), [&](const ConfiguredModel& m) { return m.qualified_id() == chosen->qualified_id(); })) {
      listed.insert(listed.begin(), *chosen);  // an ad-hoc endpoint from the command line
    }
    for (const auto& model : listed) {
      models.push_back({{"id", model.qualified_id()}, {"provider", model.model.provider}, {"model", model.model.id},
                        {"api", model.model.api}, {"contextWindow", model.model.context_window},
                        {"reasoning", model.model.reasoning}, {"available", model.available()}});
    }
    Json body = {{"models", std::move(models)}};
    body["default"] = chosen_model ? Json(chosen_model->qualified_id()) : Json(nullptr);
    return ok(body);
  }
  if (parts.size() < 2 || parts[1] != "sessions") return Reply{error_response(404, "no_route", fmt::format("no route {}", request.path))};

  // /v1/sessions
  if (parts.size() == 2) {
    route_name = "/v1/sessions";
    if (method == "GET") {
      auto limit = query_count(request, "limit", 1000, 100);
      if (!limit) return error(limit.error());
      const std::size_t page = **limit;
      auto headers = pool_.list();
      if (!headers) return error(headers.error());
      // Lineage: each session lists its subagents' sessions (oldest first);
      // ?parent=ID lists those of ID alone.
      std::map<std::string, std::vector<std::string>> children;
      for (auto it = headers->rbegin(); it != headers->rend(); ++it) {
        if (it->parent_session && it->extra.contains("child")) children[*it->parent_session].push_back(it->id);
      }
      if (auto parent = request.query.find("parent"); parent != request.query.end()) {
        std::erase_if(*headers, [&](const SessionHeader& h) {
          return !(h.parent_session == parent->second && h.extra.contains("child"));
        });
      }
      auto after = request.query.find("after");
      std::size_t start = 0;
      if (after != request.query.end()) {
        start = headers->size();
        for (std::size_t i = 0; i < headers->size(); ++i) {
          if ((*headers)[i].id == after->second) start = i + 1;
        }
      }
      Json sessions = Json::array();
      std::size_t i = start;
      for (; i < headers->size() && sessions.size() < page; ++i) {
        Json session = encode((*headers)[i]);
        if (auto kids = children.find((*headers)[i].id); kids != children.end()) session["children"] = kids->second;
        session["summary"] = list_summary(pool_, *activity_, (*headers)[i]);
        sessions.push_back(std::move(session));
      }
      Json body = {{"sessions", std::move(sessions)}};
      body["next"] = i < headers->size() ? Json((*headers)[i - 1].id) : Json(nullptr);
      return ok(body);
    }
    if (method == "POST") {
      auto body = body_of({"id", "cwd"});
      if (!body) return error(body.error());
      CreateOptions create;
      auto id = body->string("id");
      auto cwd = body->string("cwd");
      if (!id) return error(id.error());
      if (!cwd) return error(cwd.error());
      if (*id) {
        auto valid = segment(**id, "session");
        if (!valid) return error(valid.error());
        create.id = **id;
      }
      create.cwd = cwd->value_or(pool_.factory().default_cwd().string());
      auto host = pool_.create(create);
      if (!host) return error(host.error());
      return ok(Json{{"session", encode((*host)->session->header())}}, 201);
    }
    return not_allowed();
  }

  auto session_id = segment(parts[2], "session");
  if (!session_id) return error(session_id.error());

  if (parts.size() == 3 && method == "DELETE") {
    route_name = "/v1/sessions/{id}";
    if (auto removed = pool_.remove(*session_id); !removed) return error(removed.error());
    activity_->forget(*session_id);
    return ok(Json{{"deleted", *session_id}});
  }
  // GET …/records: a page `read` from the log; `newest`: the session's
  // newest seq when this server knows it.
  auto records_page = [&](const StreamHub::Reader& read, std::optional<std::int64_t> newest) -> Reply {
    auto after = query_int(request, "after");
    auto limit = query_count(request, "limit", limits_.max_page, 1000);
    if (!after) return error(after.error());
    if (!limit) return error(limit.error());
    auto lines = read(after->value_or(-1), **limit);
    if (!lines) return error(lines.error());
    Json records = Json::array();
    for (const auto& line : *lines) records.push_back(Json::parse(line.json, nullptr, false));
    Json body = {{"records", std::move(records)}};
    const bool last = lines->empty() || (newest ? lines->back().seq >= *newest
                                                : lines->size() < **limit);
    body["next"] = last ? Json(nullptr) : Json(lines->back().seq);
    return ok(body);
  };
  // Where a stream starts: Last-Event-ID, else ?after=, else a snapshot.
  auto stream_cursor = [&]() -> Result<std::optional<std::int64_t>> {
    if (auto last = request.header("last-event-id"); last && !last->empty()) {
      std::int64_t value = 0;
      auto [end, ec] = std::from_chars(last->data(), last->data() + last->size(), value);
      if (ec != std::errc() || end != last->data() + last->size()) {
        return fail(Errc::invalid_argument, "Last-Event-ID must be a seq");
      }
      return value;
    }
    return query_int(request, "after");
  };
  // GET …/refs/{ref}/branch?before=ID&limit=N on `session`.
  auto branch_page = [&](const Session& session, const std::string& ref) -> Reply {
    auto before = request.query.find("before");
    auto limit = query_count(request, "limit", limits_.max_page, 500);
    if (!limit) return error(limit.error());
    if (before == request.query.end() || before->second.empty()) {
      return error(Error{Errc::invalid_argument, "before (an entry id) is required"});
    }
    auto page = branch_before(session, *session_id, ref, before->second, **limit);
    if (!page) return error(page.error());
    return ok(*page);
  };
  auto host_result = opened ? *opened : pool_.get(*session_id);
  if (!host_result) {
    // A session another process writes (here or on another machine sharing
    // the store) cannot be opened, but it can be watched: its streams follow
    // the records the store gets.
    const bool session_events = parts.size() == 4 && parts[3] == "events";
    const bool ref_events = parts.size() == 6 && parts[3] == "refs" && parts[5] == "events";
    const bool records = parts.size() == 4 && parts[3] == "records";
    const bool ref_branch = parts.size() == 6 && parts[3] == "refs" && parts[5] == "branch";
    if (host_result.error().is(Errc::locked) && method == "GET" && ref_branch) {
      // The pages before a followed stream's limited snapshot, from the log
      // as the store holds it now.
      route_name = "/v1/sessions/{id}/refs/{ref}/branch";
      auto name = segment(parts[4], "ref");
      if (!name) return error(name.error());
      auto opened = pool_.open_read_only(*session_id);
      if (!opened) return error(opened.error());
      const auto refs = (*opened)->refs();
      if (std::none_of(refs.begin(), refs.end(), [&](const RefInfo& info) { return info.name == *name; })) {
        return error(Error{Errc::unknown_ref, fmt::format("session {} has no ref '{}'", *session_id, *name)});
      }
      return branch_page(**opened, *name);
    }
    if (host_result.error().is(Errc::locked) && method == "GET" && records) {
      route_name = "/v1/sessions/{id}/records";
      const std::string id = *session_id;
      return records_page([&](std::int64_t after, std::size_t limit) { return pool_.read_log(id, after, limit); },
                          std::nullopt);
    }
    if (host_result.error().is(Errc::locked) && method == "GET" && (session_events || ref_events)) {
      route_name = session_events ? "/v1/sessions/{id}/events" : "/v1/sessions/{id}/refs/{ref}/events";
      std::optional<std::string> ref;
      if (ref_events) {
        auto name = segment(parts[4], "ref");
        if (!name) return error(name.error());
        ref = *name;
      }
      auto after = stream_cursor();
      if (!after) return error(after.error());
      std::optional<std::size_t> transcript_limit;
      if (ref) {
        auto limit = query_count(request, "transcript", limits_.max_page, std::nullopt);
        if (!limit) return error(limit.error());
        transcript_limit = *limit;
      }
      auto followed = pool_.follow(*session_id, host_result.error());
      if (!followed) return error(followed.error());
      if (*after && **after > (*followed)->head()) {
        // Past the newest record the store holds (asked again: the follow
        // may lag): a cursor of another session, or of a log that was cut;
        // nothing would ever follow it.
        auto at = pool_.read_log(*session_id, **after - 1, 1);
        if (!at) return error(at.error());
        if (at->empty() || at->front().seq != **after) {
          return error(Error{Errc::invalid_argument, fmt::format("Last-Event-ID {} is past the session's newest record (seq {})",
                                                                 **after, (*followed)->head())});
        }
      }
      auto stream = EventStream::open_followed(std::move(*followed), std::move(ref), *after, stream_limits(),
                                               transcript_limit);
      if (!stream) return error(stream.error());
      return Reply{.stream = std::move(*stream)};
    }
    return error(host_result.error());
  }
  std::shared_ptr<SessionHost> host = std::move(*host_result);
  AgentHarness& harness = *host->harness;
  Session& session = *host->session;

  auto refs_json = [&] {
    Json refs = Json::array();
    std::vector<SuspendedOperation> suspended = host->suspended_at_open;
    for (const auto& status : harness.refs()) {
      Json item = to_json(status, {});
      if (status.run && (status.run->status == OperationStatus::suspended || status.run->status == OperationStatus::awaiting_input)) {
        if (auto ref = harness.ref(status.name)) {
          Json pending = Json::array();
          for (const auto& input : ref->pending_inputs()) pending.push_back(to_json(input));
          item["run"]["awaitingInput"] = std::move(pending);
        }
      }
      refs.push_back(std::move(item));
    }
    return refs;
  };

  if (parts.size() == 3) {
    route_name = "/v1/sessions/{id}";
    if (method != "GET") return not_allowed();
    Json body = {{"session", encode(session.header())}, {"refs", refs_json()}, {"cursor", session.size() - 1},
                 {"faulted", harness.faulted()}};
    auto name = session.name();
    if (!name) return error(name.error());
    body["name"] = *name ? Json(**name) : Json(nullptr);
    if (auto main = harness.ref("main")) {
      const Model model = main->model();
      body["model"] = {{"provider", model.provider}, {"id", model.id}};
    }
    auto facts = activity_->facts(*session_id, session);
    if (!facts) return error(facts.error());
    body["activity"] = facts->activity();
    return ok(body);
  }
  const std::string_view what = parts[3];
  if (parts.size() == 4 && what == "records") {
    route_name = "/v1/sessions/{id}/records";
    if (method != "GET") return not_allowed();
    return records_page([&](std::int64_t after, std::size_t limit) { return session.get_log(after, limit); },
                        session.size() - 1);
  }
  if (parts.size() == 4 && what == "tree") {
    route_name = "/v1/sessions/{id}/tree";
    if (method != "GET") return not_allowed();
    // One pass, oldest first: each entry's few fields (a message's alone is
    // encoded, for its preview), and the labels, latest wins, set on the
    // entries they name once every label is known.
    Json entries = Json::array();
    std::unordered_map<std::string, std::size_t> position;
    std::unordered_map<std::string, std::optional<std::string>> labels;
    EntryQuery query{.order = Order::oldest_first, .limit = 4096};
    for (;;) {
      auto page = session.find_entries(query);
      if (!page) return error(page.error());
      for (const auto& entry : page->items) {
        Json item = {{"id", entry.id}, {"parentId", entry.parent_id ? Json(*entry.parent_id) : Json(nullptr)},
                     {"type", to_string(type_of(entry.body))}, {"timestamp", entry.timestamp}};
        if (const auto* body = std::get_if<MessageBody>(&entry.body)) {
          item["role"] = role_of(body->message);
          if (std::string preview = message_preview(encode(body->message)); !preview.empty()) item["preview"] = std::move(preview);
        } else if (const auto* label = std::get_if<Label>(&entry.body)) {
          labels[label->target_id] = label->label;
        }
        position.emplace(entry.id, entries.size());
        entries.push_back(std::move(item));
      }
      if (!page->next_cursor) break;
      query.cursor = page->next_cursor;
    }
    for (const auto& [target, label] : labels) {
      auto at = position.find(target);
      if (label && at != position.end()) entries[at->second]["label"] = *label;
    }
    Json refs = Json::array();
    for (const auto& info : session.refs()) refs.push_back({{"name", info.name}, {"leafId", info.leaf_id ? Json(*info.leaf_id) : Json(nullptr)}});
    return ok(Json{{"entries", std::move(entries)}, {"refs", std::move(refs)}});
  }
  auto open_stream = [&](std::optional<std::string> ref) -> Reply {
    auto after = stream_cursor();
    if (!after) return error(after.error());
    if (*after && **after > session.size() - 1) {
      // A cursor of another session, or of a log that was cut: nothing
      // would ever follow it.
      return error(Error{Errc::invalid_argument, fmt::format("Last-Event-ID {} is past the session's newest record (seq {})",
                                                             **after, session.size() - 1)});
    }
    // ?transcript=N (a ref's stream): the snapshot's newest N entries only.
    std::optional<std::size_t> transcript_limit;
    if (ref) {
      auto limit = query_count(request, "transcript", limits_.max_page, std::nullopt);
      if (!limit) return error(limit.error());
      transcript_limit = *limit;
    }
    auto stream = EventStream::open(host, std::move(ref), *after, stream_limits(), transcript_limit);
    if (!stream) return error(stream.error());
    return Reply{.stream = std::move(*stream)};
  };
  if (parts.size() == 4 && what == "events") {
    route_name = "/v1/sessions/{id}/events";
    if (method != "GET") return not_allowed();
    return open_stream(std::nullopt);
  }
  if (parts.size() == 4 && what == "fork") {
    route_name = "/v1/sessions/{id}/fork";
    if (method != "POST") return not_allowed();
    auto body = body_of({"ref", "entryId", "scope", "position", "id"});
    if (!body) return error(body.error());
    ForkOptions fork;
    auto ref = body->string("ref");
    auto entry = body->string("entryId");
    auto scope = body->string("scope");
    auto position = body->string("position");
    auto id = body->string("id");
    for (const auto* field : {&ref, &entry, &scope, &position, &id}) {
      if (!*field) return error(field->error());
    }
    fork.ref = ref->value_or("main");
    fork.entry_id = *entry;
    if (*scope && **scope != "branch" && **scope != "tree") return error(Error{Errc::invalid_argument, "scope must be branch or tree"});
    if (*scope == "tree") fork.scope = ForkOptions::Scope::tree;
    if (*position && **position != "at" && **position != "before") return error(Error{Errc::invalid_argument, "position must be at or before"});
    if (*position == "before") fork.position = ForkOptions::Position::before;
    if (*id) {
      auto valid = segment(**id, "session");
      if (!valid) return error(valid.error());
      fork.id = **id;
    }
    auto forked = pool_.fork(host, fork.ref, fork);
    if (!forked) return error(forked.error());
    return ok(Json{{"session", encode(forked->session->header())}, {"copied", forked->copied}, {"leftOut", forked->left_out}}, 201);
  }
  if (what != "refs") return Reply{error_response(404, "no_route", fmt::format("no route {}", request.path))};

  // /v1/sessions/{id}/refs
  if (parts.size() == 4) {
    route_name = "/v1/sessions/{id}/refs";
    if (method == "GET") return ok(Json{{"refs", refs_json()}});
    if (method == "POST") {
      auto body = body_of({"name", "at"});
      if (!body) return error(body.error());
      auto name = body->required_string("name");
      if (!name) return error(name.error());
      auto valid = segment(*name, "ref");
      if (!valid) return error(valid.error());
      std::optional<std::string> at = session.leaf("main");
      if (body->json.contains("at")) {
        auto given = body->string("at");
        if (!given) return error(given.error());
        at = *given;
      }
      auto made = harness.create_ref(*name, at);
      if (!made) return error(made.error());
      return ok(Json{{"ref", {{"name", made->name()}, {"leafId", made->leaf_id() ? Json(*made->leaf_id()) : Json(nullptr)}}}}, 201);
    }
    return not_allowed();
  }
  auto ref_name = segment(parts[4], "ref");
  if (!ref_name) return error(ref_name.error());
  auto found = harness.ref(*ref_name);
  if (!found) return error(Error{Errc::unknown_ref, fmt::format("session {} has no ref '{}'", *session_id, *ref_name)});
  AgentRef ref = *found;

  if (parts.size() == 5) {
    route_name = "/v1/sessions/{id}/refs/{ref}";
    if (method == "DELETE") {
      if (auto deleted = harness.delete_ref(*ref_name); !deleted) return error(deleted.error());
      return ok(Json{{"deleted", *ref_name}});
    }
    if (method != "GET") return not_allowed();
    for (const auto& status : harness.refs()) {
      if (status.name != *ref_name) continue;
      Json item = to_json(status, {});
      Json pending = Json::array();
      for (const auto& input : ref.pending_inputs()) pending.push_back(to_json(input));
      item["awaitingInput"] = std::move(pending);
      return ok(Json{{"ref", std::move(item)}});
    }
    return error(Error{Errc::unknown_ref, fmt::format("session {} has no ref '{}'", *session_id, *ref_name)});
  }
  const std::string_view action = parts[5];
  const std::string action_route = fmt::format("/v1/sessions/{{id}}/refs/{{ref}}/{}", action);
  if (parts.size() == 6 && action == "events") {
    route_name = action_route;
    if (method != "GET") return not_allowed();
    return open_stream(*ref_name);
  }
  if (parts.size() == 6 && action == "context") {
    route_name = action_route;
    if (method != "GET") return not_allowed();
    auto context = session.build_context(*ref_name);
    if (!context) return error(context.error());
    Json body = {{"messages", messages_json(context->messages)}, {"entryIds", context->entry_ids},
                 {"thinkingLevel", context->thinking_level}};
    body["model"] = context->model ? Json{{"provider", context->model->provider}, {"id", context->model->model_id}} : Json(nullptr);
    body["activeTools"] = context->active_tool_names ? Json(*context->active_tool_names) : Json(nullptr);
    return ok(body);
  }
  if (parts.size() == 6 && action == "config") {
    route_name = action_route;
    auto config_json = [&] {
      Model model = ref.model();
      return Json{{"model", {{"provider", model.provider}, {"id", model.id}}},
                  {"thinkingLevel", ref.thinking_level()},
                  {"activeTools", ref.active_tools()},
                  {"tools", harness.tool_names()}};
    };
    if (method == "GET") return ok(config_json());
    if (method != "PATCH" && method != "POST") return not_allowed();
    auto body = body_of({"model", "thinkingLevel", "activeTools"});
    if (!body) return error(body.error());
    auto model = body->string("model");
    auto thinking = body->string("thinkingLevel");
    if (!model) return error(model.error());
    if (!thinking) return error(thinking.error());
    std::optional<std::vector<std::string>> tools;
    if (auto it = body->json.find("activeTools"); it != body->json.end()) {
      if (!it->is_array()) return error(Error{Errc::invalid_argument, "field 'activeTools' must be an array of names"});
      tools.emplace();
      for (const auto& name : *it) {
        if (!name.is_string()) return error(Error{Errc::invalid_argument, "field 'activeTools' must be an array of names"});
        tools->push_back(name.get<std::string>());
      }
    }
    if (*model) {
      const auto slash = (*model)->find('/');
      if (slash == std::string::npos) return error(Error{Errc::invalid_argument, "field 'model' must be PROVIDER/ID"});
      if (auto set = ref.set_model((*model)->substr(0, slash), (*model)->substr(slash + 1)); !set) return error(set.error());
    }
    if (*thinking) {
      if (auto set = ref.set_thinking_level(**thinking); !set) return error(set.error());
    }
    if (tools) {
      if (auto set = ref.set_active_tools(*tools); !set) return error(set.error());
    }
    return ok(config_json());
  }
  if (parts.size() == 6 && action == "branch") {
    // The ref's transcript before an entry, as a snapshot's would hold it
    // (back to the newest compaction, inclusive): the entries a snapshot
    // with ?transcript=N left out, a page at a time, oldest first.
    route_name = action_route;
    if (method != "GET") return not_allowed();
    return branch_page(session, *ref_name);
  }
  if (parts.size() == 6 && action == "label") {
    route_name = action_route;
    if (method != "POST") return not_allowed();
    auto body = body_of({"entryId", "label"});
    if (!body) return error(body.error());
    auto entry = body->required_string("entryId");
    auto label = body->string("label");  // null or absent: clear it
    if (!entry) return error(entry.error());
    if (!label) return error(label.error());
    if (*label && (*label)->empty()) return error(Error{Errc::invalid_argument, "field 'label' must not be empty (null clears it)"});
    auto written = ref.session().set_label(*entry, *label);
    if (!written && written.error().is(Errc::not_found)) {
      return error(Error{Errc::unknown_entry, written.error().message});  // as navigate and fork name it
    }
    if (!written) return error(written.error());
    return ok(Json{{"id", *written}, {"entryId", *entry}, {"label", *label ? Json(**label) : Json(nullptr)}});
  }
  if (parts.size() == 6 && action == "inputs") {
    route_name = action_route;
    if (method != "GET") return not_allowed();
    Json pending = Json::array();
    for (const auto& input : ref.pending_inputs()) pending.push_back(to_json(input));
    return ok(Json{{"inputs", std::move(pending)}});
  }
  if (parts.size() == 7 && action == "inputs") {
    route_name = "/v1/sessions/{id}/refs/{ref}/inputs/{input}";
    if (method != "POST") return not_allowed();
    auto input_id = segment(parts[6], "input");
    if (!input_id) return error(input_id.error());
    auto body = body_of({"decision", "arguments", "remember", "reason", "answer", "by"});
    if (!body) return error(body.error());
    auto decision = body->required_string("decision");
    if (!decision) return error(decision.error());
    InputResponse response;
    if (*decision == "allow") {
      response.decision = InputResponse::Decision::allow;
    } else if (*decision == "deny") {
      response.decision = InputResponse::Decision::deny;
    } else if (*decision == "answer") {
      response.decision = InputResponse::Decision::answer;
    } else {
      return error(Error{Errc::invalid_argument, "field 'decision' must be allow, deny or answer"});
    }
    if (auto it = body->json.find("arguments"); it != body->json.end() && !it->is_null()) response.arguments = *it;
    auto remember = body->string("remember");
    auto reason = body->string("reason");
    auto answer = body->string("answer");
    auto by = body->string("by");
    for (const auto* field : {&remember, &reason, &answer, &by}) {
      if (!*field) return error(field->error());
    }
    response.remember = *remember;
    response.reason = *reason;
    response.answer = answer->value_or("");
    response.by = by->value_or("api");
    auto answered = ref.respond(*input_id, std::move(response));
    if (!answered.ok()) {
      return error(answered.error.value_or(Error{Errc::internal_error, "the answer was not taken"}));
    }
    Json body_out = {{"seq", answered.seq}, {"resumed", false}};
    // Every question of the operation answered: it goes on, here.
    if (ref.pending_inputs().empty()) {
      for (const auto& status : harness.refs()) {
        if (status.name == *ref_name && status.run && status.run->status != OperationStatus::running) {
          pool_.run_detached(host, [ref]() mutable { (void)ref.resume(); });
          body_out["resumed"] = true;
        }
      }
    }
    return ok(body_out);
  }
  static const std::set<std::string_view> kActions = {"prompt", "steer", "follow-up", "next-run",
                                                      "abort", "resume", "compact", "navigate"};
  if (parts.size() != 6 || !kActions.contains(action)) {
    return Reply{error_response(404, "no_route", fmt::format("no route {}", request.path))};
  }
  route_name = action_route;
  if (method != "POST") return not_allowed();

  if (action == "prompt") {
    auto body = body_of({"text", "whileRunning"});
    if (!body) return error(body.error());
    auto text = body->required_string("text");
    if (!text) return error(text.error());
    auto while_running = body->string("whileRunning");
    if (!while_running) return error(while_running.error());
    if (*while_running && **while_running != "steer" && **while_running != "followUp") {
      return error(Error{Errc::invalid_argument, "field 'whileRunning' must be steer or followUp"});
    }
    if (!*while_running) {
      return started_reply(start_and_wait(pool_, metrics_, host, ref, {EventType::run_start},
                                          [text = *text](AgentRef& r) { return r.prompt(text); }));
    }
    // A client's idea of the ref's state is always a moment old: a run can
    // end between its look and its message. Each refusal below changed
    // nothing, so the other way is tried, and the client sees one answer.
    // Busy and yet no run to queue on: a run writing its end (milliseconds),
    // or another operation (a compaction), which is still busy after a while.
    return std::make_shared<WhileRunning>(pool_, metrics_, work_, host, ref, *text, **while_running == "steer")->first();
  }
  if (action == "steer" || action == "follow-up" || action == "next-run") {
    auto body = body_of({"text"});
    if (!body) return error(body.error());
    auto text = body->required_string("text");
    if (!text) return error(text.error());
    QueueResult queued = action == "steer" ? ref.steer(*text) : action == "follow-up" ? ref.follow_up(*text) : ref.next_run(*text);
    if (!queued.ok()) return error(queued.error.value_or(Error{Errc::internal_error, "not queued"}));
    return ok(Json{{"queued", action}});
  }
  if (action == "abort") {
    auto body = body_of({});
    if (!body) return error(body.error());
    AbortResult aborted = ref.abort();
    if (!aborted.ok() && aborted.error) return error(*aborted.error);
    return ok(to_json(aborted));
  }
  if (action == "resume") {
    auto body = body_of({});
    if (!body) return error(body.error());
    return start_operation(pool_, metrics_, host, ref, {EventType::run_resume}, [](AgentRef& r) { return r.resume(); });
  }
  if (action == "compact") {
    auto body = body_of({"instructions"});
    if (!body) return error(body.error());
    auto instructions = body->string("instructions");
    if (!instructions) return error(instructions.error());
    return start_operation(pool_, metrics_, host, ref, {EventType::run_start, EventType::compaction_start},
                           [instructions = *instructions](AgentRef& r) { return r.compact(instructions); });
  }
  if (action == "navigate") {
    auto body = body_of({"targetId", "summarize", "instructions", "label"});
    if (!body) return error(body.error());
    auto target = body->required_string("targetId");
    auto summarize = body->boolean("summarize");
    auto instructions = body->string("instructions");
    auto label = body->string("label");
    if (!target) return error(target.error());
    if (!summarize) return error(summarize.error());
    if (!instructions) return error(instructions.error());
    if (!label) return error(label.error());
    NavigateOptions options{.summarize = *summarize, .custom_instructions = *instructions, .label = *label};
    // Answers at its end, which may be a model's summary away: deferred.
    auto deferred = std::make_shared<DeferredReply>();
    pool_.run_detached(host, [deferred, ref, target = *target, options]() mutable {
      deferred->fulfil(started_reply(OperationStart{.done = ref.navigate_tree(target, options)}));
    });
    return Reply{.deferred = std::move(deferred)};
  }
  return Reply{error_response(404, "no_route", fmt::format("no route {}", request.path))};
}

}  // namespace cairn::serve
