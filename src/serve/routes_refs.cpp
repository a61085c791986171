// /v1/sessions/{id}/refs: the refs, one ref, its configuration, a label on
// an entry, and the questions its operation waits on.
#include <fmt/format.h>

#include "json_views.hpp"
#include "names.hpp"
#include "routes.hpp"

namespace cairn::serve {

namespace {

Json pending_json(AgentRef& ref) {
  Json pending = Json::array();
  for (const auto& input : ref.pending_inputs()) pending.push_back(to_json(input));
  return pending;
}

Json config_json(AgentHarness& harness, AgentRef& ref) {
  Model model = ref.model();
  return Json{{"model", {{"provider", model.provider}, {"id", model.id}}},
              {"thinkingLevel", ref.thinking_level()},
              {"activeTools", ref.active_tools()},
              {"tools", harness.tool_names()}};
}

Result<std::optional<std::vector<std::string>>> names_field(const Body& body, const char* key) {
  auto it = body.json.find(key);
  if (it == body.json.end()) return std::optional<std::vector<std::string>>();
  const Error wrong{Errc::invalid_argument, fmt::format("field '{}' must be an array of names", key)};
  if (!it->is_array()) return fail(wrong);
  std::vector<std::string> names;
  for (const auto& name : *it) {
    if (!name.is_string()) return fail(wrong);
    names.push_back(name.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(names));
}

}  // namespace

Json refs_json(SessionHost& host) {
  Json refs = Json::array();
  for (const auto& status : host.harness->refs()) {
    Json item = to_json(status, {});
    if (status.run && (status.run->status == OperationStatus::suspended || status.run->status == OperationStatus::awaiting_input)) {
      if (auto ref = host.harness->ref(status.name)) item["run"]["awaitingInput"] = pending_json(*ref);
    }
    refs.push_back(std::move(item));
  }
  return refs;
}

// GET /v1/sessions/{id}/refs
Reply list_refs(RouteCall& call) { return json_reply(Json{{"refs", refs_json(*call.host)}}); }

// POST /v1/sessions/{id}/refs {name, at?}: `at` an entry id, null for an
// empty ref; absent, main's leaf.
Reply create_ref(RouteCall& call) {
  auto body = call.body({"name", "at"});
  if (!body) return error_reply(body.error());
  auto name = body->required_string("name");
  if (!name) return error_reply(name.error());
  if (auto valid = path_name(*name, "ref"); !valid) return error_reply(valid.error());
  std::optional<std::string> at = call.host->session->leaf("main");
  if (body->json.contains("at")) {
    auto given = body->string("at");
    if (!given) return error_reply(given.error());
    at = *given;
  }
  auto made = call.host->harness->create_ref(*name, at);
  if (!made) return error_reply(made.error());
  return json_reply(Json{{"ref", {{"name", made->name()}, {"leafId", made->leaf_id() ? Json(*made->leaf_id()) : Json(nullptr)}}}}, 201);
}

// GET /v1/sessions/{id}/refs/{ref}
Reply get_ref(RouteCall& call) {
  for (const auto& status : call.host->harness->refs()) {
    if (status.name != call.ref_name) continue;
    Json item = to_json(status, {});
    item["awaitingInput"] = pending_json(*call.ref);
    return json_reply(Json{{"ref", std::move(item)}});
  }
  return error_reply(Error{Errc::unknown_ref, fmt::format("session {} has no ref '{}'", call.session_id, call.ref_name)});
}

// DELETE /v1/sessions/{id}/refs/{ref}
Reply delete_ref(RouteCall& call) {
  if (auto deleted = call.host->harness->delete_ref(call.ref_name); !deleted) return error_reply(deleted.error());
  return json_reply(Json{{"deleted", call.ref_name}});
}

// GET /v1/sessions/{id}/refs/{ref}/config
Reply get_config(RouteCall& call) { return json_reply(config_json(*call.host->harness, *call.ref)); }

// PATCH (or POST) /v1/sessions/{id}/refs/{ref}/config {model?, thinkingLevel?, activeTools?}
Reply set_config(RouteCall& call) {
  auto body = call.body({"model", "thinkingLevel", "activeTools"});
  if (!body) return error_reply(body.error());
  auto model = body->string("model");
  auto thinking = body->string("thinkingLevel");
  auto tools = names_field(*body, "activeTools");
  if (!model) return error_reply(model.error());
  if (!thinking) return error_reply(thinking.error());
  if (!tools) return error_reply(tools.error());
  // A level is checked before anything is set: a refused request changes nothing.
  std::optional<ThinkingLevel> level;
  if (*thinking) {
    level = parse_thinking_level(**thinking);
    if (!level) return error_reply(Error{Errc::invalid_argument, fmt::format("unknown thinking level '{}'", **thinking)});
  }
  AgentRef& ref = *call.ref;
  if (*model) {
    const auto slash = (*model)->find('/');
    if (slash == std::string::npos) return error_reply(Error{Errc::invalid_argument, "field 'model' must be PROVIDER/ID"});
    if (auto set = ref.set_model((*model)->substr(0, slash), (*model)->substr(slash + 1)); !set) return error_reply(set.error());
  }
  if (level) {
    if (auto set = ref.set_thinking_level(*level); !set) return error_reply(set.error());
  }
  if (*tools) {
    if (auto set = ref.set_active_tools(**tools); !set) return error_reply(set.error());
  }
  return json_reply(config_json(*call.host->harness, ref));
}

// POST /v1/sessions/{id}/refs/{ref}/label {entryId, label}: null clears it.
Reply set_label(RouteCall& call) {
  auto body = call.body({"entryId", "label"});
  if (!body) return error_reply(body.error());
  auto entry = body->required_string("entryId");
  auto label = body->string("label");
  if (!entry) return error_reply(entry.error());
  if (!label) return error_reply(label.error());
  if (*label && (*label)->empty()) return error_reply(Error{Errc::invalid_argument, "field 'label' must not be empty (null clears it)"});
  auto written = call.ref->session().set_label(*entry, *label);
  if (!written && written.error().is(Errc::not_found)) {
    return error_reply(Error{Errc::unknown_entry, written.error().message});  // as navigate and fork name it
  }
  if (!written) return error_reply(written.error());
  return json_reply(Json{{"id", *written}, {"entryId", *entry}, {"label", *label ? Json(**label) : Json(nullptr)}});
}

// GET /v1/sessions/{id}/refs/{ref}/inputs
Reply list_inputs(RouteCall& call) { return json_reply(Json{{"inputs", pending_json(*call.ref)}}); }

// POST /v1/sessions/{id}/refs/{ref}/inputs/{input} {decision, arguments?,
// remember?, reason?, answer?, by?}. The last answer the operation waits
// for resumes it, here.
Reply answer_input(RouteCall& call) {
  auto body = call.body({"decision", "arguments", "remember", "reason", "answer", "by"});
  if (!body) return error_reply(body.error());
  auto decision = body->required_string("decision");
  if (!decision) return error_reply(decision.error());
  InputResponse response;
  if (auto parsed = parse_input_decision(*decision)) {
    response.decision = *parsed;
  } else {
    return error_reply(Error{Errc::invalid_argument, "field 'decision' must be allow, deny or answer"});
  }
  if (auto it = body->json.find("arguments"); it != body->json.end() && !it->is_null()) response.arguments = *it;
  auto remember = body->string("remember");
  auto reason = body->string("reason");
  auto answer = body->string("answer");
  auto by = body->string("by");
  for (const auto* field : {&remember, &reason, &answer, &by}) {
    if (!*field) return error_reply(field->error());
  }
  response.remember = *remember;
  response.reason = *reason;
  response.answer = answer->value_or("");
  response.by = by->value_or("api");
  AgentRef& ref = *call.ref;
  auto answered = ref.respond(call.input_id, std::move(response));
  if (!answered.ok()) return error_reply(answered.error.value_or(Error{Errc::internal_error, "the answer was not taken"}));
  Json out = {{"seq", answered.seq}, {"resumed", false}};
  if (ref.pending_inputs().empty()) {
    for (const auto& status : call.host->harness->refs()) {
      if (status.name == call.ref_name && status.run && status.run->status != OperationStatus::running) {
        call.api.pool.run_detached(call.host, [ref]() mutable { (void)ref.resume(); });
        out["resumed"] = true;
      }
    }
  }
  return json_reply(out);
}

}  // namespace cairn::serve
