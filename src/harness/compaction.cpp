#include "cairn/harness/compaction.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "log/index.hpp"
#include "cairn/overloaded.hpp"

namespace cairn {
namespace {

constexpr std::int64_t kImageChars = 4800;
constexpr std::size_t kToolResultMaxChars = 2000;


std::int64_t tokens_of_chars(std::int64_t chars) { return (chars + 3) / 4; }

std::int64_t chars_of(const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) return static_cast<std::int64_t>(text->size());
  std::int64_t chars = 0;
  for (const auto& block : std::get<std::vector<UserBlock>>(content)) {
    if (const auto* text = std::get_if<TextContent>(&block)) chars += static_cast<std::int64_t>(text->text.size());
    if (std::holds_alternative<ImageContent>(block)) chars += kImageChars;
  }
  return chars;
}

std::int64_t chars_of(const std::vector<UserBlock>& blocks) { return chars_of(UserContent(blocks)); }

bool is_successful_response(const AgentMessage& message) {
  const auto* a = std::get_if<AssistantMessage>(&message);
  return a && a->stop_reason != StopReason::error && a->stop_reason != StopReason::aborted;
}

const AgentMessage* message_of(const TreeEntry& entry) {
  const auto* body = std::get_if<MessageBody>(&entry.body);
  return body ? &body->message : nullptr;
}

std::string_view role_of_entry(const TreeEntry& entry) {
  const AgentMessage* message = message_of(entry);
  return message ? role_of(*message) : std::string_view();
}

// A cut may start the kept part here: the model sees a user-side or
// assistant message first, never a tool result without its call.
bool valid_cut(const TreeEntry& entry) {
  if (std::holds_alternative<BranchSummary>(entry.body) || std::holds_alternative<CustomMessageBody>(entry.body)) {
    return true;
  }
  const std::string_view role = role_of_entry(entry);
  return !role.empty() && role != "toolResult";
}

// A turn starts at a user message, a user-initiated bash command, or a
// user-role entry (custom message, branch summary).
bool starts_turn(const TreeEntry& entry) {
  if (std::holds_alternative<BranchSummary>(entry.body) || std::holds_alternative<CustomMessageBody>(entry.body)) {
    return true;
  }
  const std::string_view role = role_of_entry(entry);
  return role == "user" || role == "bashExecution";
}

void note_file_ops(const AgentMessage& message, std::set<std::string>& read, std::set<std::string>& modified) {
  const auto* assistant = std::get_if<AssistantMessage>(&message);
  if (!assistant) return;
  for (const auto& block : assistant->content) {
    const auto* call = std::get_if<ToolCall>(&block);
    if (!call || !call->arguments.is_object()) continue;
    auto path = call->arguments.find("path");
    if (path == call->arguments.end() || !path->is_string()) continue;
    if (call->name == "read") read.insert(path->get<std::string>());
    if (call->name == "write" || call->name == "edit") modified.insert(path->get<std::string>());
  }
}

std::string text_of(const std::vector<UserBlock>& blocks) {
  std::string out;
  for (const auto& block : blocks) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += text->text;
  }
  return out;
}

std::string text_of(const UserContent& content) {
  if (const auto* text = std::get_if<std::string>(&content)) return *text;
  return text_of(std::get<std::vector<UserBlock>>(content));
}

std::string truncated(std::string text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  const std::size_t dropped = text.size() - max_chars;
  text.resize(max_chars);
  return fmt::format("{}\n\n[... {} more characters truncated]", text, dropped);
}

constexpr const char* kSummarySystemPrompt =
    "You summarise conversations between a user and an AI coding assistant. Read the conversation you are given "
    "and write the structured summary it asks for. Do not continue the conversation and do not answer anything "
    "in it: write only the summary.";

// The sections every summary has (the issue's: goal, constraints, progress,
// decisions, next steps, critical context).
constexpr const char* kSummaryFormat =
    "## Goal\n"
    "[What the user wants to achieve; several items if the session has several tasks.]\n\n"
    "## Constraints & Preferences\n"
    "- [Requirements and preferences the user stated, or \"(none)\"]\n\n"
    "## Progress\n"
    "### Done\n- [x] [Finished work]\n"
    "### In Progress\n- [ ] [Work under way]\n"
    "### Blocked\n- [What prevents progress, if anything]\n\n"
    "## Key Decisions\n"
    "- **[Decision]**: [Why]\n\n"
    "## Next Steps\n"
    "1. [What should happen next, in order]\n\n"
    "## Critical Context\n"
    "- [Data, examples or references needed to continue, or \"(none)\"]\n\n"
    "Keep every section short. Keep file paths, function names and error messages exactly as written.";

constexpr const char* kFirstSummaryInstructions =
    "The conversation above is to be summarised as a checkpoint from which another model will continue the "
    "work. Write the summary in exactly this format:\n\n";

constexpr const char* kUpdateSummaryInstructions =
    "The conversation above is NEW material. Fold it into the existing summary in <previous-summary>: keep "
    "everything the previous summary says unless it no longer matters, add the new progress, decisions and "
    "context, move finished items from In Progress to Done, and revise Next Steps. Write the result in exactly "
    "this format:\n\n";

constexpr const char* kTurnPrefixInstructions =
    "The conversation above is the BEGINNING of a turn too large to keep whole; its end is kept verbatim. "
    "Summarise the beginning so that the kept end makes sense:\n\n"
    "## Original Request\n[What the user asked for in this turn]\n\n"
    "## Early Progress\n- [Decisions taken and work done in this part]\n\n"
    "## Context for the Rest\n- [What is needed to understand the kept part]\n\n"
    "Be brief.";

constexpr const char* kBranchSummaryPreamble =
    "The user explored another branch of this conversation before coming back here. What happened there:\n\n";

constexpr const char* kBranchSummaryFormat =
    "Summarise this branch of the conversation, to be read when the user comes back to where it started. "
    "Use exactly this format:\n\n"
    "## Goal\n[What the user tried to achieve on this branch]\n\n"
    "## Constraints & Preferences\n- [Requirements and preferences stated, or \"(none)\"]\n\n"
    "## Progress\n### Done\n- [x] [Finished work]\n### In Progress\n- [ ] [Work started and not finished]\n"
    "### Blocked\n- [What prevented progress, if anything]\n\n"
    "## Key Decisions\n- **[Decision]**: [Why]\n\n"
    "## Next Steps\n1. [What would continue this work]\n\n"
    "Keep every section short. Keep file paths, function names and error messages exactly as written.";

// What an abandoned entry says in a branch summary: tool results are left
// out (the calls say what ran); compactions and summaries count.
std::optional<AgentMessage> branch_message(const TreeEntry& entry) {
  if (const auto* compaction = std::get_if<Compaction>(&entry.body)) {
    return CompactionSummaryMessage{.summary = compaction->summary, .tokens_before = compaction->tokens_before};
  }
  auto message = project_entry(entry);
  if (message && std::holds_alternative<ToolResultMessage>(*message)) return std::nullopt;
  return message;
}

void note_details(const std::optional<Json>& details, std::set<std::string>& read, std::set<std::string>& modified) {
  if (!details || !details->is_object()) return;
  for (const char* key : {"readFiles", "modifiedFiles"}) {
    auto list = details->find(key);
    if (list == details->end() || !list->is_array()) continue;
    for (const auto& file : *list) {
      if (file.is_string()) (std::string(key) == "readFiles" ? read : modified).insert(file.get<std::string>());
    }
  }
}

}  // namespace

std::string_view to_string(CompactionReason reason) {
  switch (reason) {
    case CompactionReason::manual: return "manual";
    case CompactionReason::threshold: return "threshold";
    case CompactionReason::overflow: return "overflow";
  }
  return "unknown";
}

std::optional<CompactionReason> parse_compaction_reason(std::string_view text) {
  for (auto reason : {CompactionReason::manual, CompactionReason::threshold, CompactionReason::overflow}) {
    if (to_string(reason) == text) return reason;
  }
  return std::nullopt;
}

std::int64_t estimate_tokens(const AgentMessage& message) {
  const std::int64_t chars = std::visit(
      Overloaded{
          [](const UserMessage& m) { return chars_of(m.content); },
          [](const AssistantMessage& m) {
            std::int64_t n = 0;
            for (const auto& block : m.content) {
              if (const auto* text = std::get_if<TextContent>(&block)) n += static_cast<std::int64_t>(text->text.size());
              if (const auto* thinking = std::get_if<ThinkingContent>(&block)) {
                n += static_cast<std::int64_t>(thinking->thinking.size());
              }
              if (const auto* call = std::get_if<ToolCall>(&block)) {
                n += static_cast<std::int64_t>(call->name.size() + call->arguments.dump().size());
              }
            }
            return n;
          },
          [](const ToolResultMessage& m) { return chars_of(m.content); },
          [](const CustomMessage& m) { return chars_of(m.content); },
          [](const BashExecutionMessage& m) { return static_cast<std::int64_t>(m.command.size() + m.output.size()); },
          [](const BranchSummaryMessage& m) { return static_cast<std::int64_t>(m.summary.size()); },
          [](const CompactionSummaryMessage& m) { return static_cast<std::int64_t>(m.summary.size()); },
      },
      message);
  return tokens_of_chars(chars);
}

std::int64_t context_tokens(const Usage& usage) {
  if (usage.total_tokens > 0) return usage.total_tokens;
  return usage.input + usage.output + usage.cache_read + usage.cache_write;
}

ContextSize measure_context(const std::vector<AgentMessage>& messages) {
  ContextSize size;
  // A response from before the latest compaction counted a context that
  // held what the summary has since replaced (pi skips those too).
  const auto* compaction = messages.empty() ? nullptr : std::get_if<CompactionSummaryMessage>(&messages.front());
  std::size_t from = 0;
  for (std::size_t i = messages.size(); i-- > 0;) {
    if (is_successful_response(messages[i]) &&
        (!compaction || std::get<AssistantMessage>(messages[i]).timestamp > compaction->timestamp)) {
      size.counted = context_tokens(std::get<AssistantMessage>(messages[i]).usage);
      from = i + 1;
      break;
    }
  }
  for (std::size_t i = from; i < messages.size(); ++i) size.estimated += estimate_tokens(messages[i]);
  if (size.counted == 0) {
    // No response counted anything (none yet, or a provider that reports no
    // usage): estimate the whole context.
    size.estimated = 0;
    for (const auto& message : messages) size.estimated += estimate_tokens(message);
  }
  size.tokens = size.counted + size.estimated;
  return size;
}

bool should_compact(std::int64_t context_size, std::int64_t context_window, const CompactionSettings& settings) {
  return settings.enabled && context_window > 0 && context_size > context_window - settings.reserve_tokens;
}

CutPoint find_cut_point(const std::vector<TreeEntry>& path, std::size_t start, std::size_t end,
                        std::int64_t keep_recent_tokens) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = start; i < end; ++i) {
    if (valid_cut(path[i])) cuts.push_back(i);
  }
  if (cuts.empty()) return CutPoint{start, std::nullopt};

  std::size_t cut = cuts.front();
  std::int64_t kept = 0;
  for (std::size_t i = end; i-- > start;) {
    const AgentMessage* message = message_of(path[i]);
    if (!message) continue;
    kept += estimate_tokens(*message);
    if (kept >= keep_recent_tokens) {
      auto at_or_after = std::lower_bound(cuts.begin(), cuts.end(), i);
      if (at_or_after != cuts.end()) cut = *at_or_after;
      break;
    }
  }
  // Settings and other non-message entries just before the cut go with it.
  while (cut > start && !message_of(path[cut - 1]) && !std::holds_alternative<Compaction>(path[cut - 1].body)) {
    --cut;
  }

  CutPoint point{cut, std::nullopt};
  if (role_of_entry(path[cut]) == "user") return point;
  for (std::size_t i = cut + 1; i-- > start;) {
    if (starts_turn(path[i])) {
      if (i != cut) point.turn_start = i;
      break;
    }
  }
  return point;
}

Result<CompactionPreparation> prepare_compaction(const std::vector<TreeEntry>& path, const CompactionSettings& settings) {
  if (path.empty()) return fail(Errc::nothing_to_compact, "the branch is empty");
  if (std::holds_alternative<Compaction>(path.back().body)) {
    return fail(Errc::nothing_to_compact, "the branch was just compacted: nothing was added since");
  }
  std::optional<std::size_t> previous;
  for (std::size_t i = path.size(); i-- > 0;) {
    if (std::holds_alternative<Compaction>(path[i].body)) {
      previous = i;
      break;
    }
  }
  std::size_t start = previous ? *previous + 1 : 0;
  CompactionPreparation prep;
  if (previous) {
    const auto& compaction = std::get<Compaction>(path[*previous].body);
    prep.previous_summary = compaction.summary;
    for (std::size_t i = 0; i < *previous; ++i) {
      if (path[i].id == compaction.first_kept_entry_id) start = i;
    }
  }

  for (std::size_t i = path.size(); i-- > 0;) {
    if (const AgentMessage* message = message_of(path[i]); message && is_successful_response(*message)) {
      prep.tokens_before = context_tokens(std::get<AssistantMessage>(*message).usage);
      break;
    }
  }

  const CutPoint cut = find_cut_point(path, start, path.size(), settings.keep_recent_tokens);
  prep.first_kept_entry_id = path[cut.first_kept].id;
  prep.split_turn = cut.split_turn();
  const std::size_t history_end = cut.split_turn() ? *cut.turn_start : cut.first_kept;
  std::set<std::string> read, modified;
  auto collect = [&](std::size_t from, std::size_t to, std::vector<AgentMessage>& out) {
    for (std::size_t i = from; i < to; ++i) {
      if (std::holds_alternative<Compaction>(path[i].body)) continue;  // its summary is previous_summary
      if (auto message = project_entry(path[i])) {
        note_file_ops(*message, read, modified);
        out.push_back(std::move(*message));
      }
    }
  };
  collect(start, history_end, prep.messages_to_summarize);
  if (cut.split_turn()) collect(*cut.turn_start, cut.first_kept, prep.turn_prefix_messages);
  if (prep.messages_to_summarize.empty() && prep.turn_prefix_messages.empty()) {
    return fail(Errc::nothing_to_compact, fmt::format("everything on the branch fits in keep_recent_tokens ({}): "
                                                  "compacting would shed nothing",
                                                  settings.keep_recent_tokens));
  }

  // Every tool result kept must keep its call: a result whose call was cut
  // away would make every later request invalid.
  std::set<std::string> kept_calls;
  for (std::size_t i = cut.first_kept; i < path.size(); ++i) {
    const AgentMessage* message = message_of(path[i]);
    if (!message) continue;
    if (const auto* assistant = std::get_if<AssistantMessage>(message)) {
      for (const auto& block : assistant->content) {
        if (const auto* call = std::get_if<ToolCall>(&block)) kept_calls.insert(call->id);
      }
    } else if (const auto* result = std::get_if<ToolResultMessage>(message); result && !kept_calls.contains(result->tool_call_id)) {
      return fail(Errc::would_split_tool_call, fmt::format("cutting before entry '{}' would keep the result of tool call "
                                                       "'{}' without the call",
                                                       prep.first_kept_entry_id, result->tool_call_id));
    }
  }

  // Files carried by the previous compaction stay listed.
  if (previous) note_details(std::get<Compaction>(path[*previous].body).details, read, modified);
  for (const auto& file : read) {
    if (!modified.contains(file)) prep.read_files.push_back(file);
  }
  prep.modified_files.assign(modified.begin(), modified.end());
  return prep;
}

BranchPreparation prepare_branch_summary(const std::vector<TreeEntry>& abandoned, std::int64_t token_budget) {
  BranchPreparation prep;
  std::set<std::string> read, modified;
  // Files named by earlier summaries of the branch count even when their
  // text does not fit the budget.
  for (const auto& entry : abandoned) {
    if (const auto* summary = std::get_if<BranchSummary>(&entry.body); summary && !summary->from_hook.value_or(false)) {
      note_details(summary->details, read, modified);
    }
  }
  std::vector<AgentMessage> newest_first;
  for (auto it = abandoned.rbegin(); it != abandoned.rend(); ++it) {
    auto message = branch_message(*it);
    if (!message) continue;
    note_file_ops(*message, read, modified);
    const std::int64_t tokens = estimate_tokens(*message);
    if (token_budget > 0 && prep.tokens + tokens > token_budget) {
      const bool summary = std::holds_alternative<Compaction>(it->body) || std::holds_alternative<BranchSummary>(it->body);
      if (summary && prep.tokens < token_budget * 9 / 10) {
        newest_first.push_back(std::move(*message));
        prep.tokens += tokens;
      }
      break;
    }
    newest_first.push_back(std::move(*message));
    prep.tokens += tokens;
  }
  prep.messages.assign(std::make_move_iterator(newest_first.rbegin()), std::make_move_iterator(newest_first.rend()));
  for (const auto& file : read) {
    if (!modified.contains(file)) prep.read_files.push_back(file);
  }
  prep.modified_files.assign(modified.begin(), modified.end());
  return prep;
}

SummaryRequest branch_summary_request(const BranchPreparation& preparation,
                                      const std::optional<std::string>& custom_instructions) {
  SummaryRequest request;
  request.system_prompt = kSummarySystemPrompt;
  request.max_tokens = 2048;
  const std::string instructions =
      custom_instructions && !custom_instructions->empty() ? *custom_instructions : std::string(kBranchSummaryFormat);
  request.prompt = fmt::format("<conversation>\n{}\n</conversation>\n\n{}",
                               serialize_conversation(convert_to_llm(preparation.messages)), instructions);
  return request;
}

std::string compose_branch_summary(const BranchPreparation& preparation, const std::string& text) {
  std::string summary = kBranchSummaryPreamble + text;
  if (!preparation.read_files.empty()) {
    summary += fmt::format("\n\n<read-files>\n{}\n</read-files>", fmt::join(preparation.read_files, "\n"));
  }
  if (!preparation.modified_files.empty()) {
    summary += fmt::format("\n\n<modified-files>\n{}\n</modified-files>", fmt::join(preparation.modified_files, "\n"));
  }
  return summary;
}

Json branch_summary_details(const BranchPreparation& preparation) {
  return Json{{"readFiles", preparation.read_files}, {"modifiedFiles", preparation.modified_files}};
}

std::string serialize_conversation(const std::vector<LlmMessage>& messages) {
  std::vector<std::string> parts;
  for (const auto& message : messages) {
    if (const auto* user = std::get_if<UserMessage>(&message)) {
      if (auto text = text_of(user->content); !text.empty()) parts.push_back("[User]: " + text);
    } else if (const auto* assistant = std::get_if<AssistantMessage>(&message)) {
      std::vector<std::string> texts, thoughts, calls;
      for (const auto& block : assistant->content) {
        if (const auto* text = std::get_if<TextContent>(&block)) texts.push_back(text->text);
        if (const auto* thinking = std::get_if<ThinkingContent>(&block)) thoughts.push_back(thinking->thinking);
        if (const auto* call = std::get_if<ToolCall>(&block)) {
          std::vector<std::string> args;
          if (call->arguments.is_object()) {
            for (const auto& [key, value] : call->arguments.items()) args.push_back(key + "=" + value.dump());
          }
          calls.push_back(fmt::format("{}({})", call->name, fmt::join(args, ", ")));
        }
      }
      if (!thoughts.empty()) parts.push_back(fmt::format("[Assistant thinking]: {}", fmt::join(thoughts, "\n")));
      if (!texts.empty()) parts.push_back(fmt::format("[Assistant]: {}", fmt::join(texts, "\n")));
      if (!calls.empty()) parts.push_back(fmt::format("[Assistant tool calls]: {}", fmt::join(calls, "; ")));
    } else {
      const auto& result = std::get<ToolResultMessage>(message);
      if (auto text = text_of(result.content); !text.empty()) {
        parts.push_back("[Tool result]: " + truncated(std::move(text), kToolResultMaxChars));
      }
    }
  }
  return fmt::format("{}", fmt::join(parts, "\n\n"));
}

SummaryRequest history_summary_request(const CompactionPreparation& preparation, const CompactionSettings& settings,
                                       const std::optional<std::string>& custom_instructions) {
  SummaryRequest request;
  request.system_prompt = kSummarySystemPrompt;
  request.max_tokens = settings.reserve_tokens * 8 / 10;
  std::string prompt = fmt::format("<conversation>\n{}\n</conversation>\n\n",
                                   serialize_conversation(convert_to_llm(preparation.messages_to_summarize)));
  if (preparation.previous_summary) {
    prompt += fmt::format("<previous-summary>\n{}\n</previous-summary>\n\n", *preparation.previous_summary);
  }
  prompt += preparation.previous_summary ? kUpdateSummaryInstructions : kFirstSummaryInstructions;
  prompt += kSummaryFormat;
  if (custom_instructions && !custom_instructions->empty()) prompt += "\n\nAlso focus on: " + *custom_instructions;
  request.prompt = std::move(prompt);
  return request;
}

SummaryRequest turn_prefix_summary_request(const CompactionPreparation& preparation, const CompactionSettings& settings) {
  SummaryRequest request;
  request.system_prompt = kSummarySystemPrompt;
  request.max_tokens = settings.reserve_tokens / 2;
  request.prompt = fmt::format("<conversation>\n{}\n</conversation>\n\n{}",
                               serialize_conversation(convert_to_llm(preparation.turn_prefix_messages)),
                               kTurnPrefixInstructions);
  return request;
}

std::string compose_summary(const CompactionPreparation& preparation, const std::string& history,
                            const std::optional<std::string>& turn_prefix) {
  std::string summary = history;
  if (turn_prefix) summary += "\n\n---\n\n**Turn Context (split turn):**\n\n" + *turn_prefix;
  if (!preparation.read_files.empty()) {
    summary += fmt::format("\n\n<read-files>\n{}\n</read-files>", fmt::join(preparation.read_files, "\n"));
  }
  if (!preparation.modified_files.empty()) {
    summary += fmt::format("\n\n<modified-files>\n{}\n</modified-files>", fmt::join(preparation.modified_files, "\n"));
  }
  return summary;
}

Json compaction_details(const CompactionPreparation& preparation) {
  return Json{{"readFiles", preparation.read_files}, {"modifiedFiles", preparation.modified_files}};
}

}  // namespace cairn
