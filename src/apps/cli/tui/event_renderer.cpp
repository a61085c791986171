#include "event_renderer.hpp"

#include <fmt/format.h>

#include <variant>

#include "cairn/overloaded.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli::tui {
namespace {


// Tabs as spaces (a terminal's tab stops would break the width arithmetic),
// carriage returns dropped (a line ends where its newline is; nothing
// overwrites it).
std::string tabs_and_returns(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\t') {
      out += "    ";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

// Everything the transcript shows comes from the model, the tools, the user
// or the log: as tabs_and_returns leaves it, with every other control
// character visible (util/untrusted_text.hpp). Done before the width
// arithmetic, so that what is measured is what is shown.
std::string clean(std::string_view text) { return visible_text(tabs_and_returns(text)); }

// clean() for one line: whitespace runs, newlines included, as one space.
std::string shown_line(std::string_view text) { return visible_text(collapse_whitespace(text)); }

std::string blocks_text(const std::vector<UserBlock>& blocks) {
  std::string text;
  for (const auto& block : blocks) {
    if (const auto* t = std::get_if<TextContent>(&block)) {
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += t->text;
    } else {
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += "[image]";
    }
  }
  return text;
}

std::string content_text(const UserContent& content) {
  return std::visit(Overloaded{[](const std::string& s) { return s; },
                               [](const std::vector<UserBlock>& blocks) { return blocks_text(blocks); }},
                    content);
}

std::string_view text_of(const Json& json, const char* key) {
  if (!json.is_object()) return {};
  auto it = json.find(key);
  if (it == json.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

const AssistantMessage* assistant_of(const Event& event) {
  return event.message ? std::get_if<AssistantMessage>(event.message.get()) : nullptr;
}

}  // namespace

EventRenderer::EventRenderer(RenderOptions options) : options_(options), style_{options.color} {
  set_width(options.width);
}

std::string EventRenderer::styled(std::string_view text, Kind kind) const {
  if (text.empty()) return {};
  return kind == Kind::thinking ? style_.dim(text) : std::string(text);
}

std::string EventRenderer::append_live(std::string_view fragment, Kind kind) {
  std::string out;
  if (kind != live_kind_) out += take_complete_lines(true);
  live_kind_ = kind;
  live_ += live_visible_.next(tabs_and_returns(fragment));
  out += take_complete_lines(false);
  return out;
}

std::string EventRenderer::take_complete_lines(bool force) {
  std::string out;
  if (force) live_ += live_visible_.finish();  // a character a fragment broke off in
  for (;;) {
    const std::size_t newline = live_.find('\n');
    const std::string_view head = std::string_view(live_).substr(0, newline);
    const std::size_t cut = wrap_point(head, options_.width);
    if (cut < head.size()) {
      std::string first = live_.substr(0, cut);
      while (!first.empty() && first.back() == ' ') first.pop_back();
      out += styled(first, live_kind_) + "\n";
      live_.erase(0, cut);
      continue;
    }
    if (newline == std::string::npos) break;
    out += styled(head, live_kind_) + "\n";
    live_.erase(0, newline + 1);
  }
  if (force && !live_.empty()) {
    out += styled(live_, live_kind_) + "\n";
    live_.clear();
  }
  return out;
}

std::string EventRenderer::live_line() const { return styled(live_, live_kind_); }

std::string EventRenderer::flush() { return take_complete_lines(true); }

std::string EventRenderer::thinking_line(std::string_view thinking) const {
  return style_.dim(truncate_to_width("~ thinking: " + shown_line(thinking), options_.width)) + "\n";
}

std::string EventRenderer::tool_call_line(const ToolCall& call) const {
  const std::string args = call.arguments.is_object() && call.arguments.empty() ? "" : " " + call.arguments.dump();
  return style_.cyan(truncate_to_width(visible_text(fmt::format("-> {}{}", call.name, args)), options_.width)) + "\n";
}

std::string EventRenderer::tool_result_lines(const ToolResultMessage& result) const {
  const std::string prefix = result.is_error ? "   ! " : "   | ";
  std::vector<std::string> lines = split_lines(clean(blocks_text(result.content)));
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::string out;
  const auto show = [&](std::string_view text) {
    const std::string shown = truncate_to_width(prefix + std::string(text), options_.width);
    out += (result.is_error ? style_.red(shown) : style_.dim(shown)) + "\n";
  };
  if (lines.empty()) show(result.is_error ? "(error, no output)" : "(no output)");
  const std::size_t limit = options_.tool_result_lines;
  for (std::size_t i = 0; i < lines.size() && i < limit; ++i) show(lines[i]);
  if (lines.size() > limit) show(fmt::format("... {} more line{}", lines.size() - limit, lines.size() - limit == 1 ? "" : "s"));
  return out;
}

std::string EventRenderer::user_lines(std::string_view text) const {
  std::string out;
  const auto lines = split_lines(clean(text));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string rest = lines[i];
    bool first_row = true;
    // Wrapped like streamed text, so a long prompt is shown whole.
    do {
      const std::string lead = i == 0 && first_row ? "> " : "  ";
      const std::size_t cut = wrap_point(rest, options_.width - 2);
      std::string row = rest.substr(0, cut);
      while (!row.empty() && row.back() == ' ') row.pop_back();
      out += style_.bold(lead + row) + "\n";
      rest.erase(0, cut);
      first_row = false;
    } while (!rest.empty());
  }
  if (lines.empty()) out += style_.bold(">") + "\n";
  return out;
}

std::string EventRenderer::render_message(const AgentMessage& message) {
  return std::visit(
      Overloaded{
          [&](const UserMessage& m) { return user_lines(content_text(m.content)); },
          [&](const AssistantMessage& m) {
            std::string out;
            for (std::size_t i = 0; i < m.content.size(); ++i) {
              std::visit(Overloaded{[&](const TextContent& t) {
                                      if (streamed_text_ || t.text.empty()) return;
                                      out += append_live(t.text, Kind::text);
                                      out += take_complete_lines(true);
                                    },
                                    [&](const ThinkingContent& t) {
                                      if (shown_thinking_.contains(static_cast<int>(i)) || t.thinking.empty()) return;
                                      if (options_.show_thinking) {
                                        out += append_live(t.thinking, Kind::thinking);
                                        out += take_complete_lines(true);
                                      } else {
                                        out += thinking_line(t.thinking);
                                      }
                                    },
                                    [&](const ToolCall& call) {
                                      if (shown_calls_.contains(call.id)) return;
                                      out += tool_call_line(call);
                                    }},
                         m.content[i]);
            }
            if (m.stop_reason == StopReason::error) {
              last_error_ = shown_line(m.error_message.value_or("the model failed"));
              out += style_.red(truncate_to_width("! " + last_error_, options_.width)) + "\n";
            }
            streamed_text_ = false;
            shown_calls_.clear();
            shown_thinking_.clear();
            return out;
          },
          [&](const ToolResultMessage& m) { return tool_result_lines(m); },
          [&](const CustomMessage& m) {
            if (!m.display) return std::string();
            return style_.dim(truncate_to_width(shown_line(fmt::format("[{}] {}", m.custom_type, content_text(m.content))),
                                                options_.width)) + "\n";
          },
          [&](const BranchSummaryMessage& m) {
            return style_.dim(truncate_to_width("(branch summary) " + shown_line(m.summary), options_.width)) + "\n";
          },
          [&](const CompactionSummaryMessage& m) {
            return style_.dim(truncate_to_width("(compaction summary) " + shown_line(m.summary), options_.width)) + "\n";
          },
          [&](const BashExecutionMessage& m) {
            std::string out = style_.bold(truncate_to_width("$ " + shown_line(m.command), options_.width)) + "\n";
            ToolResultMessage as_result;
            as_result.content = {TextContent{.text = m.output}};
            as_result.is_error = m.exit_code && *m.exit_code != 0;
            return out + tool_result_lines(as_result);
          },
      },
      message);
}

std::string EventRenderer::render_update(const Event& event) {
  const Json& delta = event.data.contains("assistantMessageEvent") ? event.data["assistantMessageEvent"] : Json();
  const std::string_view type = text_of(delta, "type");
  const int index = delta.is_object() && delta.contains("contentIndex") && delta["contentIndex"].is_number_integer()
                        ? delta["contentIndex"].get<int>()
                        : -1;
  const AssistantMessage* partial = assistant_of(event);
  const AssistantBlock* block =
      partial && index >= 0 && static_cast<std::size_t>(index) < partial->content.size() ? &partial->content[index] : nullptr;

  if (type == "text_start") return take_complete_lines(true);
  if (type == "text_delta") {
    streamed_text_ = true;
    return append_live(text_of(delta, "delta"), Kind::text);
  }
  if (type == "text_end") return take_complete_lines(true);
  if (type == "thinking_start") return take_complete_lines(true);
  if (type == "thinking_delta") {
    if (!options_.show_thinking) return {};
    shown_thinking_.insert(index);
    return append_live(text_of(delta, "delta"), Kind::thinking);
  }
  if (type == "thinking_end") {
    std::string out = take_complete_lines(true);
    if (!options_.show_thinking && block) {
      if (const auto* thinking = std::get_if<ThinkingContent>(block); thinking && !thinking->thinking.empty()) {
        out += thinking_line(thinking->thinking);
        shown_thinking_.insert(index);
      }
    }
    return out;
  }
  if (type == "toolcall_end" && block) {
    if (const auto* call = std::get_if<ToolCall>(block)) {
      std::string out = take_complete_lines(true);
      if (shown_calls_.insert(call->id).second) out += tool_call_line(*call);
      return out;
    }
  }
  return {};
}

std::string EventRenderer::render_end(const Event& event) {
  const std::string_view outcome = text_of(event.data, "outcome");
  const bool ok = outcome == "completed" || outcome == "ok";
  const Json* error = event.data.contains("error") ? &event.data["error"] : nullptr;
  const std::string message = error ? shown_line(text_of(*error, "message")) : std::string();
  std::string out = take_complete_lines(true);
  const auto failure = [&](std::string_view what) {
    // The failed response's error was just shown: name the code only.
    const std::string& said = message;
    const std::string text = !said.empty() && said == last_error_
                                 ? fmt::format("! {} {} ({})", what, outcome, error ? text_of(*error, "code") : "")
                                 : fmt::format("! {} {}: {}", what, outcome, said);
    out += style_.red(truncate_to_width(text, options_.width)) + "\n";
    last_error_.clear();
  };
  if (event.type == EventType::run_end) {
    if (outcome == "aborted" || outcome == "cancelled") {
      out += style_.dim("(run aborted)") + "\n";
    } else if (!ok) {
      failure("run");
    }
  } else if (event.type == EventType::compaction_end) {
    const std::string_view code = error ? text_of(*error, "code") : std::string_view();
    const bool automatic = text_of(event.data, "reason") != "manual";
    if (ok) {
      std::int64_t before = 0;
      if (event.data.contains("entry") && event.data["entry"].is_object()) {
        before = event.data["entry"].value("tokensBefore", std::int64_t{0});
      }
      out += style_.dim(fmt::format("(compacted: {} tokens summarised)", before)) + "\n";
    } else if (outcome == "aborted" || outcome == "cancelled") {
      out += style_.dim("(compaction aborted)") + "\n";
    } else if (automatic && (code == to_string(Errc::nothing_to_compact) || code == to_string(Errc::would_split_tool_call))) {
      // The run goes on uncompacted: a note, not a failure.
      out += style_.dim(truncate_to_width("(compaction skipped: " + message + ")", options_.width)) + "\n";
    } else {
      failure("compaction");
    }
  } else if (event.type == EventType::navigation_end) {
    if (ok) {
      const std::string_view leaf = text_of(event.data, "newLeafId");
      std::string text = leaf.empty() ? "(moved to the start of the session" : fmt::format("(moved to {}", shown_line(leaf.substr(0, 8)));
      if (event.data.contains("summaryEntry")) text += ", the branch left behind summarised";
      out += style_.dim(text + ")") + "\n";
    } else if (outcome == "aborted" || outcome == "cancelled") {
      out += style_.dim("(navigation aborted)") + "\n";
    } else {
      failure("navigation");
    }
  }
  return out;
}

std::string EventRenderer::render(const Event& event) {
  const EventType type = event.type;
  if (type == EventType::message_start) {
    if (assistant_of(event)) {
      streamed_text_ = false;
      shown_calls_.clear();
      shown_thinking_.clear();
    }
    return {};
  }
  if (type == EventType::message_update) return render_update(event);
  if (type == EventType::message_end) {
    if (!event.message) return {};
    std::string out = take_complete_lines(true);
    return out + render_message(*event.message);
  }
  if (type == EventType::run_end || type == EventType::compaction_end || type == EventType::navigation_end) return render_end(event);
  if (type == EventType::run_cancel) return take_complete_lines(true) + style_.dim("(aborting...)") + "\n";
  if (type == EventType::run_resume) return style_.dim("(resuming the interrupted run)") + "\n";
  if (type == EventType::compaction_start) {
    const std::string_view reason = text_of(event.data, "reason");
    return take_complete_lines(true) +
           style_.dim(reason.empty() || reason == "manual" ? std::string("(compacting the context...)")
                                                           : fmt::format("(compacting the context: {}...)", reason)) +
           "\n";
  }
  if (type == EventType::retry_scheduled) {
    const auto delay_ms = event.data.value("delayMs", std::int64_t{0});
    return take_complete_lines(true) +
           style_.dim(truncate_to_width(
               fmt::format("(attempt {}/{} failed, retrying in {:.1f}s: {})", event.data.value("attempt", 0),
                           event.data.value("maxAttempts", 0), static_cast<double>(delay_ms) / 1000.0,
                           shown_line(text_of(event.data, "errorMessage"))),
               options_.width)) +
           "\n";
  }
  if (type == EventType::fault) {
    return take_complete_lines(true) +
           style_.red(truncate_to_width(fmt::format("! the session stopped writing: {}", shown_line(text_of(event.data, "message"))),
                                        options_.width)) +
           "\n";
  }
  if (type == EventType::handler_error) {
    return style_.dim(truncate_to_width(shown_line(fmt::format("(a {} failed: {})", text_of(event.data, "kind"), text_of(event.data, "error"))), options_.width)) + "\n";
  }
  return {};
}

}  // namespace cairn::cli::tui
