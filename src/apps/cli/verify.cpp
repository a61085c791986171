// `cairn verify SESSION`: checks every invariant of DESIGN.md that the log
// alone can show, reading the session without changing it. One line per
// check; the exit status is 0 only when all of them hold.
//
// The store already refuses a log whose lines do not scan or whose seqs have a
// gap; these checks go further (payloads decode, tool calls are answered,
// attempts count up) and do not trust the index: they recompute everything
// from the stored lines.
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "cli.hpp"
#include "text.hpp"

namespace cairn::cli {
namespace {

struct VerifyOptions {
  std::string store;
  std::string session;
};

struct Check {
  explicit Check(std::string check_name) : name(std::move(check_name)) {}

  std::string name;
  std::vector<std::string> failures;
  std::vector<std::string> notes;  // facts that are not failures

  void fail(std::string failure) {
    // A violation seen along several paths is reported once.
    if (std::find(failures.begin(), failures.end(), failure) == failures.end()) failures.push_back(std::move(failure));
  }
  bool ok() const { return failures.empty(); }
};

// One tree entry as the checks need it.
struct EntryNode {
  std::int64_t seq = 0;
  TreeEntry entry;
  std::vector<std::size_t> children;
  std::string run_id;  // the operation open on its ref when it was appended, if any
};

const AssistantMessage* assistant_of(const TreeEntry& entry) {
  const auto* body = std::get_if<MessageBody>(&entry.body);
  return body ? std::get_if<AssistantMessage>(&body->message) : nullptr;
}

const ToolResultMessage* tool_result_of(const TreeEntry& entry) {
  const auto* body = std::get_if<MessageBody>(&entry.body);
  return body ? std::get_if<ToolResultMessage>(&body->message) : nullptr;
}

// Invariant 5 for one assistant message: along every path below it, each of
// its tool calls has exactly one result before the next assistant message. A
// path that ends before one has been requested (an abandoned branch) may lack
// results, unless a ref still points at its end: then the next request would
// go out without them.
void check_tool_results(const std::vector<EntryNode>& nodes, std::size_t assistant_index,
                        const std::unordered_set<std::string>& ref_leaves, Check& check) {
  const EntryNode& assistant = nodes[assistant_index];
  std::vector<std::string> calls;
  for (const auto& block : assistant_of(assistant.entry)->content) {
    if (const auto* call = std::get_if<ToolCall>(&block)) calls.push_back(call->id);
  }
  if (calls.empty()) return;

  using Counts = std::map<std::string, int>;
  auto require_one_each = [&](const Counts& counts, const std::string& until) {
    for (const auto& call : calls) {
      auto it = counts.find(call);
      const int count = it == counts.end() ? 0 : it->second;
      if (count != 1) {
        check.fail(fmt::format("seq {}: tool call {} has {} results {}", assistant.seq, call, count, until));
      }
    }
  };

  struct Step {
    std::size_t node;
    Counts counts;
  };
  std::vector<Step> stack;
  if (assistant.children.empty()) {
    if (ref_leaves.contains(assistant.entry.id)) require_one_each({}, "and a ref's leaf is the assistant message");
    return;
  }
  for (std::size_t child : assistant.children) stack.push_back(Step{child, {}});
  while (!stack.empty()) {
    Step step = std::move(stack.back());
    stack.pop_back();
    const EntryNode& node = nodes[step.node];
    if (assistant_of(node.entry)) {
      require_one_each(step.counts, fmt::format("before the next assistant message (seq {})", node.seq));
      continue;
    }
    if (const auto* result = tool_result_of(node.entry);
        result && std::find(calls.begin(), calls.end(), result->tool_call_id) != calls.end()) {
      ++step.counts[result->tool_call_id];
    }
    if (node.children.empty()) {
      if (ref_leaves.contains(node.entry.id)) {
        require_one_each(step.counts, fmt::format("on the branch ending at a ref's leaf (seq {})", node.seq));
      } else {
        for (const auto& [call, count] : step.counts) {
          if (count > 1) check.fail(fmt::format("seq {}: tool call {} has {} results", assistant.seq, call, count));
        }
      }
      continue;
    }
    for (std::size_t child : node.children) stack.push_back(Step{child, step.counts});
  }
}

int run_verify(const VerifyOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto opened = open_session(**store, options.session, /*read_only=*/true);
  if (!opened) return opened.error();
  const Session& session = **opened;

  Check decode{"0 every record decodes and passes its field rules"};
  Check seqs{"1 seq contiguous from 0, ids unique"};
  Check parents{"2 every parentId names an earlier entry"};
  Check refs_exist{"2b every record names a ref that exists"};
  Check one_open{"3 at most one open operation per ref"};
  Check closes{"4 every operation_finished closes an open operation_started of its ref"};
  Check results{"5 every tool call has exactly one result before the next assistant message"};
  Check tool_starts{"6 at most one tool_started per (assistantEntryId, toolIndex)"};
  Check attempts{"7 generation attempts count 1, 2, 3... between a ref's entries"};

  std::unordered_set<std::string> ids;
  std::unordered_map<std::string, std::size_t> entry_index;  // tree entry id → node
  std::unordered_set<std::string> undecoded_entries;         // tree entries that exist but did not decode
  std::vector<EntryNode> nodes;
  std::unordered_set<std::string> refs{"main"};
  std::unordered_map<std::string, std::pair<std::string, std::int64_t>> open_ops;  // ref → (run id, seq)
  std::map<std::pair<std::string, std::int64_t>, std::int64_t> started_tools;       // → seq
  struct AttemptState {
    std::int64_t last = 0;
    std::string run;
  };
  std::unordered_map<std::string, AttemptState> attempt_state;

  auto log = session.get_log();
  if (!log) return report(log.error());
  const std::vector<LogLine>& lines = *log;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const LogLine& line = lines[i];
    if (line.seq != static_cast<std::int64_t>(i)) {
      seqs.fail(fmt::format("seq {}: expected seq {}", line.seq, i));
    }
    auto json = Json::parse(line.json, nullptr, false);
    if (json.is_discarded()) {
      decode.fail(fmt::format("seq {}: not valid JSON", line.seq));
      continue;
    }
    auto record = decode_record(json);
    if (!record) {
      decode.fail(fmt::format("seq {}: {}", line.seq, record.error().message));
      // Its id still exists for the records after it: one bad payload is
      // reported once, not again as every child's missing parent.
      if (json.is_object() && json.contains("id") && json["id"].is_string()) {
        const std::string id = json["id"].get<std::string>();
        if (!ids.insert(id).second) seqs.fail(fmt::format("seq {}: id '{}' is used by an earlier record", line.seq, id));
        if (is_tree_type(line.type)) undecoded_entries.insert(id);
      }
      continue;
    }
    if (record->seq != line.seq) {
      seqs.fail(fmt::format("seq {}: the record's own seq is {}", line.seq, record->seq));
    }
    if (auto status = check_fields(*record); !status) {
      decode.fail(fmt::format("seq {}: {}", line.seq, status.error().message));
    }

    const RecordMeta meta = meta_of(*record);
    if (!meta.id.empty() && !ids.emplace(meta.id).second) {
      seqs.fail(fmt::format("seq {}: id '{}' is used by an earlier record", line.seq, meta.id));
    }
    if (meta.type == RecordType::ignorable) continue;

    if (auto* entry = std::get_if<TreeEntry>(&record->body)) {
      const std::string ref = entry->ref.value_or("main");
      if (!refs.contains(ref)) refs_exist.fail(fmt::format("seq {}: ref '{}' does not exist", line.seq, ref));
      std::optional<std::size_t> parent;
      if (entry->parent_id) {
        auto it = entry_index.find(*entry->parent_id);
        if (it == entry_index.end() && !undecoded_entries.contains(*entry->parent_id)) {
          parents.fail(fmt::format("seq {}: parentId '{}' names no earlier entry", line.seq, *entry->parent_id));
        } else if (it != entry_index.end()) {
          parent = it->second;
        }
      }
      EntryNode node{line.seq, std::move(*entry), {}, {}};
      if (auto op = open_ops.find(ref); op != open_ops.end()) node.run_id = op->second.first;
      const std::size_t index = nodes.size();
      entry_index.emplace(node.entry.id, index);
      if (parent) nodes[*parent].children.push_back(index);
      nodes.push_back(std::move(node));
      attempt_state.erase(ref);  // a new gap between this ref's entries
      continue;
    }

    const auto& harness = std::get<HarnessRecord>(record->body);
    const std::string run(run_id_of(harness));
    if (const auto* created = std::get_if<RefCreated>(&harness.body)) {
      if (!refs.insert(created->name).second) {
        refs_exist.fail(fmt::format("seq {}: ref '{}' is created twice", line.seq, created->name));
      }
      continue;
    }
    if (!refs.contains(harness.ref)) {
      refs_exist.fail(fmt::format("seq {}: ref '{}' does not exist", line.seq, harness.ref));
    }
    if (std::holds_alternative<RefDeleted>(harness.body)) {
      refs.erase(harness.ref);
      continue;
    }
    if (std::holds_alternative<OperationStarted>(harness.body)) {
      if (auto open = open_ops.find(harness.ref); open != open_ops.end()) {
        one_open.fail(fmt::format("seq {}: ref '{}' already has operation {} open since seq {}", line.seq,
                                  harness.ref, open->second.first, open->second.second));
      }
      open_ops[harness.ref] = {harness.id, line.seq};
      continue;
    }
    // Every other harness record inside an operation names the ref's open one.
    auto open = open_ops.find(harness.ref);
    const bool names_open = open != open_ops.end() && open->second.first == run;
    if (const auto* finished = std::get_if<OperationFinished>(&harness.body)) {
      if (!names_open) {
        closes.fail(fmt::format("seq {}: operation_finished for run {}, which is not open on ref '{}'", line.seq,
                                finished->run_id, harness.ref));
      } else {
        open_ops.erase(open);
      }
      continue;
    }
    if (!run.empty() && !names_open) {
      closes.fail(fmt::format("seq {}: {} names run {}, which is not open on ref '{}'", line.seq,
                              to_string(meta.type), run, harness.ref));
    }
    if (const auto* tool = std::get_if<ToolStarted>(&harness.body)) {
      auto [it, inserted] = started_tools.emplace(std::pair{tool->assistant_entry_id, tool->tool_index}, line.seq);
      if (!inserted) {
        tool_starts.fail(fmt::format("seq {}: tool {} of {} already started at seq {}", line.seq, tool->tool_index,
                                     tool->assistant_entry_id, it->second));
      }
    }
    if (const auto* generation = std::get_if<GenerationStarted>(&harness.body)) {
      AttemptState& state = attempt_state[harness.ref];
      if (state.run != generation->run_id) state = AttemptState{0, generation->run_id};
      if (generation->attempt != state.last + 1) {
        attempts.fail(fmt::format("seq {}: attempt {} follows attempt {}", line.seq, generation->attempt, state.last));
      }
      state.last = generation->attempt;
    }
  }

  std::unordered_set<std::string> still_open;
  for (const auto& [ref, op] : open_ops) {
    still_open.insert(op.first);
    closes.notes.push_back(fmt::format("ref '{}' run {} (seq {}) open (suspended)", ref, op.first, op.second));
  }
  std::unordered_set<std::string> ref_leaves;
  for (const RefInfo& ref : session.refs()) {
    if (ref.leaf_id) ref_leaves.insert(*ref.leaf_id);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!assistant_of(nodes[i].entry)) continue;
    if (!nodes[i].run_id.empty() && still_open.contains(nodes[i].run_id)) continue;  // its run is not finished
    check_tool_results(nodes, i, ref_leaves, results);
  }

  bool all_ok = true;
  for (const Check* check : {&decode, &seqs, &parents, &refs_exist, &one_open, &closes, &results, &tool_starts,
                             &attempts}) {
    std::string notes;
    for (const auto& note : check->notes) notes += (notes.empty() ? " (" : "; ") + note;
    if (!notes.empty()) notes += ")";
    if (check->ok()) {
      fmt::print("ok    {}{}\n", check->name, notes);
      continue;
    }
    all_ok = false;
    std::string more = check->failures.size() > 1 ? fmt::format(" (and {} more)", check->failures.size() - 1) : "";
    fmt::print("FAIL  {}: {}{}{}\n", check->name, check->failures.front(), more, notes);
  }
  fmt::print("{}: {} records, {}\n", session.id(), lines.size(), all_ok ? "all checks hold" : "checks FAILED");
  return all_ok ? kOk : kFailure;
}

}  // namespace

void register_verify_command(CLI::App& app, Commands& commands) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* sub = app.add_subcommand(
      "verify", "Check a session's log against the invariants (read-only); exit 0 only if all hold");
  add_store_option(sub, options->store);
  sub->add_option("SESSION", options->session, "Session id or unique id prefix")->required()->type_name("");
  commands.push_back({sub, [options] { return run_verify(*options); }});
}

}  // namespace cairn::cli
