#include "status_line.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "terminal_text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli::tui {

std::string format_tokens(std::int64_t tokens) {
  const double value = static_cast<double>(tokens);
  if (tokens < 1000) return fmt::format("{}", tokens);
  if (tokens < 10'000) return fmt::format("{:.1f}k", value / 1000.0);
  if (tokens < 1'000'000) return fmt::format("{}k", tokens / 1000);
  return fmt::format("{:.1f}M", value / 1'000'000.0);
}

std::string format_cost(double dollars) {
  if (dollars < 1.0) return fmt::format("${:.3f}", dollars);
  return fmt::format("${:.2f}", dollars);
}

std::string format_status(const StatusState& state, std::size_t width) {
  std::string text = fmt::format("{} (think {}) | {} | in {} out {} | {}", state.model.empty() ? "no model" : state.model,
                                 state.thinking_level, state.ref, format_tokens(state.input_tokens),
                                 format_tokens(state.output_tokens), format_cost(state.cost));
  if (state.context_percent) {
    const double percent = *state.context_percent;
    text += percent < 10.0 ? fmt::format(" | ctx {:.1f}%", percent) : fmt::format(" | ctx {:.0f}%", percent);
  } else {
    text += " | ctx ?";
  }
  if (state.sandbox_off) text += " | no sandbox";
  if (!state.activity.empty()) text += " | " + state.activity;
  if (state.queued_steer || state.queued_follow_up) {
    std::string queued;
    if (state.queued_steer) queued = fmt::format("{} steer", state.queued_steer);
    if (state.queued_follow_up) queued += fmt::format("{}{} follow-up", queued.empty() ? "" : ", ", state.queued_follow_up);
    text += " | queued " + queued;
  }
  // The model's id, the ref's name, a tool's name and a subagent's label
  // come from the log, the model or a client: visible before measured.
  text = truncate_to_width(visible_text(text), width);
  for (const auto& subagent : state.subagents) {
    text += '\n';
    text += truncate_to_width(visible_text(fmt::format("↳ {}: {}", subagent.label, subagent.activity)), width);
  }
  return text;
}

// A subagent's event, relayed: its line says what it does now, until its run ends.
void StatusTracker::apply_child(const Json& data) {
  if (!data.contains("child") || !data.contains("event") || !data["child"].is_object() || !data["event"].is_object()) return;
  const Json& child = data["child"];
  const Json& inner = data["event"];
  const std::string session = child.value("session", std::string());
  const std::string type = inner.value("type", std::string());
  auto it = std::find_if(state_.subagents.begin(), state_.subagents.end(),
                         [&](const StatusState::Subagent& s) { return s.session == session; });
  if (type == "run_end") {
    if (it != state_.subagents.end()) state_.subagents.erase(it);
    return;
  }
  if (it == state_.subagents.end()) {
    std::string label = "subagent";
    if (auto found = task_labels_.find(child.value("toolCallId", std::string())); found != task_labels_.end()) label = found->second;
    if (child.value("depth", 1) > 1) label = fmt::format("{} (depth {})", label, child.value("depth", 1));
    state_.subagents.push_back({session, std::move(label), "starting"});
    it = std::prev(state_.subagents.end());
  }
  if (type == "tool_start") {
    it->activity = fmt::format("running {}", inner.value("toolName", std::string("a tool")));
  } else if (type == "message_update") {
    it->activity = "writing";
  } else if (type == "step_start" || type == "tool_end" || type == "run_start" || type == "run_resume") {
    it->activity = "thinking";
  } else if (type == "retry_scheduled") {
    it->activity = "retrying";
  } else if (type == "input_requested") {
    it->activity = "waits for an answer";
  } else if (type == "run_cancel") {
    it->activity = "aborting";
  }
}

void StatusTracker::set_totals(std::int64_t input, std::int64_t output, double cost) {
  base_input_ = input;
  base_output_ = output;
  base_cost_ = cost;
  op_input_ = op_output_ = 0;
  op_cost_ = 0;
  state_.input_tokens = input;
  state_.output_tokens = output;
  state_.cost = cost;
}

void StatusTracker::settle() {
  base_input_ += op_input_;
  base_output_ += op_output_;
  base_cost_ += op_cost_;
  op_input_ = op_output_ = 0;
  op_cost_ = 0;
}

namespace {

std::size_t count_of(const Json& data, const char* key) {
  auto it = data.find(key);
  return it != data.end() && it->is_array() ? it->size() : 0;
}

}  // namespace

void StatusTracker::apply(const Event& event) {
  const EventType type = event.type;
  const Json& data = event.data;
  if (type == EventType::context_usage) {
    if (auto context = data.find("context"); context != data.end() && context->is_object()) {
      state_.context_tokens = context->value("tokens", std::int64_t{0});
      if (auto percent = context->find("percent"); percent != context->end() && percent->is_number()) {
        state_.context_percent = percent->get<double>();
      } else {
        state_.context_percent.reset();
      }
    }
    if (auto spend = data.find("operationSpend"); spend != data.end() && spend->is_object()) {
      // Cumulative for the operation: the latest report replaces the last.
      op_input_ = spend->value("input", std::int64_t{0}) + spend->value("cacheRead", std::int64_t{0}) +
                  spend->value("cacheWrite", std::int64_t{0});
      op_output_ = spend->value("output", std::int64_t{0});
      op_cost_ = spend->value("cost", 0.0);
    }
  } else if (type == EventType::run_start || type == EventType::run_resume) {
    state_.activity = "running";
  } else if (type == EventType::compaction_start) {
    state_.activity = "compacting";
  } else if (type == EventType::navigation_start) {
    state_.activity = "navigating";
  } else if (type == EventType::child_session_event) {
    apply_child(data);
  } else if (type == EventType::tool_start) {
    state_.activity = "running " + data.value("toolName", std::string("a tool"));
    if (data.value("toolName", std::string()) == "task" && data.contains("args") && data["args"].is_object()) {
      const Json& args = data["args"];
      std::string label = args.value("description", std::string());
      if (label.empty()) label = args.value("agent", std::string());
      if (label.empty()) label = args.value("prompt", std::string()).substr(0, 40);
      task_labels_[data.value("toolCallId", std::string())] = label.empty() ? "task" : label;
    }
  } else if (type == EventType::tool_end || type == EventType::step_start || type == EventType::retry_start) {
    if (!state_.activity.empty()) state_.activity = "running";
  } else if (type == EventType::retry_scheduled) {
    state_.activity = fmt::format("retrying (attempt {}/{})", data.value("attempt", 0) + 1, data.value("maxAttempts", 0));
  } else if (type == EventType::run_cancel) {
    state_.activity = "aborting";
  } else if (type == EventType::queue_update) {
    state_.queued_steer = count_of(data, "steer");
    state_.queued_follow_up = count_of(data, "followUp");
  } else if (type == EventType::run_end || type == EventType::compaction_end || type == EventType::navigation_end) {
    settle();
    state_.subagents.clear();
    task_labels_.clear();
    state_.activity.clear();
    state_.queued_steer = state_.queued_follow_up = 0;
  } else if (type == EventType::config_update) {
    const std::string property = data.value("property", std::string());
    if (property == "model" && data.contains("value") && data["value"].is_object()) {
      state_.model = data["value"].value("provider", std::string()) + "/" + data["value"].value("modelId", std::string());
    } else if (property == "thinkingLevel" && data.contains("value") && data["value"].is_string()) {
      state_.thinking_level = data["value"].get<std::string>();
    }
  }
  state_.input_tokens = base_input_ + op_input_;
  state_.output_tokens = base_output_ + op_output_;
  state_.cost = base_cost_ + op_cost_;
}

}  // namespace cairn::cli::tui
