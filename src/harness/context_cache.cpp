#include "context_cache.hpp"

#include "log/index.hpp"
#include "cairn/store/session.hpp"

namespace cairn {

bool is_failed_response(const AgentMessage& message) {
  const auto* assistant = std::get_if<AssistantMessage>(&message);
  return assistant && (assistant->stop_reason == StopReason::error || assistant->stop_reason == StopReason::aborted);
}

ContextSize ContextCache::size() const {
  ContextSize size;
  if (counted_ > 0) {
    size.counted = counted_;
    size.estimated = trailing_;
  } else {
    size.estimated = all_;
  }
  size.tokens = size.counted + size.estimated;
  return size;
}

void ContextCache::add(AgentMessage message) {
  const std::int64_t tokens = estimate_tokens(message);
  all_ += tokens;
  if (const auto* summary = std::get_if<CompactionSummaryMessage>(&message)) compacted_at_ = summary->timestamp;
  const auto* assistant = std::get_if<AssistantMessage>(&message);
  // As measure_context(): a response from before the latest compaction
  // counted a context the summary has since replaced.
  if (assistant && !is_failed_response(message) && (!compacted_at_ || assistant->timestamp > *compacted_at_)) {
    counted_ = context_tokens(assistant->usage);
    trailing_ = 0;
  } else {
    trailing_ += tokens;
  }
  // Results in the provider's order, as build_context lists them: a
  // batch's results are appended as its calls end.
  const bool result = std::holds_alternative<ToolResultMessage>(message);
  if (!is_failed_response(message)) {
    if (auto converted = to_llm(message)) {
      request_.messages.push_back(std::move(*converted));
      if (result) place_tool_result(request_.messages);
    }
  }
  messages_.push_back(std::move(message));
  if (result) place_tool_result(messages_);
}

void ContextCache::extend(const TreeEntry& entry) {
  if (!valid_) return;
  // A compaction replaces what precedes it, a leaf entry moves the ref
  // elsewhere, and an entry not chained to the cached leaf is not ours to
  // guess about: rebuild on the next sync.
  if (entry.parent_id != leaf_ || std::holds_alternative<Compaction>(entry.body) ||
      std::holds_alternative<Leaf>(entry.body)) {
    valid_ = false;
    return;
  }
  // The settings change as the index's last_model / last_thinking /
  // last_tools do (index.cpp): an assistant message names the model too.
  if (const auto* change = std::get_if<ModelChange>(&entry.body)) {
    settings_.model = ModelRef{change->provider, change->model_id};
  } else if (const auto* thinking = std::get_if<ThinkingLevelChange>(&entry.body)) {
    settings_.thinking_level = thinking->thinking_level;
    settings_.has_thinking_level = true;
  } else if (const auto* tools = std::get_if<ActiveToolsChange>(&entry.body)) {
    settings_.active_tool_names = tools->active_tool_names;
  } else if (const auto* message = std::get_if<MessageBody>(&entry.body)) {
    if (const auto* assistant = std::get_if<AssistantMessage>(&message->message)) {
      settings_.model = ModelRef{assistant->provider, assistant->model};
    }
  }
  if (auto message = project_entry(entry)) add(std::move(*message));
  leaf_ = entry.id;
}

Status ContextCache::sync(const Session& session, std::string_view ref) {
  const std::optional<std::string> leaf = session.leaf(ref);
  if (valid_ && leaf == leaf_) return {};
  valid_ = false;
  // Built at the leaf just read, so the cache names the leaf it holds even
  // if another writer moves the ref meanwhile.
  auto context = session.build_context_at(leaf ? std::optional<std::string_view>(*leaf) : std::nullopt);
  if (!context) return std::unexpected(context.error());
  messages_.clear();
  request_.messages.clear();
  counted_ = trailing_ = all_ = 0;
  compacted_at_.reset();
  messages_.reserve(context->messages.size());
  for (auto& message : context->messages) add(std::move(message));
  settings_ = std::move(*context);
  settings_.messages.clear();
  settings_.entry_ids.clear();
  leaf_ = leaf;
  valid_ = true;
  return {};
}

}  // namespace cairn
