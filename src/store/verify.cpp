// Checking a session's log against DESIGN.md's invariants: every one that
// the log alone can show, recomputed from the stored lines without trusting
// the index (payloads decode, tool calls are answered, attempts count up,
// checksums hold). `cairn verify` prints it.
#include "cairn/store/verify.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "log/index.hpp"
#include "util/parallel.hpp"

namespace cairn {
namespace {

using Check = VerifyCheck;

void fail(Check& check, std::string failure) {
  // A violation seen along several paths is reported once.
  if (std::find(check.failures.begin(), check.failures.end(), failure) == check.failures.end()) {
    check.failures.push_back(std::move(failure));
  }
}

// What the checks need of one tree entry (not the entry: a long session's
// entries are decoded one at a time and let go).
struct EntryNode {
  std::int64_t seq = 0;
  std::string id;
  bool assistant = false;
  std::vector<std::string> calls;         // an assistant message's tool call ids
  std::optional<std::string> result_for;  // a tool result's call id
  // Children in seq order, as a list through the node list (a vector per
  // node would cost an allocation each on a long chain); -1: none.
  std::int32_t first_child = -1, last_child = -1, next_sibling = -1;
  std::string run_id;  // the operation open on its ref when it was appended, if any
};

EntryNode node_of(std::int64_t seq, const TreeEntry& entry) {
  EntryNode node;
  node.seq = seq;
  node.id = entry.id;
  if (const auto* body = std::get_if<MessageBody>(&entry.body)) {
    if (const auto* assistant = std::get_if<AssistantMessage>(&body->message)) {
      node.assistant = true;
      for (const auto& block : assistant->content) {
        if (const auto* call = std::get_if<ToolCall>(&block)) node.calls.push_back(call->id);
      }
    } else if (const auto* result = std::get_if<ToolResultMessage>(&body->message)) {
      node.result_for = result->tool_call_id;
    }
  }
  return node;
}

// Invariant 5 for one assistant message: along every path below it, each of
// its tool calls has exactly one result before the next assistant message. A
// path that ends before one has been requested (an abandoned branch) may lack
// results, unless a ref still points at its end: then the next request would
// go out without them.
//
// A result that is missing where `cairn repair` left a placeholder (seqs in
// `placeholders`, ascending) after the call may have been the damaged record:
// that is a note, not a failure.
void check_tool_results(const std::vector<EntryNode>& nodes, std::size_t assistant_index,
                        const std::unordered_set<std::string>& ref_leaves, const std::vector<std::int64_t>& placeholders,
                        Check& check) {
  const EntryNode& assistant = nodes[assistant_index];
  const std::vector<std::string>& calls = assistant.calls;
  if (calls.empty()) return;

  using Counts = std::map<std::string, int>;
  // `bound`: the seq the results had to come before (the next assistant
  // message's, or the log's end); `until()` says so, for a failure or a note.
  auto require_one_each = [&](const Counts& counts, const auto& until, std::int64_t bound) {
    const auto placeholder = std::upper_bound(placeholders.begin(), placeholders.end(), assistant.seq);
    const bool excused = placeholder != placeholders.end() && *placeholder < bound;
    for (const auto& call : calls) {
      auto it = counts.find(call);
      const int count = it == counts.end() ? 0 : it->second;
      if (count == 0 && excused) {
        check.notes.push_back(fmt::format("seq {}: tool call {} has no result {}; the placeholder at seq {} may have "
                                          "been it",
                                          assistant.seq, call, until(), *placeholder));
      } else if (count != 1) {
        fail(check, fmt::format("seq {}: tool call {} has {} results {}", assistant.seq, call, count, until()));
      }
    }
  };
  constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();

  struct Step {
    std::size_t node;
    Counts counts;
  };
  std::vector<Step> stack;
  if (assistant.first_child < 0) {
    if (ref_leaves.contains(assistant.id)) {
      require_one_each({}, [] { return std::string("and a ref's leaf is the assistant message"); }, kEnd);
    }
    return;
  }
  for (std::int32_t child = assistant.first_child; child >= 0; child = nodes[static_cast<std::size_t>(child)].next_sibling) {
    stack.push_back(Step{static_cast<std::size_t>(child), {}});
  }
  while (!stack.empty()) {
    Step step = std::move(stack.back());
    stack.pop_back();
    const EntryNode& node = nodes[step.node];
    if (node.assistant) {
      require_one_each(
          step.counts, [&] { return fmt::format("before the next assistant message (seq {})", node.seq); }, node.seq);
      continue;
    }
    if (node.result_for && std::find(calls.begin(), calls.end(), *node.result_for) != calls.end()) {
      ++step.counts[*node.result_for];
    }
    if (node.first_child < 0) {
      if (ref_leaves.contains(node.id)) {
        require_one_each(
            step.counts, [&] { return fmt::format("on the branch ending at a ref's leaf (seq {})", node.seq); }, kEnd);
      } else {
        for (const auto& [call, count] : step.counts) {
          if (count > 1) fail(check, fmt::format("seq {}: tool call {} has {} results", assistant.seq, call, count));
        }
      }
      continue;
    }
    for (std::int32_t child = node.first_child; child >= 0; child = nodes[static_cast<std::size_t>(child)].next_sibling) {
      stack.push_back(Step{static_cast<std::size_t>(child), step.counts});
    }
  }
}

}  // namespace

Result<VerifyReport> verify(const Session& session) {
  Check decode{"0 every record decodes and passes its field rules"};
  Check seqs{"1 seq contiguous from 0, ids unique"};
  Check parents{"2 every parentId names an earlier entry"};
  Check refs_exist{"2b every record names a ref that exists"};
  Check one_open{"3 at most one open operation per ref"};
  Check closes{"4 every operation_finished closes an open operation_started of its ref"};
  Check results{"5 every tool call has exactly one result before the next assistant message"};
  Check tool_starts{"6 at most one tool_started per (assistantEntryId, toolIndex)"};
  Check attempts{"7 generation attempts count 1, 2, 3... between a ref's entries"};
  Check checksums{"8 every record carries its checksum"};
  Check inputs{"13 an asked tool call starts only after an allow for it; each input request is resolved at most once"};
  std::vector<std::int64_t> placeholders;  // seqs of records cairn repair replaced

  // Every id seen, with its tree entry's node (kNotAnEntry for other records).
  constexpr std::size_t kNotAnEntry = std::numeric_limits<std::size_t>::max();
  std::unordered_map<std::string, std::size_t> ids;
  ids.reserve(static_cast<std::size_t>(session.size()));
  std::unordered_set<std::string> undecoded_entries;         // tree entries that exist but did not decode
  std::vector<EntryNode> nodes;
  nodes.reserve(static_cast<std::size_t>(session.size()));  // growing it would hold two copies at once
  std::unordered_set<std::string> refs{"main"};
  std::unordered_map<std::string, std::pair<std::string, std::int64_t>> open_ops;  // ref → (run id, seq)
  std::map<std::pair<std::string, std::int64_t>, std::int64_t> started_tools;       // → seq
  struct AttemptState {
    std::int64_t last = 0;
    std::string run;
  };
  std::unordered_map<std::string, AttemptState> attempt_state;
  struct InputState {
    std::int64_t seq = 0;
    std::string run;
    InputKind kind = InputKind::approval;
    std::optional<InputDecision> decision;  // set once resolved
    std::int64_t resolved_seq = 0;
  };
  std::unordered_map<std::string, InputState> input_requests;                       // request id → state
  std::map<std::pair<std::string, std::int64_t>, std::string> asked_calls;          // (assistant entry, index) → request id

  std::int64_t unchecked = 0;  // records of a format-1 session, written before checksums
  // The log a page at a time: a long session's lines are not all held at once.
  std::int64_t records = 0;
  constexpr std::size_t kPage = 1024;
  for (std::int64_t after = -1;;) {
    auto page = session.get_log(after, kPage);
    if (!page) return std::unexpected(page.error());
    if (page->empty()) break;
    after = page->back().seq;
    // Each line decodes on its own: on every core, then checked in order.
    struct Decoded {
      std::optional<Result<Record>> record;
      Result<Checksum> checksum = Checksum::absent;
    };
    std::vector<Decoded> decoded_page(page->size());
    parallel_for(page->size(), [&](std::size_t k) {
      decoded_page[k] = Decoded{decode_record_line((*page)[k].json), check_checksum((*page)[k].json)};
    });
    for (std::size_t k = 0; k < page->size(); ++k) {
      const LogLine& line = (*page)[k];
      const auto i = static_cast<std::size_t>(records++);
      if (line.seq != static_cast<std::int64_t>(i)) {
        fail(seqs, fmt::format("seq {}: expected seq {}", line.seq, i));
      }
      auto& decoded = decoded_page[k].record;
      if (!decoded) {
        fail(decode, fmt::format("seq {}: not valid JSON", line.seq));
        continue;
      }
      Result<Record>& record = *decoded;
      if (!record) {
        fail(decode, fmt::format("seq {}: {}", line.seq, record.error().message));
        // Its id still exists for the records after it: one bad payload is
        // reported once, not again as every child's missing parent.
        const Json json = Json::parse(line.json, nullptr, false);
        if (json.is_object() && json.contains("id") && json["id"].is_string()) {
          const std::string id = json["id"].get<std::string>();
          if (!ids.emplace(id, kNotAnEntry).second) {
            fail(seqs, fmt::format("seq {}: id '{}' is used by an earlier record", line.seq, id));
          }
          if (is_tree_type(line.type)) undecoded_entries.insert(id);
        }
        continue;
      }
      if (record->seq != line.seq) {
        fail(seqs, fmt::format("seq {}: the record's own seq is {}", line.seq, record->seq));
      }
      if (const Result<Checksum>& checksum = decoded_page[k].checksum; !checksum) {
        fail(checksums, fmt::format("seq {}: {}", line.seq, checksum.error().message));
      } else if (*checksum == Checksum::absent) {
        if (checksums_required(session.header().version)) {
          fail(checksums, fmt::format("seq {}: no checksum (format version {} requires one)", line.seq,
                                     session.header().version));
        } else {
          ++unchecked;
        }
      }
      if (damage_of(*record)) {
        placeholders.push_back(line.seq);
        // A placeholder's generation may be missing from the attempts after it.
        attempt_state.clear();
      }

      // (The field rules held: decode_record_line checks them.)
      const RecordMeta meta = meta_of(*record);
      auto id_slot = ids.end();
      if (!meta.id.empty()) {
        bool new_id = false;
        std::tie(id_slot, new_id) = ids.emplace(meta.id, kNotAnEntry);
        if (!new_id) fail(seqs, fmt::format("seq {}: id '{}' is used by an earlier record", line.seq, meta.id));
      }
      if (meta.type == RecordType::ignorable) continue;

      if (auto* entry = std::get_if<TreeEntry>(&record->body)) {
        const std::string ref = entry->ref.value_or("main");
        if (!refs.contains(ref)) fail(refs_exist, fmt::format("seq {}: ref '{}' does not exist", line.seq, ref));
        std::optional<std::size_t> parent;
        if (entry->parent_id) {
          auto it = ids.find(*entry->parent_id);
          const bool entry_found = it != ids.end() && it->second != kNotAnEntry;
          if (!entry_found && !undecoded_entries.contains(*entry->parent_id)) {
            fail(parents, fmt::format("seq {}: parentId '{}' names no earlier entry", line.seq, *entry->parent_id));
          } else if (entry_found) {
            parent = it->second;
          }
        }
        EntryNode node = node_of(line.seq, *entry);
        if (auto op = open_ops.find(ref); op != open_ops.end()) node.run_id = op->second.first;
        const std::size_t index = nodes.size();
        // The first tree entry of an id is the one its children name.
        if (id_slot != ids.end() && id_slot->second == kNotAnEntry) id_slot->second = index;
        if (parent) {
          EntryNode& up = nodes[*parent];
          const auto child = static_cast<std::int32_t>(index);
          (up.last_child >= 0 ? nodes[static_cast<std::size_t>(up.last_child)].next_sibling : up.first_child) = child;
          up.last_child = child;
        }
        nodes.push_back(std::move(node));
        attempt_state.erase(ref);  // a new gap between this ref's entries
        continue;
      }

      const auto& harness = std::get<HarnessRecord>(record->body);
      const std::string run(run_id_of(harness));
      // A placeholder counts as the record it acts as (index.hpp, acting_type).
      const RecordType acting = acting_type(meta);
      if (acting == RecordType::damaged) continue;
      if (acting == RecordType::ref_created) {
        if (!refs.insert(std::string(meta.name)).second) {
          fail(refs_exist, fmt::format("seq {}: ref '{}' is created twice", line.seq, meta.name));
        }
        continue;
      }
      if (!refs.contains(harness.ref)) {
        fail(refs_exist, fmt::format("seq {}: ref '{}' does not exist", line.seq, harness.ref));
      }
      if (acting == RecordType::ref_deleted) {
        refs.erase(harness.ref);
        continue;
      }
      if (acting == RecordType::operation_started) {
        if (auto open = open_ops.find(harness.ref); open != open_ops.end()) {
          fail(one_open, fmt::format("seq {}: ref '{}' already has operation {} open since seq {}", line.seq,
                                    harness.ref, open->second.first, open->second.second));
        }
        open_ops[harness.ref] = {harness.id, line.seq};
        continue;
      }
      // Every other harness record inside an operation names the ref's open one.
      auto open = open_ops.find(harness.ref);
      const bool names_open = open != open_ops.end() && open->second.first == run;
      if (acting == RecordType::operation_finished) {
        if (!names_open) {
          fail(closes, fmt::format("seq {}: operation_finished for run {}, which is not open on ref '{}'", line.seq,
                                  run, harness.ref));
        } else {
          open_ops.erase(open);
        }
        continue;
      }
      if (!run.empty() && !names_open) {
        fail(closes, fmt::format("seq {}: {} names run {}, which is not open on ref '{}'", line.seq,
                                to_string(meta.type), run, harness.ref));
      }
      if (const auto* asked = std::get_if<InputRequested>(&harness.body)) {
        input_requests[harness.id] = InputState{.seq = line.seq, .run = asked->run_id, .kind = asked->kind};
        asked_calls[{asked->assistant_entry_id, asked->tool_index}] = harness.id;
      }
      if (const auto* answer = std::get_if<InputResolved>(&harness.body)) {
        auto it = input_requests.find(answer->request_id);
        if (it == input_requests.end()) {
          fail(inputs, fmt::format("seq {}: input_resolved answers '{}', which no earlier input_requested asked",
                                   line.seq, answer->request_id));
        } else if (it->second.decision) {
          fail(inputs, fmt::format("seq {}: input request {} (seq {}) was already resolved ({}) at seq {}", line.seq,
                                   answer->request_id, it->second.seq, to_string(*it->second.decision),
                                   it->second.resolved_seq));
        } else if (it->second.run != answer->run_id) {
          fail(inputs, fmt::format("seq {}: input request {} belongs to run {}, not {}", line.seq, answer->request_id,
                                   it->second.run, answer->run_id));
        } else if ((it->second.kind == InputKind::approval) == (answer->decision == InputDecision::answer)) {
          fail(inputs, fmt::format("seq {}: decision {} does not answer a {} request", line.seq,
                                   to_string(answer->decision), to_string(it->second.kind)));
        } else {
          it->second.decision = answer->decision;
          it->second.resolved_seq = line.seq;
        }
      }
      if (const auto* tool = std::get_if<ToolStarted>(&harness.body)) {
        if (auto asked = asked_calls.find({tool->assistant_entry_id, tool->tool_index}); asked != asked_calls.end()) {
          const InputState& request = input_requests[asked->second];
          if (request.decision != InputDecision::allow) {
            fail(inputs, fmt::format("seq {}: tool {} ({}) started, but input request {} (seq {}) {}", line.seq,
                                     tool->tool_name, tool->tool_call_id, asked->second, request.seq,
                                     request.decision ? fmt::format("was resolved {}", to_string(*request.decision))
                                                      : std::string("has no allow before it")));
          }
        }
        auto [it, inserted] = started_tools.emplace(std::pair{tool->assistant_entry_id, tool->tool_index}, line.seq);
        if (!inserted) {
          fail(tool_starts, fmt::format("seq {}: tool {} of {} already started at seq {}", line.seq, tool->tool_index,
                                       tool->assistant_entry_id, it->second));
        }
      }
      if (const auto* generation = std::get_if<GenerationStarted>(&harness.body)) {
        AttemptState& state = attempt_state[harness.ref];
        if (state.run != generation->run_id) state = AttemptState{0, generation->run_id};
        if (generation->attempt != state.last + 1) {
          fail(attempts,
               fmt::format("seq {}: attempt {} follows attempt {}", line.seq, generation->attempt, state.last));
        }
        state.last = generation->attempt;
      }
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
    if (!nodes[i].assistant) continue;
    if (!nodes[i].run_id.empty() && still_open.contains(nodes[i].run_id)) continue;  // its run is not finished
    check_tool_results(nodes, i, ref_leaves, placeholders, results);
  }
  if (unchecked > 0) {
    checksums.notes.push_back(fmt::format("{} records of this format-{} session were written before checksums",
                                          unchecked, session.header().version));
  }
  if (!placeholders.empty()) {
    std::string listed;
    for (std::size_t i = 0; i < placeholders.size() && i < 10; ++i) listed += fmt::format("{}{}", i ? ", " : "", placeholders[i]);
    decode.notes.push_back(fmt::format("{} records replaced by cairn repair: seq {}{}", placeholders.size(), listed,
                                       placeholders.size() > 10 ? ", ..." : ""));
  }

  VerifyReport report;
  report.records = records;
  for (Check* check : {&decode, &seqs, &parents, &refs_exist, &one_open, &closes, &results, &tool_starts, &attempts,
                       &checksums, &inputs}) {
    report.checks.push_back(std::move(*check));
  }
  return report;
}

}  // namespace cairn
