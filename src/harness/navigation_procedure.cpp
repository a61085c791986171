// The navigation procedure (durable-harness-design.txt: navigationProcedure,
// AgentRef::navigate_tree): the leaf moves once, by its provisioned leaf
// entry; the branch summary and the label follow it, each by provisioned
// id, so a resumed navigation adds what is missing and nothing twice.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "operation.hpp"

namespace cairn {
namespace {

// The entries a navigation leaves behind, oldest first: from the common
// ancestor of `from` and `to` (exclusive) to `from`.
std::vector<TreeEntry> abandoned_branch(Session& session, const std::optional<std::string>& from,
                                        const std::optional<std::string>& to) {
  if (!from) return {};
  const auto from_path = session.path_to(*from);
  const auto to_path = session.path_to(to);
  const std::set<std::string> on_to(to_path.begin(), to_path.end());
  std::size_t first = from_path.size();
  while (first > 0 && !on_to.contains(from_path[first - 1])) --first;
  std::vector<TreeEntry> out;
  for (std::size_t i = first; i < from_path.size(); ++i) {
    auto entry = session.get_entry(from_path[i]);
    if (!entry) throw AppendFailed{entry.error()};
    if (*entry) out.push_back(std::move(**entry));
  }
  return out;
}

class NavigationProcedure final : public Operation {
 public:
  using Operation::Operation;

 private:
  // The summary of the branch left behind, as the hook supplied or a
  // generation wrote it.
  struct Summary {
    std::string text;
    std::optional<Json> details;
    bool from_hook = false;
  };

  OperationKind kind() const override { return OperationKind::navigation; }

  RunResult procedure() override {
    const auto [intent, source] = with_op([](const OpState& op) {
      return std::pair(std::get<NavigationIntent>(op.intent), op.source_leaf_id);
    });
    old_leaf_ = source;
    new_leaf_ = intent.destination_leaf_id;
    core_.publish(event(EventType::navigation_start, {{"targetId", intent.target_id}}));  // again on resume
    check_cancelled();
    std::optional<Summary> summary;
    if (!core_.session->seq_of(intent.leaf_entry_id)) {
      // The navigation has not happened yet.
      const BranchPreparation prep = prepare();
      bool cancelled = false;
      each_hook("before_navigation", core_.hooks.handlers(&Hooks::Lists::before_navigation), [&](const auto& hook) {
        auto out = hook(hook_context(), BeforeNavigationEvent{intent.target_id, prep});
        if (out && out->cancel) {
          cancelled = true;
          return false;
        }
        if (out && out->summary) summary = Summary{out->summary->summary, out->summary->details, true};
        return true;
      });
      if (cancelled) {
        apply_pending_writes();
        return *finish(Outcome::cancelled, std::nullopt);
      }
      if (intent.summarize && !summary) summary = summarise(prep, intent.custom_instructions);
      append_entry(TreeEntry{.id = intent.leaf_entry_id, .body = Leaf{new_leaf_}});  // the cursor moves here
    }
    if (intent.summarize && intent.summary_entry_id) {
      if (auto seq = core_.session->seq_of(*intent.summary_entry_id)) {
        summary_entry_ = entry_at(*seq);
      } else {
        // Without a summary here, the leaf moved before a crash and the
        // summary was lost with it: it is written again.
        if (!summary) summary = summarise(prepare(), intent.custom_instructions);
        summary_entry_ = append_entry(TreeEntry{
            .id = *intent.summary_entry_id,
            .body = BranchSummary{.from_id = old_leaf_.value_or("root"),
                                  .summary = summary->text,
                                  .details = summary->details,
                                  .from_hook = summary->from_hook ? std::optional<bool>(true) : std::nullopt}});
      }
    }
    if (intent.label && intent.label_entry_id && !core_.session->seq_of(*intent.label_entry_id)) {
      append_entry(TreeEntry{.id = *intent.label_entry_id, .body = Label{.target_id = intent.target_id, .label = intent.label}});
    }
    apply_pending_writes();
    return *finish(Outcome::ok, std::nullopt);
  }

  // The abandoned branch, cut to what the summary's model can take.
  BranchPreparation prepare() {
    const StepConfig& config = take_config();
    return prepare_branch_summary(abandoned_branch(*core_.session, old_leaf_, new_leaf_),
                                  std::max<std::int64_t>(0, config.branch.model.context_window - config.compaction.reserve_tokens));
  }

  Summary summarise(const BranchPreparation& prep, const std::optional<std::string>& instructions) {
    Summary summary{.details = branch_summary_details(prep)};
    summary.text = prep.messages.empty()
                       ? compose_branch_summary(prep, "No content to summarise.")
                       : compose_branch_summary(prep, generate(Purpose::branch_summary,
                                                               {branch_summary_request(prep, instructions)})
                                                          .front());
    return summary;
  }

  TreeEntry entry_at(std::int64_t seq) {
    auto record = core_.session->get_record(seq);
    if (!record || !*record) throw AppendFailed{record ? Error{Errc::corrupt_log, fmt::format("seq {} vanished", seq)} : record.error()};
    return std::get<TreeEntry>((*record)->body);
  }

  void describe_end(Outcome outcome, RunResult& result, Json& data) override {
    const bool moved = core_.session->leaf(rt_->name) != old_leaf_ || outcome == Outcome::ok;
    result.new_leaf_id = moved ? new_leaf_ : old_leaf_;
    data["oldLeafId"] = old_leaf_ ? Json(*old_leaf_) : Json(nullptr);
    data["newLeafId"] = result.new_leaf_id ? Json(*result.new_leaf_id) : Json(nullptr);
    if (outcome == Outcome::ok && summary_entry_) {
      result.entry = summary_entry_;
      data["summaryEntry"] = encode(*summary_entry_);
    }
  }

  std::optional<std::string> old_leaf_, new_leaf_;
  std::optional<TreeEntry> summary_entry_;  // the branch summary entry, once it exists
};

}  // namespace

std::unique_ptr<Operation> make_navigation_procedure(HarnessCore& core, std::shared_ptr<RefRuntime> rt, bool recovery) {
  return std::make_unique<NavigationProcedure>(core, std::move(rt), recovery);
}

}  // namespace cairn
