// What a session's log holds: its records a page at a time, its streams,
// a ref's branch before an entry and its context. Each works on a session
// open here and on one another process writes (SessionView) alike, but the
// context, which is the harness's.
#include <algorithm>

#include <fmt/format.h>

#include "json_views.hpp"
#include "routes.hpp"

namespace cairn::serve {

namespace {

// A ref's transcript before an entry, as a snapshot's would hold it (back to
// the newest compaction, inclusive): `{entries, next}`, at most `count`
// entries, oldest first; `next` is the `before` of the page before, null at
// the start.
Result<Json> branch_before(const Session& session, const std::string& session_id, const std::string& ref,
                           const std::string& before, std::size_t count) {
  auto entry = session.get_entry(before);
  if (!entry) return std::unexpected(entry.error());
  if (!*entry) return fail(Errc::unknown_entry, fmt::format("session {} has no entry '{}'", session_id, before));
  // Only the ref's own branch: another branch's entries are not this
  // transcript's (and after a navigate the client's snapshot is stale).
  const auto path = session.path_to(session.leaf(ref));
  if (std::find(path.begin(), path.end(), before) == path.end()) {
    return fail(Errc::unknown_entry, fmt::format("entry '{}' is not on ref '{}''s branch (if the ref moved, open its "
                                                 "stream again)",
                                                 before, ref));
  }
  const std::optional<std::string> parent = (*entry)->parent_id;
  Json entries = Json::array();
  bool more = false;
  // A compaction is where a transcript starts: nothing is before it.
  if (parent && !std::holds_alternative<Compaction>((*entry)->body)) {
    auto page = session.find_entries_on_branch(EntryQuery{.order = Order::newest_first, .limit = count + 1},
                                               BranchBounds{.start = *parent, .stop_at_type = RecordType::compaction});
    if (!page) return std::unexpected(page.error());
    more = page->items.size() > count;
    if (more) page->items.pop_back();
    for (auto it = page->items.rbegin(); it != page->items.rend(); ++it) entries.push_back(encode(*it));
  }
  Json next = more && !entries.empty() ? entries.front()["id"] : Json(nullptr);
  return Json{{"entries", std::move(entries)}, {"next", std::move(next)}};
}

Reply open_stream(RouteCall& call, std::optional<std::string> ref) {
  auto after = call.stream_cursor();
  if (!after) return error_reply(after.error());
  // ?transcript=N (a ref's stream): the snapshot's newest N entries only.
  std::optional<std::size_t> transcript_limit;
  if (ref) {
    auto limit = call.query_count("transcript", call.api.limits.max_page, std::nullopt);
    if (!limit) return error_reply(limit.error());
    transcript_limit = *limit;
  }
  auto stream = call.view->stream(std::move(ref), *after, call.stream_limits(), transcript_limit);
  if (!stream) return error_reply(stream.error());
  return Reply{.stream = std::move(*stream)};
}

}  // namespace

// GET /v1/sessions/{id}/records?after=SEQ&limit=N
Reply get_records(RouteCall& call) {
  auto after = call.query_int("after");
  auto limit = call.query_count("limit", call.api.limits.max_page, 1000);
  if (!after) return error_reply(after.error());
  if (!limit) return error_reply(limit.error());
  auto lines = call.view->read_log(after->value_or(-1), **limit);
  if (!lines) return error_reply(lines.error());
  Json records = Json::array();
  for (const auto& line : *lines) records.push_back(Json::parse(line.json, nullptr, false));
  Json body = {{"records", std::move(records)}};
  const std::optional<std::int64_t> newest = call.view->newest();
  const bool last = lines->empty() || (newest ? lines->back().seq >= *newest : lines->size() < **limit);
  body["next"] = last ? Json(nullptr) : Json(lines->back().seq);
  return json_reply(body);
}

// GET /v1/sessions/{id}/events
Reply get_session_events(RouteCall& call) { return open_stream(call, std::nullopt); }

// GET /v1/sessions/{id}/refs/{ref}/events?transcript=N
Reply get_ref_events(RouteCall& call) { return open_stream(call, call.ref_name); }

// GET /v1/sessions/{id}/refs/{ref}/branch?before=ID&limit=N: the ref's
// transcript before an entry, as a snapshot's would hold it (back to the
// newest compaction, inclusive): the entries a snapshot with ?transcript=N
// left out, a page at a time, oldest first. Of a followed session, from
// its log as the store holds it now.
Reply get_branch(RouteCall& call) {
  auto before = call.request.query.find("before");
  auto limit = call.query_count("limit", call.api.limits.max_page, 500);
  if (!limit) return error_reply(limit.error());
  if (before == call.request.query.end() || before->second.empty()) {
    return error_reply(Error{Errc::invalid_argument, "before (an entry id) is required"});
  }
  auto session = call.view->readable();
  if (!session) return error_reply(session.error());
  if (!call.host) {
    const auto refs = (*session)->refs();
    if (std::none_of(refs.begin(), refs.end(), [&](const RefInfo& info) { return info.name == call.ref_name; })) {
      return error_reply(Error{Errc::unknown_ref, fmt::format("session {} has no ref '{}'", call.session_id, call.ref_name)});
    }
  }
  auto page = branch_before(**session, call.session_id, call.ref_name, before->second, **limit);
  if (!page) return error_reply(page.error());
  return json_reply(*page);
}

// GET /v1/sessions/{id}/refs/{ref}/context: what the ref's next request
// would send.
Reply get_context(RouteCall& call) {
  auto context = call.host->session->build_context(call.ref_name);
  if (!context) return error_reply(context.error());
  Json body = {{"messages", messages_json(context->messages)}, {"entryIds", context->entry_ids},
               {"thinkingLevel", context->thinking_level}};
  body["model"] = context->model ? Json{{"provider", context->model->provider}, {"id", context->model->model_id}} : Json(nullptr);
  body["activeTools"] = context->active_tool_names ? Json(*context->active_tool_names) : Json(nullptr);
  return json_reply(body);
}

}  // namespace cairn::serve
