// POST /a2a/jsonrpc: A2A's JSON-RPC 2.0 binding, one function per method.
// Errors are JSON-RPC errors in a 200 (a server's own failure keeps its 5xx).
#include <map>

#include <fmt/format.h>

#include "a2a_service.hpp"
#include "request_json.hpp"
#include "routes.hpp"

namespace cairn::serve {

namespace {

// One JSON-RPC call: its id, its params, and the service it acts through.
struct RpcCall {
  const HttpRequest& request;
  A2aService& service;
  const Fields& params;
  const Json& id;
};

Reply rpc_error(const Json& id, const A2aError& error) {
  const int status = error.http >= 500 ? error.http : 200;
  Json body = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", error.code}, {"message", error.message}}}};
  if (*error.reason) body["error"]["data"] = error_info(error);
  return Reply{json_response(status, body)};
}

Reply rpc_result(const Json& id, const Json& result) {
  return Reply{json_response(200, Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}})};
}

// A deferred answer's body: the result `make` builds of the task, or the error.
Reply settled_reply(const Json& id, const A2aResult<TaskView>& view, const std::function<Json(const TaskView&)>& make) {
  Json body = {{"jsonrpc", "2.0"}, {"id", id}};
  if (view) {
    body["result"] = make(*view);
  } else {
    body["error"] = {{"code", view.error().code}, {"message", view.error().message}};
  }
  return Reply{json_response(200, body)};
}

// params.id, required.
A2aResult<std::string> task_id(const Fields& params) {
  A2A_TRY(id, params.string("id"));
  if (id.empty()) return std::unexpected(invalid_params("params.id is required"));
  return id;
}

Reply send_message(RpcCall& call) {
  const Json none = Json::object();
  auto configuration = call.params.object("configuration");
  if (!configuration) return rpc_error(call.id, configuration.error());
  const Fields config = configuration->value_or(Fields(none, "params.configuration"));
  auto immediately = config.boolean("returnImmediately");
  auto history = config.integer("historyLength");
  if (!immediately) return rpc_error(call.id, immediately.error());
  if (!history) return rpc_error(call.id, history.error());
  auto sent = call.service.send(call.params);
  if (!sent) return rpc_error(call.id, sent.error());
  if (immediately->value_or(false)) return rpc_result(call.id, Json{{"task", sent->view.task(*history)}});
  return Reply{.deferred = call.service.settle(std::move(*sent), [id = call.id, history = *history](const A2aResult<TaskView>& view) {
    return settled_reply(id, view, [&](const TaskView& task) { return Json{{"task", task.task(history)}}; });
  })};
}

Reply send_streaming_message(RpcCall& call) {
  auto sent = call.service.send(call.params);
  if (!sent) return rpc_error(call.id, sent.error());
  auto live = call.service.stream(sent->host, std::move(sent->view), true, std::nullopt, call.id);
  if (!live) return rpc_error(call.id, live.error());
  return Reply{.stream = std::move(*live)};
}

Reply get_task(RpcCall& call) {
  auto id = task_id(call.params);
  if (!id) return rpc_error(call.id, id.error());
  auto history = call.params.integer("historyLength");
  if (!history) return rpc_error(call.id, history.error());
  auto found = call.service.task(*id);
  if (!found) return rpc_error(call.id, found.error());
  return rpc_result(call.id, found->second.task(*history));
}

Reply cancel_task(RpcCall& call) {
  auto id = task_id(call.params);
  if (!id) return rpc_error(call.id, id.error());
  auto cancelled = call.service.cancel(*id, [rpc_id = call.id](const A2aResult<TaskView>& view) {
    return settled_reply(rpc_id, view, [](const TaskView& task) { return task.task(std::nullopt); });
  });
  if (!cancelled) return rpc_error(call.id, cancelled.error());
  return Reply{.deferred = std::move(*cancelled)};
}

Reply subscribe_to_task(RpcCall& call) {
  auto id = task_id(call.params);
  if (!id) return rpc_error(call.id, id.error());
  auto cursor = last_event_id(call.request);
  if (!cursor) return rpc_error(call.id, cursor.error());
  auto found = call.service.task(*id);
  if (!found) return rpc_error(call.id, found.error());
  auto live = call.service.stream(found->first, std::move(found->second), false, *cursor, call.id);
  if (!live) return rpc_error(call.id, live.error());
  return Reply{.stream = std::move(*live)};
}

Reply list_tasks(RpcCall& call) {
  auto params = list_params(call.params);
  if (!params) return rpc_error(call.id, params.error());
  auto listed = call.service.list(*params);
  if (!listed) return rpc_error(call.id, listed.error());
  return rpc_result(call.id, *listed);
}

const std::map<std::string_view, Reply (*)(RpcCall&)> kMethods = {
    {"SendMessage", send_message}, {"SendStreamingMessage", send_streaming_message},
    {"GetTask", get_task},         {"CancelTask", cancel_task},
    {"SubscribeToTask", subscribe_to_task}, {"ListTasks", list_tasks},
};

// The JSON-RPC `id`: a string, a number or null (an object or array would be
// echoed back whole).
bool valid_rpc_id(const Json& id) { return id.is_string() || id.is_number() || id.is_null(); }

}  // namespace

Reply a2a_jsonrpc(RouteCall& call) {
  Json id = nullptr;
  auto parsed = parse_request_json(call.request.body);
  if (!parsed) return rpc_error(id, {-32700, "PARSE_ERROR", 400, "INVALID_ARGUMENT", parsed.error().message});
  const Json& request = *parsed;
  if (!request.is_object()) return rpc_error(id, invalid_request("not a JSON-RPC 2.0 request: not an object"));
  if (auto it = request.find("id"); it != request.end()) {
    if (!valid_rpc_id(*it)) return rpc_error(id, invalid_request("id must be a string, a number or null"));
    id = *it;
  }
  const Fields envelope(request, "request");
  auto version = envelope.string("jsonrpc");
  auto method = envelope.string("method");
  if (!version || *version != "2.0" || !method || method->empty()) {
    return rpc_error(id, invalid_request("not a JSON-RPC 2.0 request: jsonrpc must be \"2.0\" and method a string"));
  }
  if (!version_ok(call.request)) return rpc_error(id, version_not_supported());
  const Json no_params = Json::object();
  const Json* params_json = envelope.find("params");
  if (params_json && !params_json->is_object()) return rpc_error(id, invalid_params("params must be an object"));
  const Fields params(params_json ? *params_json : no_params, "params");
  const auto found = kMethods.find(*method);
  if (found == kMethods.end()) {
    return rpc_error(id, {-32601, "METHOD_NOT_FOUND", 400, "INVALID_ARGUMENT", fmt::format("no method {}", shown(*method))});
  }
  A2aService service(call.api.pool, call.api.metrics, call.api.work);
  RpcCall rpc{call.request, service, params, id};
  return found->second(rpc);
}

}  // namespace cairn::serve
