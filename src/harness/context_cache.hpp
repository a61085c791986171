// A ref's projected context and the settings in force at its leaf (model,
// thinking level, active tools), carried from one request to the next, so
// that a step costs what it appends rather than what the branch holds:
// rebuilding the context from the log decodes every entry on the branch
// (tens of milliseconds at a few thousand messages), while a step appends
// two or three entries.
//
// The cache follows the ref's leaf. Entries the ref's own operation appends
// extend it; any other move of the leaf (a navigation, a write by another
// handle on the session, a compaction) makes the next sync rebuild it from
// the log, so it can be stale only in cost, never in content.
//
// Not thread-safe: it is touched only by the thread running the ref's
// operation, and one operation per ref runs at a time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/compaction.hpp"
#include "cairn/llm/provider.hpp"
#include "cairn/log/query.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

class Session;

class ContextCache {
 public:
  // `entry` was just appended to the ref: its parent was the leaf.
  void extend(const TreeEntry& entry);
  // Brings the cache to the ref's current leaf.
  Status sync(const Session& session, std::string_view ref);

  // The settings at the leaf (branch_settings: no messages).
  const SessionContext& settings() const { return settings_; }
  // The projected messages at the leaf.
  const std::vector<AgentMessage>& messages() const { return messages_; }
  // The context's size as measure_context() gives it, kept as messages are
  // added (the checkpoint asks at every step).
  ContextSize size() const;
  // A request whose messages are the default conversion of messages()
  // (convert_to_llm), without failed or aborted responses: they stay in the
  // transcript for the reader and are never sent back to a model, as in pi.
  // The caller sets its system prompt and tools; the cache keeps its
  // messages, so the request is handed to the provider without a copy.
  LlmContext& request() { return request_; }

 private:
  void add(AgentMessage message);

  bool valid_ = false;
  std::optional<std::string> leaf_;
  SessionContext settings_;
  std::vector<AgentMessage> messages_;
  LlmContext request_;
  std::int64_t counted_ = 0;   // the newest successful response's provider-counted total
  std::int64_t trailing_ = 0;  // estimated, of the messages after it
  std::int64_t all_ = 0;       // estimated, of every message
  std::optional<std::int64_t> compacted_at_;  // the context's compaction summary's time
};

// True for an assistant message that failed or was aborted.
bool is_failed_response(const AgentMessage& message);

}  // namespace cairn
