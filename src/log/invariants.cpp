// The log's invariants (DESIGN.md, "Invariants" 1-3), checked for each record
// against the state of everything before it. A record that fails here never
// reaches the medium; a stored record that fails here is corruption.
#include <fmt/format.h>

#include "log/index.hpp"

namespace cairn {
namespace {

bool names_tree_entry(const LogStateView& state, std::string_view id) {
  auto type = state.type_of_id(id);
  return type && is_tree_type(*type);
}

std::optional<std::string> owned(std::optional<std::string_view> text) {
  return text ? std::optional<std::string>(*text) : std::nullopt;
}

}  // namespace

RecordType acting_type(const RecordMeta& record) {
  if (!is_placeholder(record.type)) return record.type;
  const auto was = parse_record_type(record.custom_type);
  if (record.type == RecordType::damaged_entry) {
    return was == RecordType::leaf && record.target_id ? RecordType::leaf : RecordType::damaged_entry;
  }
  switch (was.value_or(RecordType::damaged)) {
    case RecordType::operation_started:
    case RecordType::operation_finished:
    case RecordType::ref_created:
    case RecordType::ref_deleted:
      return *was;
    default:
      return RecordType::damaged;
  }
}

Status check_invariants(const RecordMeta& stored, const LogStateView& state) {
  // A placeholder is checked as the record it acts as.
  RecordMeta record = stored;
  record.type = acting_type(stored);
  if (record.seq != state.next_seq()) {
    return fail(Errc::corrupt_log, fmt::format("seq gap: expected seq {}, found {}", state.next_seq(), record.seq));
  }
  if (record.type == RecordType::ignorable || record.type == RecordType::damaged) {
    if (!record.id.empty() && state.type_of_id(record.id)) {
      return fail(Errc::duplicate_id, fmt::format("seq {}: id '{}' is already used", record.seq, record.id));
    }
    return {};
  }
  if (record.id.empty()) return fail(Errc::invalid_record, fmt::format("seq {}: empty id", record.seq));
  if (state.type_of_id(record.id)) {
    return fail(Errc::duplicate_id, fmt::format("seq {}: id '{}' is already used", record.seq, record.id));
  }

  if (is_tree_type(record.type)) {
    if (record.parent_id && !names_tree_entry(state, *record.parent_id)) {
      return fail(Errc::unknown_parent, fmt::format("seq {}: parentId '{}' names no earlier entry", record.seq,
                                                *record.parent_id));
    }
    if (!state.ref(record.ref)) {
      return fail(Errc::unknown_ref, fmt::format("seq {}: ref '{}' does not exist", record.seq, record.ref));
    }
    if ((record.type == RecordType::leaf || record.type == RecordType::label) && record.target_id &&
        !names_tree_entry(state, *record.target_id)) {
      return fail(Errc::unknown_parent, fmt::format("seq {}: targetId '{}' names no earlier entry", record.seq,
                                                *record.target_id));
    }
    if (record.type == RecordType::label && !record.target_id) {
      return fail(Errc::invalid_record, fmt::format("seq {}: label without targetId", record.seq));
    }
    return {};
  }

  // Harness records.
  if (record.type == RecordType::ref_created) {
    if (record.name != record.ref) {
      return fail(Errc::invalid_record, fmt::format("seq {}: ref_created names '{}' but its ref is '{}'", record.seq,
                                                record.name, record.ref));
    }
    if (state.ref(record.name)) {
      return fail(Errc::ref_exists, fmt::format("seq {}: ref '{}' already exists", record.seq, record.name));
    }
    if (record.target_id && !names_tree_entry(state, *record.target_id)) {
      return fail(Errc::unknown_parent, fmt::format("seq {}: ref '{}' anchored at '{}', which names no entry",
                                                record.seq, record.name, *record.target_id));
    }
    return {};
  }
  const LogStateView::RefSlot* slot = state.ref(record.ref);
  if (!slot) return fail(Errc::unknown_ref, fmt::format("seq {}: ref '{}' does not exist", record.seq, record.ref));

  switch (record.type) {
    case RecordType::ref_deleted:
      if (record.name != record.ref) {
        return fail(Errc::invalid_record, fmt::format("seq {}: ref_deleted names '{}' but its ref is '{}'", record.seq,
                                                  record.name, record.ref));
      }
      if (record.name == "main") return fail(Errc::invalid_record, fmt::format("seq {}: ref main cannot be deleted", record.seq));
      if (slot->open_operation) {
        return fail(Errc::operation_open, fmt::format("seq {}: ref '{}' has open operation '{}'", record.seq,
                                                  record.name, *slot->open_operation));
      }
      return {};
    case RecordType::operation_started:
      if (slot->open_operation) {
        return fail(Errc::operation_open, fmt::format("seq {}: ref '{}' already has open operation '{}'", record.seq,
                                                  record.ref, *slot->open_operation));
      }
      return {};
    case RecordType::input_resolved:
      if (!record.target_id || state.type_of_id(*record.target_id) != RecordType::input_requested) {
        return fail(Errc::invalid_record, fmt::format("seq {}: input_resolved answers '{}', which is no earlier "
                                                      "input_requested",
                                                      record.seq, record.target_id.value_or("")));
      }
      [[fallthrough]];
    case RecordType::queue_enqueued:
      if (record.type == RecordType::queue_enqueued && record.run_id.empty()) return {};  // a next-run item belongs to no operation
      [[fallthrough]];
    default:
      if (!slot->open_operation || *slot->open_operation != record.run_id) {
        return fail(Errc::operation_not_open,
                    fmt::format("seq {}: {} names run '{}', which is not the open operation of ref '{}'", record.seq,
                                to_string(record.type), record.run_id, record.ref));
      }
      return {};
  }
}

void apply_record(const RecordMeta& record, MutableLogState& state) {
  if (!record.id.empty()) state.put_id(record.id, record.type);
  const RecordType acting = acting_type(record);
  if (acting == RecordType::ignorable || acting == RecordType::damaged) return;

  if (is_tree_type(acting)) {
    state.mutable_ref(record.ref).leaf = acting == RecordType::leaf ? owned(record.target_id) : std::string(record.id);
    return;
  }
  switch (acting) {
    case RecordType::ref_created:
      state.create_ref(record.name, owned(record.target_id));
      break;
    case RecordType::ref_deleted:
      state.erase_ref(record.name);
      break;
    case RecordType::operation_started:
      state.mutable_ref(record.ref).open_operation = std::string(record.id);
      break;
    case RecordType::operation_finished:
      state.mutable_ref(record.ref).open_operation.reset();
      break;
    default:
      break;
  }
}

}  // namespace cairn
