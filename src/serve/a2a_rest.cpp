// /a2a/rest/…: A2A's HTTP+JSON binding, one function per route. A task id
// ("SESSION/REF/RUN") is the rest of the path, its slashes as they come or
// percent-encoded; its verb (":cancel", ":subscribe") follows it. Errors
// are google.rpc.Status bodies with the status they name.
#include <fmt/format.h>

#include "a2a_service.hpp"
#include "names.hpp"
#include "request_json.hpp"
#include "routes.hpp"

namespace cairn::serve {

namespace {

Reply rest_error(const A2aError& error) {
  Json body = {{"error", {{"code", error.http}, {"status", error.status}, {"message", error.message}}}};
  if (*error.reason) body["error"]["details"] = error_info(error);
  return Reply{json_response(error.http, body)};
}

Reply task_reply(const A2aResult<TaskView>& view, std::optional<std::int64_t> history, bool wrapped) {
  if (!view) return rest_error(view.error());
  Json task = view->task(history);
  return Reply{json_response(200, wrapped ? Json{{"task", std::move(task)}} : std::move(task))};
}

A2aService service_of(RouteCall& call) { return A2aService(call.api.pool, call.api.metrics, call.api.work); }

// The query's parameters, as a JSON object read like a body's.
Json query_json(const HttpRequest& request) {
  Json query = Json::object();
  for (const auto& [key, value] : request.query) query[key] = value;
  return query;
}

// The task id the path names, decoded.
A2aResult<std::string> path_task(const RouteCall& call) {
  bool decoded = false;
  std::string id = percent_decode(call.rest, decoded);
  if (!decoded) return std::unexpected(invalid_params("bad percent-encoding in the task id"));
  return id;
}

// message:send and message:stream.
Reply send(RouteCall& call, bool streaming) {
  if (!version_ok(call.request)) return rest_error(version_not_supported());
  Json parsed = Json::object();
  if (!call.request.body.empty()) {
    auto body = parse_request_json(call.request.body);
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
  A2aService service = service_of(call);
  auto sent = service.send(*params);
  if (!sent) return rest_error(sent.error());
  if (streaming) {
    auto live = service.stream(sent->host, std::move(sent->view), true, std::nullopt, std::nullopt);
    if (!live) return rest_error(live.error());
    return Reply{.stream = std::move(*live)};
  }
  if (immediately->value_or(false)) return task_reply(sent->view, *history, true);
  return Reply{.deferred = service.settle(std::move(*sent), [history = *history](const A2aResult<TaskView>& view) {
    return task_reply(view, history, true);
  })};
}

}  // namespace

// POST /a2a/rest/message:send
Reply a2a_send(RouteCall& call) { return send(call, false); }

// POST /a2a/rest/message:stream
Reply a2a_send_streaming(RouteCall& call) { return send(call, true); }

// GET /a2a/rest/tasks?contextId=&status=&pageSize=&pageToken=&historyLength=
Reply a2a_list_tasks(RouteCall& call) {
  if (!version_ok(call.request)) return rest_error(version_not_supported());
  const Json query = query_json(call.request);
  auto params = list_params(Fields(query, "query"));
  if (!params) return rest_error(params.error());
  auto listed = service_of(call).list(*params);
  if (!listed) return rest_error(listed.error());
  return Reply{json_response(200, *listed)};
}

// GET /a2a/rest/tasks/{task}?historyLength=
Reply a2a_get_task(RouteCall& call) {
  if (!version_ok(call.request)) return rest_error(version_not_supported());
  auto id = path_task(call);
  if (!id) return rest_error(id.error());
  const Json query = query_json(call.request);
  auto history = Fields(query, "query").integer("historyLength");
  if (!history) return rest_error(history.error());
  auto found = service_of(call).task(*id);
  if (!found) return rest_error(found.error());
  return task_reply(found->second, *history, false);
}

// POST /a2a/rest/tasks/{task}:cancel
Reply a2a_cancel_task(RouteCall& call) {
  if (!version_ok(call.request)) return rest_error(version_not_supported());
  auto id = path_task(call);
  if (!id) return rest_error(id.error());
  auto cancelled = service_of(call).cancel(*id, [](const A2aResult<TaskView>& view) { return task_reply(view, std::nullopt, false); });
  if (!cancelled) return rest_error(cancelled.error());
  return Reply{.deferred = std::move(*cancelled)};
}

// GET (or POST) /a2a/rest/tasks/{task}:subscribe, with Last-Event-ID.
Reply a2a_subscribe(RouteCall& call) {
  if (!version_ok(call.request)) return rest_error(version_not_supported());
  auto id = path_task(call);
  if (!id) return rest_error(id.error());
  auto cursor = last_event_id(call.request);
  if (!cursor) return rest_error(cursor.error());
  A2aService service = service_of(call);
  auto found = service.task(*id);
  if (!found) return rest_error(found.error());
  auto live = service.stream(found->first, std::move(found->second), false, *cursor, std::nullopt);
  if (!live) return rest_error(live.error());
  return Reply{.stream = std::move(*live)};
}

}  // namespace cairn::serve
