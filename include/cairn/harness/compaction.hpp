// Compaction's decisions, as pure functions over a branch: how big a context
// is, whether it must shrink, where to cut it, and what the summary request
// says. The harness's procedures (src/harness) make them durable; these only
// decide. The rules are pi's coding agent's (compaction.ts), so that a
// session moved between the two compacts the same way, with one deliberate
// difference noted at prepare_compaction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/log/message.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

// Why a compaction runs: asked for (compact()), the context passed the
// threshold after a step, or a request overflowed the model's window.
enum class CompactionReason { manual, threshold, overflow };
std::string_view to_string(CompactionReason reason);
std::optional<CompactionReason> parse_compaction_reason(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<CompactionReason> = true;

struct CompactionSettings {
  bool enabled = true;  // automatic compaction (threshold and overflow); manual works regardless
  std::int64_t reserve_tokens = 16384;  // kept free below the context window for the response
  std::int64_t keep_recent_tokens = 20000;  // the newest context kept verbatim
};

// chars / 4, rounded up; an image counts as 4800 chars. Deliberately
// conservative: it overestimates rather than overflow.
std::int64_t estimate_tokens(const AgentMessage& message);

// The tokens a provider counted for a response's whole context.
std::int64_t context_tokens(const Usage& usage);

// How big a context is, and how that was known: the newest successful
// response's provider-counted total plus an estimate of what follows it, or
// an estimate of everything when no response reported usage.
struct ContextSize {
  std::int64_t tokens = 0;
  std::int64_t counted = 0;    // provider-counted part
  std::int64_t estimated = 0;  // estimated part
  bool provider_counted() const { return counted > 0; }
};
// A response older than the context's compaction summary counts nothing:
// it measured what the summary replaced.
ContextSize measure_context(const std::vector<AgentMessage>& messages);

// size > window - reserve, when enabled.
bool should_compact(std::int64_t context_size, std::int64_t context_window, const CompactionSettings& settings);

// Where to cut a branch: the first entry kept, and when that splits a turn
// (the kept part starts after the turn's user message), where the turn began.
struct CutPoint {
  std::size_t first_kept = 0;
  std::optional<std::size_t> turn_start;
  bool split_turn() const { return turn_start.has_value(); }
};
// Over path[start, end): walks back from the newest message until
// keep_recent_tokens are reached, then moves to the nearest valid cut at or
// after that entry: a user, assistant, custom, bash or summary message, never
// a tool result (so a tool call keeps its results). Settings entries just
// before the cut stay with it.
CutPoint find_cut_point(const std::vector<TreeEntry>& path, std::size_t start, std::size_t end,
                        std::int64_t keep_recent_tokens);

struct CompactionPreparation {
  std::string first_kept_entry_id;
  std::vector<AgentMessage> messages_to_summarize;
  std::vector<AgentMessage> turn_prefix_messages;  // split turn: the turn's part before the cut
  bool split_turn = false;
  std::int64_t tokens_before = 0;
  std::optional<std::string> previous_summary;
  std::vector<std::string> read_files;      // read and never modified, sorted
  std::vector<std::string> modified_files;  // written or edited, sorted
};

// Prepares compacting `path`, the branch from the root (or from the newest
// compaction's kept entry) to the leaf, oldest first. Unlike pi, the range
// starts at the previous compaction's first kept entry rather than after the
// compaction, so what that compaction kept is summarised now instead of
// silently dropped. Fails, naming why, when compacting would shed nothing
// (nothing_to_compact) or would separate a tool call from its result
// (would_split_tool_call).
Result<CompactionPreparation> prepare_compaction(const std::vector<TreeEntry>& path, const CompactionSettings& settings);

// The summary request: a system prompt and one user message holding the
// serialised transcript (so the model summarises it rather than continuing
// it), the previous summary to update if any, and the structured format.
struct SummaryRequest {
  std::string system_prompt;
  std::string prompt;
  std::int64_t max_tokens = 0;
};
SummaryRequest history_summary_request(const CompactionPreparation& preparation, const CompactionSettings& settings,
                                       const std::optional<std::string>& custom_instructions);
// The split turn's prefix, summarised for the kept suffix.
SummaryRequest turn_prefix_summary_request(const CompactionPreparation& preparation, const CompactionSettings& settings);
// The entry's summary text: the history summary, the turn prefix summary
// when the turn was split, then the file lists.
std::string compose_summary(const CompactionPreparation& preparation, const std::string& history,
                            const std::optional<std::string>& turn_prefix);
// {"readFiles": [...], "modifiedFiles": [...]}, the compaction entry's details.
Json compaction_details(const CompactionPreparation& preparation);

// ---- branch summaries (navigation) ----

// What a navigation summarises: the branch it leaves, from the common
// ancestor with the destination (exclusive) to the old leaf.
struct BranchPreparation {
  std::vector<AgentMessage> messages;  // oldest first; the newest within the budget
  std::int64_t tokens = 0;
  std::vector<std::string> read_files;
  std::vector<std::string> modified_files;
};
// `abandoned`: the branch left, oldest first. Messages are taken newest
// first while they fit `token_budget` (0: no limit); tool results are left
// out (their calls say what ran), summaries are kept if they nearly fit.
BranchPreparation prepare_branch_summary(const std::vector<TreeEntry>& abandoned, std::int64_t token_budget);
SummaryRequest branch_summary_request(const BranchPreparation& preparation,
                                      const std::optional<std::string>& custom_instructions);
// The branch_summary entry's text: a preamble saying what it is, the
// model's summary, the file lists.
std::string compose_branch_summary(const BranchPreparation& preparation, const std::string& text);
Json branch_summary_details(const BranchPreparation& preparation);

// Messages as text for a summary request: one paragraph per message, tool
// results cut to 2000 chars.
std::string serialize_conversation(const std::vector<LlmMessage>& messages);

}  // namespace cairn
