// A ref's view of the session (durable-harness-design.txt, "SessionTree"):
// reads are the session's, with branch reads starting at this ref's leaf;
// writes chain to the leaf, at once while the ref is idle and deferred
// (write_deferred, applied at its run's next checkpoint) while it runs. Safe
// from any thread, hooks and listeners included. A small handle, cheap to
// copy, like AgentRef; a handle of a deleted ref rejects writes with
// unknown_ref.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/log/query.hpp"
#include "cairn/log/record.hpp"
#include "cairn/store/session.hpp"

namespace cairn {

class HarnessCore;

class SessionTree {
 public:
  SessionTree(std::shared_ptr<HarnessCore> core, std::string ref) : core_(std::move(core)), ref_(std::move(ref)) {}

  const std::string& ref() const { return ref_; }
  const SessionHeader& header() const;
  std::optional<std::string> leaf_id() const;
  Result<std::optional<TreeEntry>> get_entry(std::string_view id) const;
  Result<SessionStats> stats() const;

  // Latest-wins facts, not branch-scoped: the session's name, and an entry's
  // label (the entry may be on any branch; nullopt clears the label). The
  // setters are tree writes like the appends; they return the new entry's id.
  Result<std::optional<std::string>> name() const;
  Result<std::string> set_name(std::string name);
  Result<std::optional<std::string>> label(std::string_view entry_id) const;
  Result<std::string> set_label(std::string target_id, std::optional<std::string> label);

  // Every branch, in log order.
  Result<Page<TreeEntry>> find_entries(const EntryQuery& query = {}) const;
  Result<std::optional<TreeEntry>> find_entry(EntryQuery query = {}) const;
  // The path from bounds.start (default: this ref's leaf) to the root.
  Result<Page<TreeEntry>> find_entries_on_branch(const EntryQuery& query = {}, const BranchBounds& bounds = {}) const;
  Result<std::optional<TreeEntry>> find_entry_on_branch(EntryQuery query = {}, const BranchBounds& bounds = {}) const;

  // Return the id the entry has, or will have once its deferred write applies.
  Result<std::string> append_message(AgentMessage message);
  Result<std::string> append_custom_entry(std::string custom_type, std::optional<Json> data = {});
  // Writes accepted and not applied yet, in acceptance order.
  std::vector<TreeEntry> pending_writes() const;

 private:
  Result<std::string> write(TreeBody body);
  const Session& session() const;

  std::shared_ptr<HarnessCore> core_;
  std::string ref_;
};

}  // namespace cairn
