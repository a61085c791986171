#include "a2a_task.hpp"

#include <fmt/format.h>

#include "http_types.hpp"

namespace cairn::serve {

namespace {

std::string text_of_content(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const auto& block : content) {
      if (!block.is_object() || block.value("type", "") != "text") continue;
      if (auto it = block.find("text"); it != block.end() && it->is_string()) text += it->get<std::string>();
    }
  }
  return text;
}

std::string string_field(const Json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Json input_request_json(const Json& record) {
  Json request = {{"requestId", string_field(record, "id")},
                  {"kind", string_field(record, "kind")},
                  {"toolCallId", string_field(record, "toolCallId")},
                  {"toolName", string_field(record, "toolName")},
                  {"arguments", record.contains("arguments") ? record["arguments"] : Json::object()}};
  for (const char* key : {"rule", "question", "choices"}) {
    if (record.contains(key)) request[key] = record[key];
  }
  return request;
}

std::string input_request_text(const Json& request) {
  if (string_field(request, "kind") == "question") {
    const std::string question = string_field(request, "question");
    return question.empty() ? "a question" : question;
  }
  const std::string tool = string_field(request, "toolName");
  return fmt::format("approve the call of {}? answer allow or deny (with a reason)", tool.empty() ? "a tool" : tool);
}

}  // namespace

Json agent_message(const TaskId& task, std::string message_id, const std::string& text, const Json& data) {
  Json parts = Json::array();
  if (!text.empty()) parts.push_back({{"text", text}});
  if (!data.is_null()) parts.push_back({{"data", data}, {"mediaType", "application/json"}});
  return {{"messageId", std::move(message_id)}, {"contextId", task.context()}, {"taskId", task.id()},
          {"role", "ROLE_AGENT"}, {"parts", std::move(parts)}};
}

bool TaskView::fold(const Json& record) {
  if (!record.is_object() || finished) return false;
  const std::string type = string_field(record, "type");
  const std::string named_ref = string_field(record, "ref");
  if ((named_ref.empty() ? std::string("main") : named_ref) != id.ref) return false;
  if (auto seq = record.find("seq"); seq != record.end() && seq->is_number_integer()) last_seq = seq->get<std::int64_t>();
  if (const std::string at = string_field(record, "timestamp"); !at.empty()) timestamp = at;
  if (type == "message") {
    // A tree entry names no run: the ref has one operation open at a time,
    // and messages on it while this one is open are its own.
    const Json message = record.value("message", Json());
    if (string_field(message, "role") != "assistant") return false;
    const Json content = message.value("content", Json::array());
    last_text = text_of_content(content);
    last_calls = Json::array();
    if (content.is_array()) {
      for (const auto& block : content) {
        if (!block.is_object() || block.value("type", "") != "toolCall") continue;
        last_calls.push_back({{"id", string_field(block, "id")},
                              {"name", string_field(block, "name")},
                              {"arguments", block.contains("arguments") ? block["arguments"] : Json::object()}});
      }
    }
    if (!last_text.empty()) answers.emplace_back(string_field(record, "id"), last_text);
    return !last_text.empty() || !last_calls.empty();
  }
  if (string_field(record, "runId") != id.run) return false;
  if (type == "input_requested") {
    pending[string_field(record, "id")] = input_request_json(record);
    state = "TASK_STATE_INPUT_REQUIRED";
    return true;
  }
  if (type == "input_resolved") {
    pending.erase(string_field(record, "requestId"));
    if (pending.empty()) state = "TASK_STATE_WORKING";
    return true;
  }
  if (type == "operation_finished") {
    finished = true;
    pending.clear();
    const std::string outcome = string_field(record, "outcome");
    state = outcome == "completed" ? "TASK_STATE_COMPLETED" : outcome == "failed" ? "TASK_STATE_FAILED" : "TASK_STATE_CANCELED";
    if (const Json failure = record.value("error", Json()); failure.is_object()) {
      error = fmt::format("{}: {}", string_field(failure, "code"), string_field(failure, "message"));
    }
    return true;
  }
  return false;
}

Json TaskView::status() const {
  Json out = {{"state", state}, {"timestamp", timestamp}};
  if (interrupted()) {
    const Json& request = pending.begin()->second;
    out["message"] = agent_message(id, id.run + "-" + string_field(request, "requestId"), input_request_text(request),
                                   Json{{"inputRequest", request}});
  } else if (state == "TASK_STATE_COMPLETED" && !answers.empty()) {
    out["message"] = agent_message(id, answers.back().first, final_text());
  } else if (state == "TASK_STATE_FAILED" && !error.empty()) {
    out["message"] = agent_message(id, id.run + "-error", error);
  }
  return out;
}

Json TaskView::artifacts() const {
  Json out = Json::array();
  if (state == "TASK_STATE_COMPLETED" && !answers.empty()) {
    out.push_back({{"artifactId", id.run + "-answer"}, {"name", "answer"}, {"parts", Json::array({{{"text", final_text()}}})}});
  }
  return out;
}

Json TaskView::task(std::optional<std::int64_t> history_length) const {
  Json history = Json::array();
  if (!prompt.empty()) {
    history.push_back({{"messageId", prompt_id.empty() ? id.run + "-prompt" : prompt_id},
                       {"contextId", id.context()},
                       {"taskId", id.id()},
                       {"role", "ROLE_USER"},
                       {"parts", Json::array({{{"text", prompt}}})}});
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
          {"metadata",
           {{"cairn.session", id.session}, {"cairn.ref", id.ref}, {"cairn.runId", id.run}, {"cairn.snapshotSeq", last_seq}}}};
}

Result<std::optional<TaskView>> read_task(const Session& session, const TaskId& id, std::optional<std::int64_t> until) {
  const auto start = session.seq_of(id.run);
  if (!start) return std::optional<TaskView>();
  auto first = session.get_log(*start - 1, 1);
  if (!first) return std::unexpected(first.error());
  if (first->empty()) return std::optional<TaskView>();
  const Json started = Json::parse(first->front().json, nullptr, false);
  const Json intent = started.is_object() ? started.value("intent", Json()) : Json();
  if (string_field(started, "type") != "operation_started" || string_field(started, "ref") != id.ref ||
      string_field(intent, "kind") != "run") {
    return std::optional<TaskView>();
  }
  TaskView view;
  view.id = id;
  view.start_seq = *start;
  view.last_seq = *start;
  view.timestamp = string_field(started, "timestamp");
  if (const Json initial = intent.value("initialMessages", Json::array()); initial.is_array()) {
    for (const auto& entry : initial) {
      if (!entry.is_object() || !entry.contains("message") || !entry["message"].is_object()) continue;
      view.prompt += text_of_content(entry["message"].value("content", Json::array()));
      if (view.prompt_id.empty()) view.prompt_id = string_field(entry, "id");
    }
  }
  for (std::int64_t after = *start; !view.finished && (!until || after < *until);) {
    std::size_t page = 1024;
    if (until) page = static_cast<std::size_t>(std::min<std::int64_t>(*until - after, 1024));
    auto lines = session.get_log(after, page);
    if (!lines) return std::unexpected(lines.error());
    if (lines->empty()) break;
    for (const auto& line : *lines) {
      after = line.seq;
      view.fold(Json::parse(line.json, nullptr, false));
      if (view.finished) break;
    }
  }
  // Up to `until`: the task as the log says it there (its snapshot seq is
  // the cursor, though the ref's newest record may be older).
  if (until && !view.finished) view.last_seq = std::max(view.last_seq, *until);
  return std::optional<TaskView>(std::move(view));
}

// ---- the stream's events ---------------------------------------------------------------

TaskEvents::TaskEvents(TaskView view, std::int64_t cursor, std::optional<Json> rpc_id)
    : view_(std::move(view)), cursor_(cursor), rpc_id_(std::move(rpc_id)) {}

std::string TaskEvents::frame(const Json& response, std::optional<std::int64_t> seq) const {
  Json data = rpc_id_ ? Json{{"jsonrpc", "2.0"}, {"id", *rpc_id_}, {"result", response}} : response;
  return sse_frame(data, seq);
}

void TaskEvents::emit_status(const Json& status, std::optional<std::int64_t> seq, std::string& out) const {
  Json update = {{"taskId", view_.id.id()}, {"contextId", view_.id.context()}, {"status", status}};
  if (seq) update["metadata"] = {{"cairn.seq", *seq}};
  out += frame(Json{{"statusUpdate", std::move(update)}}, seq);
}

// The held answer was not the task's last word: a working status of its own.
void TaskEvents::release_held(std::string& out) {
  if (!held_) return;
  if (held_->seq > cursor_) {
    emit_status(Json{{"state", "TASK_STATE_WORKING"},
                     {"timestamp", view_.timestamp},
                     {"message", agent_message(view_.id, held_->entry_id, held_->text)}},
                held_->seq, out);
  }
  held_.reset();
}

void TaskEvents::feed(std::int64_t seq, const Json& record, std::string& out) {
  if (done_ || seq <= view_.start_seq) return;
  const bool pending_before = view_.interrupted();
  if (!view_.fold(record)) return;
  const bool announce = seq > cursor_;
  const std::string type = record.value("type", "");
  if (type == "message") {
    release_held(out);
    if (view_.last_calls.empty()) {
      held_ = HeldAnswer{seq, record.value("id", ""), view_.last_text};  // maybe the answer: the next record tells
      return;
    }
    if (!announce) return;
    emit_status(Json{{"state", "TASK_STATE_WORKING"},
                     {"timestamp", view_.timestamp},
                     {"message", agent_message(view_.id, record.value("id", ""), view_.last_text,
                                               Json{{"toolCalls", view_.last_calls}})}},
                seq, out);
    return;
  }
  if (type == "input_requested" || type == "input_resolved") {
    if (type == "input_resolved" && pending_before == view_.interrupted()) return;  // others still wait
    release_held(out);
    if (!announce) return;
    emit_status(view_.status(), seq, out);
    if (view_.interrupted()) done_ = true;  // as the SDK's servers do: the stream ends at input-required
    return;
  }
  // operation_finished
  const Json artifacts = view_.artifacts();
  if (!artifacts.empty()) {
    // The answer: the held message, whose record the artifact announces
    // (the client has it when that record is at or before its cursor). An
    // answer already announced otherwise (text beside tool calls) is
    // restated by an artifact that announces nothing.
    std::optional<std::int64_t> answer_seq;
    bool send = announce;
    if (held_) {
      answer_seq = held_->seq;
      send = held_->seq > cursor_;
      held_.reset();
    }
    if (send) {
      Json update = {{"taskId", view_.id.id()}, {"contextId", view_.id.context()}, {"artifact", artifacts[0]}, {"lastChunk", true}};
      if (answer_seq) update["metadata"] = {{"cairn.seq", *answer_seq}};
      out += frame(Json{{"artifactUpdate", std::move(update)}}, answer_seq);
    }
  } else {
    release_held(out);
  }
  if (announce) emit_status(view_.status(), seq, out);
  done_ = true;
}

}  // namespace cairn::serve
