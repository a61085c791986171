#include "a2a_task.hpp"

#include <fmt/format.h>

#include "http_types.hpp"

namespace cairn::serve {

namespace {

// A message's text blocks, joined.
std::string text_of(const std::vector<AssistantBlock>& content) {
  std::string text;
  for (const auto& block : content) {
    if (const auto* part = std::get_if<TextContent>(&block)) text += part->text;
  }
  return text;
}

std::string text_of(const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) return *text;
  std::string text;
  for (const auto& block : std::get<std::vector<UserBlock>>(content)) {
    if (const auto* part = std::get_if<TextContent>(&block)) text += part->text;
  }
  return text;
}

Json input_request_json(const std::string& id, const InputRequested& asked) {
  Json request = {{"requestId", id},
                  {"kind", to_string(asked.kind)},
                  {"toolCallId", asked.tool_call_id},
                  {"toolName", asked.tool_name},
                  {"arguments", asked.arguments}};
  if (asked.rule) request["rule"] = *asked.rule;
  if (asked.question) request["question"] = *asked.question;
  if (!asked.choices.empty()) request["choices"] = asked.choices;
  return request;
}

std::string string_field(const Json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
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

bool TaskView::fold(const Record& record) {
  if (finished) return false;
  if (const auto* entry = std::get_if<TreeEntry>(&record.body)) {
    if (entry->ref.value_or("main") != id.ref) return false;
    last_seq = record.seq;
    timestamp = entry->timestamp;
    // A tree entry names no run: the ref has one operation open at a time,
    // and messages on it while this one is open are its own.
    const auto* body = std::get_if<MessageBody>(&entry->body);
    const auto* message = body ? std::get_if<AssistantMessage>(&body->message) : nullptr;
    if (!message) return false;
    last_text = text_of(message->content);
    last_calls = Json::array();
    for (const auto& block : message->content) {
      if (const auto* call = std::get_if<ToolCall>(&block)) {
        last_calls.push_back({{"id", call->id}, {"name", call->name}, {"arguments", call->arguments}});
      }
    }
    if (!last_text.empty()) answers.emplace_back(entry->id, last_text);
    return !last_text.empty() || !last_calls.empty();
  }
  const auto* harness = std::get_if<HarnessRecord>(&record.body);
  if (!harness || harness->ref != id.ref) return false;
  last_seq = record.seq;
  timestamp = harness->timestamp;
  if (run_id_of(*harness) != id.run) return false;
  if (const auto* asked = std::get_if<InputRequested>(&harness->body)) {
    pending[harness->id] = input_request_json(harness->id, *asked);
    state = "TASK_STATE_INPUT_REQUIRED";
    return true;
  }
  if (const auto* resolved = std::get_if<InputResolved>(&harness->body)) {
    pending.erase(resolved->request_id);
    if (pending.empty()) state = "TASK_STATE_WORKING";
    return true;
  }
  if (const auto* ended = std::get_if<OperationFinished>(&harness->body)) {
    finished = true;
    pending.clear();
    state = ended->outcome == OperationOutcome::completed ? "TASK_STATE_COMPLETED"
            : ended->outcome == OperationOutcome::failed  ? "TASK_STATE_FAILED"
                                                          : "TASK_STATE_CANCELED";
    if (ended->error) error = fmt::format("{}: {}", ended->error->code, ended->error->message);
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

std::optional<Record> decode_line(const LogLine& line) {
  auto decoded = decode_record_line(line.json);
  if (!decoded || !*decoded) return std::nullopt;
  return std::move(**decoded);
}

Result<std::optional<TaskView>> read_task(const Session& session, const TaskId& id, std::optional<std::int64_t> until) {
  const auto start = session.seq_of(id.run);
  if (!start) return std::optional<TaskView>();
  auto first = session.get_log(*start - 1, 1);
  if (!first) return std::unexpected(first.error());
  if (first->empty()) return std::optional<TaskView>();
  const std::optional<Record> record = decode_line(first->front());
  const auto* harness = record ? std::get_if<HarnessRecord>(&record->body) : nullptr;
  const auto* started = harness ? std::get_if<OperationStarted>(&harness->body) : nullptr;
  const auto* run = started ? std::get_if<RunIntent>(&started->intent) : nullptr;
  if (!run || harness->ref != id.ref) return std::optional<TaskView>();
  TaskView view;
  view.id = id;
  view.start_seq = *start;
  view.last_seq = *start;
  view.timestamp = harness->timestamp;
  for (const auto& entry : run->initial_messages) {
    const auto* body = std::get_if<MessageBody>(&entry.body);
    const auto* prompt = body ? std::get_if<UserMessage>(&body->message) : nullptr;
    if (!prompt) continue;
    view.prompt += text_of(prompt->content);
    if (view.prompt_id.empty()) view.prompt_id = entry.id;
  }
  for (std::int64_t after = *start; !view.finished && (!until || after < *until);) {
    std::size_t page = 1024;
    if (until) page = static_cast<std::size_t>(std::min<std::int64_t>(*until - after, 1024));
    auto lines = session.get_log(after, page);
    if (!lines) return std::unexpected(lines.error());
    if (lines->empty()) break;
    for (const auto& line : *lines) {
      after = line.seq;
      if (auto next = decode_line(line)) view.fold(*next);
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

void TaskEvents::feed(const Record& record, std::string& out) {
  const std::int64_t seq = record.seq;
  if (done_ || seq <= view_.start_seq) return;
  const bool pending_before = view_.interrupted();
  if (!view_.fold(record)) return;
  const bool announce = seq > cursor_;
  if (const auto* entry = std::get_if<TreeEntry>(&record.body)) {  // an assistant message
    release_held(out);
    if (view_.last_calls.empty()) {
      held_ = HeldAnswer{seq, entry->id, view_.last_text};  // maybe the answer: the next record tells
      return;
    }
    if (!announce) return;
    emit_status(Json{{"state", "TASK_STATE_WORKING"},
                     {"timestamp", view_.timestamp},
                     {"message", agent_message(view_.id, entry->id, view_.last_text, Json{{"toolCalls", view_.last_calls}})}},
                seq, out);
    return;
  }
  const HarnessBody& body = std::get<HarnessRecord>(record.body).body;
  if (!std::holds_alternative<OperationFinished>(body)) {  // input_requested or input_resolved
    if (std::holds_alternative<InputResolved>(body) && pending_before == view_.interrupted()) return;  // others still wait
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
