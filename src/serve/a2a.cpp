#include "a2a.hpp"

#include <algorithm>
#include <cassert>
#include <atomic>
#include <charconv>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "a2a_task.hpp"
#include "cairn/utf8.hpp"
#include "cairn/version.hpp"
#include "names.hpp"
#include "request_json.hpp"
#include "stream_hub.hpp"

namespace cairn::serve {

namespace {

using namespace std::chrono_literals;

constexpr std::string_view kSeqExtension = "https://github.com/cairn-harness/cairn/a2a/seq-cursor/v1";
// A blocking send waits this long for its task to settle at most.
constexpr auto kBlockingSendLimit = std::chrono::hours(24);
// A cancel answers once the task has ended, or after this.
constexpr auto kCancelLimit = std::chrono::seconds(10);
// A stream's batch stops after this many bytes of frames (the rest follows
// in the next one), so that a long replay is never held whole.
constexpr std::size_t kBatchBytes = 1u << 20;

// ---- errors, as both bindings spell them ----------------------------------------------

struct A2aError {
  int code;            // JSON-RPC
  const char* reason;  // google.rpc.ErrorInfo
  int http;
  const char* status;
  std::string message;
};

A2aError task_not_found(std::string_view id) {
  return {-32001, "TASK_NOT_FOUND", 404, "NOT_FOUND", fmt::format("Task not found: {}", id)};
}
A2aError not_cancelable(std::string message) {
  return {-32002, "TASK_NOT_CANCELABLE", 409, "FAILED_PRECONDITION", std::move(message)};
}
A2aError unsupported(std::string message) {
  return {-32004, "UNSUPPORTED_OPERATION", 400, "FAILED_PRECONDITION", std::move(message)};
}
A2aError invalid_params(std::string message) { return {-32602, "INVALID_PARAMS", 400, "INVALID_ARGUMENT", std::move(message)}; }
A2aError invalid_request(std::string message) { return {-32600, "INVALID_REQUEST", 400, "INVALID_ARGUMENT", std::move(message)}; }
A2aError internal(std::string message) { return {-32603, "", 500, "INTERNAL", std::move(message)}; }
A2aError unavailable(std::string message) { return {-32603, "", 503, "UNAVAILABLE", std::move(message)}; }
A2aError from_error(const Error& error) {
  if (error.code == "not_found" || error.code == "unknown_ref") return task_not_found(error.message);
  if (error.code == "locked" || error.code == "busy" || error.code == "operation_open" || error.code == "already_resolved") {
    return unsupported(error.message);
  }
  if (error.code == "unavailable" || error.code == "closed") return unavailable(error.message);
  if (error.code.starts_with("invalid") || error.code.starts_with("unknown")) return invalid_params(error.message);
  return internal(fmt::format("{}: {}", error.code, error.message));
}

Json error_info(const A2aError& error) {
  return Json::array({{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"}, {"reason", error.reason}, {"domain", "a2a-protocol.org"}}});
}

template <class T>
using A2aResult = std::expected<T, A2aError>;

// A client's text in a message about it: at most 80 bytes of it.
std::string shown(std::string_view text) {
  if (text.size() <= 80) return std::string(text);
  return std::string(text.substr(0, utf8_floor(text, 77))) + "…";
}

// ---- fields read by their type ---------------------------------------------------------

// An object of a request, read field by field: a field of another type is
// invalid params naming it by its path ("params.message.parts[1].text").
class Fields {
 public:
  Fields(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  static A2aResult<Fields> of(const Json& value, std::string path) {
    if (!value.is_object()) return std::unexpected(invalid_params(fmt::format("{} must be an object", path)));
    return Fields(value, std::move(path));
  }
  std::string path(std::string_view key) const { return fmt::format("{}.{}", path_, key); }
  const Json* find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  // Absent, null and (the SDK's default) empty are all "not given".
  A2aResult<std::string> string(const char* key) const {
    const Json* value = find(key);
    if (!value) return std::string();
    if (!value->is_string()) return std::unexpected(invalid_params(fmt::format("{} must be a string", path(key))));
    return value->get<std::string>();
  }
  A2aResult<std::optional<bool>> boolean(const char* key) const {
    const Json* value = find(key);
    if (!value) return std::optional<bool>();
    if (!value->is_boolean()) return std::unexpected(invalid_params(fmt::format("{} must be true or false", path(key))));
    return std::optional<bool>(value->get<bool>());
  }
  // An integer, or (protobuf's JSON for 64-bit integers) one in a string.
  A2aResult<std::optional<std::int64_t>> integer(const char* key) const {
    const Json* value = find(key);
    if (!value) return std::optional<std::int64_t>();
    if (value->is_number_integer()) return std::optional<std::int64_t>(value->get<std::int64_t>());
    if (value->is_string()) {
      if (auto parsed = parse_integer(value->get_ref<const std::string&>())) return std::optional<std::int64_t>(*parsed);
    }
    return std::unexpected(invalid_params(fmt::format("{} must be an integer", path(key))));
  }
  A2aResult<std::optional<Fields>> object(const char* key) const {
    const Json* value = find(key);
    if (!value) return std::optional<Fields>();
    if (!value->is_object()) return std::unexpected(invalid_params(fmt::format("{} must be an object", path(key))));
    return std::optional<Fields>(Fields(*value, path(key)));
  }
  A2aResult<const Json*> array(const char* key) const {
    const Json* value = find(key);
    if (value && !value->is_array()) return std::unexpected(invalid_params(fmt::format("{} must be an array", path(key))));
    return value;
  }

  static std::optional<std::int64_t> parse_integer(std::string_view text) {
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return value;
  }

 private:
  const Json& object_;
  std::string path_;
};

#define A2A_TRY(var, expr)                                      \
  auto var##_result = (expr);                                   \
  if (!var##_result) return std::unexpected(var##_result.error()); \
  auto var = std::move(*var##_result)

// ---- ids -------------------------------------------------------------------------------

// "SESSION/REF": each part a name as the REST routes take it.
A2aResult<std::pair<std::string, std::string>> parse_context(std::string_view id) {
  const auto slash = id.find('/');
  if (slash == std::string_view::npos) {
    return std::unexpected(invalid_params(fmt::format("contextId '{}' is not SESSION/REF", shown(id))));
  }
  const std::string_view session = id.substr(0, slash), ref = id.substr(slash + 1);
  for (const auto& [part, what] : {std::pair{session, "session"}, std::pair{ref, "ref"}}) {
    if (auto checked = check_name(part, what); !checked) {
      return std::unexpected(invalid_params(fmt::format("contextId '{}': {}", shown(id), checked.error().message)));
    }
  }
  return std::pair{std::string(session), std::string(ref)};
}

// "SESSION/REF/RUN". Not a task id of ours: not found, as any unknown task.
A2aResult<TaskId> parse_task(std::string_view id) {
  const auto first = id.find('/'), last = id.rfind('/');
  if (first == std::string_view::npos || first == last) return std::unexpected(task_not_found(shown(id)));
  TaskId task{std::string(id.substr(0, first)), std::string(id.substr(first + 1, last - first - 1)),
              std::string(id.substr(last + 1))};
  if (!check_name(task.session, "session") || !check_name(task.ref, "ref") || !check_name(task.run, "run")) {
    return std::unexpected(task_not_found(shown(id)));
  }
  return task;
}

// Last-Event-ID: none, or a seq.
A2aResult<std::optional<std::int64_t>> last_event_id(const HttpRequest& request) {
  auto header = request.header("last-event-id");
  if (!header || header->empty()) return std::optional<std::int64_t>();
  auto value = Fields::parse_integer(*header);
  if (!value) return std::unexpected(invalid_params("Last-Event-ID must be a seq"));
  return std::optional<std::int64_t>(*value);
}

// ---- the stream of a task --------------------------------------------------------------

// A task's StreamResponses: the task first, then its updates (TaskEvents),
// read from the log as the session's hub says records came; ends after the
// final status or an input request.
class TaskStream : public LiveStream {
 public:
  TaskStream(std::shared_ptr<SessionHost> host, TaskEvents events, std::int64_t read_after, std::string first_frame,
             bool end_after_first)
      : host_(std::move(host)), events_(std::move(events)), last_read_(read_after), initial_(std::move(first_frame)),
        end_now_(end_after_first) {
    inbox_->ref = events_.view().id.ref;
    host_->hub->add(inbox_);
  }
  ~TaskStream() override { host_->hub->remove(inbox_.get()); }

  void set_wakeup(std::function<void()> wakeup) override {
    bool pending = false;
    {
      std::lock_guard lock(inbox_->mu);
      inbox_->wakeup = wakeup;
      pending = !inbox_->frames.empty() || inbox_->end_frame;
    }
    wakeup_ = wakeup;
    if (pending && wakeup) wakeup();
  }

  Batch take(bool quiet) override {
    Batch batch;
    batch.text() = std::move(initial_);
    initial_.clear();
    if (end_now_ || events_.done()) {
      batch.done = true;
      return batch;
    }
    // The first take reads what the log already holds (a run that went on,
    // or ended, before this stream was there); later ones what woke them.
    std::int64_t newest = std::exchange(first_, false) ? host_->session->size() - 1 : backlog_;
    bool overflowed = false;
    std::optional<std::string> end_frame;
    {
      std::lock_guard lock(inbox_->mu);
      for (const auto& frame : inbox_->take_frames()) {
        if (frame->seq) newest = std::max(newest, *frame->seq);
      }
      overflowed = std::exchange(inbox_->overflowed, false);
      end_frame = inbox_->end_frame;
    }
    if (end_frame) {  // the session was deleted: its tasks are gone
      batch.done = true;
      return batch;
    }
    if (quiet || overflowed) newest = host_->session->size() - 1;
    backlog_ = newest;
    if (auto read = emit_until(newest, batch); !read) {
      batch.text() += sse_frame(Json{{"type", "stream_error"}, {"error", {{"code", read.error().code}, {"message", read.error().message}}}});
      batch.done = true;
      return batch;
    }
    // Bounded batches: more is read at the next take, which the server asks
    // for at once after writing this one.
    if (last_read_ < backlog_ && !events_.done() && wakeup_) wakeup_();
    batch.done = events_.done();
    return batch;
  }

  std::string final_frame() override { return ""; }

 private:
  Status emit_until(std::int64_t until, Batch& batch) {
    std::string& out = batch.text();
    while (last_read_ < until && !events_.done() && out.size() < kBatchBytes) {
      auto lines = host_->session->get_log(last_read_, static_cast<std::size_t>(std::min<std::int64_t>(until - last_read_, 256)));
      if (!lines) return std::unexpected(lines.error());
      if (lines->empty()) break;
      for (const auto& line : *lines) {
        last_read_ = line.seq;
        events_.feed(line.seq, Json::parse(line.json, nullptr, false), out);
        if (events_.done() || out.size() >= kBatchBytes) break;
      }
    }
    return {};
  }

  std::shared_ptr<SessionHost> host_;
  std::shared_ptr<StreamHub::Inbox> inbox_ = std::make_shared<StreamHub::Inbox>();
  TaskEvents events_;
  std::int64_t last_read_;
  std::int64_t backlog_ = -1;  // the newest seq known to be there
  std::string initial_;
  bool end_now_;
  bool first_ = true;
  std::function<void()> wakeup_;
};

// ---- the operations, shared by both bindings ---------------------------------------------

// The task's answer once it has settled (ended, or waits for input) or a
// limit passed, fulfilling a deferred reply: the wait holds no thread, only
// a listener on the ref's events. The log, not the harness's state, says
// whether the task settled (an operation's end is in the log before its
// run_end is announced).
class Settling : public std::enable_shared_from_this<Settling> {
 public:
  using Answer = std::function<Reply(const A2aResult<TaskView>&)>;

  // `until_end`: only the task's end settles it (a cancel), not a wait for input.
  static std::shared_ptr<DeferredReply> start(std::shared_ptr<SessionHost> host, TaskView view,
                                              std::chrono::milliseconds limit, std::shared_ptr<WorkQueue> work,
                                              Answer answer, bool until_end = false) {
    auto settling = std::make_shared<Settling>(Key{}, std::move(host), view.id, std::move(work), std::move(answer),
                                               until_end);
    if (settling->settled(view)) {
      settling->deferred_->fulfil(settling->answer_(view));
      return settling->deferred_;
    }
    auto ref = settling->host_->harness->ref(view.id.ref);
    if (!ref) {
      settling->deferred_->fulfil(settling->answer_(view));
      return settling->deferred_;
    }
    const std::string run = view.id.run;
    std::weak_ptr<Settling> weak = settling;
    Subscription subscription = ref->on_event([weak, run](const Event& event) {
      auto self = weak.lock();
      if (!self) return;
      const bool ours = event.run_id == run &&
                        (event.type == EventType::run_end || event.type == EventType::input_requested ||
                         event.type == EventType::run_cancel);
      // A client gone: let go of the listener at the ref's next event.
      if (ours || self->deferred_->abandoned()) self->check_soon(false);
    });
    {
      // It keeps itself until it settles; the limit's timer holds it weakly.
      std::lock_guard lock(settling->mu_);
      if (!settling->finished_.load()) {
        settling->subscription_ = std::move(subscription);
        settling->self_ = settling;
      }
    }
    // What happened before the listener was there.
    settling->check_soon(false);
    const bool timed = settling->work_->post_after(limit, [weak] {
      if (auto self = weak.lock()) self->check(true);
    });
    if (!timed) {
      settling->deferred_->fulfil(Reply{error_response(503, "closed", "the server is stopping")});
      settling->finish();
    }
    return settling->deferred_;
  }

 private:
  struct Key {
    explicit Key() = default;
  };

 public:
  // start()'s alone: Key is private.
  Settling(Key, std::shared_ptr<SessionHost> host, TaskId id, std::shared_ptr<WorkQueue> work, Answer answer,
           bool until_end)
      : host_(std::move(host)), id_(std::move(id)), work_(std::move(work)), answer_(std::move(answer)), until_end_(until_end) {}

 private:
  bool settled(const TaskView& view) const { return view.terminal() || (!until_end_ && view.interrupted()); }

  void check_soon(bool final) {
    if (!work_->post([self = shared_from_this(), final] { self->check(final); })) finish();
  }

  // On a worker.
  void check(bool final) {
    if (finished_.load()) return;
    if (deferred_->abandoned()) return finish();
    auto read = read_task(*host_->session, id_);
    A2aResult<TaskView> view = [&]() -> A2aResult<TaskView> {
      if (!read) return std::unexpected(internal(read.error().message));
      if (!*read) return std::unexpected(task_not_found(id_.id()));
      return std::move(**read);
    }();
    if (view && !settled(*view) && !final) return;
    deferred_->fulfil(answer_(view));
    finish();
  }

  void finish() {
    finished_.store(true);
    Subscription gone;
    std::shared_ptr<Settling> last;  // may be the last hold: let go after the lock
    std::lock_guard lock(mu_);
    gone = std::move(subscription_);
    last = std::move(self_);
  }

  std::shared_ptr<SessionHost> host_;
  TaskId id_;
  std::shared_ptr<WorkQueue> work_;
  Answer answer_;
  bool until_end_;
  std::shared_ptr<DeferredReply> deferred_ = std::make_shared<DeferredReply>();
  std::atomic<bool> finished_{false};
  std::mutex mu_;
  Subscription subscription_;
  std::shared_ptr<Settling> self_;  // set while it waits
};

// A message's parts: its text (text parts joined) and its first data part.
struct MessageParts {
  std::string text;
  Json data;
};

A2aResult<MessageParts> read_parts(const Fields& message) {
  A2A_TRY(parts, message.array("parts"));
  MessageParts out;
  if (!parts) return out;
  for (std::size_t i = 0; i < parts->size(); ++i) {
    A2A_TRY(part, Fields::of((*parts)[i], fmt::format("{}[{}]", message.path("parts"), i)));
    A2A_TRY(text, part.string("text"));
    if (part.find("text")) out.text += (out.text.empty() ? "" : "\n") + text;
    if (const Json* data = part.find("data"); data && out.data.is_null()) out.data = *data;
  }
  return out;
}

struct Service {
  SessionPool& pool;
  Metrics& metrics;
  std::shared_ptr<WorkQueue> work;

  A2aResult<std::shared_ptr<SessionHost>> host(const std::string& session) {
    auto found = pool.get(session);
    if (!found) return std::unexpected(found.error().is(Errc::not_found) ? task_not_found(session) : from_error(found.error()));
    return *found;
  }

  A2aResult<TaskView> read(const SessionHost& target, const TaskId& id, std::optional<std::int64_t> until = std::nullopt) {
    auto view = read_task(*target.session, id, until);
    if (!view) return std::unexpected(internal(view.error().message));
    if (!*view) return std::unexpected(task_not_found(id.id()));
    return std::move(**view);
  }

  A2aResult<std::pair<std::shared_ptr<SessionHost>, TaskView>> task(std::string_view id) {
    A2A_TRY(parsed, parse_task(id));
    A2A_TRY(found, host(parsed.session));
    A2A_TRY(view, read(*found, parsed));
    return std::pair{found, std::move(view)};
  }

  struct Sent {
    std::shared_ptr<SessionHost> host;
    TaskView view;
  };

  A2aResult<Sent> send(const Fields& params) {
    A2A_TRY(message_fields, params.object("message"));
    if (!message_fields) return std::unexpected(invalid_params(fmt::format("{} is required", params.path("message"))));
    const Fields& message = *message_fields;
    A2A_TRY(message_id, message.string("messageId"));
    if (message_id.empty()) return std::unexpected(invalid_params(fmt::format("{} is required", message.path("messageId"))));
    A2A_TRY(parts, read_parts(message));
    A2A_TRY(task_id, message.string("taskId"));
    A2A_TRY(context, message.string("contextId"));
    std::optional<std::pair<std::string, std::string>> named_context;
    if (!context.empty()) {
      A2A_TRY(parsed, parse_context(context));
      named_context = std::move(parsed);
    }
    if (!task_id.empty()) return continue_task(task_id, named_context, parts);
    if (parts.text.empty()) return std::unexpected(invalid_params("the message has no text part to prompt with"));

    std::shared_ptr<SessionHost> target;
    std::string ref_name = "main";
    if (named_context) {
      A2A_TRY(found, host(named_context->first));
      target = found;
      ref_name = named_context->second;
      if (!target->harness->ref(ref_name)) {
        auto made = target->harness->create_ref(ref_name, target->session->leaf("main"));
        if (!made && !made.error().is(Errc::ref_exists)) return std::unexpected(from_error(made.error()));
      }
    } else {
      auto created = pool.create(CreateOptions{.cwd = pool.factory().default_cwd().string()});
      if (!created) return std::unexpected(from_error(created.error()));
      target = *created;
    }
    auto ref = target->harness->ref(ref_name);
    if (!ref) return std::unexpected(task_not_found(ref_name));
    OperationStart start = start_and_wait(pool, metrics, target, *ref, {EventType::run_start},
                                          [text = parts.text](AgentRef& r) { return r.prompt(text); });
    if (!start.started || !start.started->run_id) {
      const Error error = start.done && start.done->error ? *start.done->error : Error{Errc::internal_error, "the run did not start"};
      return std::unexpected(from_error(error));
    }
    A2A_TRY(view, read(*target, TaskId{target->session->id(), ref_name, *start.started->run_id}));
    return Sent{target, std::move(view)};
  }

  A2aResult<Sent> continue_task(const std::string& task_id, const std::optional<std::pair<std::string, std::string>>& context,
                                const MessageParts& parts) {
    A2A_TRY(parsed, parse_task(task_id));
    // A task belongs to one context: a message may not name a context and
    // act on another's task.
    if (context && (context->first != parsed.session || context->second != parsed.ref)) {
      return std::unexpected(invalid_params(fmt::format("task {} is not in context {}/{}", shown(task_id),
                                                        shown(context->first), shown(context->second))));
    }
    A2A_TRY(target, host(parsed.session));
    A2A_TRY(view, read(*target, parsed));
    auto ref = target->harness->ref(view.id.ref);
    if (!ref) return std::unexpected(task_not_found(task_id));
    if (view.terminal()) {
      return std::unexpected(unsupported(fmt::format("task {} has ended ({}); send a new message in its context", view.id.id(), view.state)));
    }
    if (view.interrupted()) {
      // The answer to what the task waits for.
      const Json no_data = Json::object();
      const Fields data(parts.data.is_object() ? parts.data : no_data, "params.message.parts[].data");
      if (!parts.data.is_null() && !parts.data.is_object()) {
        return std::unexpected(invalid_params("params.message.parts[].data must be an object"));
      }
      A2A_TRY(request_id, data.string("requestId"));
      if (request_id.empty()) request_id = view.pending.begin()->first;
      auto it = view.pending.find(request_id);
      if (it == view.pending.end()) {
        return std::unexpected(invalid_params(fmt::format("the task waits for no request {}", shown(request_id))));
      }
      const bool question = it->second.value("kind", "") == "question";
      A2A_TRY(decision, data.string("decision"));
      A2A_TRY(reason, data.string("reason"));
      A2A_TRY(answer, data.string("answer"));
      A2A_TRY(arguments, data.object("arguments"));
      InputResponse response;
      response.by = "a2a";
      if (decision.empty()) {
        std::string lowered = parts.text;
        std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
        const bool yes = lowered == "allow" || lowered == "yes" || lowered == "y" || lowered == "approve" || lowered == "ok";
        decision = question ? "answer" : yes ? "allow" : "deny";
      }
      if (decision == "allow") {
        response.decision = InputResponse::Decision::allow;
        if (arguments) response.arguments = *data.find("arguments");
      } else if (decision == "deny") {
        response.decision = InputResponse::Decision::deny;
        if (reason.empty()) reason = parts.text;
        if (!reason.empty()) response.reason = reason;
      } else if (decision == "answer") {
        response.decision = InputResponse::Decision::answer;
        response.answer = data.find("answer") ? answer : parts.text;
      } else {
        return std::unexpected(invalid_params(fmt::format("{} must be allow, deny or answer", data.path("decision"))));
      }
      auto answered = ref->respond(request_id, std::move(response));
      if (!answered.ok()) return std::unexpected(from_error(answered.error.value_or(Error{Errc::internal_error, "not answered"})));
      if (ref->pending_inputs().empty()) pool.run_detached(target, [r = *ref]() mutable { (void)r.resume(); });
    } else {
      if (parts.text.empty()) return std::unexpected(invalid_params("the message has no text part to steer with"));
      auto steered = ref->steer(parts.text);
      if (!steered.ok()) return std::unexpected(from_error(steered.error.value_or(Error{Errc::internal_error, "not steered"})));
    }
    A2A_TRY(fresh, read(*target, view.id));
    return Sent{target, std::move(fresh)};
  }

  A2aResult<Json> list(const std::string& context, const std::string& status, std::int64_t page_size, std::int64_t offset,
                       std::optional<std::int64_t> history) {
    std::vector<std::pair<std::shared_ptr<SessionHost>, std::string>> refs;  // host, ref
    if (!context.empty()) {
      A2A_TRY(parsed, parse_context(context));
      A2A_TRY(found, host(parsed.first));
      refs.emplace_back(found, parsed.second);
    } else {
      auto headers = pool.list();
      if (!headers) return std::unexpected(from_error(headers.error()));
      for (const auto& header : *headers) {
        auto found = pool.get(header.id);
        if (!found) continue;  // held by another process: its tasks are that one's to list
        for (const auto& info : (*found)->session->refs()) refs.emplace_back(*found, info.name);
      }
    }
    std::vector<Json> tasks;
    for (const auto& [target, ref] : refs) {
      HarnessQuery query{.type = RecordType::operation_started, .ref = ref};
      for (;;) {
        auto page = target->session->find_harness_entries(query);
        if (!page) return std::unexpected(internal(page.error().message));
        for (const auto& record : page->items) {
          auto view = read_task(*target->session, TaskId{target->session->id(), ref, record.id});
          if (!view) return std::unexpected(internal(view.error().message));
          if (!*view) continue;  // not a run
          if (!status.empty() && (*view)->state != status) continue;
          tasks.push_back((*view)->task(history.value_or(0)));
        }
        if (!page->next_cursor) break;
        query.cursor = page->next_cursor;
      }
    }
    std::stable_sort(tasks.begin(), tasks.end(), [](const Json& a, const Json& b) {
      return a["status"].value("timestamp", "") > b["status"].value("timestamp", "");
    });
    Json page = Json::array();
    const auto begin = static_cast<std::size_t>(std::max<std::int64_t>(offset, 0));
    for (std::size_t i = begin; i < tasks.size() && page.size() < static_cast<std::size_t>(page_size); ++i) page.push_back(tasks[i]);
    const std::size_t next = begin + page.size();
    return Json{{"tasks", std::move(page)},
                {"nextPageToken", next < tasks.size() ? std::to_string(next) : ""},
                {"pageSize", page_size},
                {"totalSize", tasks.size()}};
  }

  // Aborts the task; the reply once it has ended (durably: its
  // operation_finished is in the log), or after a while.
  A2aResult<std::shared_ptr<DeferredReply>> cancel(std::string_view id, std::function<Reply(const A2aResult<TaskView>&)> answer) {
    A2A_TRY(found, task(id));
    auto& [target, view] = found;
    if (view.terminal()) return std::unexpected(not_cancelable(fmt::format("task {} has ended ({})", view.id.id(), view.state)));
    auto ref = target->harness->ref(view.id.ref);
    if (!ref) return std::unexpected(task_not_found(id));
    AbortResult aborted = ref->abort();
    if (!aborted.ok()) return std::unexpected(from_error(aborted.error.value_or(Error{Errc::internal_error, "not aborted"})));
    A2A_TRY(fresh, read(*target, view.id));
    return Settling::start(target, std::move(fresh), kCancelLimit, work, std::move(answer), /*until_end=*/true);
  }

  // The stream of a task: `from_start` replays its records from its start
  // (a streaming send); else from `cursor` (Last-Event-ID), or live from now.
  A2aResult<std::shared_ptr<LiveStream>> stream(std::shared_ptr<SessionHost> target, TaskView view, bool from_start,
                                                std::optional<std::int64_t> cursor, std::optional<Json> rpc_id) {
    const std::int64_t head = target->session->size() - 1;
    if (cursor && *cursor > head) {
      return std::unexpected(invalid_params(fmt::format("Last-Event-ID {} is past the session's newest record (seq {})", *cursor, head)));
    }
    if (!from_start && !cursor && view.terminal()) {
      return std::unexpected(unsupported(fmt::format("task {} has ended ({}); GetTask reads it", view.id.id(), view.state)));
    }
    std::int64_t from = view.last_seq;
    if (from_start) {
      from = view.start_seq;
    } else if (cursor) {
      from = std::max(*cursor, view.start_seq);
    }
    // The task as submitted, then its records up to `from` fed without a
    // word: what follows is decided as it was for a client that watched from
    // the start (an answer held until the next record, say).
    const bool ended_before = !from_start && view.terminal() && from >= view.last_seq;
    A2A_TRY(submitted, read(*target, view.id, view.start_seq));
    submitted.last_seq = view.start_seq;
    TaskEvents events(std::move(submitted), from, std::move(rpc_id));
    for (std::int64_t after = view.start_seq; after < from && !events.done();) {
      auto lines = target->session->get_log(after, static_cast<std::size_t>(std::min<std::int64_t>(from - after, 256)));
      if (!lines) return std::unexpected(internal(lines.error().message));
      if (lines->empty()) break;
      std::string said;
      for (const auto& line : *lines) {
        after = line.seq;
        events.feed(line.seq, Json::parse(line.json, nullptr, false), said);
      }
      assert(said.empty() && "records at or before the cursor are the client's");
    }
    // The snapshot is what the log says at the cursor.
    TaskView snapshot = events.view();
    if (!snapshot.terminal()) snapshot.last_seq = from;
    std::string first = events.frame(Json{{"task", snapshot.task(std::nullopt)}}, std::nullopt);
    return std::shared_ptr<LiveStream>(std::make_shared<TaskStream>(std::move(target), std::move(events), from,
                                                                    std::move(first), ended_before));
  }
};

bool version_ok(const HttpRequest& request) {
  auto version = request.header("a2a-version");
  return !version || version->empty() || *version == "1.0" || version->starts_with("1.0.");
}

// The task states a ListTasks filter may name.
bool known_state(const std::string& state) {
  static const std::set<std::string> states = {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED",
                                               "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_INPUT_REQUIRED",
                                               "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED"};
  return states.contains(state);
}

// ListTasks' parameters, from either binding.
struct ListParams {
  std::string context, status;
  std::int64_t page_size = 50, offset = 0;
  std::optional<std::int64_t> history;
};

A2aResult<ListParams> list_params(const Fields& fields) {
  ListParams out;
  A2A_TRY(context, fields.string("contextId"));
  A2A_TRY(status, fields.string("status"));
  A2A_TRY(size, fields.integer("pageSize"));
  A2A_TRY(token, fields.string("pageToken"));
  A2A_TRY(history, fields.integer("historyLength"));
  out.context = std::move(context);
  out.status = status == "TASK_STATE_UNSPECIFIED" || status == "UNRECOGNIZED" ? std::string() : std::move(status);
  if (!out.status.empty() && !known_state(out.status)) {
    return std::unexpected(invalid_params(fmt::format("{} is not a task state", fields.path("status"))));
  }
  if (size) out.page_size = *size;
  if (out.page_size < 1 || out.page_size > 100) {
    return std::unexpected(invalid_params(fmt::format("{} must be 1 to 100", fields.path("pageSize"))));
  }
  if (!token.empty()) {
    auto offset = Fields::parse_integer(token);
    if (!offset || *offset < 0) return std::unexpected(invalid_params(fmt::format("{} is not one of ours", fields.path("pageToken"))));
    out.offset = *offset;
  }
  out.history = history;
  return out;
}

// The JSON-RPC `id`: a string, a number or null (an object or array would be
// echoed back whole).
bool valid_rpc_id(const Json& id) { return id.is_string() || id.is_number() || id.is_null(); }

}  // namespace

// ---- the card ---------------------------------------------------------------------------

Reply A2a::card(const HttpRequest& request) const {
  std::string host = request.header("host").value_or("127.0.0.1");
  // A Host header is the client's: only what a host name may hold goes into the card.
  if (host.empty() || host.size() > 255 ||
      !std::all_of(host.begin(), host.end(), [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']'; })) {
    host = "127.0.0.1";
  }
  const std::string base = fmt::format("http://{}", host);
  Json card = {
      {"name", "cairn"},
      {"description", "A durable coding agent: every decision is in a session log before it acts, so a task survives "
                      "crashes and restarts, and no effect happens twice."},
      {"version", CAIRN_VERSION_STRING},
      {"supportedInterfaces", Json::array({{{"url", base + "/a2a/jsonrpc"}, {"protocolBinding", "JSONRPC"}, {"protocolVersion", "1.0"}},
                                           {{"url", base + "/a2a/rest"}, {"protocolBinding", "HTTP+JSON"}, {"protocolVersion", "1.0"}}})},
      {"capabilities",
       {{"streaming", true},
        {"pushNotifications", false},
        {"extendedAgentCard", false},
        {"extensions", Json::array({{{"uri", kSeqExtension},
                                     {"description", "Each update of a stream announces one log record: its seq is in "
                                                     "metadata[\"cairn.seq\"] and is the update's SSE id; a task object's "
                                                     "metadata[\"cairn.snapshotSeq\"] is the newest record it reflects. "
                                                     "SubscribeToTask with Last-Event-ID: SEQ gives the task as the log "
                                                     "says at SEQ, then its updates after it"},
                                     {"required", false}}})}}},
      {"securitySchemes", {{"bearer", {{"httpAuthSecurityScheme", {{"scheme", "Bearer"}, {"description", "a token of cairn serve's token file"}}}}}}},
      {"securityRequirements", Json::array({{{"schemes", {{"bearer", {{"list", Json::array()}}}}}}})},
      {"defaultInputModes", {"text/plain", "application/json"}},
      {"defaultOutputModes", {"text/plain", "application/json"}},
      {"skills", Json::array({{{"id", "coding"},
                               {"name", "Coding agent"},
                               {"description", "Reads, edits and runs code in the session's directory, asking before it acts where its approval policy says so"},
                               {"tags", {"coding", "durable"}}}})}};
  return Reply{json_response(200, card)};
}

// ---- JSON-RPC ---------------------------------------------------------------------------

Reply A2a::jsonrpc(const HttpRequest& request) {
  Json id = nullptr;
  auto fail_with = [&](const A2aError& error) {
    const int status = error.http >= 500 ? error.http : 200;
    Json body = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", error.code}, {"message", error.message}}}};
    if (*error.reason) body["error"]["data"] = error_info(error);
    return Reply{json_response(status, body)};
  };
  if (request.method != "POST") return Reply{error_response(405, "method_not_allowed", "the JSON-RPC binding takes POST")};
  auto parsed = parse_request_json(request.body);
  if (!parsed) return fail_with({-32700, "PARSE_ERROR", 400, "INVALID_ARGUMENT", parsed.error().message});
  const Json& call = *parsed;
  if (!call.is_object()) return fail_with(invalid_request("not a JSON-RPC 2.0 request: not an object"));
  if (auto it = call.find("id"); it != call.end()) {
    if (!valid_rpc_id(*it)) return fail_with(invalid_request("id must be a string, a number or null"));
    id = *it;
  }
  const Fields envelope(call, "request");
  auto version = envelope.string("jsonrpc");
  auto method_name = envelope.string("method");
  if (!version || *version != "2.0" || !method_name || method_name->empty()) {
    return fail_with(invalid_request("not a JSON-RPC 2.0 request: jsonrpc must be \"2.0\" and method a string"));
  }
  if (!version_ok(request)) return fail_with({-32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION", "this agent speaks A2A 1.0"});
  const std::string& method = *method_name;
  const Json no_params = Json::object();
  const Json* params_json = envelope.find("params");
  if (params_json && !params_json->is_object()) return fail_with(invalid_params("params must be an object"));
  const Fields params(params_json ? *params_json : no_params, "params");
  Service service{pool_, metrics_, work_};
  auto ok = [&](const Json& result) { return Reply{json_response(200, Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}})}; };
  auto history_of = [&](const Fields& fields) { return fields.integer("historyLength"); };

  if (method == "SendMessage") {
    auto configuration = params.object("configuration");
    if (!configuration) return fail_with(configuration.error());
    const Fields config = configuration->value_or(Fields(no_params, "params.configuration"));
    auto immediately = config.boolean("returnImmediately");
    auto history = history_of(config);
    if (!immediately) return fail_with(immediately.error());
    if (!history) return fail_with(history.error());
    auto sent = service.send(params);
    if (!sent) return fail_with(sent.error());
    if (immediately->value_or(false)) return ok(Json{{"task", sent->view.task(*history)}});
    auto reply_id = id;
    return Reply{.deferred = Settling::start(sent->host, std::move(sent->view), kBlockingSendLimit, work_,
                                             [reply_id, history = *history](const A2aResult<TaskView>& view) {
                                               Json body = {{"jsonrpc", "2.0"}, {"id", reply_id}};
                                               if (view) {
                                                 body["result"] = Json{{"task", view->task(history)}};
                                               } else {
                                                 body["error"] = {{"code", view.error().code}, {"message", view.error().message}};
                                               }
                                               return Reply{json_response(200, body)};
                                             })};
  }
  if (method == "SendStreamingMessage") {
    auto sent = service.send(params);
    if (!sent) return fail_with(sent.error());
    auto live = service.stream(sent->host, std::move(sent->view), true, std::nullopt, id);
    if (!live) return fail_with(live.error());
    return Reply{.stream = std::move(*live)};
  }
  if (method == "GetTask" || method == "CancelTask" || method == "SubscribeToTask") {
    auto task_id = params.string("id");
    if (!task_id) return fail_with(task_id.error());
    if (task_id->empty()) return fail_with(invalid_params("params.id is required"));
    if (method == "GetTask") {
      auto history = history_of(params);
      if (!history) return fail_with(history.error());
      auto found = service.task(*task_id);
      if (!found) return fail_with(found.error());
      return ok(found->second.task(*history));
    }
    if (method == "CancelTask") {
      auto reply_id = id;
      auto cancelled = service.cancel(*task_id, [reply_id](const A2aResult<TaskView>& view) {
        Json body = {{"jsonrpc", "2.0"}, {"id", reply_id}};
        if (view) {
          body["result"] = view->task(std::nullopt);
        } else {
          body["error"] = {{"code", view.error().code}, {"message", view.error().message}};
        }
        return Reply{json_response(200, body)};
      });
      if (!cancelled) return fail_with(cancelled.error());
      return Reply{.deferred = std::move(*cancelled)};
    }
    auto cursor = last_event_id(request);
    if (!cursor) return fail_with(cursor.error());
    auto found = service.task(*task_id);
    if (!found) return fail_with(found.error());
    auto live = service.stream(found->first, std::move(found->second), false, *cursor, id);
    if (!live) return fail_with(live.error());
    return Reply{.stream = std::move(*live)};
  }
  if (method == "ListTasks") {
    auto listed_params = list_params(params);
    if (!listed_params) return fail_with(listed_params.error());
    auto listed = service.list(listed_params->context, listed_params->status, listed_params->page_size,
                               listed_params->offset, listed_params->history);
    if (!listed) return fail_with(listed.error());
    return ok(*listed);
  }
  return fail_with({-32601, "METHOD_NOT_FOUND", 400, "INVALID_ARGUMENT", fmt::format("no method {}", shown(method))});
}

// ---- HTTP+JSON ----------------------------------------------------------------------------

namespace {

Reply rest_error(const A2aError& error) {
  Json body = {{"error", {{"code", error.http}, {"status", error.status}, {"message", error.message}}}};
  if (*error.reason) body["error"]["details"] = error_info(error);
  return Reply{json_response(error.http, body)};
}

}  // namespace

Reply A2a::rest(const HttpRequest& request, std::string_view path) {
  // The route and its method first: a request the binding does not take is
  // refused as any other route refuses it, whatever version it names.
  const bool version_refused = !version_ok(request);
  const Reply refused_version = rest_error({-32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION", "this agent speaks A2A 1.0"});
  Service service{pool_, metrics_, work_};
  auto answer_with = [](const A2aResult<TaskView>& view, std::optional<std::int64_t> history, bool wrapped) {
    if (!view) return rest_error(view.error());
    Json task = view->task(history);
    return Reply{json_response(200, wrapped ? Json{{"task", std::move(task)}} : std::move(task))};
  };
  if (path == "/message:send" || path == "/message:stream") {
    if (request.method != "POST") return Reply{error_response(405, "method_not_allowed", "POST only")};
    if (version_refused) return refused_version;
    Json parsed = Json::object();
    if (!request.body.empty()) {
      auto body = parse_request_json(request.body);
      if (!body) return rest_error(invalid_params(body.error().message));
      parsed = std::move(*body);
    }
    auto params = Fields::of(parsed, "body");
    if (!params) return rest_error(params.error());
    auto configuration = params->object("configuration");
    if (!configuration) return rest_error(configuration.error());
    const Json none = Json::object();
    const Fields config = configuration->value_or(Fields(none, "body.configuration"));
    auto immediately = config.boolean("returnImmediately");
    auto history = config.integer("historyLength");
    if (!immediately) return rest_error(immediately.error());
    if (!history) return rest_error(history.error());
    auto sent = service.send(*params);
    if (!sent) return rest_error(sent.error());
    if (path == "/message:stream") {
      auto live = service.stream(sent->host, std::move(sent->view), true, std::nullopt, std::nullopt);
      if (!live) return rest_error(live.error());
      return Reply{.stream = std::move(*live)};
    }
    if (immediately->value_or(false)) return answer_with(sent->view, *history, true);
    return Reply{.deferred = Settling::start(sent->host, std::move(sent->view), kBlockingSendLimit, work_,
                                             [answer_with, history = *history](const A2aResult<TaskView>& view) {
                                               return answer_with(view, history, true);
                                             })};
  }
  // Query parameters, as a JSON object read like a body's.
  Json query = Json::object();
  for (const auto& [key, value] : request.query) query[key] = value;
  const Fields query_fields(query, "query");
  if (path == "/tasks") {
    if (request.method != "GET") return Reply{error_response(405, "method_not_allowed", "GET only")};
    if (version_refused) return refused_version;
    auto listed_params = list_params(query_fields);
    if (!listed_params) return rest_error(listed_params.error());
    auto listed = service.list(listed_params->context, listed_params->status, listed_params->page_size,
                               listed_params->offset, listed_params->history);
    if (!listed) return rest_error(listed.error());
    return Reply{json_response(200, *listed)};
  }
  if (path.starts_with("/tasks/")) {
    std::string_view rest_of = path.substr(7);
    std::string verb;
    // The verb follows the last ':' (a run id has none).
    if (const auto colon = rest_of.rfind(':'); colon != std::string_view::npos) {
      const std::string_view candidate = rest_of.substr(colon + 1);
      if (candidate == "cancel" || candidate == "subscribe") {
        verb = candidate;
        rest_of = rest_of.substr(0, colon);
      }
    }
    bool decoded = false;
    const std::string id = percent_decode(rest_of, decoded);
    if (!decoded) return rest_error(invalid_params("bad percent-encoding in the task id"));
    if (verb.empty()) {
      if (request.method != "GET") return Reply{error_response(405, "method_not_allowed", "GET only")};
      if (version_refused) return refused_version;
      auto history = query_fields.integer("historyLength");
      if (!history) return rest_error(history.error());
      auto found = service.task(id);
      if (!found) return rest_error(found.error());
      return answer_with(found->second, *history, false);
    }
    if (verb == "cancel") {
      if (request.method != "POST") return Reply{error_response(405, "method_not_allowed", "POST only")};
      if (version_refused) return refused_version;
      auto cancelled = service.cancel(id, [answer_with](const A2aResult<TaskView>& view) { return answer_with(view, std::nullopt, false); });
      if (!cancelled) return rest_error(cancelled.error());
      return Reply{.deferred = std::move(*cancelled)};
    }
    // subscribe: the spec says GET, the JS client sends POST.
    if (request.method != "GET" && request.method != "POST") return Reply{error_response(405, "method_not_allowed", "GET or POST")};
    if (version_refused) return refused_version;
    auto cursor = last_event_id(request);
    if (!cursor) return rest_error(cursor.error());
    auto found = service.task(id);
    if (!found) return rest_error(found.error());
    auto live = service.stream(found->first, std::move(found->second), false, *cursor, std::nullopt);
    if (!live) return rest_error(live.error());
    return Reply{.stream = std::move(*live)};
  }
  return Reply{error_response(404, "no_route", fmt::format("no A2A route {}", shown(path)))};
}

}  // namespace cairn::serve
