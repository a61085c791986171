#include "text.hpp"

#include <fmt/format.h>

#include "cairn/overloaded.hpp"

namespace cairn::cli {
namespace {


bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string join_blocks(const std::vector<UserBlock>& blocks) {
  std::string text;
  for (const auto& block : blocks) {
    if (!text.empty()) text += ' ';
    std::visit(Overloaded{[&](const TextContent& t) { text += t.text; },
                          [&](const ImageContent& i) { text += fmt::format("[image {}]", i.mime_type); }},
               block);
  }
  return text;
}

}  // namespace

std::string one_line(std::string_view text, std::size_t max_chars) {
  std::string out;
  std::size_t chars = 0;
  bool pending_space = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    // Count code points, not bytes: continuation bytes do not start one.
    const bool starts_code_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_code_point) {
      if (chars + (pending_space ? 1 : 0) >= max_chars) {
        out += "...";
        return out;
      }
      if (pending_space) {
        out += ' ';
        ++chars;
        pending_space = false;
      }
      ++chars;
    }
    out += c;
  }
  return out;
}

std::string short_id(std::string_view id) { return std::string(id.substr(0, 8)); }

std::string content_text(const UserContent& content) {
  return std::visit(Overloaded{[](const std::string& s) { return s; },
                               [](const std::vector<UserBlock>& blocks) { return join_blocks(blocks); }},
                    content);
}

std::string message_text(const AgentMessage& message) {
  return std::visit(
      Overloaded{
          [](const UserMessage& m) { return content_text(m.content); },
          [](const AssistantMessage& m) {
            std::string text;
            for (const auto& block : m.content) {
              std::string part = std::visit(
                  Overloaded{[](const TextContent& t) { return t.text; },
                             [](const ThinkingContent&) { return std::string(); },
                             [](const ToolCall& call) { return fmt::format("{}({})", call.name, call.arguments.dump()); }},
                  block);
              if (part.empty()) continue;
              if (!text.empty()) text += ' ';
              text += part;
            }
            if (m.error_message) text += (text.empty() ? "" : " ") + fmt::format("[error: {}]", *m.error_message);
            return text;
          },
          [](const ToolResultMessage& m) { return join_blocks(m.content); },
          [](const CustomMessage& m) { return content_text(m.content); },
          [](const BranchSummaryMessage& m) { return m.summary; },
          [](const CompactionSummaryMessage& m) { return m.summary; },
          [](const BashExecutionMessage& m) { return fmt::format("!{} {}", m.command, m.output); },
      },
      message);
}

std::string message_text(const LlmMessage& message) {
  return std::visit([](const auto& m) { return message_text(AgentMessage(m)); }, message);
}

std::string message_preview(const AgentMessage& message, std::size_t max_chars) {
  std::string head(role_of(message));
  if (const auto* result = std::get_if<ToolResultMessage>(&message)) {
    head += fmt::format("({}{})", result->tool_name, result->is_error ? ", error" : "");
  } else if (const auto* custom = std::get_if<CustomMessage>(&message)) {
    head += fmt::format("({})", custom->custom_type);
  }
  return fmt::format("{}: {}", head, one_line(message_text(message), max_chars));
}

// A placeholder that `cairn repair` left: what it was and why it was replaced.
std::string damage_preview(const DamageReport& damage, std::size_t max_chars) {
  return fmt::format("damaged {} replaced by cairn repair: {}{}", damage.was ? to_string(*damage.was) : "record",
                     one_line(damage.reason, max_chars), damage.original ? " (intact record kept inside)" : "");
}

std::string entry_preview(const TreeEntry& entry, std::size_t max_chars) {
  return std::visit(
      Overloaded{
          [&](const MessageBody& b) { return message_preview(b.message, max_chars); },
          [&](const ModelChange& b) { return fmt::format("{}/{}", b.provider, b.model_id); },
          [&](const ThinkingLevelChange& b) { return std::string(to_string(b.thinking_level)); },
          [&](const ActiveToolsChange& b) {
            std::string names;
            for (const auto& name : b.active_tool_names) names += (names.empty() ? "" : ",") + name;
            return one_line(names, max_chars);
          },
          [&](const Compaction& b) {
            return fmt::format("{} (kept from {}, {} tokens before)", one_line(b.summary, max_chars),
                               short_id(b.first_kept_entry_id), b.tokens_before);
          },
          [&](const BranchSummary& b) {
            return fmt::format("{} (from {})", one_line(b.summary, max_chars), short_id(b.from_id));
          },
          [&](const Custom& b) { return b.custom_type; },
          [&](const CustomMessageBody& b) {
            return fmt::format("{}: {}", b.custom_type, one_line(content_text(b.content), max_chars));
          },
          [&](const Label& b) {
            return b.label ? fmt::format("\"{}\" on {}", one_line(*b.label, max_chars), short_id(b.target_id))
                           : fmt::format("cleared on {}", short_id(b.target_id));
          },
          [&](const SessionInfo& b) {
            return b.name ? fmt::format("name \"{}\"", one_line(*b.name, max_chars)) : std::string("name cleared");
          },
          [&](const Leaf& b) {
            return fmt::format("-> {}", b.target_id ? short_id(*b.target_id) : std::string("(before the first entry)"));
          },
          [&](const DamagedEntry& b) { return damage_preview(b.damage, max_chars); },
      },
      entry.body);
}

std::string harness_preview(const HarnessRecord& record, std::size_t max_chars) {
  return std::visit(
      Overloaded{
          [&](const OperationStarted& b) {
            std::string text(to_string(kind_of(b.intent)));
            if (const auto* run = std::get_if<RunIntent>(&b.intent); run && !run->initial_messages.empty()) {
              text += ": " + entry_preview(run->initial_messages.front(), max_chars);
            } else if (const auto* nav = std::get_if<NavigationIntent>(&b.intent)) {
              text += fmt::format(" to {}", short_id(nav->target_id));
            }
            return text;
          },
          [&](const OperationCancelled& b) { return fmt::format("reason {}", to_string(b.reason)); },
          [&](const OperationFinished& b) {
            return b.error ? fmt::format("{} ({}: {})", to_string(b.outcome), b.error->code,
                                         one_line(b.error->message, max_chars))
                           : std::string(to_string(b.outcome));
          },
          [&](const GenerationStarted& b) {
            return fmt::format("{} attempt {} {}/{}", to_string(b.purpose), b.attempt, b.model.provider, b.model.model_id);
          },
          [&](const ToolStarted& b) {
            return fmt::format("{} #{} ({}) replay {}{}", b.tool_name, b.tool_index, b.tool_call_id, to_string(b.replay),
                               b.child_session ? fmt::format(", child session {}", *b.child_session) : std::string());
          },
          [&](const QueueEnqueued& b) { return fmt::format("{}: {}", to_string(b.queue), entry_preview(b.target, max_chars)); },
          [&](const WriteDeferred& b) { return entry_preview(b.target, max_chars); },
          [&](const RefCreated& b) {
            return fmt::format("{} at {}", b.name, b.at ? short_id(*b.at) : std::string("(empty)"));
          },
          [&](const RefDeleted& b) { return b.name; },
          [&](const InputRequested& b) {
            const std::string what = b.question ? one_line(*b.question, max_chars)
                                                : one_line(b.arguments.dump(), max_chars);
            return fmt::format("{} {} #{} ({}): {}", to_string(b.kind), b.tool_name, b.tool_index, b.tool_call_id, what);
          },
          [&](const InputResolved& b) {
            std::string text = fmt::format("{} {} by {}", to_string(b.decision), short_id(b.request_id), b.by);
            if (b.reason) text += fmt::format(": {}", one_line(*b.reason, max_chars));
            if (b.answer) text += fmt::format(": {}", one_line(*b.answer, max_chars));
            if (b.remember) text += fmt::format(" (remember {})", b.remember->c_str());
            if (b.arguments) text += " (edited arguments)";
            return text;
          },
          [&](const Damaged& b) { return damage_preview(b.damage, max_chars); },
      },
      record.body);
}

}  // namespace cairn::cli
