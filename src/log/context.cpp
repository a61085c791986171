// The projection from a branch to the messages a model request carries,
// following pi's buildSessionContext so that a session imported from pi builds
// exactly the context pi builds.
#include <algorithm>

#include <fmt/format.h>

#include "cairn/log/index.hpp"

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

// What one entry contributes to the context: nothing, or one message.
std::optional<AgentMessage> project(const TreeEntry& entry) {
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

bool projects(const IndexedRecord& record) {
  return record.type == RecordType::message || record.type == RecordType::custom_message ||
         record.type == RecordType::branch_summary;
}

}  // namespace

Result<SessionContext> SessionIndex::build_context(std::optional<std::string_view> leaf_id) const {
  SessionContext context;
  if (!leaf_id) return context;  // before the first entry: nothing
  auto leaf_seq = seq_of(*leaf_id);
  if (!leaf_seq || !is_tree_type(at(*leaf_seq).type)) {
    return fail("not_found", fmt::format("no entry '{}'", *leaf_id));
  }

  std::vector<std::int64_t> path;  // root first
  for (std::int64_t seq = *leaf_seq; seq >= 0; seq = records_[static_cast<std::size_t>(seq)].parent) path.push_back(seq);
  std::reverse(path.begin(), path.end());

  // Settings in force at the leaf: the last of each kind on the path. Only
  // those few entries are decoded.
  std::optional<std::size_t> compaction_at, model_at, thinking_at, tools_at;
  for (std::size_t i = path.size(); i-- > 0;) {
    const IndexedRecord& m = at(path[i]);
    if (!compaction_at && m.type == RecordType::compaction) compaction_at = i;
    if (!thinking_at && m.type == RecordType::thinking_level_change) thinking_at = i;
    if (!tools_at && m.type == RecordType::active_tools_change) tools_at = i;
    if (!model_at && (m.type == RecordType::model_change || (m.type == RecordType::message && name_of(m.detail) == "assistant"))) {
      model_at = i;
    }
    if (compaction_at && thinking_at && tools_at && model_at) break;
  }
  auto decode_at = [&](std::size_t i) { return decode_entry(path[i]); };
  if (thinking_at) {
    auto entry = decode_at(*thinking_at);
    if (!entry) return std::unexpected(entry.error());
    context.thinking_level = std::get<ThinkingLevelChange>(entry->body).thinking_level;
  }
  if (tools_at) {
    auto entry = decode_at(*tools_at);
    if (!entry) return std::unexpected(entry.error());
    context.active_tool_names = std::get<ActiveToolsChange>(entry->body).active_tool_names;
  }
  if (model_at) {
    auto entry = decode_at(*model_at);
    if (!entry) return std::unexpected(entry.error());
    if (const auto* change = std::get_if<ModelChange>(&entry->body)) {
      context.model = ModelRef{change->provider, change->model_id};
    } else {
      const auto& assistant = std::get<AssistantMessage>(std::get<MessageBody>(entry->body).message);
      context.model = ModelRef{assistant.provider, assistant.model};
    }
  }

  auto emit = [&](std::size_t i) -> Status {
    if (!projects(at(path[i]))) return {};
    auto entry = decode_at(i);
    if (!entry) return std::unexpected(entry.error());
    if (auto message = project(*entry)) {
      context.messages.push_back(std::move(*message));
      context.entry_ids.push_back(entry->id);
    }
    return {};
  };

  std::size_t from = 0;
  if (compaction_at) {
    auto entry = decode_at(*compaction_at);
    if (!entry) return std::unexpected(entry.error());
    const auto& compaction = std::get<Compaction>(entry->body);
    context.messages.push_back(CompactionSummaryMessage{compaction.summary, compaction.tokens_before,
                                                        iso_to_unix_ms(entry->timestamp), Json::object()});
    context.entry_ids.push_back(entry->id);
    // Kept entries: from firstKeptEntryId up to the compaction. Seqs grow
    // from the root, so the kept entry is found by binary search.
    if (auto kept = seq_of(compaction.first_kept_entry_id)) {
      const auto end = path.begin() + static_cast<std::ptrdiff_t>(*compaction_at);
      const auto first = std::lower_bound(path.begin(), end, *kept);
      if (first != end && *first == *kept) {
        for (auto i = static_cast<std::size_t>(first - path.begin()); i < *compaction_at; ++i) {
          if (auto status = emit(i); !status) return std::unexpected(status.error());
        }
      }
    }
    from = *compaction_at + 1;
  }
  for (std::size_t i = from; i < path.size(); ++i) {
    if (auto status = emit(i); !status) return std::unexpected(status.error());
  }
  return context;
}

Result<SessionContext> SessionIndex::build_context_for_ref(std::string_view ref_name) const {
  auto slot = ref(ref_name);
  if (!slot) return fail("unknown_ref", fmt::format("ref '{}' does not exist", ref_name));
  if (!slot->leaf) return SessionContext{};
  return build_context(std::string_view(*slot->leaf));
}

}  // namespace cairn
