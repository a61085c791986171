// Spans as the tests see them: a listener that keeps every event, and the
// forest those events make (starts paired with their ends, children under
// their parents, in the order they started).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/trace.hpp"

namespace cairn::testing {

class SpanCollector {
 public:
  void start() {
    subscription_ = trace::subscribe([this](const trace::SpanEvent& event) {
      std::lock_guard lock(mu_);
      events_.push_back(event);
    });
  }
  void stop() { subscription_.reset(); }
  std::vector<trace::SpanEvent> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<trace::SpanEvent> events_;
  trace::Subscription subscription_;
};

struct TestSpan {
  std::string name, id, parent, trace_id;
  Json attributes = Json::object();  // the start's and the end's
  std::optional<trace::SpanError> error;
  bool ended = false;
  std::vector<std::size_t> children;  // indexes into SpanForest::spans
};

struct SpanForest {
  std::vector<TestSpan> spans;  // in the order they started

  std::set<std::string> trace_ids() const {
    std::set<std::string> out;
    for (const auto& span : spans) out.insert(span.trace_id);
    return out;
  }
  std::vector<std::size_t> roots;
  std::vector<std::string> problems;  // an end without a start, a span never ended, an unknown parent

  static SpanForest from_events(const std::vector<trace::SpanEvent>& events) {
    SpanForest forest;
    std::map<std::string, std::size_t> by_id;
    for (const auto& e : events) {
      if (e.type == trace::SpanEventType::start) {
        if (by_id.contains(e.span_id)) forest.problems.push_back("span id used twice: " + e.span_id);
        by_id[e.span_id] = forest.spans.size();
        forest.spans.push_back(TestSpan{.name = e.name, .id = e.span_id, .parent = e.parent_span_id,
                                        .trace_id = e.trace_id, .attributes = e.payload});
        continue;
      }
      auto it = by_id.find(e.span_id);
      if (it == by_id.end()) {
        forest.problems.push_back("an end without a start: " + e.name);
        continue;
      }
      TestSpan& span = forest.spans[it->second];
      span.ended = true;
      span.error = e.error;
      for (const auto& [key, value] : e.payload.items()) span.attributes[key] = value;
    }
    for (std::size_t i = 0; i < forest.spans.size(); ++i) {
      const TestSpan& span = forest.spans[i];
      if (!span.ended) forest.problems.push_back("never ended: " + span.name);
      if (span.parent.empty()) {
        forest.roots.push_back(i);
      } else if (auto parent = by_id.find(span.parent); parent != by_id.end()) {
        if (forest.spans[parent->second].trace_id != span.trace_id) forest.problems.push_back("trace changed: " + span.name);
        forest.spans[parent->second].children.push_back(i);
      } else {
        forest.problems.push_back("unknown parent of " + span.name);
      }
    }
    return forest;
  }

  // The spans an OTLP collector received (the bodies POSTed to
  // /v1/traces) of the traces `traces` names, in the order they started.
  static SpanForest from_otlp(const std::vector<Json>& bodies, const std::set<std::string>& traces) {
    std::vector<trace::SpanEvent> events;
    std::vector<std::pair<std::string, trace::SpanEvent>> ends;  // by start time, after all starts
    for (const auto& body : bodies) {
      for (const auto& resource : body.at("resourceSpans")) {
        for (const auto& scope : resource.at("scopeSpans")) {
          for (const auto& span : scope.at("spans")) {
            if (!traces.contains(span.at("traceId").get<std::string>())) continue;
            trace::SpanEvent start;
            start.type = trace::SpanEventType::start;
            start.name = span.at("name");
            start.trace_id = span.at("traceId");
            start.span_id = span.at("spanId");
            start.parent_span_id = span.value("parentSpanId", "");
            start.timestamp_ns = std::stoll(span.at("startTimeUnixNano").get<std::string>());
            for (const auto& attribute : span.value("attributes", Json::array())) {
              const Json& value = attribute.at("value");
              Json plain;
              if (value.contains("stringValue")) plain = value["stringValue"];
              else if (value.contains("intValue")) plain = std::stoll(value["intValue"].get<std::string>());
              else if (value.contains("doubleValue")) plain = value["doubleValue"];
              else if (value.contains("boolValue")) plain = value["boolValue"];
              else if (value.contains("arrayValue")) {
                plain = Json::array();
                for (const auto& item : value["arrayValue"].value("values", Json::array())) {
                  plain.push_back(item.contains("stringValue") ? item["stringValue"] : item);
                }
              }
              start.payload[attribute.at("key").get<std::string>()] = plain;
            }
            trace::SpanEvent end = start;
            end.payload = Json::object();
            const Json status = span.value("status", Json::object());
            if (status.value("code", 0) == 2) {
              end.type = trace::SpanEventType::error;
              end.error = trace::SpanError{start.payload.value("error.type", ""), status.value("message", "")};
            } else {
              end.type = trace::SpanEventType::end;
            }
            events.push_back(std::move(start));
            ends.emplace_back(end.span_id, std::move(end));
          }
        }
      }
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const auto& a, const auto& b) { return a.timestamp_ns < b.timestamp_ns; });
    for (auto& [id, end] : ends) events.push_back(std::move(end));
    return from_events(events);
  }

  // One line per span, indented by depth, with the attributes that tell
  // siblings apart and ERROR <error.type> for a failed span; spans named in
  // `skip` are left out with everything under them.
  std::string render(const std::set<std::string>& skip) const {
    std::string out;
    for (std::size_t root : roots) render(root, 0, skip, out);
    return out;
  }

  std::vector<const TestSpan*> named(const std::string& name) const {
    std::vector<const TestSpan*> out;
    for (const auto& span : spans) {
      if (span.name == name) out.push_back(&span);
    }
    return out;
  }
  const TestSpan& only(const std::string& name) const {
    const auto found = named(name);
    EXPECT_EQ(found.size(), 1u) << name;
    if (found.empty()) std::abort();
    return *found.front();
  }
  const TestSpan& parent_of(const TestSpan& span) const {
    for (const auto& candidate : spans) {
      if (candidate.id == span.parent) return candidate;
    }
    ADD_FAILURE() << "no parent for " << span.name;
    std::abort();
  }
  bool descends_from(const TestSpan& span, const TestSpan& ancestor) const {
    const TestSpan* at = &span;
    while (!at->parent.empty()) {
      if (at->parent == ancestor.id) return true;
      at = &parent_of(*at);
    }
    return false;
  }

 private:
  void render(std::size_t index, int depth, const std::set<std::string>& skip, std::string& out) const {
    const TestSpan& span = spans[index];
    if (skip.contains(span.name)) return;
    out += std::string(static_cast<std::size_t>(depth) * 2, ' ') + span.name;
    for (const char* key : {"attempt", "purpose", "again", "hook", "gen_ai.tool.name", "reason"}) {
      if (span.attributes.contains(key)) {
        const Json& value = span.attributes[key];
        out += std::string(" ") + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
      }
    }
    if (span.attributes.value("recovery", false)) out += " recovery=true";
    if (span.error) out += " ERROR " + span.error->name;
    out += "\n";
    for (std::size_t child : span.children) render(child, depth + 1, skip, out);
  }
};

}  // namespace cairn::testing
