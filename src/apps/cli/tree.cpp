// `cairn tree SESSION`: the entry tree, drawn like pi's /tree. A chain of
// single children stays at one indent; only a branch point indents its
// children (with a connector), and the first generation after a branch one
// step more, so a branch's subtree reads as a group.
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "util/parallel.hpp"
#include "cli.hpp"
#include "text.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct TreeOptions {
  std::string store;
  std::string session;
};

// What a line of the tree shows of an entry, kept instead of the entry: a
// long session's entries are read a page at a time and let go.
struct Node {
  std::string id;
  RecordType type = RecordType::message;
  std::string preview;
  // Children, in seq order, as a list through the node list (a vector per
  // node would cost an allocation each on a long chain); -1: none.
  std::int32_t first_child = -1, last_child = -1, next_sibling = -1;
};

// A connector's column and whether the branch below it continues ("|").
struct Gutter {
  int position;
  bool show;
};

struct Frame {
  std::size_t node;
  int indent;
  bool just_branched;
  bool show_connector;
  bool is_last;
  std::vector<Gutter> gutters;
  bool virtual_root_child;
};

std::string prefix_for(const Frame& frame, bool multiple_roots) {
  const int display_indent = multiple_roots ? std::max(0, frame.indent - 1) : frame.indent;
  const bool connector = frame.show_connector && !frame.virtual_root_child;
  const int connector_position = connector ? display_indent - 1 : -1;
  std::string prefix;
  for (int level = 0; level < display_indent; ++level) {
    const Gutter* gutter = nullptr;
    for (const auto& g : frame.gutters) {
      if (g.position == level) gutter = &g;
    }
    if (gutter) {
      prefix += gutter->show ? "|  " : "   ";
    } else if (level == connector_position) {
      prefix += frame.is_last ? "`- " : "|- ";
    } else {
      prefix += "   ";
    }
  }
  return prefix;
}

int run_tree(const TreeOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto opened = open_session(**store, options.session, /*read_only=*/true);
  if (!opened) return opened.error();
  const Session& session = **opened;

  std::vector<Node> nodes;
  // Keyed by views of the nodes' own ids: the node list is sized once, so
  // they never move.
  std::unordered_map<std::string_view, std::size_t> by_id;
  by_id.reserve(static_cast<std::size_t>(session.size()));
  nodes.reserve(static_cast<std::size_t>(session.size()));
  std::vector<std::size_t> roots;
  // The latest label of each entry, collected on the way (labels are
  // latest-wins records), so no entry's label needs a search of the log.
  std::unordered_map<std::string, std::optional<std::string>> labels;
  // Tool results of calls that ran a child session (a subagent): result entry id → child id.
  std::unordered_map<std::string, std::string> children_at;
  constexpr std::size_t kPage = 1024;
  for (std::int64_t after = -1;;) {
    auto page = session.get_log(after, kPage);
    if (!page) return report(page.error());
    if (page->empty()) break;
    after = page->back().seq;
    // Each line decodes, and its line of the tree is written, on its own: on
    // every core; then the entries are linked in order. A worker keeps only
    // what linking needs and frees the entry itself: freed on the thread
    // that allocated it, its memory goes back to that thread's own cache.
    struct Decoded {
      std::optional<Error> error;  // the entry does not decode
      std::optional<std::string> parent_id;
      std::optional<Label> label;
      Node node;
    };
    std::vector<Decoded> decoded(page->size());
    parallel_for(page->size(), [&](std::size_t k) {
      const LogLine& line = (*page)[k];
      if (!is_tree_type(line.type)) return;
      Decoded& out = decoded[k];
      std::optional<Result<TreeEntry>> entry;  // nullopt: the line is not JSON
      if (auto common = decode_common_line(line.json)) {
        entry = std::move(std::get<TreeEntry>(common->body));
      } else if (auto json = Json::parse(line.json, nullptr, false); !json.is_discarded()) {
        entry = decode_tree_entry(json);
      }
      if (!entry || !*entry) {
        out.error = entry ? (*entry).error() : Error{Errc::invalid_record, "not valid JSON"};
        return;
      }
      TreeEntry& e = **entry;
      out.parent_id = std::move(e.parent_id);
      if (auto* label = std::get_if<Label>(&e.body)) out.label = std::move(*label);
      out.node.id = std::move(e.id);
      out.node.type = type_of(e.body);
      out.node.preview = entry_preview(e);
    });
    for (std::size_t k = 0; k < page->size(); ++k) {
      const LogLine& line = (*page)[k];
      if (line.type == RecordType::tool_started) {
        auto json = Json::parse(line.json, nullptr, false);
        auto record = json.is_discarded() ? Result<Record>(fail(Errc::invalid_record, "not valid JSON")) : decode_record(json);
        const auto* harness = record ? std::get_if<HarnessRecord>(&record->body) : nullptr;
        const auto* started = harness ? std::get_if<ToolStarted>(&harness->body) : nullptr;
        if (started && started->child_session) children_at[started->result_entry_id] = *started->child_session;
        continue;
      }
      if (!is_tree_type(line.type)) continue;
      Decoded& entry = decoded[k];
      if (entry.error) {
        return report(kFailure, fmt::format("session {}: seq {}: {}", session.id(), line.seq, entry.error->message));
      }
      if (entry.label) labels[entry.label->target_id] = std::move(entry.label->label);
      const std::size_t index = nodes.size();
      auto parent = entry.parent_id ? by_id.find(*entry.parent_id) : by_id.end();
      if (parent != by_id.end()) {
        Node& up = nodes[parent->second];
        if (up.last_child >= 0) {
          nodes[static_cast<std::size_t>(up.last_child)].next_sibling = static_cast<std::int32_t>(index);
        } else {
          up.first_child = static_cast<std::int32_t>(index);
        }
        up.last_child = static_cast<std::int32_t>(index);
      } else {
        roots.push_back(index);
      }
      nodes.push_back(std::move(decoded[k].node));
      by_id.emplace(nodes.back().id, index);
    }
  }
  if (nodes.empty()) {
    fmt::print("(no entries)\n");
    return kOk;
  }

  std::unordered_map<std::string, std::vector<std::string>> refs_at;  // entry id → refs whose leaf it is
  std::vector<std::string> empty_refs;
  for (const RefInfo& ref : session.refs()) {
    if (ref.leaf_id) {
      refs_at[*ref.leaf_id].push_back(ref.name);
    } else {
      empty_refs.push_back(ref.name);
    }
  }

  // A subagent's session says whose it is.
  if (auto child = session.header().extra.find("child"); child != session.header().extra.end() && child->is_object()) {
    print_untrusted(stdout, "subagent of session {} (call {}, depth {})\n",
                    session.header().parent_session.value_or("?"), child->value("toolCallId", std::string("?")),
                    child->value("depth", 1));
  }
  // Written out a MiB at a time. Every line holds what a log says (ids,
  // labels, previews, ref names): visible on a terminal, exact elsewhere.
  std::string out;
  const auto flush = [&] {
    write_untrusted(stdout, out);
    out.clear();
  };
  // Depth-first, children in seq order (pi's indentation rules).
  const bool multiple_roots = roots.size() > 1;
  std::vector<Frame> stack;
  std::vector<std::size_t> children;  // of the node being printed
  for (std::size_t i = roots.size(); i-- > 0;) {
    stack.push_back(Frame{roots[i], multiple_roots ? 1 : 0, multiple_roots, multiple_roots,
                          i == roots.size() - 1, {}, multiple_roots});
  }
  while (!stack.empty()) {
    Frame frame = std::move(stack.back());
    stack.pop_back();
    const Node& node = nodes[frame.node];

    std::string line = prefix_for(frame, multiple_roots);
    line += short_id(node.id);
    line += ' ';
    line += to_string(node.type);
    if (auto label = labels.find(node.id); label != labels.end() && label->second) {
      line += fmt::format(" [{}]", *label->second);
    }
    line += ' ';
    line += node.preview;
    if (auto it = refs_at.find(node.id); it != refs_at.end()) {
      for (const auto& ref : it->second) line += fmt::format("  ← {}", ref);
    }
    if (auto child = children_at.find(node.id); child != children_at.end()) {
      line += fmt::format("  ⇢ subagent session {}", child->second);
    }
    out += line;
    out += '\n';
    if (out.size() >= (1 << 20)) flush();

    children.clear();
    for (std::int32_t child = node.first_child; child >= 0; child = nodes[static_cast<std::size_t>(child)].next_sibling) {
      children.push_back(static_cast<std::size_t>(child));
    }
    const bool multiple_children = children.size() > 1;
    int child_indent = frame.indent;
    if (multiple_children || (frame.just_branched && frame.indent > 0)) child_indent = frame.indent + 1;
    std::vector<Gutter> child_gutters = frame.gutters;
    if (frame.show_connector && !frame.virtual_root_child) {
      const int display_indent = multiple_roots ? std::max(0, frame.indent - 1) : frame.indent;
      child_gutters.push_back(Gutter{std::max(0, display_indent - 1), !frame.is_last});
    }
    for (std::size_t i = children.size(); i-- > 0;) {
      stack.push_back(Frame{children[i], child_indent, multiple_children, multiple_children,
                            i == children.size() - 1, child_gutters, false});
    }
  }
  flush();
  for (const auto& ref : empty_refs) print_untrusted(stdout, "(empty)  ← {}\n", ref);
  return kOk;
}

}  // namespace

void register_tree_command(CLI::App& app, Commands& commands) {
  add_session_command(app, commands,
      "tree", "Draw a session's entry tree: short id, type, [label], preview, ← REF where a ref's leaf is, and ⇢ the "
      "session of a subagent a task call ran", run_tree);
}

}  // namespace cairn::cli
