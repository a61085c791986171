#include "cairn/harness/session_tree.hpp"

#include <fmt/format.h>

#include "core.hpp"

namespace cairn {

const Session& SessionTree::session() const { return *core_->session; }

const SessionHeader& SessionTree::header() const { return session().header(); }

std::optional<std::string> SessionTree::leaf_id() const { return session().leaf(ref_); }

Result<std::optional<TreeEntry>> SessionTree::get_entry(std::string_view id) const { return session().get_entry(id); }

Result<SessionStats> SessionTree::stats() const { return session().stats(); }

Result<std::optional<std::string>> SessionTree::name() const { return session().name(); }

Result<std::string> SessionTree::set_name(std::string name) { return write(SessionInfo{std::move(name)}); }

Result<std::optional<std::string>> SessionTree::label(std::string_view entry_id) const {
  return session().label(entry_id);
}

Result<std::string> SessionTree::set_label(std::string target_id, std::optional<std::string> label) {
  // Checked here, at acceptance: a deferred label would otherwise fail only
  // when its run applies it.
  if (!session().seq_of(target_id)) return fail(Errc::not_found, fmt::format("no entry '{}' to label", target_id));
  return write(Label{.target_id = std::move(target_id), .label = std::move(label)});
}

Result<Page<TreeEntry>> SessionTree::find_entries(const EntryQuery& query) const {
  return session().find_entries(query);
}

Result<std::optional<TreeEntry>> SessionTree::find_entry(EntryQuery query) const {
  query.limit = 1;
  query.cursor.reset();
  auto page = find_entries(query);
  if (!page) return std::unexpected(page.error());
  if (page->items.empty()) return std::optional<TreeEntry>{};
  return std::optional<TreeEntry>{std::move(page->items.front())};
}

Result<Page<TreeEntry>> SessionTree::find_entries_on_branch(const EntryQuery& query, const BranchBounds& bounds) const {
  return session().find_entries_on_branch(query, bounds, ref_);
}

Result<std::optional<TreeEntry>> SessionTree::find_entry_on_branch(EntryQuery query, const BranchBounds& bounds) const {
  query.limit = 1;
  query.cursor.reset();
  auto page = find_entries_on_branch(query, bounds);
  if (!page) return std::unexpected(page.error());
  if (page->items.empty()) return std::optional<TreeEntry>{};
  return std::optional<TreeEntry>{std::move(page->items.front())};
}

Result<std::string> SessionTree::append_message(AgentMessage message) { return write(MessageBody{std::move(message)}); }

Result<std::string> SessionTree::append_custom_entry(std::string custom_type, std::optional<Json> data) {
  return write(Custom{std::move(custom_type), std::move(data)});
}

std::vector<TreeEntry> SessionTree::pending_writes() const {
  auto rt = core_->find_ref(ref_);
  std::lock_guard lock(core_->mu);
  if (!rt || !rt->op) return {};
  return rt->op->pending_writes;
}

Result<std::string> SessionTree::write(TreeBody body) {
  auto rt = core_->find_ref(ref_);
  if (!rt) return fail(Errc::unknown_ref, fmt::format("ref '{}' does not exist", ref_));
  return core_->write(rt, TreeEntry{.body = std::move(body)});
}

}  // namespace cairn
