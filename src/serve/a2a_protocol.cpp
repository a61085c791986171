#include "a2a_protocol.hpp"

#include <charconv>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "cairn/utf8.hpp"
#include "names.hpp"
#include "request_json.hpp"
#include "routes.hpp"

namespace cairn::serve {

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
A2aError version_not_supported() {
  return {-32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION", "this agent speaks A2A 1.0"};
}
A2aError internal(std::string message) { return {-32603, "", 500, "INTERNAL", std::move(message)}; }
A2aError unavailable(std::string message) { return {-32603, "", 503, "UNAVAILABLE", std::move(message)}; }

A2aError from_error(const Error& error) {
  if (error.is(Errc::not_found) || error.is(Errc::unknown_ref)) return task_not_found(error.message);
  if (error.is(Errc::locked) || error.is(Errc::busy) || error.is(Errc::operation_open) || error.is(Errc::already_resolved)) {
    return unsupported(error.message);
  }
  if (error.code == to_string(HttpErrc::unavailable) || error.is(Errc::closed)) return unavailable(error.message);
  // What the client named wrongly or named what is not there.
  if (const int status = http_status(error); status == 400 || status == 404) return invalid_params(error.message);
  return internal(fmt::format("{}: {}", error.code, error.message));
}

Json error_info(const A2aError& error) {
  return Json::array({{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"}, {"reason", error.reason}, {"domain", "a2a-protocol.org"}}});
}

std::string shown(std::string_view text) {
  if (text.size() <= 80) return std::string(text);
  return std::string(text.substr(0, utf8_floor(text, 77))) + "…";
}

// ---- fields read by their type ----

A2aResult<Fields> Fields::of(const Json& value, std::string path) {
  if (!value.is_object()) return std::unexpected(invalid_params(fmt::format("{} must be an object", path)));
  return Fields(value, std::move(path));
}

std::string Fields::path(std::string_view key) const { return fmt::format("{}.{}", path_, key); }

const Json* Fields::find(const char* key) const {
  auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

A2aResult<std::string> Fields::string(const char* key) const {
  const Json* value = find(key);
  if (!value) return std::string();
  if (!value->is_string()) return std::unexpected(invalid_params(fmt::format("{} must be a string", path(key))));
  return value->get<std::string>();
}

A2aResult<std::optional<bool>> Fields::boolean(const char* key) const {
  const Json* value = find(key);
  if (!value) return std::optional<bool>();
  if (!value->is_boolean()) return std::unexpected(invalid_params(fmt::format("{} must be true or false", path(key))));
  return std::optional<bool>(value->get<bool>());
}

A2aResult<std::optional<std::int64_t>> Fields::integer(const char* key) const {
  const Json* value = find(key);
  if (!value) return std::optional<std::int64_t>();
  if (value->is_number_integer()) return std::optional<std::int64_t>(value->get<std::int64_t>());
  if (value->is_string()) {
    if (auto parsed = parse_integer(value->get_ref<const std::string&>())) return std::optional<std::int64_t>(*parsed);
  }
  return std::unexpected(invalid_params(fmt::format("{} must be an integer", path(key))));
}

A2aResult<std::optional<Fields>> Fields::object(const char* key) const {
  const Json* value = find(key);
  if (!value) return std::optional<Fields>();
  if (!value->is_object()) return std::unexpected(invalid_params(fmt::format("{} must be an object", path(key))));
  return std::optional<Fields>(Fields(*value, path(key)));
}

A2aResult<const Json*> Fields::array(const char* key) const {
  const Json* value = find(key);
  if (value && !value->is_array()) return std::unexpected(invalid_params(fmt::format("{} must be an array", path(key))));
  return value;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// ---- ids ----

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

A2aResult<std::optional<std::int64_t>> last_event_id(const HttpRequest& request) {
  auto header = request.header("last-event-id");
  if (!header || header->empty()) return std::optional<std::int64_t>();
  auto value = parse_integer(*header);
  if (!value) return std::unexpected(invalid_params("Last-Event-ID must be a seq"));
  return std::optional<std::int64_t>(*value);
}

bool version_ok(const HttpRequest& request) {
  auto version = request.header("a2a-version");
  return !version || version->empty() || *version == "1.0" || version->starts_with("1.0.");
}

// ---- messages and lists ----

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

namespace {

// The task states a ListTasks filter may name.
bool known_state(const std::string& state) {
  static const std::set<std::string> states = {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED",
                                               "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_INPUT_REQUIRED",
                                               "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED"};
  return states.contains(state);
}

}  // namespace

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
    auto offset = parse_integer(token);
    if (!offset || *offset < 0) return std::unexpected(invalid_params(fmt::format("{} is not one of ours", fields.path("pageToken"))));
    out.offset = *offset;
  }
  out.history = history;
  return out;
}

std::optional<std::string> a2a_session_of(const HttpRequest& request, const PathParams& params) {
  if (params.rest) {
    bool decoded = false;
    const std::string id = percent_decode(*params.rest, decoded);
    auto task = parse_task(id);
    return decoded && task ? std::optional<std::string>(task->session) : std::nullopt;
  }
  auto body = parse_request_json(request.body);
  if (!body || !body->is_object()) return std::nullopt;
  // JSON-RPC's params, or a REST body (which is the params).
  const Json& params_json = body->contains("jsonrpc") ? body->value("params", Json()) : *body;
  if (!params_json.is_object()) return std::nullopt;
  const Json message = params_json.value("message", Json());
  const Fields fields(params_json, "params");
  const Json none = Json::object();
  const Fields in_message(message.is_object() ? message : none, "params.message");
  for (const auto& [from, key, is_task] : {std::tuple{&in_message, "taskId", true}, std::tuple{&in_message, "contextId", false},
                                           std::tuple{&fields, "id", true}, std::tuple{&fields, "contextId", false}}) {
    auto named = from->string(key);
    if (!named || named->empty()) continue;
    if (is_task) {
      auto task = parse_task(*named);
      return task ? std::optional<std::string>(task->session) : std::nullopt;
    }
    auto context = parse_context(*named);
    return context ? std::optional<std::string>(context->first) : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace cairn::serve
