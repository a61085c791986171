#include "a2a_service.hpp"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "a2a_stream.hpp"
#include "operation_start.hpp"

namespace cairn::serve {

namespace {

// A cancel answers once the task has ended, or after this.
constexpr auto kCancelLimit = std::chrono::seconds(10);

}  // namespace

A2aResult<std::shared_ptr<SessionHost>> A2aService::host(const std::string& session) {
  auto found = pool_.get(session);
  if (!found) return std::unexpected(found.error().is(Errc::not_found) ? task_not_found(session) : from_error(found.error()));
  return *found;
}

A2aResult<TaskView> A2aService::read(const SessionHost& target, const TaskId& id, std::optional<std::int64_t> until) {
  auto view = read_task(*target.session, id, until);
  if (!view) return std::unexpected(internal(view.error().message));
  if (!*view) return std::unexpected(task_not_found(id.id()));
  return std::move(**view);
}

A2aResult<std::pair<std::shared_ptr<SessionHost>, TaskView>> A2aService::task(std::string_view id) {
  A2A_TRY(parsed, parse_task(id));
  A2A_TRY(found, host(parsed.session));
  A2A_TRY(view, read(*found, parsed));
  return std::pair{found, std::move(view)};
}

A2aResult<A2aService::Sent> A2aService::send(const Fields& params) {
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
    auto created = pool_.create(CreateOptions{.cwd = pool_.factory().default_cwd().string()});
    if (!created) return std::unexpected(from_error(created.error()));
    target = *created;
  }
  auto ref = target->harness->ref(ref_name);
  if (!ref) return std::unexpected(task_not_found(ref_name));
  OperationStart start = start_and_wait(pool_, metrics_, target, *ref, {EventType::run_start},
                                        [text = parts.text](AgentRef& r) { return r.prompt(text); });
  if (!start.started || !start.started->run_id) {
    const Error error = start.done && start.done->error ? *start.done->error : Error{Errc::internal_error, "the run did not start"};
    return std::unexpected(from_error(error));
  }
  A2A_TRY(view, read(*target, TaskId{target->session->id(), ref_name, *start.started->run_id}));
  return Sent{target, std::move(view)};
}

A2aResult<A2aService::Sent> A2aService::continue_task(const std::string& task_id, const std::optional<std::pair<std::string, std::string>>& context,
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
    const auto parsed = parse_input_decision(decision);
    if (!parsed) {
      return std::unexpected(invalid_params(fmt::format("{} must be allow, deny or answer", data.path("decision"))));
    }
    response.decision = *parsed;
    if (*parsed == InputDecision::allow) {
      if (arguments) response.arguments = *data.find("arguments");
    } else if (*parsed == InputDecision::deny) {
      if (reason.empty()) reason = parts.text;
      if (!reason.empty()) response.reason = reason;
    } else {
      response.answer = data.find("answer") ? answer : parts.text;
    }
    auto answered = ref->respond(request_id, std::move(response));
    if (!answered.ok()) return std::unexpected(from_error(answered.error.value_or(Error{Errc::internal_error, "not answered"})));
    if (ref->pending_inputs().empty()) pool_.run_detached(target, [r = *ref]() mutable { (void)r.resume(); });
  } else {
    if (parts.text.empty()) return std::unexpected(invalid_params("the message has no text part to steer with"));
    auto steered = ref->steer(parts.text);
    if (!steered.ok()) return std::unexpected(from_error(steered.error.value_or(Error{Errc::internal_error, "not steered"})));
  }
  A2A_TRY(fresh, read(*target, view.id));
  return Sent{target, std::move(fresh)};
}

A2aResult<Json> A2aService::list(const ListParams& params) {
  const auto& [context, status, page_size, offset, history] = params;
  std::vector<std::pair<std::shared_ptr<SessionHost>, std::string>> refs;  // host, ref
  if (!context.empty()) {
    A2A_TRY(parsed, parse_context(context));
    A2A_TRY(found, host(parsed.first));
    refs.emplace_back(found, parsed.second);
  } else {
    auto headers = pool_.list();
    if (!headers) return std::unexpected(from_error(headers.error()));
    for (const auto& header : *headers) {
      auto found = pool_.get(header.id);
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

A2aResult<std::shared_ptr<DeferredReply>> A2aService::cancel(std::string_view id, std::function<Reply(const A2aResult<TaskView>&)> answer) {
  A2A_TRY(found, task(id));
  auto& [target, view] = found;
  if (view.terminal()) return std::unexpected(not_cancelable(fmt::format("task {} has ended ({})", view.id.id(), view.state)));
  auto ref = target->harness->ref(view.id.ref);
  if (!ref) return std::unexpected(task_not_found(id));
  AbortResult aborted = ref->abort();
  if (!aborted.ok()) return std::unexpected(from_error(aborted.error.value_or(Error{Errc::internal_error, "not aborted"})));
  A2A_TRY(fresh, read(*target, view.id));
  return Settling::start(target, std::move(fresh), kCancelLimit, work_, std::move(answer), /*until_end=*/true);
}

A2aResult<std::shared_ptr<LiveStream>> A2aService::stream(std::shared_ptr<SessionHost> target, TaskView view, bool from_start,
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
      if (auto record = decode_line(line)) events.feed(*record, said);
    }
    assert(said.empty() && "records at or before the cursor are the client's");
  }
  // The snapshot is what the log says at the cursor.
  TaskView snapshot = events.view();
  if (!snapshot.terminal()) snapshot.last_seq = from;
  std::string first = events.frame(Json{{"task", snapshot.task(std::nullopt)}}, std::nullopt);
  return task_stream(std::move(target), std::move(events), from, std::move(first), ended_before);
}

std::shared_ptr<DeferredReply> A2aService::settle(Sent sent, std::function<Reply(const A2aResult<TaskView>&)> answer) {
  return Settling::start(std::move(sent.host), std::move(sent.view), kBlockingSendLimit, work_, std::move(answer));
}

}  // namespace cairn::serve
