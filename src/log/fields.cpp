// The field rules of every record type that its C++ type cannot express: ids
// that must not be empty, numeric ranges, the kinds of entry a queue may
// carry, and lossless JSON in every free-form field. (Closed sets are enums:
// the decoders refuse an unknown value, and nothing else can hold one.) Both
// append (before anything is written) and decode_record run them, so the log
// never holds a record that breaks one.
#include <cmath>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "log/index.hpp"
#include "cairn/overloaded.hpp"
#include "json_reader.hpp"

namespace cairn {

using detail::index_path;
using detail::join_path;

namespace {

// A field's path ("message.content[2].id"), spelled out only when a rule
// fails: checking a valid record builds no string. A child refers to its
// parent, which outlives it (a caller's argument or local).
class Path {
 public:
  Path(std::string_view name) : name_(name) {}  // NOLINT: a top-level name ("" for the record)
  Path(const char* name) : name_(name) {}       // NOLINT
  Path key(std::string_view key) const { return Path(this, key, 0, false); }
  Path index(std::size_t index) const { return Path(this, {}, index, true); }
  std::string str() const {
    if (parent_ == nullptr) return std::string(name_);
    return index_ ? index_path(parent_->str(), position_) : join_path(parent_->str(), name_);
  }

 private:
  Path(const Path* parent, std::string_view name, std::size_t position, bool index)
      : parent_(parent), name_(name), position_(position), index_(index) {}
  const Path* parent_ = nullptr;
  std::string_view name_;
  std::size_t position_ = 0;
  bool index_ = false;
};

// Collects the first broken rule; later checks become no-ops, so a checker
// reads as a flat list of rules.
class Checks {
 public:
  bool ok() const { return !error_.has_value(); }
  Status status() const {
    if (error_) return std::unexpected(*error_);
    return {};
  }

  void fail(const Path& path, std::string_view what) {
    if (ok()) error_ = detail::invalid(path.str(), what).error();
  }

  void non_empty(const Path& path, const std::string& value) {
    if (value.empty()) fail(path, "must not be empty");
  }
  void non_empty(const Path& path, const std::optional<std::string>& value) {
    if (value) non_empty(path, *value);
  }

  void at_least(const Path& path, std::int64_t value, std::int64_t minimum) {
    if (value >= minimum) return;
    fail(path, minimum == 0 ? "must not be negative" : fmt::format("must be at least {}", minimum));
  }

  void finite(const Path& path, double value) {
    if (!std::isfinite(value)) fail(path, "must be a finite number");
  }

  void lossless(const Path& path, const Json& value) {
    if (!is_lossless(value)) fail(path, "not lossless JSON (NaN or infinity)");
  }
  void lossless(const Path& path, const std::optional<Json>& value) {
    if (value) lossless(path, *value);
  }

  void object(const Path& path, const Json& value) {
    if (!value.is_object()) fail(path, "expected an object");
    lossless(path, value);
  }

  // Unknown fields live beside the known ones on the wire, so each is named by
  // its own key: `base.key`.
  void extra(const Path& base, const Json& extra) {
    if (extra.is_null()) return;  // none
    if (!extra.is_object()) {
      fail(base.key("extra"), "expected an object");
      return;
    }
    for (const auto& [key, value] : extra.items()) lossless(base.key(key), value);
  }

 private:
  std::optional<Error> error_;
};

// ---- messages ---------------------------------------------------------------

void check_block(Checks& c, const Path& path, const TextContent& block) { c.extra(path, block.extra); }
void check_block(Checks& c, const Path& path, const ImageContent& block) { c.extra(path, block.extra); }
void check_block(Checks& c, const Path& path, const ThinkingContent& block) { c.extra(path, block.extra); }
void check_block(Checks& c, const Path& path, const ToolCall& block) {
  c.non_empty(path.key("id"), block.id);
  c.object(path.key("arguments"), block.arguments);
  c.extra(path, block.extra);
}

template <class Block>
void check_blocks(Checks& c, const Path& path, const std::vector<Block>& blocks) {
  for (std::size_t i = 0; i < blocks.size() && c.ok(); ++i) {
    std::visit([&](const auto& block) { check_block(c, path.index(i), block); }, blocks[i]);
  }
}

void check_content(Checks& c, const Path& path, const UserContent& content) {
  if (const auto* blocks = std::get_if<std::vector<UserBlock>>(&content)) check_blocks(c, path, *blocks);
}

void check_usage(Checks& c, const Path& path, const Usage& usage) {
  c.at_least(path.key("input"), usage.input, 0);
  c.at_least(path.key("output"), usage.output, 0);
  c.at_least(path.key("cacheRead"), usage.cache_read, 0);
  c.at_least(path.key("cacheWrite"), usage.cache_write, 0);
  c.at_least(path.key("totalTokens"), usage.total_tokens, 0);
  const Path cost = path.key("cost");
  c.finite(cost.key("input"), usage.cost.input);
  c.finite(cost.key("output"), usage.cost.output);
  c.finite(cost.key("cacheRead"), usage.cost.cache_read);
  c.finite(cost.key("cacheWrite"), usage.cost.cache_write);
  c.finite(cost.key("total"), usage.cost.total);
  c.extra(cost, usage.cost.extra);
  c.extra(path, usage.extra);
}

void check_message(Checks& c, const Path& path, const AgentMessage& message) {
  std::visit(Overloaded{
                 [&](const UserMessage& m) { check_content(c, path.key("content"), m.content); },
                 [&](const AssistantMessage& m) {
                   check_blocks(c, path.key("content"), m.content);
                   check_usage(c, path.key("usage"), m.usage);
                 },
                 [&](const ToolResultMessage& m) {
                   c.non_empty(path.key("toolCallId"), m.tool_call_id);
                   check_blocks(c, path.key("content"), m.content);
                   c.lossless(path.key("details"), m.details);
                 },
                 [&](const CustomMessage& m) {
                   check_content(c, path.key("content"), m.content);
                   c.lossless(path.key("details"), m.details);
                 },
                 [&](const BranchSummaryMessage& m) { c.non_empty(path.key("fromId"), m.from_id); },
                 [&](const CompactionSummaryMessage& m) {
                   c.at_least(path.key("tokensBefore"), m.tokens_before, 0);
                 },
                 [&](const BashExecutionMessage&) {},
             },
             message);
  std::visit([&](const auto& m) { c.extra(path, m.extra); }, message);
}

// ---- placeholders -----------------------------------------------------------

// `tree`: the placeholder stands in the tree (damaged_entry), so the type it
// had must be a tree entry's; a damaged record's must not be.
void check_damage(Checks& c, const DamageReport& damage, bool tree) {
  if (const auto was = damage.was) {
    if (*was == RecordType::ignorable || is_placeholder(*was) || is_tree_type(*was) != tree) {
      c.fail("was", fmt::format("'{}' is not a {} type", to_string(*was), tree ? "tree entry" : "harness record"));
    }
  }
  c.non_empty("reason", damage.reason);
  c.at_least("bytes", damage.bytes, 0);
  for (std::size_t i = 0; i < damage.open_runs.size(); ++i) c.non_empty(Path("openRuns").index(i), damage.open_runs[i]);
  c.non_empty("repairedAt", damage.repaired_at);
}

// ---- tree entries -----------------------------------------------------------

void check_body(Checks& c, const Path& path, const TreeBody& body) {
  auto field = [&](std::string_view key) { return path.key(key); };
  std::visit(Overloaded{
                 [&](const MessageBody& b) { check_message(c, field("message"), b.message); },
                 [&](const ModelChange&) {},
                 [&](const ThinkingLevelChange&) {},
                 [&](const ActiveToolsChange&) {},
                 [&](const Compaction& b) {
                   c.non_empty(field("firstKeptEntryId"), b.first_kept_entry_id);
                   c.at_least(field("tokensBefore"), b.tokens_before, 0);
                   c.lossless(field("details"), b.details);
                 },
                 [&](const BranchSummary& b) {
                   c.non_empty(field("fromId"), b.from_id);
                   c.lossless(field("details"), b.details);
                 },
                 [&](const Custom& b) { c.lossless(field("data"), b.data); },
                 [&](const CustomMessageBody& b) {
                   check_content(c, field("content"), b.content);
                   c.lossless(field("details"), b.details);
                 },
                 [&](const Label& b) { c.non_empty(field("targetId"), b.target_id); },
                 [&](const SessionInfo&) {},
                 [&](const Leaf& b) { c.non_empty(field("targetId"), b.target_id); },
                 [&](const DamagedEntry& b) {
                   c.non_empty(field("targetId"), b.target_id);
                   check_damage(c, b.damage, /*tree=*/true);
                 },
             },
             body);
}

void check_tree_entry(Checks& c, const Path& path, const TreeEntry& entry) {
  c.non_empty(path.key("id"), entry.id);
  c.non_empty(path.key("parentId"), entry.parent_id);
  c.non_empty(path.key("timestamp"), entry.timestamp);
  c.non_empty(path.key("ref"), entry.ref);
  check_body(c, path, entry.body);
  c.extra(path, entry.extra);
}

// A provisioned entry has no parentId, timestamp or ref yet (they are assigned
// when it is appended), so only its id and payload are checked.
void check_provisioned(Checks& c, const Path& path, const ProvisionedEntry& entry) {
  c.non_empty(path.key("id"), entry.id);
  check_body(c, path, entry.body);
  c.extra(path, entry.extra);
}

// Queue items and run prompts become messages in the model's context.
void check_message_like(Checks& c, const Path& path, const ProvisionedEntry& entry) {
  check_provisioned(c, path, entry);
  if (!std::holds_alternative<MessageBody>(entry.body) && !std::holds_alternative<CustomMessageBody>(entry.body)) {
    c.fail(path.key("type"),
           fmt::format("expected 'message' or 'custom_message', got '{}'", to_string(type_of(entry.body))));
  }
}

// ---- harness records --------------------------------------------------------

void check_intent(Checks& c, const OperationIntent& intent) {
  std::visit(Overloaded{
                 [&](const RunIntent& i) {
                   for (std::size_t k = 0; k < i.initial_messages.size() && c.ok(); ++k) {
                     check_message_like(c, Path("intent.initialMessages").index(k), i.initial_messages[k]);
                   }
                   if (i.resume_data) c.object("intent.resumeData", *i.resume_data);
                   c.extra("intent", i.extra);
                 },
                 [&](const CompactionIntent& i) {
                   c.non_empty("intent.resultEntryId", i.result_entry_id);
                   c.extra("intent", i.extra);
                 },
                 [&](const NavigationIntent& i) {
                   c.non_empty("intent.targetId", i.target_id);
                   c.non_empty("intent.destinationLeafId", i.destination_leaf_id);
                   c.non_empty("intent.summaryEntryId", i.summary_entry_id);
                   c.non_empty("intent.labelEntryId", i.label_entry_id);
                   c.non_empty("intent.leafEntryId", i.leaf_entry_id);
                   c.extra("intent", i.extra);
                 },
             },
             intent);
}

void check_queue_item(Checks& c, const QueueEnqueued& b) {
  if (b.queue == QueueKind::next_run) {
    // A next-run item belongs to no operation until a run consumes it.
    if (b.run_id) c.fail("runId", "not allowed on a nextRun item");
  } else if (!b.run_id) {
    c.fail("runId", fmt::format("missing (a {} item belongs to its run)", to_string(b.queue)));
  } else {
    c.non_empty("runId", b.run_id);
  }
  check_message_like(c, "target", b.target);
}

// The call a tool_started or an input_requested is about, and the run that made it.
template <class T>
void check_call(Checks& c, const T& b) {
  c.non_empty("runId", b.run_id);
  c.non_empty("assistantEntryId", b.assistant_entry_id);
  c.at_least("toolIndex", b.tool_index, 0);
  c.non_empty("toolCallId", b.tool_call_id);
}

// A network granted to one call is a network on, under a sandbox.
void check_sandbox(Checks& c, const std::optional<SandboxRecord>& sandbox) {
  if (!sandbox) return;
  c.extra("sandbox", sandbox->extra);
  if (!sandbox->network_granted) return;
  if (!*sandbox->network_granted) c.fail("sandbox.networkGranted", "is written only as true");
  if (!sandbox->network) c.fail("sandbox.networkGranted", "needs \"network\": true");
  if (sandbox->mode == SandboxMode::off) c.fail("sandbox.networkGranted", "needs a sandbox (mode is \"off\")");
}

void check_harness_body(Checks& c, const HarnessBody& body) {
  std::visit(Overloaded{
                 [&](const OperationStarted& b) {
                   c.non_empty("sourceLeafId", b.source_leaf_id);
                   check_intent(c, b.intent);
                 },
                 [&](const OperationCancelled& b) {
                   c.non_empty("runId", b.run_id);
                 },
                 [&](const OperationFinished& b) {
                   c.non_empty("runId", b.run_id);
                   c.extra("error", b.error_extra);
                 },
                 [&](const GenerationStarted& b) {
                   c.non_empty("runId", b.run_id);
                   c.at_least("attempt", b.attempt, 1);
                   c.extra("model", b.model.extra);
                 },
                 [&](const ToolStarted& b) {
                   check_call(c, b);
                   c.object("effectiveArgs", b.effective_args);
                   c.non_empty("resultEntryId", b.result_entry_id);
                   // A resumed call finds its child by this id: it must be there, and only there.
                   if (b.replay == Replay::resume) {
                     if (!b.child_session) c.fail("childSession", "is required for replay \"resume\"");
                     c.non_empty("childSession", b.child_session);
                   } else if (b.child_session) {
                     c.fail("childSession", "is only for replay \"resume\"");
                   }
                   check_sandbox(c, b.sandbox);
                 },
                 [&](const QueueEnqueued& b) { check_queue_item(c, b); },
                 [&](const WriteDeferred& b) {
                   c.non_empty("runId", b.run_id);
                   check_provisioned(c, "target", b.target);
                 },
                 [&](const RefCreated& b) {
                   c.non_empty("name", b.name);
                   c.non_empty("at", b.at);
                 },
                 [&](const RefDeleted& b) { c.non_empty("name", b.name); },
                 [&](const InputRequested& b) {
                   check_call(c, b);
                   c.non_empty("toolName", b.tool_name);
                   c.object("arguments", b.arguments);
                   c.non_empty("rule", b.rule);
                   if (b.kind == InputKind::question) {
                     if (!b.question) c.fail("question", "missing (a question request asks one)");
                     if (b.rule) c.fail("rule", "not allowed on a question request");
                   } else {
                     if (!b.rule) c.fail("rule", "missing (an approval request names the rule that asked)");
                     if (b.question) c.fail("question", "not allowed on an approval request");
                     if (!b.choices.empty()) c.fail("choices", "not allowed on an approval request");
                   }
                   if (b.sandbox && b.kind == InputKind::question) c.fail("sandbox", "not allowed on a question request");
                   check_sandbox(c, b.sandbox);
                 },
                 [&](const InputResolved& b) {
                   c.non_empty("runId", b.run_id);
                   c.non_empty("requestId", b.request_id);
                   c.non_empty("by", b.by);
                   c.non_empty("remember", b.remember);
                   if (b.arguments) c.object("arguments", *b.arguments);
                   if (b.decision != InputDecision::allow && (b.arguments || b.remember)) {
                     c.fail(b.arguments ? "arguments" : "remember", "allowed only with decision allow");
                   }
                   if (b.decision != InputDecision::deny && b.reason) c.fail("reason", "allowed only with decision deny");
                   if ((b.decision == InputDecision::answer) != b.answer.has_value()) {
                     c.fail("answer", b.answer ? "allowed only with decision answer" : "missing (decision answer carries it)");
                   }
                 },
                 [&](const Damaged& b) {
                   c.non_empty("runId", b.run_id);
                   c.non_empty("name", b.name);
                   c.non_empty("at", b.at);
                   check_damage(c, b.damage, /*tree=*/false);
                 },
             },
             body);
}

void check_harness(Checks& c, const HarnessRecord& record) {
  c.non_empty("id", record.id);
  c.non_empty("ref", record.ref);
  c.non_empty("timestamp", record.timestamp);
  check_harness_body(c, record.body);
  c.extra("", record.extra);
}

void check_ignorable(Checks& c, const IgnorableRecord& record) {
  if (!record.json.is_object()) {
    c.fail("record", "expected an object");
    return;
  }
  auto type = record.json.find("type");
  if (type == record.json.end() || !type->is_string()) c.fail("type", "expected a string");
  c.extra("", record.json);
}

// The stored line ends with its checksum member (checksum.hpp): no record may
// bring a top-level field of that name.
void check_unreserved(Checks& c, const Json& fields) {
  if (fields.is_object() && fields.contains(std::string(kChecksumKey))) {
    c.fail(kChecksumKey, "is reserved for the record's checksum");
  }
}

}  // namespace

Status check_fields(const Record& record) {
  Checks c;
  std::visit(Overloaded{
                 [&](const TreeEntry& entry) {
                   check_tree_entry(c, "", entry);
                   check_unreserved(c, entry.extra);
                 },
                 [&](const HarnessRecord& harness) {
                   check_harness(c, harness);
                   check_unreserved(c, harness.extra);
                 },
                 [&](const IgnorableRecord& ignorable) {
                   check_ignorable(c, ignorable);
                   check_unreserved(c, ignorable.json);
                 },
             },
             record.body);
  return c.status();
}

}  // namespace cairn
