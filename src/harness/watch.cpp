// Snapshots for watchers. A snapshot is read with the ref's append lock held,
// so the records it reflects are exactly those up to its cursor: the events
// announcing them are dropped from the watcher's buffer, the later ones pass.
#include <algorithm>

#include "core.hpp"

namespace cairn {
namespace {

std::vector<AgentMessage> watched_messages(const std::vector<ProvisionedEntry>& items) {
  std::vector<AgentMessage> out;
  for (const auto& item : items) {
    if (const auto* body = std::get_if<MessageBody>(&item.body)) out.push_back(body->message);
  }
  return out;
}

// With core.mu held.
std::optional<RunSnapshot> run_snapshot(const RefRuntime& rt) {
  if (!rt.op) return std::nullopt;
  RunSnapshot run{.id = rt.op->id, .kind = rt.op->kind, .started_at = rt.op->started_at};
  run.status = rt.active ? rt.status : idle_status(rt);
  if (!rt.active) run.suspended = rt.suspended;
  if (rt.streaming) run.streaming_message = std::get<AssistantMessage>(*rt.streaming);
  run.running_tools = rt.running_tools;
  run.retry = rt.retry;
  return run;
}

}  // namespace

Result<RefWatch> AgentRef::watch() const {
  auto rt = core_->find_ref(name_);
  if (!rt) return fail(Errc::unknown_ref, "ref '" + name_ + "' does not exist");
  auto state = std::make_shared<RefWatch::State>();
  Subscription subscription = core_->bus.subscribe(name_, [state](const Event& e) { RefWatch::receive(*state, e); });

  RefSnapshot snapshot{.ref = name_};
  std::lock_guard ref_lock(rt->ref_mu);
  auto transcript = core_->session->find_entries_on_branch(
      EntryQuery{.order = Order::oldest_first}, BranchBounds{.stop_at_type = RecordType::compaction}, name_);
  if (!transcript) return std::unexpected(transcript.error());
  snapshot.transcript = std::move(transcript->items);
  snapshot.leaf_id = core_->session->leaf(name_);
  snapshot.cursor = core_->session->size() - 1;
  {
    std::lock_guard lock(core_->mu);
    snapshot.run = run_snapshot(*rt);
    if (rt->op && !rt->op->cancelled) {
      snapshot.steer = watched_messages(rt->op->pending_steer);
      snapshot.follow_up = watched_messages(rt->op->pending_follow_up);
    }
    if (rt->op) snapshot.pending_writes = rt->op->pending_writes;
    snapshot.next_run = watched_messages(rt->next_run);
    snapshot.faulted = core_->faulted;
  }
  {
    std::lock_guard lock(state->mu);
    state->cursor = snapshot.cursor;
  }
  return RefWatch(std::move(snapshot), std::move(state), std::move(subscription));
}

SessionWatch AgentHarness::watch_session() {
  auto state = std::make_shared<SessionWatch::State>();
  Subscription subscription =
      core_->bus.subscribe(std::nullopt, [state](const Event& e) { SessionWatch::receive(*state, e); });

  // Every ref's append lock, in name order, so no ref changes while the
  // inventory and the cursor are read.
  std::vector<std::shared_ptr<RefRuntime>> runtimes;
  {
    std::lock_guard lock(core_->mu);
    for (const auto& [name, rt] : core_->refs) runtimes.push_back(rt);
  }
  std::vector<std::unique_lock<OwnedMutex>> locks;
  for (const auto& rt : runtimes) locks.emplace_back(rt->ref_mu);

  SessionSnapshot snapshot;
  snapshot.cursor = core_->session->size() - 1;
  {
    std::lock_guard lock(core_->mu);
    for (const auto& [name, rt] : core_->refs) {
      SessionSnapshot::Ref ref{.status = RefStatus{.name = name}};
      if (auto run = run_snapshot(*rt)) {
        ref.status.run = RefStatus::Run{run->id, run->kind, run->status};
        if (run->status != OperationStatus::running) ref.suspended = rt->suspended;
      }
      snapshot.refs.push_back(std::move(ref));
    }
    snapshot.faulted = core_->faulted;
  }
  for (auto& ref : snapshot.refs) ref.status.leaf_id = core_->session->leaf(ref.status.name);
  {
    std::lock_guard lock(state->mu);
    state->cursor = snapshot.cursor;
  }
  return SessionWatch(std::move(snapshot), std::move(state), std::move(subscription));
}

}  // namespace cairn
