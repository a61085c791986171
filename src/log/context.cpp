// The projection from a branch to the messages a model request carries,
// following pi's buildSessionContext so that a session imported from pi builds
// exactly the context pi builds.
#include <algorithm>
#include <cassert>
#include <functional>
#include <mutex>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "log/index.hpp"
#include "util/parallel.hpp"

namespace cairn {
namespace {

std::int64_t iso_to_unix_ms(const std::string& iso) {
  // "YYYY-MM-DDTHH:MM:SS(.mmm)Z"; anything else reads as 0, as pi's Date parse
  // of a malformed string gives NaN and the timestamp is display-only.
  int y, mo, d, h, mi;
  double s;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%lfZ", &y, &mo, &d, &h, &mi, &s) != 6) return 0;
  // Days from civil (Howard Hinnant's algorithm).
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * static_cast<unsigned>(mo + (mo > 2 ? -3 : 9)) + 2) / 5 + static_cast<unsigned>(d) - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = static_cast<std::int64_t>(era) * 146097 + static_cast<std::int64_t>(doe) - 719468;
  return ((days * 24 + h) * 60 + mi) * 60000 + static_cast<std::int64_t>(s * 1000 + 0.5);
}

}  // namespace

std::optional<AgentMessage> project_entry(TreeEntry&& entry) {
  if (auto* message = std::get_if<MessageBody>(&entry.body)) return std::move(message->message);
  return project_entry(std::as_const(entry));
}

std::optional<AgentMessage> project_entry(const TreeEntry& entry) {
  if (const auto* message = std::get_if<MessageBody>(&entry.body)) return message->message;
  if (const auto* custom = std::get_if<CustomMessageBody>(&entry.body)) {
    return CustomMessage{custom->custom_type, custom->content, custom->display, custom->details,
                         iso_to_unix_ms(entry.timestamp), Json::object()};
  }
  if (const auto* summary = std::get_if<BranchSummary>(&entry.body); summary && !summary->summary.empty()) {
    return BranchSummaryMessage{summary->summary, summary->from_id, iso_to_unix_ms(entry.timestamp), Json::object()};
  }
  return std::nullopt;
}

namespace {

// Where `call_id` stands among `assistant`'s tool calls; past the last one
// when it is none of them.
std::size_t call_rank(const AssistantMessage& assistant, std::string_view call_id) {
  std::size_t rank = 0;
  for (const auto& block : assistant.content) {
    if (const auto* call = std::get_if<ToolCall>(&block)) {
      if (call->id == call_id) return rank;
      ++rank;
    }
  }
  return rank;
}

// `messages` ends with the result to place; only it moves.
template <class Message>
std::size_t place_result(std::span<Message> messages) {
  const std::size_t last = messages.size() - 1;
  std::size_t first = last;  // of the run of results the new one joins
  while (first > 0 && std::holds_alternative<ToolResultMessage>(messages[first - 1])) --first;
  if (first == 0 || !std::holds_alternative<AssistantMessage>(messages[first - 1])) return last;
  const auto& assistant = std::get<AssistantMessage>(messages[first - 1]);
  auto rank = [&](const Message& m) { return call_rank(assistant, std::get<ToolResultMessage>(m).tool_call_id); };
  // The run before it is already in order: it goes after every result
  // whose call comes before or at its own (stable, so equal ranks keep the
  // order they were appended in).
  const std::size_t own = rank(messages[last]);
  std::size_t at = last;
  while (at > first && rank(messages[at - 1]) > own) --at;
  if (at != last) {
    std::rotate(messages.begin() + static_cast<std::ptrdiff_t>(at), messages.end() - 1, messages.end());
  }
  return at;
}

}  // namespace

// Decodes and projects the entries at `seqs` into messages[i] and ids[i]
// (messages[i] stays empty where an entry projects to nothing), in parallel when there are
// many: decoding is nearly all of build_context's time on a long branch, and
// each entry decodes on its own (decode_entry, like every const member, is
// safe from any number of threads). The first failure in seq order wins.
Status SessionIndex::project_entries(const std::vector<std::int64_t>& seqs,
                                     std::span<std::optional<AgentMessage>> messages,
                                     std::span<std::string> ids) const {
  assert(messages.size() == seqs.size() && ids.size() == seqs.size());
  constexpr std::size_t kChunk = 1024;
  std::mutex failure_mutex;
  std::size_t failed_at = seqs.size();
  std::optional<Error> failure;
  parallel_for(
      (seqs.size() + kChunk - 1) / kChunk,
      [&](std::size_t chunk) {
        const std::size_t begin = chunk * kChunk;
        const std::size_t end = std::min(begin + kChunk, seqs.size());
        // Lines still in the LineSource are read for the chunk's span in one
        // query, not one each, when the span is not much wider than the chunk
        // (a branch's entries lie close together in a log unless other
        // branches grew between them). If that read fails, each line is read
        // alone below and fails, or not, with its own error.
        std::vector<LineSource::Stored> stored;
        const std::int64_t first = seqs[begin];
        const std::int64_t stop = std::min(seqs[end - 1] + 1, unloaded_);
        if (source_ && first < stop && stop - first <= static_cast<std::int64_t>(4 * (end - begin))) {
          if (auto read = source_->lines(first, stop)) stored = std::move(*read);
        }
        for (std::size_t i = begin; i < end; ++i) {
          const std::int64_t seq = seqs[i];
          Result<TreeEntry> entry = [&]() -> Result<TreeEntry> {
            if (seq - first >= static_cast<std::int64_t>(stored.size())) return decode_entry(seq);
            auto line = checked(seq, std::move(stored[static_cast<std::size_t>(seq - first)]));
            if (!line) return std::unexpected(std::move(line.error()));
            return decode_entry(seq, *line);
          }();
          if (!entry) {
            const std::lock_guard lock(failure_mutex);
            if (i < failed_at) {
              failed_at = i;
              failure = std::move(entry.error());
            }
            break;  // the rest of this chunk comes after the failure
          }
          ids[i] = std::move(entry->id);
          messages[i] = project_entry(std::move(*entry));
        }
      },
      /*chunk=*/1);
  if (failure) return std::unexpected(std::move(*failure));
  return {};
}

namespace {

bool projects(const IndexedRecord& record) {
  return record.type == RecordType::message || record.type == RecordType::custom_message ||
         record.type == RecordType::branch_summary;
}

}  // namespace

std::size_t place_tool_result(std::vector<AgentMessage>& messages) {
  return place_result(std::span<AgentMessage>(messages));
}
std::size_t place_tool_result(std::vector<LlmMessage>& messages) { return place_result(std::span<LlmMessage>(messages)); }

Result<SessionContext> SessionIndex::build_context(std::optional<std::string_view> leaf_id, bool with_messages) const {
  SessionContext context;
  if (!leaf_id) return context;  // before the first entry: nothing
  auto leaf_seq = seq_of(*leaf_id);
  if (!leaf_seq || !is_tree_type(at(*leaf_seq).type)) {
    return fail(Errc::not_found, fmt::format("no entry '{}'", *leaf_id));
  }

  // Settings in force at the leaf: the last entry of each kind on its path,
  // which the index keeps for every entry. Only those few are decoded.
  const IndexedRecord& leaf = at(*leaf_seq);
  if (leaf.last_thinking >= 0) {
    auto entry = decode_entry(leaf.last_thinking);
    if (!entry) return std::unexpected(entry.error());
    context.thinking_level = std::get<ThinkingLevelChange>(entry->body).thinking_level;
    context.has_thinking_level = true;
  }
  if (leaf.last_tools >= 0) {
    auto entry = decode_entry(leaf.last_tools);
    if (!entry) return std::unexpected(entry.error());
    context.active_tool_names = std::get<ActiveToolsChange>(entry->body).active_tool_names;
  }
  if (leaf.last_model >= 0) {
    auto entry = decode_entry(leaf.last_model);
    if (!entry) return std::unexpected(entry.error());
    if (const auto* change = std::get_if<ModelChange>(&entry->body)) {
      context.model = ModelRef{change->provider, change->model_id};
    } else {
      const auto& assistant = std::get<AssistantMessage>(std::get<MessageBody>(entry->body).message);
      context.model = ModelRef{assistant.provider, assistant.model};
    }
  }

  if (!with_messages) return context;
  const auto expect = [&](std::size_t messages) {
    context.messages.reserve(messages);
    context.entry_ids.reserve(messages);
  };
  const auto add = [&](AgentMessage&& message, std::string&& entry_id) {
    context.messages.push_back(std::move(message));
    context.entry_ids.push_back(std::move(entry_id));
  };
  if (auto status = project_branch(*leaf_seq, expect, add); !status) return std::unexpected(status.error());
  return context;
}

Status SessionIndex::project_branch(std::int64_t leaf_seq, const std::function<void(std::size_t)>& expect,
                                    const ContextSink& sink) const {
  // After the last compaction: its summary, the entries it kept (from
  // firstKeptEntryId up to it, if that entry is on the path) and every entry
  // after it. Nothing older is projected, so the walk from the leaf stops at
  // the kept entry, or at the root when nothing was compacted.
  const std::int64_t compaction_seq = at(leaf_seq).last_compaction;
  std::optional<TreeEntry> compaction;
  std::int64_t kept_seq = -1;
  if (compaction_seq >= 0) {
    auto entry = decode_entry(compaction_seq);
    if (!entry) return std::unexpected(entry.error());
    compaction = std::move(*entry);
    kept_seq = seq_of(std::get<Compaction>(compaction->body).first_kept_entry_id).value_or(-1);
  }
  const std::int64_t stop = compaction_seq < 0 ? 0 : kept_seq >= 0 && kept_seq < compaction_seq ? kept_seq : compaction_seq;
  std::vector<std::int64_t> path;  // collected leaf first, then reversed
  for (std::int64_t seq = leaf_seq; seq >= stop; seq = records_[static_cast<std::size_t>(seq)].parent) {
    path.push_back(seq);
  }
  std::reverse(path.begin(), path.end());

  // The walk passed entries older than the compaction only on its way to the
  // kept entry: they are kept if it reached it.
  const bool kept_on_path =
      compaction_seq >= 0 && !path.empty() && path.front() == kept_seq && kept_seq < compaction_seq;
  // The entries that project, in the order they are emitted (the path
  // ascends in seq: the kept ones come first).
  std::vector<std::int64_t> projected;
  for (const std::int64_t seq : path) {
    if ((seq > compaction_seq || (seq < compaction_seq && kept_on_path)) && projects(at(seq))) {
      projected.push_back(seq);
    }
  }
  if (expect) expect(projected.size() + (compaction ? 1 : 0));

  // Messages wait in `window` from the last one that is not a tool result
  // (an assistant message's results are put in its calls' order as they
  // come), and go to the sink when the next such message arrives: nothing
  // before it can move any more.
  std::vector<AgentMessage> window;
  std::vector<std::string> window_ids;
  const auto flush = [&] {
    for (std::size_t i = 0; i < window.size(); ++i) sink(std::move(window[i]), std::move(window_ids[i]));
    window.clear();
    window_ids.clear();
  };
  const auto take = [&](AgentMessage&& message, std::string&& id) {
    const bool result = std::holds_alternative<ToolResultMessage>(message);
    if (!result) flush();
    window.push_back(std::move(message));
    window_ids.push_back(std::move(id));
    if (result) {
      const auto placed = static_cast<std::ptrdiff_t>(place_result(std::span(window)));
      std::rotate(window_ids.begin() + placed, window_ids.end() - 1, window_ids.end());
    }
  };
  if (compaction) {
    const auto& body = std::get<Compaction>(compaction->body);
    take(CompactionSummaryMessage{body.summary, body.tokens_before, iso_to_unix_ms(compaction->timestamp),
                                  Json::object()},
         std::move(compaction->id));
  }
  // Decoded a batch at a time (in parallel within it), so that a reader that
  // streams the messages holds one batch, not the branch.
  // The slots start empty: a default message would cost an allocation each
  // (its `extra`), made here and freed by whichever thread fills the slot.
  constexpr std::size_t kBatch = 16384;
  std::vector<std::optional<AgentMessage>> messages;
  std::vector<std::string> ids;
  for (std::size_t begin = 0; begin < projected.size(); begin += kBatch) {
    const std::size_t n = std::min(kBatch, projected.size() - begin);
    messages.assign(n, std::nullopt);
    ids.assign(n, std::string());
    const std::vector<std::int64_t> seqs(projected.begin() + static_cast<std::ptrdiff_t>(begin),
                                         projected.begin() + static_cast<std::ptrdiff_t>(begin + n));
    if (auto status = project_entries(seqs, messages, ids); !status) return status;
    for (std::size_t i = 0; i < n; ++i) {
      if (messages[i]) take(std::move(*messages[i]), std::move(ids[i]));
    }
  }
  flush();
  return {};
}

Result<SessionContext> SessionIndex::stream_context(std::string_view ref_name, const ContextSink& sink) const {
  auto context = build_context_for_ref(ref_name, /*with_messages=*/false);
  if (!context) return context;
  if (auto leaf = ref(ref_name)->leaf) {
    if (auto status = project_branch(*seq_of(*leaf), nullptr, sink); !status) return std::unexpected(status.error());
  }
  return context;
}

Result<SessionContext> SessionIndex::build_context_for_ref(std::string_view ref_name, bool with_messages) const {
  auto slot = ref(ref_name);
  if (!slot) return fail(Errc::unknown_ref, fmt::format("ref '{}' does not exist", ref_name));
  if (!slot->leaf) return SessionContext{};
  return build_context(std::string_view(*slot->leaf), with_messages);
}

}  // namespace cairn
