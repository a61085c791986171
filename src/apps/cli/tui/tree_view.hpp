// /tree's listing: the session's entries as a tree, each numbered so the
// user can pick one by number (or by an id prefix). A chain of single
// children stays at one indent; a branch point's children are indented one
// step with "+- ", like `cairn tree`. Labels, leaf moves and session names
// are facts about other entries, not places to go: they are not listed
// (a label shows on its target as [label]).
#pragma once

#include <cstddef>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/log/record.hpp"

namespace cairn::cli::tui {

struct TreeView {
  std::vector<std::string> lines;  // without newlines
  std::vector<std::string> ids;    // ids[n - 1]: the entry numbered n
};

// `entries` in log order; `refs_at`: entry id -> the refs whose leaf it is;
// `current_leaf`: marked with '*'.
TreeView build_tree_view(const std::vector<TreeEntry>& entries,
                         const std::map<std::string, std::vector<std::string>>& refs_at,
                         const std::optional<std::string>& current_leaf, std::size_t width);

// "role: text" or what another entry says, in one line.
std::string entry_summary(const TreeEntry& entry);

// A choice: a number from the view, or an entry id or a unique prefix of one
// among `all_ids`. The error says what did not match.
std::expected<std::string, std::string> resolve_entry_choice(std::string_view choice, const TreeView& view,
                                                             const std::vector<std::string>& all_ids);

}  // namespace cairn::cli::tui
