#include "a2a.hpp"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "cairn/log/ids.hpp"
#include "cairn/version.hpp"
#include "json_views.hpp"
#include "stream_hub.hpp"

namespace cairn::serve {

namespace {

using namespace std::chrono_literals;

constexpr std::string_view kSeqExtension = "https://github.com/cairn-harness/cairn/a2a/seq-cursor/v1";

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
A2aError not_cancelable(std::string message) { return {-32002, "TASK_NOT_CANCELABLE", 400, "FAILED_PRECONDITION", std::move(message)}; }
A2aError unsupported(std::string message) { return {-32004, "UNSUPPORTED_OPERATION", 400, "FAILED_PRECONDITION", std::move(message)}; }
A2aError invalid_params(std::string message) { return {-32602, "INVALID_PARAMS", 400, "INVALID_ARGUMENT", std::move(message)}; }
A2aError internal(std::string message) { return {-32603, "", 500, "INTERNAL", std::move(message)}; }
A2aError from_error(const Error& error) {
  if (error.code == "not_found" || error.code == "unknown_ref") return task_not_found(error.message);
  if (error.code == "locked" || error.code == "busy" || error.code == "operation_open" || error.code == "already_resolved") {
    return unsupported(error.message);
  }
  if (error.code.starts_with("invalid") || error.code.starts_with("unknown")) return invalid_params(error.message);
  return internal(fmt::format("{}: {}", error.code, error.message));
}

Json error_info(const A2aError& error) {
  return Json::array({{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"}, {"reason", error.reason}, {"domain", "a2a-protocol.org"}}});
}

template <class T>
using A2aResult = std::expected<T, A2aError>;

// ---- ids -------------------------------------------------------------------------------

struct TaskId {
  std::string session, ref, run;
  std::string context() const { return session + "/" + ref; }
  std::string id() const { return context() + "/" + run; }
};

std::optional<std::pair<std::string, std::string>> parse_context(std::string_view id) {
  const auto slash = id.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= id.size()) return std::nullopt;
  return std::pair{std::string(id.substr(0, slash)), std::string(id.substr(slash + 1))};
}

std::optional<TaskId> parse_task(std::string_view id) {
  const auto last = id.rfind('/');
  if (last == std::string_view::npos) return std::nullopt;
  auto context = parse_context(id.substr(0, last));
  if (!context || last + 1 >= id.size()) return std::nullopt;
  return TaskId{context->first, context->second, std::string(id.substr(last + 1))};
}

// ---- tasks from the log ----------------------------------------------------------------

std::string text_of_content(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const auto& block : content) {
      if (block.is_object() && block.value("type", "") == "text") text += block.value("text", "");
    }
  }
  return text;
}

Json agent_message(const TaskId& task, std::string message_id, const std::string& text, const Json& data = nullptr) {
  Json parts = Json::array();
  if (!text.empty()) parts.push_back({{"text", text}});
  if (!data.is_null()) parts.push_back({{"data", data}, {"mediaType", "application/json"}});
  return {{"messageId", std::move(message_id)}, {"contextId", task.context()}, {"taskId", task.id()},
          {"role", "ROLE_AGENT"}, {"parts", std::move(parts)}};
}

Json input_request_json(const Json& record) {
  Json request = {{"requestId", record.value("id", "")}, {"kind", record.value("kind", "")},
                  {"toolCallId", record.value("toolCallId", "")}, {"toolName", record.value("toolName", "")},
                  {"arguments", record.contains("arguments") ? record["arguments"] : Json::object()}};
  for (const char* key : {"rule", "question", "choices"}) {
    if (record.contains(key)) request[key] = record[key];
  }
  return request;
}

std::string input_request_text(const Json& request) {
  if (request.value("kind", "") == "question") return request.value("question", std::string("a question"));
  return fmt::format("approve the call of {}? answer allow or deny (with a reason)", request.value("toolName", "a tool"));
}

// What a task's records say, folded in order.
struct TaskView {
  TaskId id;
  std::int64_t start_seq = -1;
  std::string state = "TASK_STATE_WORKING";
  std::string timestamp;
  std::string prompt;
  std::string prompt_id;
  std::vector<std::pair<std::string, std::string>> answers;  // assistant texts: entry id, text
  std::map<std::string, Json> pending;  // input requests not yet resolved, by id
  std::string error;
  std::string last_text;  // of the last assistant message folded
  Json last_calls = Json::array();  // its tool calls
  bool finished = false;
  std::int64_t last_seq = -1;

  bool terminal() const { return finished; }
  bool interrupted() const { return !finished && !pending.empty(); }

  // One record of the log, after start_seq; returns whether it was the task's.
  bool fold(const Json& record) {
    const std::string type = record.value("type", "");
    const std::string ref = record.contains("ref") && record["ref"].is_string() ? record["ref"].get<std::string>() : "main";
    if (ref != id.ref || finished) return false;
    const std::string run = record.value("runId", "");
    last_seq = record.value("seq", last_seq);
    timestamp = record.value("timestamp", timestamp);
    if (type == "message" && record.contains("message") && record["message"].is_object()) {
      const Json& message = record["message"];
      if (message.value("role", "") != "assistant") return false;
      const Json content = message.value("content", Json::array());
      last_text = text_of_content(content);
      last_calls = Json::array();
      if (content.is_array()) {
        for (const auto& block : content) {
          if (!block.is_object() || block.value("type", "") != "toolCall") continue;
          last_calls.push_back({{"id", block.value("id", "")}, {"name", block.value("name", "")},
                                {"arguments", block.contains("arguments") ? block["arguments"] : Json::object()}});
        }
      }
      if (!last_text.empty()) answers.emplace_back(record.value("id", ""), last_text);
      return !last_text.empty() || !last_calls.empty();
    }
    if (run != id.run) return false;
    if (type == "input_requested") {
      pending[record.value("id", "")] = input_request_json(record);
      state = "TASK_STATE_INPUT_REQUIRED";
      return true;
    }
    if (type == "input_resolved") {
      pending.erase(record.value("requestId", ""));
      if (pending.empty()) state = "TASK_STATE_WORKING";
      return true;
    }
    if (type == "operation_finished") {
      finished = true;
      pending.clear();
      const std::string outcome = record.value("outcome", "");
      state = outcome == "completed" ? "TASK_STATE_COMPLETED"
              : outcome == "failed"  ? "TASK_STATE_FAILED"
                                     : "TASK_STATE_CANCELED";
      if (record.contains("error") && record["error"].is_object()) {
        error = fmt::format("{}: {}", record["error"].value("code", ""), record["error"].value("message", ""));
      }
      return true;
    }
    return false;
  }

  std::string final_text() const { return answers.empty() ? std::string() : answers.back().second; }

  Json status() const {
    Json out = {{"state", state}, {"timestamp", timestamp}};
    if (interrupted()) {
      const Json& request = pending.begin()->second;
      out["message"] = agent_message(id, id.run + "-" + request.value("requestId", ""), input_request_text(request),
                                     Json{{"inputRequest", request}});
    } else if (state == "TASK_STATE_COMPLETED" && !answers.empty()) {
      out["message"] = agent_message(id, answers.back().first, final_text());
    } else if (state == "TASK_STATE_FAILED" && !error.empty()) {
      out["message"] = agent_message(id, id.run + "-error", error);
    }
    return out;
  }

  Json artifacts() const {
    Json out = Json::array();
    if (state == "TASK_STATE_COMPLETED" && !answers.empty()) {
      out.push_back({{"artifactId", id.run + "-answer"}, {"name", "answer"}, {"parts", Json::array({{{"text", final_text()}}})}});
    }
    return out;
  }

  Json task(std::optional<std::int64_t> history_length) const {
    Json history = Json::array();
    if (!prompt.empty()) {
      history.push_back({{"messageId", prompt_id.empty() ? id.run + "-prompt" : prompt_id}, {"contextId", id.context()},
                         {"taskId", id.id()}, {"role", "ROLE_USER"}, {"parts", Json::array({{{"text", prompt}}})}});
    }
    for (const auto& [entry, text] : answers) history.push_back(agent_message(id, entry, text));
    if (history_length && *history_length >= 0 && history.size() > static_cast<std::size_t>(*history_length)) {
      history.erase(history.begin(), history.end() - *history_length);
    }
    return {{"id", id.id()},
            {"contextId", id.context()},
            {"status", status()},
            {"artifacts", artifacts()},
            {"history", std::move(history)},
            {"metadata", {{"cairn.session", id.session}, {"cairn.ref", id.ref}, {"cairn.runId", id.run}, {"cairn.seq", last_seq}}}};
  }
};

// Reads the task's records from its operation_started on.
A2aResult<TaskView> read_task(Session& session, const TaskId& id) {
  auto start = session.seq_of(id.run);
  if (!start) return std::unexpected(task_not_found(id.id()));
  auto first = session.get_log(*start - 1, 1);
  if (!first || first->empty()) return std::unexpected(task_not_found(id.id()));
  const Json started = Json::parse(first->front().json, nullptr, false);
  if (!started.is_object() || started.value("type", "") != "operation_started" || started.value("ref", "") != id.ref ||
      !started.contains("intent") || started["intent"].value("kind", "") != "run") {
    return std::unexpected(task_not_found(id.id()));
  }
  TaskView view;
  view.id = id;
  view.start_seq = *start;
  view.last_seq = *start;
  view.timestamp = started.value("timestamp", "");
  if (const Json& initial = started["intent"].value("initialMessages", Json::array()); initial.is_array()) {
    for (const auto& entry : initial) {
      if (!entry.is_object() || !entry.contains("message")) continue;
      view.prompt += text_of_content(entry["message"].value("content", Json::array()));
      if (view.prompt_id.empty()) view.prompt_id = entry.value("id", "");
    }
  }
  for (std::int64_t after = *start; !view.finished;) {
    auto lines = session.get_log(after, 1024);
    if (!lines) return std::unexpected(internal(lines.error().message));
    if (lines->empty()) break;
    for (const auto& line : *lines) {
      view.fold(Json::parse(line.json, nullptr, false));
      after = line.seq;
      if (view.finished) break;
    }
  }
  return view;
}

// ---- the stream of a task --------------------------------------------------------------

// A task's events as A2A StreamResponses: the task first, then a status or
// artifact update for each of its records (with the record's seq as SSE id
// and in metadata), ending after a final or input-required status.
class TaskStream : public LiveStream {
 public:
  TaskStream(std::shared_ptr<SessionHost> host, TaskView view, std::int64_t cursor, std::optional<Json> rpc_id,
             std::string first_frame)
      : host_(std::move(host)), view_(std::move(view)), last_(cursor), rpc_id_(std::move(rpc_id)),
        initial_(std::move(first_frame)) {
    inbox_->ref = view_.id.ref;
    host_->hub->add(inbox_);
  }
  ~TaskStream() override { host_->hub->remove(inbox_.get()); }

  static std::string frame(const Json& response, const std::optional<Json>& rpc_id, std::optional<std::int64_t> seq) {
    Json data = rpc_id ? Json{{"jsonrpc", "2.0"}, {"id", *rpc_id}, {"result", response}} : response;
    return sse_frame(data, seq);
  }

  void set_wakeup(std::function<void()> wakeup) override {
    bool pending = false;
    {
      std::lock_guard lock(inbox_->mu);
      inbox_->wakeup = wakeup;
      pending = !inbox_->frames.empty();
    }
    if (pending && wakeup) wakeup();
  }

  Batch take(bool quiet) override {
    Batch batch;
    batch.text() = std::move(initial_);
    initial_.clear();
    if (done_) {
      batch.done = true;
      return batch;
    }
    // The first take reads what the log already holds (a run that went on,
    // or ended, before this stream was there); later ones what woke them.
    std::int64_t newest = std::exchange(first_, false) ? host_->session->size() - 1 : -1;
    bool overflowed = false;
    {
      std::lock_guard lock(inbox_->mu);
      for (const auto& frame : inbox_->take_frames()) {
        if (frame->seq) newest = std::max(newest, *frame->seq);
      }
      overflowed = inbox_->overflowed;
      inbox_->overflowed = false;
    }
    if (quiet || overflowed) newest = host_->session->size() - 1;
    if (newest > last_) emit_until(newest, batch);
    batch.done = done_;
    return batch;
  }

  std::string final_frame() override { return ""; }

  // The events of the records after last_ up to `until`, read from the log.
  void emit_until(std::int64_t until, Batch& batch) {
    while (last_ < until && !done_) {
      auto lines = host_->session->get_log(last_, static_cast<std::size_t>(std::min<std::int64_t>(until - last_, 1024)));
      if (!lines || lines->empty()) return;
      for (const auto& line : *lines) {
        last_ = line.seq;
        if (line.seq <= view_.start_seq) continue;
        const Json record = Json::parse(line.json, nullptr, false);
        const bool pending_before = view_.interrupted();
        if (!view_.fold(record)) continue;
        Json metadata = {{"cairn.seq", line.seq}};
        const std::string type = record.value("type", "");
        Json update;
        if (type == "message") {
          // What the agent said, and the tools it calls.
          Json status = {{"state", "TASK_STATE_WORKING"}, {"timestamp", view_.timestamp},
                         {"message", agent_message(view_.id, record.value("id", ""), view_.last_text,
                                                   view_.last_calls.empty() ? Json() : Json{{"toolCalls", view_.last_calls}})}};
          update = {{"statusUpdate", {{"taskId", view_.id.id()}, {"contextId", view_.id.context()}, {"status", status}, {"metadata", metadata}}}};
        } else if (type == "operation_finished") {
          if (view_.state == "TASK_STATE_COMPLETED" && !view_.answers.empty()) {
            batch.text() += frame({{"artifactUpdate", {{"taskId", view_.id.id()}, {"contextId", view_.id.context()},
                                                       {"artifact", view_.artifacts()[0]}, {"lastChunk", true},
                                                       {"metadata", metadata}}}},
                                 rpc_id_, std::nullopt);
          }
          update = {{"statusUpdate", {{"taskId", view_.id.id()}, {"contextId", view_.id.context()}, {"status", view_.status()}, {"metadata", metadata}}}};
          done_ = true;
        } else if (type == "input_requested" || type == "input_resolved") {
          if (type == "input_resolved" && (pending_before == view_.interrupted())) continue;  // others still wait
          update = {{"statusUpdate", {{"taskId", view_.id.id()}, {"contextId", view_.id.context()}, {"status", view_.status()}, {"metadata", metadata}}}};
          if (view_.interrupted()) done_ = true;  // as the SDK's servers do: the stream ends at input-required
        } else {
          continue;
        }
        batch.text() += frame(update, rpc_id_, line.seq);
        if (done_) return;
      }
    }
  }

 private:
  std::shared_ptr<SessionHost> host_;
  std::shared_ptr<StreamHub::Inbox> inbox_ = std::make_shared<StreamHub::Inbox>();
  TaskView view_;
  std::int64_t last_;
  std::optional<Json> rpc_id_;
  std::string initial_;
  bool first_ = true;
  bool done_ = false;
};

// ---- the operations, shared by both bindings ---------------------------------------------

struct Service {
  SessionPool& pool;
  Metrics& metrics;

  A2aResult<std::shared_ptr<SessionHost>> host(const std::string& session) {
    auto found = pool.get(session);
    if (!found) return std::unexpected(found.error().code == "not_found" ? task_not_found(session) : from_error(found.error()));
    return *found;
  }

  A2aResult<std::pair<std::shared_ptr<SessionHost>, TaskView>> task(std::string_view id) {
    auto parsed = parse_task(id);
    if (!parsed) return std::unexpected(task_not_found(id));
    auto found = host(parsed->session);
    if (!found) return std::unexpected(found.error());
    auto view = read_task(*(*found)->session, *parsed);
    if (!view) return std::unexpected(view.error());
    return std::pair{*found, std::move(*view)};
  }

  // Waits until the task no longer works (blocking sends, cancel).
  A2aResult<TaskView> settle(const std::shared_ptr<SessionHost>& host, const TaskId& id, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      bool working = false;
      for (const auto& status : host->harness->refs()) {
        if (status.name == id.ref && status.run && status.run->id == id.run &&
            status.run->status != OperationStatus::awaiting_input) {
          working = true;
        }
      }
      if (!working || std::chrono::steady_clock::now() > deadline) return read_task(*host->session, id);
      std::this_thread::sleep_for(10ms);
    }
  }

  struct Sent {
    std::shared_ptr<SessionHost> host;
    TaskView view;
  };

  A2aResult<Sent> send(const Json& params) {
    if (!params.is_object() || !params.contains("message") || !params["message"].is_object()) {
      return std::unexpected(invalid_params("params.message is required"));
    }
    const Json& message = params["message"];
    if (!message.contains("messageId") || !message["messageId"].is_string() || message["messageId"].get<std::string>().empty()) {
      return std::unexpected(invalid_params("message.messageId is required"));
    }
    std::string text;
    Json data;
    for (const auto& part : message.value("parts", Json::array())) {
      if (!part.is_object()) continue;
      if (part.contains("text") && part["text"].is_string()) text += (text.empty() ? "" : "\n") + part["text"].get<std::string>();
      if (part.contains("data") && data.is_null()) data = part["data"];
    }
    const std::string task_id = message.value("taskId", "");
    if (!task_id.empty()) return continue_task(task_id, text, data);
    if (text.empty()) return std::unexpected(invalid_params("the message has no text part to prompt with"));

    std::shared_ptr<SessionHost> target;
    std::string ref_name = "main";
    if (const std::string context = message.value("contextId", ""); !context.empty()) {
      auto parsed = parse_context(context);
      if (!parsed) return std::unexpected(invalid_params(fmt::format("contextId '{}' is not SESSION/REF", context)));
      auto found = host(parsed->first);
      if (!found) return std::unexpected(found.error());
      target = *found;
      ref_name = parsed->second;
      if (!target->harness->ref(ref_name)) {
        auto made = target->harness->create_ref(ref_name, target->session->leaf("main"));
        if (!made) return std::unexpected(from_error(made.error()));
      }
    } else {
      auto created = pool.create(CreateOptions{.cwd = pool.config().cwd.string()});
      if (!created) return std::unexpected(from_error(created.error()));
      target = *created;
    }
    auto ref = target->harness->ref(ref_name);
    if (!ref) return std::unexpected(task_not_found(ref_name));
    OperationStart start = start_and_wait(pool, metrics, target, *ref, {EventType::run_start},
                                          [text](AgentRef& r) { return r.prompt(text); });
    if (!start.started || !start.started->run_id) {
      const Error error = start.done && start.done->error ? *start.done->error : Error{Errc::internal_error, "the run did not start"};
      return std::unexpected(from_error(error));
    }
    TaskId id{target->session->id(), ref_name, *start.started->run_id};
    auto view = read_task(*target->session, id);
    if (!view) return std::unexpected(view.error());
    return Sent{target, std::move(*view)};
  }

  A2aResult<Sent> continue_task(const std::string& task_id, const std::string& text, const Json& data) {
    auto found = task(task_id);
    if (!found) return std::unexpected(found.error());
    auto& [target, view] = *found;
    auto ref = target->harness->ref(view.id.ref);
    if (!ref) return std::unexpected(task_not_found(task_id));
    if (view.terminal()) {
      return std::unexpected(unsupported(fmt::format("task {} has ended ({}); send a new message in its context", task_id, view.state)));
    }
    if (view.interrupted()) {
      // The answer to what the task waits for.
      std::string request_id = data.is_object() ? data.value("requestId", "") : "";
      if (request_id.empty()) request_id = view.pending.begin()->first;
      auto it = view.pending.find(request_id);
      if (it == view.pending.end()) return std::unexpected(invalid_params(fmt::format("the task waits for no request {}", request_id)));
      const bool question = it->second.value("kind", "") == "question";
      InputResponse response;
      response.by = "a2a";
      std::string decision = data.is_object() ? data.value("decision", "") : "";
      if (decision.empty()) {
        std::string lowered = text;
        std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
        const bool yes = lowered == "allow" || lowered == "yes" || lowered == "y" || lowered == "approve" || lowered == "ok";
        decision = question ? "answer" : yes ? "allow" : "deny";
      }
      if (decision == "allow") {
        response.decision = InputResponse::Decision::allow;
        if (data.is_object() && data.contains("arguments")) response.arguments = data["arguments"];
      } else if (decision == "deny") {
        response.decision = InputResponse::Decision::deny;
        std::string reason = data.is_object() ? data.value("reason", text) : text;
        if (!reason.empty()) response.reason = reason;
      } else if (decision == "answer") {
        response.decision = InputResponse::Decision::answer;
        response.answer = data.is_object() ? data.value("answer", text) : text;
      } else {
        return std::unexpected(invalid_params("decision must be allow, deny or answer"));
      }
      auto answered = ref->respond(request_id, std::move(response));
      if (!answered.ok()) return std::unexpected(from_error(answered.error.value_or(Error{Errc::internal_error, "not answered"})));
      if (ref->pending_inputs().empty()) pool.run_detached(target, [r = *ref]() mutable { (void)r.resume(); });
    } else {
      if (text.empty()) return std::unexpected(invalid_params("the message has no text part to steer with"));
      auto steered = ref->steer(text);
      if (!steered.ok()) return std::unexpected(from_error(steered.error.value_or(Error{Errc::internal_error, "not steered"})));
    }
    auto fresh = read_task(*target->session, view.id);
    if (!fresh) return std::unexpected(fresh.error());
    return Sent{target, std::move(*fresh)};
  }

  A2aResult<Json> list(const std::string& context, const std::string& status, std::int64_t page_size, std::int64_t offset) {
    std::vector<std::pair<std::shared_ptr<SessionHost>, std::string>> refs;  // host, ref
    if (!context.empty()) {
      auto parsed = parse_context(context);
      if (!parsed) return std::unexpected(invalid_params(fmt::format("contextId '{}' is not SESSION/REF", context)));
      auto found = host(parsed->first);
      if (!found) return std::unexpected(found.error());
      refs.emplace_back(*found, parsed->second);
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
          if (!view) continue;  // not a run
          if (!status.empty() && view->state != status) continue;
          tasks.push_back(view->task(0));
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

  A2aResult<Json> cancel(std::string_view id) {
    auto found = task(id);
    if (!found) return std::unexpected(found.error());
    auto& [target, view] = *found;
    if (view.terminal()) return std::unexpected(not_cancelable(fmt::format("task {} has ended ({})", view.id.id(), view.state)));
    auto ref = target->harness->ref(view.id.ref);
    if (!ref) return std::unexpected(task_not_found(id));
    AbortResult aborted = ref->abort();
    if (!aborted.ok()) return std::unexpected(from_error(aborted.error.value_or(Error{Errc::internal_error, "not aborted"})));
    auto settled = settle(target, view.id, 10s);
    if (!settled) return std::unexpected(settled.error());
    return settled->task(std::nullopt);
  }

  // The stream of a task: `from_start` replays its records from its start
  // (a streaming send); else from `cursor` (Last-Event-ID), or live from now.
  A2aResult<std::shared_ptr<LiveStream>> stream(std::shared_ptr<SessionHost> target, TaskView view, bool from_start,
                                                std::optional<std::int64_t> cursor, std::optional<Json> rpc_id) {
    if (!from_start && !cursor && (view.terminal())) {
      return std::unexpected(unsupported(fmt::format("task {} has ended ({}); GetTask reads it", view.id.id(), view.state)));
    }
    std::int64_t from = view.last_seq;
    Json snapshot = view.task(std::nullopt);
    if (from_start) {
      from = view.start_seq;
      TaskView fresh;
      fresh.id = view.id;
      fresh.start_seq = view.start_seq;
      fresh.prompt = view.prompt;
      fresh.prompt_id = view.prompt_id;
      fresh.timestamp = view.timestamp;
      view = std::move(fresh);
      snapshot = view.task(std::nullopt);
    } else if (cursor) {
      from = std::max(*cursor, view.start_seq);
      // Folded up to the cursor only, so that what follows is news.
      auto replay = read_task_until(*target->session, view.id, from);
      if (!replay) return std::unexpected(replay.error());
      view = std::move(*replay);
    }
    std::string first = TaskStream::frame(Json{{"task", snapshot}}, rpc_id, std::nullopt);
    auto live = std::make_shared<TaskStream>(target, std::move(view), from, std::move(rpc_id), std::move(first));
    return std::shared_ptr<LiveStream>(std::move(live));
  }

  A2aResult<TaskView> read_task_until(Session& session, const TaskId& id, std::int64_t until) {
    auto start = session.seq_of(id.run);
    if (!start) return std::unexpected(task_not_found(id.id()));
    TaskView view;
    view.id = id;
    view.start_seq = *start;
    view.last_seq = *start;
    for (std::int64_t after = *start; after < until;) {
      auto lines = session.get_log(after, static_cast<std::size_t>(std::min<std::int64_t>(until - after, 1024)));
      if (!lines || lines->empty()) break;
      for (const auto& line : *lines) {
        view.fold(Json::parse(line.json, nullptr, false));
        after = line.seq;
      }
    }
    return view;
  }
};

bool version_ok(const HttpRequest& request) {
  auto version = request.header("a2a-version");
  return !version || version->empty() || *version == "1.0" || version->starts_with("1.0.");
}

std::optional<std::int64_t> last_event_id(const HttpRequest& request) {
  auto header = request.header("last-event-id");
  if (!header || header->empty()) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(header->data(), header->data() + header->size(), value);
  if (ec != std::errc() || end != header->data() + header->size()) return std::nullopt;
  return value;
}

std::optional<std::int64_t> history_length_of(const Json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_string()) {
    std::int64_t n = 0;
    const auto& text = value.get_ref<const std::string&>();
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc() && end == text.data() + text.size()) return n;
  }
  return std::nullopt;
}

}  // namespace

// ---- the card ---------------------------------------------------------------------------

Reply A2a::card(const HttpRequest& request) const {
  const std::string host = request.header("host").value_or("127.0.0.1");
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
                                     {"description", "Events that come from a log record carry metadata[\"cairn.seq\"] and "
                                                     "that seq as their SSE id; SubscribeToTask with Last-Event-ID: SEQ "
                                                     "replays the task's events after it from the log"},
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
    const int status = error.code == -32603 ? 500 : 200;
    Json body = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", error.code}, {"message", error.message}}}};
    if (*error.reason) body["error"]["data"] = error_info(error);
    return Reply{json_response(status, body)};
  };
  if (request.method != "POST") return Reply{error_response(405, "method_not_allowed", "the JSON-RPC binding takes POST")};
  Json call;
  try {
    call = Json::parse(request.body);
  } catch (const Json::exception& error) {
    return fail_with({-32700, "INVALID_PARAMS", 400, "INVALID_ARGUMENT", fmt::format("parse error: {}", error.what())});
  }
  if (!call.is_object() || call.value("jsonrpc", "") != "2.0" || !call.contains("method") || !call["method"].is_string()) {
    return fail_with({-32600, "INVALID_PARAMS", 400, "INVALID_ARGUMENT", "not a JSON-RPC 2.0 request"});
  }
  if (call.contains("id")) id = call["id"];
  if (!version_ok(request)) {
    return fail_with({-32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION", "this agent speaks A2A 1.0"});
  }
  const std::string method = call["method"];
  const Json params = call.contains("params") && call["params"].is_object() ? call["params"] : Json::object();
  Service service{pool_, metrics_};
  auto ok = [&](const Json& result) { return Reply{json_response(200, Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}})}; };

  if (method == "SendMessage") {
    auto sent = service.send(params);
    if (!sent) return fail_with(sent.error());
    const Json configuration = params.value("configuration", Json::object());
    const auto history = history_length_of(configuration.value("historyLength", Json()));
    if (configuration.value("returnImmediately", false)) return ok(Json{{"task", sent->view.task(history)}});
    auto settled = service.settle(sent->host, sent->view.id, std::chrono::hours(24));
    if (!settled) return fail_with(settled.error());
    return ok(Json{{"task", settled->task(history)}});
  }
  if (method == "SendStreamingMessage") {
    auto sent = service.send(params);
    if (!sent) return fail_with(sent.error());
    auto live = service.stream(sent->host, std::move(sent->view), true, std::nullopt, id);
    if (!live) return fail_with(live.error());
    return Reply{.stream = std::move(*live)};
  }
  if (method == "GetTask") {
    auto found = service.task(params.value("id", ""));
    if (!found) return fail_with(found.error());
    return ok(found->second.task(history_length_of(params.value("historyLength", Json()))));
  }
  if (method == "ListTasks") {
    std::string status = params.value("status", "");
    if (status == "UNRECOGNIZED" || status == "TASK_STATE_UNSPECIFIED") status.clear();
    const std::int64_t size = params.value("pageSize", 50);
    std::int64_t offset = 0;
    if (const std::string token = params.value("pageToken", ""); !token.empty()) {
      auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), offset);
      if (ec != std::errc() || end != token.data() + token.size()) return fail_with(invalid_params("bad pageToken"));
    }
    if (size < 1 || size > 100) return fail_with(invalid_params("pageSize must be 1 to 100"));
    auto listed = service.list(params.value("contextId", ""), status, size, offset);
    if (!listed) return fail_with(listed.error());
    return ok(*listed);
  }
  if (method == "CancelTask") {
    auto cancelled = service.cancel(params.value("id", ""));
    if (!cancelled) return fail_with(cancelled.error());
    return ok(*cancelled);
  }
  if (method == "SubscribeToTask") {
    auto found = service.task(params.value("id", ""));
    if (!found) return fail_with(found.error());
    auto live = service.stream(found->first, std::move(found->second), false, last_event_id(request), id);
    if (!live) return fail_with(live.error());
    return Reply{.stream = std::move(*live)};
  }
  return fail_with({-32601, "INVALID_PARAMS", 400, "INVALID_ARGUMENT", fmt::format("no method {}", method)});
}

// ---- HTTP+JSON ----------------------------------------------------------------------------

Reply A2a::rest(const HttpRequest& request, std::string_view path) {
  auto fail_with = [](const A2aError& error) {
    Json body = {{"error", {{"code", error.http}, {"status", error.status}, {"message", error.message}}}};
    if (*error.reason) body["error"]["details"] = error_info(error);
    return Reply{json_response(error.http, body)};
  };
  if (!version_ok(request)) return fail_with({-32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION", "this agent speaks A2A 1.0"});
  Service service{pool_, metrics_};
  auto body = [&]() -> A2aResult<Json> {
    if (request.body.empty()) return Json::object();
    Json parsed = Json::parse(request.body, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return std::unexpected(invalid_params("the body must be a JSON object"));
    return parsed;
  };
  if (path == "/message:send" || path == "/message:stream") {
    if (request.method != "POST") return Reply{error_response(405, "method_not_allowed", "POST only")};
    auto params = body();
    if (!params) return fail_with(params.error());
    auto sent = service.send(*params);
    if (!sent) return fail_with(sent.error());
    if (path == "/message:stream") {
      auto live = service.stream(sent->host, std::move(sent->view), true, std::nullopt, std::nullopt);
      if (!live) return fail_with(live.error());
      return Reply{.stream = std::move(*live)};
    }
    const Json configuration = params->value("configuration", Json::object());
    const auto history = history_length_of(configuration.value("historyLength", Json()));
    if (configuration.value("returnImmediately", false)) return Reply{json_response(200, Json{{"task", sent->view.task(history)}})};
    auto settled = service.settle(sent->host, sent->view.id, std::chrono::hours(24));
    if (!settled) return fail_with(settled.error());
    return Reply{json_response(200, Json{{"task", settled->task(history)}})};
  }
  if (path == "/tasks") {
    if (request.method != "GET") return Reply{error_response(405, "method_not_allowed", "GET only")};
    auto query = [&](const char* key) {
      auto it = request.query.find(key);
      return it == request.query.end() ? std::string() : it->second;
    };
    std::string status = query("status");
    if (status == "TASK_STATE_UNSPECIFIED") status.clear();
    std::int64_t size = 50, offset = 0;
    if (const std::string text = query("pageSize"); !text.empty()) {
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
      if (ec != std::errc() || end != text.data() + text.size() || size < 1 || size > 100) return fail_with(invalid_params("pageSize must be 1 to 100"));
    }
    if (const std::string token = query("pageToken"); !token.empty()) {
      auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), offset);
      if (ec != std::errc() || end != token.data() + token.size()) return fail_with(invalid_params("bad pageToken"));
    }
    auto listed = service.list(query("contextId"), status, size, offset);
    if (!listed) return fail_with(listed.error());
    return Reply{json_response(200, *listed)};
  }
  if (path.starts_with("/tasks/")) {
    std::string_view rest_of = path.substr(7);
    std::string verb;
    // The verb follows the last ':' (a run id has none; a ref may).
    if (const auto colon = rest_of.rfind(':'); colon != std::string_view::npos) {
      const std::string_view candidate = rest_of.substr(colon + 1);
      if (candidate == "cancel" || candidate == "subscribe") {
        verb = candidate;
        rest_of = rest_of.substr(0, colon);
      }
    }
    bool decoded = false;
    const std::string id = percent_decode(rest_of, decoded);
    if (!decoded) return fail_with(invalid_params("bad percent-encoding in the task id"));
    if (verb.empty()) {
      if (request.method != "GET") return Reply{error_response(405, "method_not_allowed", "GET only")};
      auto found = service.task(id);
      if (!found) return fail_with(found.error());
      auto it = request.query.find("historyLength");
      std::optional<std::int64_t> history;
      if (it != request.query.end()) history = history_length_of(Json(it->second));
      return Reply{json_response(200, found->second.task(history))};
    }
    if (verb == "cancel") {
      if (request.method != "POST") return Reply{error_response(405, "method_not_allowed", "POST only")};
      auto cancelled = service.cancel(id);
      if (!cancelled) return fail_with(cancelled.error());
      return Reply{json_response(200, *cancelled)};
    }
    // subscribe: the spec says GET, the JS client sends POST.
    if (request.method != "GET" && request.method != "POST") return Reply{error_response(405, "method_not_allowed", "GET or POST")};
    auto found = service.task(id);
    if (!found) return fail_with(found.error());
    auto live = service.stream(found->first, std::move(found->second), false, last_event_id(request), std::nullopt);
    if (!live) return fail_with(live.error());
    return Reply{.stream = std::move(*live)};
  }
  return Reply{error_response(404, "no_route", fmt::format("no A2A route {}", path))};
}

}  // namespace cairn::serve
