// The compaction procedure (durable-harness-design.txt: compactionProcedure)
// and the compaction of a branch that it shares with a run's
// auto-compaction (autoCompact, run_procedure.cpp).
#include <algorithm>

#include <fmt/format.h>

#include "operation.hpp"

namespace cairn {
namespace {

// The branch a compaction looks at, oldest first: from the newest
// compaction's kept entry (or the root) to the leaf. Decoded from the leaf
// back, so an often-compacted session reads only its recent part.
std::vector<TreeEntry> branch_since_compaction(Session& session, const std::string& ref) {
  const auto ids = session.path_to(session.leaf(ref));
  std::vector<TreeEntry> path;
  std::optional<std::string> kept;
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    auto entry = session.get_entry(*it);
    if (!entry) throw AppendFailed{entry.error()};
    if (!*entry) throw AppendFailed{Error{Errc::corrupt_log, fmt::format("entry '{}' on the branch cannot be read", *it)}};
    path.push_back(std::move(**entry));
    if (kept && path.back().id == *kept) break;
    if (const auto* compaction = std::get_if<Compaction>(&path.back().body); compaction && !kept) {
      kept = compaction->first_kept_entry_id;
    }
  }
  std::reverse(path.begin(), path.end());
  return path;
}

// The manual operation (AgentRef::compact): its compaction entry has a
// provisioned id, so a resumed operation that finds it skips to the end.
class CompactionProcedure final : public Operation {
 public:
  using Operation::Operation;

 private:
  OperationKind kind() const override { return OperationKind::compaction; }

  RunResult procedure() override {
    take_config();
    const auto intent = with_op([](const OpState& op) { return std::get<CompactionIntent>(op.intent); });
    core_.publish(event(EventType::compaction_start, {{"reason", CompactionReason::manual}}));  // again on resume
    check_cancelled();
    if (auto seq = core_.session->seq_of(intent.result_entry_id)) {
      auto record = core_.session->get_record(*seq);
      if (!record || !*record) throw AppendFailed{record ? Error{Errc::corrupt_log, "the compaction entry vanished"} : record.error()};
      entry_ = std::get<TreeEntry>((*record)->body);
      from_hook_ = std::get<Compaction>(entry_->body).from_hook.value_or(false);
    } else {
      Compacted done = compact_branch(CompactionReason::manual, intent.custom_instructions, intent.result_entry_id);
      if (done.cancelled) {
        apply_pending_writes();
        return *finish(Outcome::cancelled, std::nullopt);
      }
      entry_ = std::move(done.entry);
      from_hook_ = done.from_hook;
    }
    apply_pending_writes();
    return *finish(Outcome::ok, std::nullopt);
  }

  void describe_end(Outcome outcome, RunResult& result, Json& data) override {
    data["reason"] = CompactionReason::manual;
    data["fromHook"] = from_hook_;
    if (outcome == Outcome::ok && entry_) {
      result.entry = entry_;
      data["entry"] = encode(*entry_);
    }
  }

  std::optional<TreeEntry> entry_;  // the compaction entry, once it exists
  bool from_hook_ = false;
};

}  // namespace

std::unique_ptr<Operation> make_compaction_procedure(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery) {
  return std::make_unique<CompactionProcedure>(core, std::move(rt), recovery);
}

Operation::Compacted Operation::compact_branch(CompactionReason reason, const std::optional<std::string>& instructions,
                                               const std::string& entry_id) {
  const CompactionSettings& settings = config_.compaction;
  auto prep = prepare_compaction(branch_since_compaction(*core_.session, rt_->name), settings);
  if (!prep) throw RunFailed{prep.error()};

  bool cancelled = false;
  std::optional<SuppliedSummary> supplied;
  each_hook("before_compaction", core_.hooks.handlers(&Hooks::Lists::before_compaction), [&](const auto& hook) {
    auto out = hook(hook_context(), BeforeCompactionEvent{reason, *prep, instructions});
    if (!out) return true;
    if (out->cancel) {
      cancelled = true;
      return false;
    }
    if (out->compaction) supplied = std::move(out->compaction);
    return true;
  });
  if (cancelled) return Compacted{.cancelled = true};

  Compaction body{.first_kept_entry_id = prep->first_kept_entry_id, .tokens_before = prep->tokens_before};
  if (supplied) {
    body.summary = std::move(supplied->summary);
    body.details = supplied->details;
    body.from_hook = true;
  } else {
    // One generation cycle for the history and, when the turn was split,
    // its prefix.
    std::vector<SummaryRequest> requests;
    if (!prep->messages_to_summarize.empty()) requests.push_back(history_summary_request(*prep, settings, instructions));
    const bool prefix = prep->split_turn && !prep->turn_prefix_messages.empty();
    if (prefix) requests.push_back(turn_prefix_summary_request(*prep, settings));
    auto texts = generate(Purpose::compaction, requests);
    const std::string history = prep->messages_to_summarize.empty() ? "No prior history." : texts.front();
    body.summary = compose_summary(*prep, history, prefix ? std::optional<std::string>(texts.back()) : std::nullopt);
    body.details = compaction_details(*prep);
  }
  TreeEntry entry = append_entry(TreeEntry{.id = entry_id, .body = std::move(body)});
  return Compacted{.entry = std::move(entry), .from_hook = supplied.has_value()};
}

}  // namespace cairn
