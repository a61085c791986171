// Every route of the server, one row each, in the order they are matched.
// The README ("cairn serve") and docs/api.md document them; openapi.json
// describes them.
#include "routes.hpp"

namespace cairn::serve {

std::vector<Route> api_routes() {
  constexpr auto kOpen = SessionUse::open;
  constexpr auto kOpenOrFollowed = SessionUse::open_or_followed;
  constexpr auto kNone = SessionUse::none;
  return {
      // The service.
      {"GET", "/healthz", get_healthz, kNone, Access::anyone},
      {"HEAD", "/healthz", get_healthz, kNone, Access::anyone},
      {"GET", "/openapi.json", get_openapi},
      {"GET", "/metrics", get_metrics},
      {"GET", "/v1/models", get_models},
      // What became of a request relayed to another server's session.
      {"GET", "/v1/inbox/{rest...}", get_inbox_item},
      // A2A v1.0: the card, the JSON-RPC binding, the HTTP+JSON binding (a
      // task id holds slashes: the rest of the path, up to its verb).
      {"GET", "/.well-known/agent-card.json", get_agent_card},
      {"POST", "/a2a/jsonrpc", a2a_jsonrpc, kNone, Access::token, {}, a2a_session_of},
      {"POST", "/a2a/rest/message:send", a2a_send, kNone, Access::token, {}, a2a_session_of},
      {"POST", "/a2a/rest/message:stream", a2a_send_streaming, kNone, Access::token, {}, a2a_session_of},
      {"GET", "/a2a/rest/tasks", a2a_list_tasks, kNone, Access::token, {}, a2a_session_of},
      {"POST", "/a2a/rest/tasks/{rest...}:cancel", a2a_cancel_task, kNone, Access::token, {}, a2a_session_of},
      {"GET", "/a2a/rest/tasks/{rest...}:subscribe", a2a_subscribe, kNone, Access::token, {}, a2a_session_of},
      {"POST", "/a2a/rest/tasks/{rest...}:subscribe", a2a_subscribe, kNone, Access::token, {}, a2a_session_of},  // the spec says GET; the JS client sends POST
      {"GET", "/a2a/rest/tasks/{rest...}", a2a_get_task, kNone, Access::token, {}, a2a_session_of},
      // Sessions.
      {"GET", "/v1/sessions", list_sessions},
      {"POST", "/v1/sessions", create_session},
      {"GET", "/v1/sessions/{id}", get_session, kOpen},
      {"DELETE", "/v1/sessions/{id}", delete_session},
      {"POST", "/v1/sessions/{id}/fork", fork_session, kOpen},
      {"GET", "/v1/sessions/{id}/tree", get_tree, kOpen},
      {"GET", "/v1/sessions/{id}/records", get_records, kOpenOrFollowed},
      {"GET", "/v1/sessions/{id}/events", get_session_events, kOpenOrFollowed},
      // Refs.
      {"GET", "/v1/sessions/{id}/refs", list_refs, kOpen},
      {"POST", "/v1/sessions/{id}/refs", create_ref, kOpen},
      {"GET", "/v1/sessions/{id}/refs/{ref}", get_ref, kOpen},
      {"DELETE", "/v1/sessions/{id}/refs/{ref}", delete_ref, kOpen},
      {"GET", "/v1/sessions/{id}/refs/{ref}/events", get_ref_events, kOpenOrFollowed},
      {"GET", "/v1/sessions/{id}/refs/{ref}/branch", get_branch, kOpenOrFollowed},
      {"GET", "/v1/sessions/{id}/refs/{ref}/context", get_context, kOpen},
      {"GET", "/v1/sessions/{id}/refs/{ref}/config", get_config, kOpen},
      {"PATCH", "/v1/sessions/{id}/refs/{ref}/config", set_config, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/config", set_config, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/label", set_label, kOpen},
      {"GET", "/v1/sessions/{id}/refs/{ref}/inputs", list_inputs, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/inputs/{input}", answer_input, kOpen},
      // Operations.
      {"POST", "/v1/sessions/{id}/refs/{ref}/prompt", prompt, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/steer", steer, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/follow-up", follow_up, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/next-run", next_run, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/abort", abort_run, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/resume", resume, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/compact", compact, kOpen},
      {"POST", "/v1/sessions/{id}/refs/{ref}/navigate", navigate, kOpen},
  };
}

}  // namespace cairn::serve
