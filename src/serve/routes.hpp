// Every route's function, by the resource it serves (one file each:
// routes_service.cpp, routes_sessions.cpp, routes_records.cpp,
// routes_refs.cpp, routes_operations.cpp; A2A's in a2a_*.cpp and
// agent_card.cpp), and the table that names them (route_table.cpp).
#pragma once

#include <vector>

#include "route_call.hpp"
#include "router.hpp"

namespace cairn::serve {

// All of the server's routes, in the order they are matched.
std::vector<Route> api_routes();

// ---- the service: health, description, counters, models ----
Reply get_healthz(RouteCall& call);
Reply get_openapi(RouteCall& call);
Reply get_metrics(RouteCall& call);
Reply get_models(RouteCall& call);
Reply get_inbox_item(RouteCall& call);

// ---- sessions ----
Reply list_sessions(RouteCall& call);
Reply create_session(RouteCall& call);
Reply get_session(RouteCall& call);
Reply delete_session(RouteCall& call);
Reply fork_session(RouteCall& call);
Reply get_tree(RouteCall& call);

// ---- what a session's log holds, open here or followed ----
Reply get_records(RouteCall& call);
Reply get_session_events(RouteCall& call);
Reply get_ref_events(RouteCall& call);
Reply get_branch(RouteCall& call);
Reply get_context(RouteCall& call);

// ---- refs ----
Reply list_refs(RouteCall& call);
Reply create_ref(RouteCall& call);
Reply get_ref(RouteCall& call);
Reply delete_ref(RouteCall& call);
Reply get_config(RouteCall& call);
Reply set_config(RouteCall& call);
Reply set_label(RouteCall& call);
Reply list_inputs(RouteCall& call);
Reply answer_input(RouteCall& call);
// The session's refs as GET …/refs lists them (with what each waits for).
Json refs_json(SessionHost& host);

// ---- operations ----
Reply prompt(RouteCall& call);
Reply steer(RouteCall& call);
Reply follow_up(RouteCall& call);
Reply next_run(RouteCall& call);
Reply abort_run(RouteCall& call);
Reply resume(RouteCall& call);
Reply compact(RouteCall& call);
Reply navigate(RouteCall& call);

// ---- A2A ----
Reply get_agent_card(RouteCall& call);
Reply a2a_jsonrpc(RouteCall& call);
Reply a2a_send(RouteCall& call);
Reply a2a_send_streaming(RouteCall& call);
Reply a2a_list_tasks(RouteCall& call);
Reply a2a_get_task(RouteCall& call);
Reply a2a_cancel_task(RouteCall& call);
Reply a2a_subscribe(RouteCall& call);
// The session an A2A request acts on: its path's task, or its params'
// task or context.
std::optional<std::string> a2a_session_of(const HttpRequest& request, const PathParams& params);

}  // namespace cairn::serve
