// /v1/sessions: the list, a new session, one session's summary, its
// deletion, a fork, and its tree.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "cairn/utf8.hpp"
#include "json_views.hpp"
#include "names.hpp"
#include "routes.hpp"

namespace cairn::serve {

namespace {

// A session's state as the viewer shows it: faulted, else its most pressing
// ref's operation (waiting for a human first), else idle.
std::string_view live_status(AgentHarness& harness) {
  if (harness.faulted()) return "faulted";
  std::vector<OperationStatus> statuses;
  for (const auto& ref : harness.refs()) {
    if (ref.run) statuses.push_back(ref.run->status);
  }
  for (const OperationStatus wanted : {OperationStatus::awaiting_input, OperationStatus::running,
                                       OperationStatus::cancelling, OperationStatus::suspended}) {
    if (std::find(statuses.begin(), statuses.end(), wanted) != statuses.end()) return to_string(wanted);
  }
  return "idle";
}

Json model_json(const std::string& provider, const std::string& id) { return {{"provider", provider}, {"id", id}}; }

// What the sessions list shows beside a header. A session this server has
// open: its live state. Another: what its log says, read from the store
// without opening it for writing, so that looking at a list neither holds a
// session another process might resume nor keeps it open here. A session
// that cannot be read says why instead.
Json list_summary(SessionPool& pool, SessionActivity& activity, const SessionHeader& header) {
  const std::shared_ptr<SessionHost> host = pool.find_open(header.id);
  Result<SessionFacts> facts = [&]() -> Result<SessionFacts> {
    if (host) return activity.facts(header.id, *host->session);
    auto stamp = pool.log_stamp(header.id);
    if (!stamp) return std::unexpected(stamp.error());
    return activity.facts(header.id, header.timestamp, *stamp, [&](std::int64_t after, std::size_t limit) {
      return pool.read_log(header.id, after, limit);
    });
  }();
  if (!facts) return Json{{"error", to_json(facts.error())}};
  Json summary = {{"open", host != nullptr},
                  {"status", host ? live_status(*host->harness) : facts->log_status()},
                  {"name", facts->name ? Json(*facts->name) : Json(nullptr)},
                  {"activity", facts->activity()},
                  {"model", nullptr}};
  std::optional<Model> model;
  if (host) {
    if (auto main = host->harness->ref("main")) model = main->model();
  }
  if (model) {
    summary["model"] = model_json(model->provider, model->id);
  } else if (facts->provider && facts->model) {
    summary["model"] = model_json(*facts->provider, *facts->model);
  }
  return summary;
}

// A line a tree shows for a message: its first line of text (a tool call's
// name when it has none), at most 80 bytes, cut on a character boundary.
std::string message_preview(const Json& message) {
  std::string text;
  auto take = [&](const Json& content) {
    if (content.is_string()) {
      text += content.get<std::string>();
      return;
    }
    if (!content.is_array()) return;
    for (const auto& block : content) {
      if (!block.is_object()) continue;
      const std::string type = block.value("type", "");
      if (type == "text" && block.contains("text") && block["text"].is_string()) text += block["text"].get<std::string>();
      if (type == "toolCall" && text.empty() && block.contains("name") && block["name"].is_string()) {
        text = "→ " + block["name"].get<std::string>();
      }
      if (!text.empty()) break;
    }
  };
  if (auto content = message.find("content"); content != message.end()) take(*content);
  if (text.empty() && message.contains("summary") && message["summary"].is_string()) text = message["summary"].get<std::string>();
  if (text.empty() && message.contains("command") && message["command"].is_string()) text = "$ " + message["command"].get<std::string>();
  const auto start = text.find_first_not_of(" \n\t");
  if (start == std::string::npos) return {};
  text = text.substr(start, text.find('\n', start) - start);
  if (text.size() > 80) text = text.substr(0, utf8_floor(text, 79)) + "…";
  return text;
}

// A session id a body names: refused where a path naming it would be.
Result<std::optional<std::string>> body_session_id(const Body& body) {
  auto id = body.string("id");
  if (!id) return std::unexpected(id.error());
  if (*id) {
    if (auto valid = path_name(**id, "session"); !valid) return std::unexpected(valid.error());
  }
  return id;
}

}  // namespace

// GET /v1/sessions?limit=N&after=ID&parent=ID: headers, newest first, each
// with its summary; lineage: each lists its subagents' sessions (oldest
// first), and ?parent=ID lists those of ID alone.
Reply list_sessions(RouteCall& call) {
  const HttpRequest& request = call.request;
  auto limit = call.query_count("limit", 1000, 100);
  if (!limit) return error_reply(limit.error());
  const std::size_t page = **limit;
  auto headers = call.api.pool.list();
  if (!headers) return error_reply(headers.error());
  std::map<std::string, std::vector<std::string>> children;
  for (auto it = headers->rbegin(); it != headers->rend(); ++it) {
    if (it->parent_session && is_child_session(*it)) children[*it->parent_session].push_back(it->id);
  }
  if (auto parent = request.query.find("parent"); parent != request.query.end()) {
    std::erase_if(*headers, [&](const SessionHeader& h) { return !(h.parent_session == parent->second && is_child_session(h)); });
  }
  std::size_t start = 0;
  if (auto after = request.query.find("after"); after != request.query.end()) {
    start = headers->size();
    for (std::size_t i = 0; i < headers->size(); ++i) {
      if ((*headers)[i].id == after->second) start = i + 1;
    }
  }
  Json sessions = Json::array();
  std::size_t i = start;
  for (; i < headers->size() && sessions.size() < page; ++i) {
    Json session = encode((*headers)[i]);
    if (auto kids = children.find((*headers)[i].id); kids != children.end()) session["children"] = kids->second;
    session["summary"] = list_summary(call.api.pool, call.api.activity, (*headers)[i]);
    sessions.push_back(std::move(session));
  }
  Json body = {{"sessions", std::move(sessions)}};
  body["next"] = i < headers->size() ? Json((*headers)[i - 1].id) : Json(nullptr);
  return json_reply(body);
}

// POST /v1/sessions {id?, cwd?}
Reply create_session(RouteCall& call) {
  auto body = call.body({"id", "cwd"});
  if (!body) return error_reply(body.error());
  auto id = body_session_id(*body);
  auto cwd = body->string("cwd");
  if (!id) return error_reply(id.error());
  if (!cwd) return error_reply(cwd.error());
  CreateOptions create;
  create.id = *id;
  create.cwd = cwd->value_or(call.api.pool.factory().default_cwd().string());
  auto host = call.api.pool.create(create);
  if (!host) return error_reply(host.error());
  return json_reply(Json{{"session", encode((*host)->session->header())}}, 201);
}

// GET /v1/sessions/{id}
Reply get_session(RouteCall& call) {
  SessionHost& host = *call.host;
  Session& session = *host.session;
  Json body = {{"session", encode(session.header())}, {"refs", refs_json(host)}, {"cursor", session.size() - 1},
               {"faulted", host.harness->faulted()}};
  auto name = session.name();
  if (!name) return error_reply(name.error());
  body["name"] = *name ? Json(**name) : Json(nullptr);
  if (auto main = host.harness->ref("main")) {
    const Model model = main->model();
    body["model"] = model_json(model.provider, model.id);
  }
  auto facts = call.api.activity.facts(call.session_id, session);
  if (!facts) return error_reply(facts.error());
  body["activity"] = facts->activity();
  return json_reply(body);
}

// DELETE /v1/sessions/{id}: opens nothing (the pool removes what it can).
Reply delete_session(RouteCall& call) {
  if (auto removed = call.api.pool.remove(call.session_id); !removed) return error_reply(removed.error());
  call.api.activity.forget(call.session_id);
  return json_reply(Json{{"deleted", call.session_id}});
}

// POST /v1/sessions/{id}/fork {ref?, entryId?, scope?, position?, id?}
Reply fork_session(RouteCall& call) {
  auto body = call.body({"ref", "entryId", "scope", "position", "id"});
  if (!body) return error_reply(body.error());
  auto ref = body->string("ref");
  auto entry = body->string("entryId");
  auto scope = body->string("scope");
  auto position = body->string("position");
  auto id = body_session_id(*body);
  for (const auto* field : {&ref, &entry, &scope, &position, &id}) {
    if (!*field) return error_reply(field->error());
  }
  ForkOptions fork;
  fork.ref = ref->value_or("main");
  fork.entry_id = *entry;
  if (*scope && **scope != "branch" && **scope != "tree") return error_reply(Error{Errc::invalid_argument, "scope must be branch or tree"});
  if (*scope == "tree") fork.scope = ForkOptions::Scope::tree;
  if (*position && **position != "at" && **position != "before") {
    return error_reply(Error{Errc::invalid_argument, "position must be at or before"});
  }
  if (*position == "before") fork.position = ForkOptions::Position::before;
  fork.id = *id;
  auto forked = call.api.pool.fork(call.host, fork.ref, fork);
  if (!forked) return error_reply(forked.error());
  return json_reply(Json{{"session", encode(forked->session->header())}, {"copied", forked->copied}, {"leftOut", forked->left_out}}, 201);
}

// GET /v1/sessions/{id}/tree: one pass, oldest first: each entry's few
// fields (a message's alone is encoded, for its preview), and the labels,
// latest wins, set on the entries they name once every label is known.
Reply get_tree(RouteCall& call) {
  Session& session = *call.host->session;
  Json entries = Json::array();
  std::unordered_map<std::string, std::size_t> position;
  std::unordered_map<std::string, std::optional<std::string>> labels;
  EntryQuery query{.order = Order::oldest_first, .limit = 4096};
  for (;;) {
    auto page = session.find_entries(query);
    if (!page) return error_reply(page.error());
    for (const auto& entry : page->items) {
      Json item = {{"id", entry.id}, {"parentId", entry.parent_id ? Json(*entry.parent_id) : Json(nullptr)},
                   {"type", to_string(type_of(entry.body))}, {"timestamp", entry.timestamp}};
      if (const auto* body = std::get_if<MessageBody>(&entry.body)) {
        item["role"] = role_of(body->message);
        if (std::string preview = message_preview(encode(body->message)); !preview.empty()) item["preview"] = std::move(preview);
      } else if (const auto* label = std::get_if<Label>(&entry.body)) {
        labels[label->target_id] = label->label;
      }
      position.emplace(entry.id, entries.size());
      entries.push_back(std::move(item));
    }
    if (!page->next_cursor) break;
    query.cursor = page->next_cursor;
  }
  for (const auto& [target, label] : labels) {
    auto at = position.find(target);
    if (label && at != position.end()) entries[at->second]["label"] = *label;
  }
  Json refs = Json::array();
  for (const auto& info : session.refs()) refs.push_back({{"name", info.name}, {"leafId", info.leaf_id ? Json(*info.leaf_id) : Json(nullptr)}});
  return json_reply(Json{{"entries", std::move(entries)}, {"refs", std::move(refs)}});
}

}  // namespace cairn::serve
