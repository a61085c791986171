// GET /healthz, /openapi.json, /metrics, /v1/models and /v1/inbox/{item}.
#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "inbox_relay.hpp"
#include "openapi.hpp"
#include "routes.hpp"
#include "stream_hub.hpp"

namespace cairn::serve {

Reply get_healthz(RouteCall&) { return json_reply(Json{{"status", "ok"}}); }

Reply get_openapi(RouteCall&) { return Reply{HttpResponse{.status = 200, .body = std::string(openapi_document())}}; }

namespace {

void counter(std::string& text, std::string_view name, std::int64_t value) {
  text += fmt::format("# TYPE {0} counter\n{0} {1}\n", name, value);
}

void gauge(std::string& text, std::string_view name, std::int64_t value) {
  text += fmt::format("# TYPE {0} gauge\n{0} {1}\n", name, value);
}

void append_histogram(std::string& text, const AppendStats& appends) {
  text += "# TYPE cairn_append_seconds histogram\n";
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i < AppendStats::kBounds.size(); ++i) {
    cumulative += appends.buckets[i];
    text += fmt::format("cairn_append_seconds_bucket{{le=\"{}\"}} {}\n", AppendStats::kBounds[i], cumulative);
  }
  text += fmt::format("cairn_append_seconds_bucket{{le=\"+Inf\"}} {}\n", appends.count);
  text += fmt::format("cairn_append_seconds_sum {:.6f}\ncairn_append_seconds_count {}\n", appends.seconds, appends.count);
}

}  // namespace

// Prometheus text.
Reply get_metrics(RouteCall& call) {
  Metrics& metrics = call.api.metrics;
  SessionPool& pool = call.api.pool;
  std::string text;
  {
    std::lock_guard lock(metrics.mu);
    text += "# TYPE cairn_http_requests_total counter\n";
    for (const auto& [key, count] : metrics.requests) {
      text += fmt::format("cairn_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, count);
    }
    text += "# TYPE cairn_runs_total counter\n";
    for (const auto& [outcome, count] : metrics.runs) text += fmt::format("cairn_runs_total{{outcome=\"{}\"}} {}\n", outcome, count);
  }
  gauge(text, "cairn_streams_open", metrics.streams_open.load());
  counter(text, "cairn_streams_total", metrics.streams_total.load());
  {
    std::lock_guard lock(metrics.mu);
    text += "# TYPE cairn_streams_ended_total counter\n";
    for (const auto& [reason, count] : metrics.streams_ended) {
      text += fmt::format("cairn_streams_ended_total{{reason=\"{}\"}} {}\n", reason, count);
    }
  }
  counter(text, "cairn_stream_overflows_total", StreamHub::overflows());
  counter(text, "cairn_stream_updates_coalesced_total", StreamHub::coalesced());
  gauge(text, "cairn_sessions_open", static_cast<std::int64_t>(pool.open_count()));
  counter(text, "cairn_session_opens_total", static_cast<std::int64_t>(pool.opens_total()));
  text += fmt::format("# TYPE cairn_tokens_total counter\ncairn_tokens_total{{kind=\"input\"}} {}\ncairn_tokens_total{{kind=\"output\"}} {}\n",
                      metrics.input_tokens.load(), metrics.output_tokens.load());
  text += fmt::format("# TYPE cairn_cost_dollars_total counter\ncairn_cost_dollars_total {:.6f}\n",
                      static_cast<double>(metrics.cost_microdollars.load()) / 1e6);
  append_histogram(text, pool.append_stats());
  return Reply{HttpResponse{.status = 200, .content_type = "text/plain; version=0.0.4", .body = std::move(text)}};
}

Reply get_models(RouteCall& call) {
  const HarnessFactory& factory = call.api.pool.factory();
  std::vector<ConfiguredModel> listed = factory.models();
  const std::optional<ConfiguredModel> chosen = factory.default_model();
  if (chosen && std::none_of(listed.begin(), listed.end(), [&](const ConfiguredModel& m) { return m.qualified_id() == chosen->qualified_id(); })) {
    listed.insert(listed.begin(), *chosen);  // an ad-hoc endpoint from the command line
  }
  Json models = Json::array();
  for (const auto& model : listed) {
    models.push_back({{"id", model.qualified_id()}, {"provider", model.model.provider}, {"model", model.model.id},
                      {"api", model.model.api}, {"contextWindow", model.model.context_window},
                      {"reasoning", model.model.reasoning}, {"available", model.available()}});
  }
  Json body = {{"models", std::move(models)}};
  body["default"] = chosen ? Json(chosen->qualified_id()) : Json(nullptr);
  return json_reply(body);
}

// An item's id is a positive integer; anything else is no item.
Reply get_inbox_item(RouteCall& call) {
  Inbox* inbox = call.api.pool.inbox();
  if (!inbox) {
    return error_reply(Error{Errc::not_found, "this server's store has no inbox: one process writes it, so no request is "
                                              "ever relayed"});
  }
  std::int64_t id = 0;
  const auto [end, ec] = std::from_chars(call.rest.data(), call.rest.data() + call.rest.size(), id);
  const bool number = ec == std::errc() && end == call.rest.data() + call.rest.size() && id > 0;
  auto item = number ? inbox->item(id) : Result<std::optional<InboxItem>>(std::nullopt);
  if (!item) return error_reply(item.error());
  if (!*item) {
    return error_reply(Error{Errc::not_found, "no such inbox item (an item is forgotten a day after it was decided)"});
  }
  return json_reply(item_json(**item));
}

}  // namespace cairn::serve
