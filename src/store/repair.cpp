#include "repair.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "../log/staged_state.hpp"
#include "log/checksum.hpp"

namespace cairn::repair {
namespace {

// ---- reading what is left of a damaged record -------------------------------

// The fields a damaged record's bytes (or its SQLite columns) still show.
// Any of them may be wrong: they are candidates, tried against the log.
struct Hint {
  std::optional<std::string> type;  // as written; maybe not a type name at all
  std::optional<std::string> id, parent_id, ref, run_id, target_id, name, at, timestamp;
  bool has_parent_key = false;  // "parentId" is there (tree entries have it, null or not)
  std::set<std::string> keys;   // top-level keys seen
};

std::optional<std::string> string_at(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// The JSON string starting at `text[at]` (a quote), unescaped; nullopt when
// it does not end or holds an escape this reader does not know.
std::optional<std::string> json_string(std::string_view text, std::size_t at) {
  if (at >= text.size() || text[at] != '"') return std::nullopt;
  std::string out;
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') return out;
    if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= text.size()) return std::nullopt;
    switch (text[i]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      default: return std::nullopt;  // ids and names never need \u or \b
    }
  }
  return std::nullopt;
}

// Top-level keys of a line that no longer parses: every `"key":` found. A
// nested key can be mistaken for one; the hint is only a guess either way.
Hint scan_damaged(std::string_view bytes) {
  Hint hint;
  static constexpr const char* kKeys[] = {"type", "id", "parentId", "ref", "runId", "targetId", "name", "at", "timestamp"};
  std::optional<std::string>* slots[] = {&hint.type, &hint.id, &hint.parent_id, &hint.ref, &hint.run_id,
                                         &hint.target_id, &hint.name, &hint.at, &hint.timestamp};
  for (std::size_t k = 0; k < std::size(kKeys); ++k) {
    const std::string needle = fmt::format("\"{}\":", kKeys[k]);
    const std::size_t at = bytes.find(needle);
    if (at == std::string_view::npos) continue;
    hint.keys.insert(kKeys[k]);
    const std::size_t value = at + needle.size();
    *slots[k] = json_string(bytes, value);
    if (std::string_view(kKeys[k]) == "parentId") hint.has_parent_key = true;
  }
  // Keys that tell types apart (see infer_type).
  for (const char* key : {"message", "modelId", "thinkingLevel", "activeToolNames", "firstKeptEntryId", "fromId",
                          "customType", "content", "label", "intent", "outcome", "purpose", "toolCallId", "queue",
                          "target", "reason"}) {
    if (bytes.find(fmt::format("\"{}\":", key)) != std::string_view::npos) hint.keys.insert(key);
  }
  return hint;
}

Hint read_hint(const StoredRecord& stored) {
  Hint hint;
  const Json json = Json::parse(stored.bytes, nullptr, /*allow_exceptions=*/false);
  if (json.is_object()) {
    hint.type = string_at(json, "type");
    hint.id = string_at(json, "id");
    hint.parent_id = string_at(json, "parentId");
    hint.has_parent_key = json.contains("parentId");
    hint.ref = string_at(json, "ref");
    hint.run_id = string_at(json, "runId");
    hint.target_id = string_at(json, "targetId");
    hint.name = string_at(json, "name");
    hint.at = string_at(json, "at");
    hint.timestamp = string_at(json, "timestamp");
    for (const auto& [key, value] : json.items()) hint.keys.insert(key);
  } else {
    hint = scan_damaged(stored.bytes);
  }
  // An SQLite row's columns were written beside the payload, not inside it:
  // where the payload is damaged they are the better witness.
  if (stored.columns) {
    const RecordMeta& c = *stored.columns;
    auto set = [](std::optional<std::string>& slot, std::optional<std::string_view> value) {
      if (value && !value->empty()) slot = std::string(*value);
    };
    if (!is_placeholder(c.type) && c.type != RecordType::ignorable) hint.type = std::string(to_string(c.type));
    set(hint.id, c.id);
    if (is_tree_type(c.type)) {
      hint.has_parent_key = true;
      hint.parent_id = c.parent_id ? std::optional<std::string>(*c.parent_id) : std::nullopt;
    }
    set(hint.ref, c.ref);
    set(hint.run_id, c.run_id);
    set(hint.target_id, c.target_id);
    set(hint.name, c.name);
  }
  return hint;
}

// The type a damaged record most likely had, from the keys it still shows.
std::optional<RecordType> infer_type(const Hint& hint) {
  if (hint.type) {
    if (auto type = parse_record_type(*hint.type); type && !is_placeholder(*type)) return type;
  }
  auto has = [&](const char* key) { return hint.keys.contains(key); };
  if (hint.has_parent_key) {
    if (has("message")) return RecordType::message;
    if (has("modelId")) return RecordType::model_change;
    if (has("thinkingLevel")) return RecordType::thinking_level_change;
    if (has("activeToolNames")) return RecordType::active_tools_change;
    if (has("firstKeptEntryId")) return RecordType::compaction;
    if (has("fromId")) return RecordType::branch_summary;
    if (has("customType")) return has("content") ? RecordType::custom_message : RecordType::custom;
    if (has("targetId")) return has("label") ? RecordType::label : RecordType::leaf;
    return std::nullopt;  // a tree entry of some kind
  }
  if (has("intent")) return RecordType::operation_started;
  if (has("outcome")) return RecordType::operation_finished;
  if (has("purpose")) return RecordType::generation_started;
  if (has("requestId")) return RecordType::input_resolved;
  if (has("toolCallId")) return has("kind") ? RecordType::input_requested : RecordType::tool_started;
  if (has("queue")) return RecordType::queue_enqueued;
  if (has("target")) return RecordType::write_deferred;
  if (has("reason") && has("runId")) return RecordType::operation_cancelled;
  if (has("at")) return RecordType::ref_created;
  return std::nullopt;
}

// ---- classifying --------------------------------------------------------------

RecordMeta keep(const RecordMeta& meta, StringArena& strings) { return copy_meta(meta, strings); }

struct Classified {
  std::optional<RecordMeta> meta;  // intact: its index fields (in the plan's arena)
  std::string reason;              // damaged: why
  bool column_fix = false;         // SQLite: intact payload, wrong columns
};

Classified classify_stored(std::int64_t seq, const StoredRecord& stored, bool checksums, StringArena& strings) {
  Classified out;
  auto checksum = check_checksum(stored.bytes);
  if (!checksum) {
    out.reason = checksum.error().message;
    return out;
  }
  if (*checksum == Checksum::absent && checksums) {
    out.reason = "the record has no checksum, which its session's format requires";
    return out;
  }
  auto scanned = scan_line(stored.bytes);
  if (!scanned) {
    out.reason = scanned.error().message;
    return out;
  }
  if (scanned->seq != seq) {
    out.reason = fmt::format("it says seq {}, at seq {}", scanned->seq, seq);
    return out;
  }
  RecordMeta meta = keep(*scanned, strings);
  const Json json = Json::parse(stored.bytes, nullptr, /*allow_exceptions=*/false);
  if (auto record = decode_record(json); !record) {
    out.reason = record.error().message;
    return out;
  }
  if (stored.columns) {
    RecordMeta columns = *stored.columns;
    columns.seq = seq;
    if (auto field = disagreement(columns, meta)) {
      out.column_fix = true;
      out.reason = fmt::format("its {} column disagrees with its intact payload", *field);
    }
  }
  out.meta = meta;
  return out;
}

// ---- placeholders ---------------------------------------------------------------

// A placeholder under consideration: the record, and its line once chosen.
struct Candidate {
  Record record;
  std::string what;  // for the report: how its fields were chosen
};

bool is_tree_entry_id(const LogStateView& state, const std::string& id) {
  auto type = state.type_of_id(id);
  return type && is_tree_type(*type);
}

class Planner {
 public:
  Planner(const std::vector<StoredRecord>& records, bool checksums) : records_(records), checksums_(checksums) {}

  Plan run() {
    const auto n = static_cast<std::int64_t>(records_.size());
    classified_.reserve(records_.size());
    for (std::int64_t seq = 0; seq < n; ++seq) {
      classified_.push_back(classify_stored(seq, records_[static_cast<std::size_t>(seq)], checksums_, strings_));
    }
    repaired_at_ = now_iso8601();
    for (std::int64_t seq = 0; seq < n; ++seq) {
      const Classified& c = classified_[static_cast<std::size_t>(seq)];
      if (c.meta) {
        if (auto valid = check_invariants(*c.meta, state_); valid) {
          state_.add_view(*c.meta, records_[static_cast<std::size_t>(seq)].bytes);
          if (c.column_fix) plan_.column_fixes.push_back(seq);
          ++plan_.intact;
          continue;
        } else {
          // Intact, but it depends on something the damage took (its parent,
          // its operation): kept, as stored, inside a placeholder.
          place(seq, fmt::format("intact, but {}", valid.error().message), hint_of_intact(*c.meta),
                records_[static_cast<std::size_t>(seq)].bytes);
          continue;
        }
      }
      place(seq, c.reason, read_hint(records_[static_cast<std::size_t>(seq)]), std::nullopt);
    }
    return std::move(plan_);
  }

 private:
  static Hint hint_of_intact(const RecordMeta& meta) {
    Hint hint;
    hint.type = std::string(to_string(meta.type));
    hint.id = std::string(meta.id);
    hint.has_parent_key = is_tree_type(meta.type);
    if (meta.parent_id) hint.parent_id = std::string(*meta.parent_id);
    hint.ref = std::string(meta.ref);
    if (!meta.run_id.empty()) hint.run_id = std::string(meta.run_id);
    if (meta.target_id) hint.target_id = std::string(*meta.target_id);
    if (!meta.name.empty()) hint.name = std::string(meta.name);
    return hint;
  }

  // Puts the best placeholder for the record at `seq` into the log.
  void place(std::int64_t seq, const std::string& reason, const Hint& hint, std::optional<std::string> original) {
    const StoredRecord& stored = records_[static_cast<std::size_t>(seq)];
    DamageReport damage;
    damage.reason = reason;
    damage.bytes = static_cast<std::int64_t>(stored.bytes.size());
    damage.original = std::move(original);
    damage.repaired_at = repaired_at_;
    // Any operation open here may have had this record as one of its tool
    // starts or results: none of them may run a tool again.
    for (const RefInfo& ref : state_.refs()) {
      if (ref.open_operation) damage.open_runs.push_back(*ref.open_operation);
    }

    std::vector<Candidate> candidates = candidates_for(seq, hint, damage);
    std::size_t best = 0;
    std::int64_t best_reach = -1;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const std::int64_t reach = reach_of(seq, candidates[i].record);
      if (reach > best_reach) {
        best = i;
        best_reach = reach;
      }
      if (reach == window_end(seq)) break;  // every record up to the next damaged one is valid with it
    }
    Replacement& replacement = replacements_.emplace_back();
    replacement.seq = seq;
    replacement.record = std::move(candidates[best].record);
    replacement.record.seq = seq;
    const auto* report = damage_of(replacement.record);
    const std::string_view was = report && report->was ? to_string(*report->was) : "unknown type";
    replacement.line = encode(replacement.record).dump(-1, ' ', false, Json::error_handler_t::replace);
    add_checksum(replacement.line);
    replacement.report = fmt::format("seq {} ({}, {} bytes): {}; now a placeholder ({})", seq, was, stored.bytes.size(),
                                     reason, candidates[best].what);
    const RecordMeta meta = keep(replacement.meta(), strings_);
    state_.add_view(meta, replacement.line);
    for (const std::string& run : report->open_runs) plan_.abort_only_runs.insert(run);
    if (acting_type(meta) == RecordType::operation_started) plan_.abort_only_runs.insert(std::string(meta.id));
    plan_.replacements.push_back(replacement);
  }

  // The seq of the next record that is not intact (or the log's end).
  std::int64_t window_end(std::int64_t seq) const {
    std::int64_t end = seq + 1;
    while (end < static_cast<std::int64_t>(classified_.size()) && classified_[static_cast<std::size_t>(end)].meta) ++end;
    return end;
  }

  // How far the log stays valid with `candidate` at `seq`: the seq of the
  // first intact record after it that breaks an invariant, else the window's
  // end; -1 when the candidate itself breaks one.
  std::int64_t reach_of(std::int64_t seq, Record candidate) {
    candidate.seq = seq;
    StagedState staged(state_);
    const RecordMeta meta = meta_of(candidate);
    if (!check_fields(candidate) || !check_invariants(meta, staged)) return -1;
    apply_record(meta, staged);
    staged.advance();
    const std::int64_t end = window_end(seq);
    for (std::int64_t next = seq + 1; next < end; ++next) {
      const RecordMeta& later = *classified_[static_cast<std::size_t>(next)].meta;
      if (!check_invariants(later, staged)) return next;
      apply_record(later, staged);
      staged.advance();
    }
    return end;
  }

  // Ids and refs the intact records after `seq` (up to the next damaged one)
  // name without any record defining them: what the damaged record may have been.
  struct Dangling {
    std::vector<std::string> parents;  // named as a parent or target: a tree entry
    std::vector<std::string> runs;     // named as a run: an operation_started
    std::map<std::string, std::string> run_refs;  // the ref each such run was named on
    std::vector<std::string> refs;     // refs used and never created
  };
  Dangling dangling_after(std::int64_t seq) const {
    Dangling out;
    std::unordered_set<std::string> defined, created_refs;
    auto add_unique = [](std::vector<std::string>& list, std::string value) {
      if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(std::move(value));
    };
    const std::int64_t end = window_end(seq);
    for (std::int64_t next = seq + 1; next < end; ++next) {
      const RecordMeta& m = *classified_[static_cast<std::size_t>(next)].meta;
      auto unknown = [&](std::string_view id) { return !id.empty() && !defined.contains(std::string(id)) && !state_.type_of_id(id); };
      if (m.parent_id && unknown(*m.parent_id)) add_unique(out.parents, std::string(*m.parent_id));
      if (m.target_id && unknown(*m.target_id)) add_unique(out.parents, std::string(*m.target_id));
      if (!m.run_id.empty() && m.type != RecordType::operation_started && unknown(m.run_id)) {
        add_unique(out.runs, std::string(m.run_id));
        out.run_refs.emplace(std::string(m.run_id), std::string(m.ref));
      }
      if (!m.ref.empty() && !state_.ref(m.ref) && !created_refs.contains(std::string(m.ref))) {
        add_unique(out.refs, std::string(m.ref));
      }
      if (m.type == RecordType::ref_created) created_refs.insert(std::string(m.name));
      if (!m.id.empty()) defined.insert(std::string(m.id));
    }
    return out;
  }

  std::string fresh_id() const {
    for (;;) {
      std::string id = new_entry_id();
      if (!state_.type_of_id(id) && !used_later(id)) return id;
    }
  }
  bool used_later(const std::string& id) const {
    for (const Classified& c : classified_) {
      if (c.meta && c.meta->id == id) return true;
    }
    return false;
  }

  // An id for the placeholder: the one recovered if nothing else has it.
  std::string usable_id(const std::optional<std::string>& id) const {
    if (id && !id->empty() && !state_.type_of_id(*id) && !used_later(*id)) return *id;
    return fresh_id();
  }
  std::string usable_ref(const std::optional<std::string>& ref) const {
    return ref && state_.ref(*ref) ? *ref : std::string("main");
  }
  // A tree placeholder's parent: the recovered one if it names an entry, else
  // the ref's leaf (cairn appends each entry at its ref's leaf).
  std::optional<std::string> usable_parent(const Hint& hint, const std::string& ref) const {
    if (hint.parent_id && is_tree_entry_id(state_, *hint.parent_id)) return hint.parent_id;
    const auto* slot = state_.ref(ref);
    return slot ? slot->leaf : std::nullopt;
  }

  Record tree_placeholder(std::string id, const std::string& ref, std::optional<std::string> parent,
                          std::optional<RecordType> was, const Hint& hint, const DamageReport& damage) const {
    DamagedEntry body{.damage = damage};
    body.damage.was = was;
    if ((was == RecordType::leaf || was == RecordType::label) && hint.target_id &&
        is_tree_entry_id(state_, *hint.target_id)) {
      body.target_id = hint.target_id;
    }
    return Record{.body = TreeEntry{.id = std::move(id), .parent_id = std::move(parent),
                                    .timestamp = hint.timestamp.value_or(repaired_at_), .ref = ref,
                                    .body = std::move(body)}};
  }

  Record harness_placeholder(std::string id, const std::string& ref, std::optional<RecordType> was,
                             std::optional<std::string> run_id, const Hint& hint, const DamageReport& damage) const {
    Damaged body{.damage = damage, .run_id = std::move(run_id)};
    body.damage.was = was;
    if (was == RecordType::ref_created || was == RecordType::ref_deleted) body.name = hint.name;
    if (was == RecordType::ref_created && hint.at) body.at = hint.at;
    return Record{.body = HarnessRecord{.id = std::move(id), .ref = ref,
                                        .timestamp = hint.timestamp.value_or(repaired_at_), .body = std::move(body)}};
  }

  // Most faithful first: as recovered; with an id later records miss; with
  // the operation the ref has open; and last, one that changes nothing.
  std::vector<Candidate> candidates_for(std::int64_t seq, const Hint& hint, const DamageReport& damage) const {
    std::vector<Candidate> out;
    const std::optional<RecordType> was = infer_type(hint);
    const bool tree = was ? is_tree_type(*was) : hint.has_parent_key;
    const std::string ref = usable_ref(hint.ref);
    const Dangling dangling = dangling_after(seq);
    const auto* slot = state_.ref(ref);
    const std::optional<std::string> open_run = slot ? slot->open_operation : std::nullopt;

    if (tree) {
      out.push_back({tree_placeholder(usable_id(hint.id), ref, usable_parent(hint, ref), was, hint, damage),
                     "a tree entry; id, parent and ref as recovered"});
      for (const std::string& id : dangling.parents) {
        out.push_back({tree_placeholder(id, ref, usable_parent(hint, ref), was, hint, damage),
                       fmt::format("a tree entry with the id {} later entries name", id)});
      }
    } else {
      std::optional<std::string> run = hint.run_id;
      if (was == RecordType::operation_started) run.reset();
      out.push_back({harness_placeholder(usable_id(hint.id), ref, was, run, hint, damage),
                     "fields as recovered"});
      if (run != open_run && open_run && was != RecordType::operation_started) {
        out.push_back({harness_placeholder(usable_id(hint.id), ref, was, open_run, hint, damage),
                       fmt::format("of run {}, the one ref {} had open", *open_run, ref)});
      }
      for (const std::string& id : dangling.runs) {
        const std::string run_ref = usable_ref(dangling.run_refs.at(id));
        out.push_back({harness_placeholder(id, run_ref, RecordType::operation_started, std::nullopt, hint, damage),
                       fmt::format("the start of run {}, which later records name", id)});
      }
      for (const std::string& id : dangling.parents) {
        out.push_back({tree_placeholder(id, ref, usable_parent(hint, ref), std::nullopt, hint, damage),
                       fmt::format("a tree entry with the id {} later entries name", id)});
      }
    }
    for (const std::string& name : dangling.refs) {
      Hint created = hint;
      created.name = name;
      out.push_back({harness_placeholder(usable_id(hint.id), name, RecordType::ref_created, std::nullopt, created, damage),
                     fmt::format("the creation of ref {}, which later records use", name)});
    }
    out.push_back({harness_placeholder(usable_id(hint.id), ref, std::nullopt, std::nullopt, hint, damage),
                   "inert: its kind could not be told"});
    out.push_back({tree_placeholder(usable_id(hint.id), ref, usable_parent(hint, ref), std::nullopt, hint, damage),
                   "an inert tree entry"});
    return out;
  }

  const std::vector<StoredRecord>& records_;
  const bool checksums_;
  StringArena strings_;
  std::vector<Classified> classified_;
  SessionIndex state_;  // the repaired log so far
  std::deque<Replacement> replacements_;  // stable: the index views their lines
  std::string repaired_at_;
  Plan plan_;
};

}  // namespace

// The first index field in which two readings of one record disagree.
std::optional<std::string_view> disagreement(const RecordMeta& a, const RecordMeta& b) {
  if (a.type != b.type) return "type";
  if (a.id != b.id) return "id";
  if (a.parent_id != b.parent_id) return "parent_id";
  if (a.ref != b.ref) return "ref";
  if (a.run_id != b.run_id) return "run_id";
  if (a.target_id != b.target_id) return "target_id";
  if (a.name != b.name) return "name";
  if (a.custom_type != b.custom_type) return "custom_type";
  if (a.role != b.role) return "role";
  return std::nullopt;
}

Plan plan(const std::vector<StoredRecord>& records, bool checksums) { return Planner(records, checksums).run(); }

std::string backup_path(const std::string& file, std::string_view infix) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const std::string base = fmt::format("{}{}.repair-{:04}{:02}{:02}T{:02}{:02}{:02}Z", file, infix, utc.tm_year + 1900,
                                       utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
  std::string path = base + ".bak";
  for (int n = 2; ::access(path.c_str(), F_OK) == 0; ++n) path = fmt::format("{}-{}.bak", base, n);
  return path;
}

SessionHeader rebuilt_header(std::string_view id, std::string_view damaged_bytes) {
  SessionHeader header;
  header.id = std::string(id);
  header.version = kLogFormatVersion;
  const Hint hint = scan_damaged(damaged_bytes);
  header.timestamp = hint.timestamp.value_or(now_iso8601());
  const std::string cwd_key = "\"cwd\":";
  if (const auto at = damaged_bytes.find(cwd_key); at != std::string_view::npos) {
    header.cwd = json_string(damaged_bytes, at + cwd_key.size()).value_or("");
  }
  mark_rebuilt(header);
  return header;
}

void mark_rebuilt(SessionHeader& header) {
  header.extra["repaired"] = fmt::format("the header was damaged; rebuilt by cairn repair at {}", now_iso8601());
}

PlacedRows place_rows(const std::vector<StoredRow>& rows, bool checksums, RepairReport& report) {
  PlacedRows placed;
  auto intact = [&](std::string_view payload) {
    auto checksum = check_checksum(payload);
    return checksum && (*checksum == Checksum::valid || !checksums);
  };
  for (const StoredRow& row : rows) {
    if (row.seq < 0 || row.seq > static_cast<std::int64_t>(rows.size()) + 1) {
      report.fixed.push_back(fmt::format("a row{} at seq {} is out of any place; dropped (the backup keeps it)",
                                         row.table.empty() ? "" : fmt::format(" of {}", row.table), row.seq));
      placed.moved = true;
      continue;
    }
    auto& records = placed.records;
    while (static_cast<std::int64_t>(records.size()) < row.seq) records.push_back({std::string(), std::nullopt});
    if (static_cast<std::int64_t>(records.size()) > row.seq) {
      auto& held = records[static_cast<std::size_t>(row.seq)];
      const bool better = intact(row.payload) && !intact(held.bytes);
      report.fixed.push_back(fmt::format("seq {} was held by two rows; kept the one with {} payload (the backup keeps "
                                         "both)",
                                         row.seq, better ? "the intact" : "the first"));
      if (better) held = {std::string(row.payload), row.columns};
      placed.moved = true;
      continue;
    }
    records.push_back({std::string(row.payload), row.columns});
  }
  return placed;
}

Plan plan_into(RepairReport& report, const std::vector<StoredRecord>& records, bool checksums) {
  Plan planned = plan(records, checksums);
  report.records = static_cast<std::int64_t>(records.size());
  report.intact = planned.intact;
  for (const auto& replacement : planned.replacements) report.replaced.push_back(replacement.report);
  for (const std::int64_t seq : planned.column_fixes) {
    report.fixed.push_back(fmt::format("seq {}: its index columns disagreed with its intact payload; rewritten from it",
                                       seq));
  }
  report.abort_only_runs.assign(planned.abort_only_runs.begin(), planned.abort_only_runs.end());
  return planned;
}

Result<std::vector<PreparedRecord>> repaired_records(const std::vector<StoredRecord>& records, const Plan& plan,
                                                     StringArena& strings) {
  std::vector<PreparedRecord> repaired;
  repaired.reserve(records.size());
  std::size_t next_replacement = 0;
  for (std::size_t seq = 0; seq < records.size(); ++seq) {
    if (next_replacement < plan.replacements.size() &&
        plan.replacements[next_replacement].seq == static_cast<std::int64_t>(seq)) {
      const auto& replacement = plan.replacements[next_replacement++];
      repaired.push_back({copy_meta(replacement.meta(), strings), replacement.line});
      continue;
    }
    // Intact: its bytes as they were, its index fields made from them.
    auto meta = scan_line(records[seq].bytes);
    if (!meta) {
      return fail(Errc::internal_error, fmt::format("seq {}: an intact record does not scan: {}", seq, meta.error().message));
    }
    repaired.push_back({copy_meta(*meta, strings), records[seq].bytes});
  }
  return repaired;
}

}  // namespace cairn::repair
