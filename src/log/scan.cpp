// Extracting a record's index fields from its stored line, without building
// the full typed record: the open path runs this once per line, so it uses
// simdjson, which also checks that the whole line is well-formed JSON.
#include <simdjson.h>

#include <fmt/format.h>

#include "log/index.hpp"

namespace cairn {
static_assert(kScanPadding >= simdjson::SIMDJSON_PADDING);

Result<RecordMeta> scan_line(std::string_view line, bool padded) {
  // One parser per thread: it keeps its buffers between lines.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(line.data(), line.size(), /*realloc_if_needed=*/!padded).get(doc);
      error != simdjson::SUCCESS) {
    return fail(Errc::corrupt_log, fmt::format("not valid JSON ({})", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) return fail(Errc::corrupt_log, "not a JSON object");

  // One pass over the top-level fields, keeping the ones the index needs.
  // Each is a string, or null where the format allows it.
  struct Field {
    bool present = false;
    bool is_null = false;
    std::string_view text;
  };
  RecordMeta meta;
  Field type, id, parent, ref, run, target, at, name, custom_type, was, request;
  bool has_seq = false, seq_ok = false, ignorable = false;
  std::string_view role;
  std::string_view bad_field;
  auto take = [&](Field& field, simdjson::dom::element value, std::string_view key) {
    field.present = true;
    if (value.is_null()) {
      field.is_null = true;
    } else if (value.get_string().get(field.text) != simdjson::SUCCESS && bad_field.empty()) {
      bad_field = key;
    }
  };
  for (auto [key, value] : object) {
    if (key.size() < 2) continue;
    switch (key[0]) {
      case 's':
        if (key == "seq") {
          has_seq = true;
          std::int64_t seq;
          seq_ok = value.get_int64().get(seq) == simdjson::SUCCESS && seq >= 0;
          if (seq_ok) meta.seq = seq;
        }
        break;
      case 't':
        if (key == "type") take(type, value, key);
        else if (key == "targetId") take(target, value, key);
        break;
      case 'i':
        if (key == "id") take(id, value, key);
        else if (key == "ignorable") ignorable = value.is_bool() && bool(value);
        break;
      case 'p':
        if (key == "parentId") take(parent, value, key);
        break;
      case 'r':
        if (key == "ref") take(ref, value, key);
        else if (key == "runId") take(run, value, key);
        else if (key == "requestId") take(request, value, key);
        break;
      case 'a':
        if (key == "at") take(at, value, key);
        break;
      case 'n':
        if (key == "name" && value.is_string()) take(name, value, key);
        break;
      case 'c':
        if (key == "customType") take(custom_type, value, key);
        break;
      case 'w':
        if (key == "was") take(was, value, key);
        break;
      case 'm':
        if (key == "message") {
          simdjson::dom::object message;
          if (value.get_object().get(message) == simdjson::SUCCESS) {
            std::string_view text;
            if (message.at_key("role").get_string().get(text) == simdjson::SUCCESS) role = text;
          }
        }
        break;
      default:
        break;
    }
  }
  if (!has_seq) return fail(Errc::corrupt_log, "no seq");
  if (!seq_ok) return fail(Errc::corrupt_log, "seq is not a non-negative integer");
  if (!bad_field.empty()) return fail(Errc::invalid_record, fmt::format("{}: expected a string", bad_field));
  if (!type.present || type.is_null) return fail(Errc::invalid_record, "type: missing");

  auto known = parse_record_type(type.text);
  if (!known) {
    if (ignorable) {
      meta.type = RecordType::ignorable;
      if (id.present && !id.is_null) meta.id = id.text;
      return meta;
    }
    return fail(Errc::unknown_type, fmt::format("unknown record type '{}'", type.text));
  }
  meta.type = *known;
  if (!id.present || id.is_null) return fail(Errc::invalid_record, "id: missing");
  meta.id = id.text;
  auto optional_text = [](const Field& field) {
    return field.present && !field.is_null ? std::optional<std::string_view>(field.text) : std::nullopt;
  };

  if (is_tree_type(meta.type)) {
    if (!parent.present) return fail(Errc::invalid_record, "parentId: missing");
    meta.parent_id = optional_text(parent);
    if (ref.is_null) return fail(Errc::invalid_record, "ref: expected a string, found null");
    meta.ref = ref.present ? ref.text : std::string_view("main");
    switch (meta.type) {
      case RecordType::leaf:
      case RecordType::label:
        meta.target_id = optional_text(target);
        break;
      case RecordType::custom:
      case RecordType::custom_message:
        meta.custom_type = custom_type.text;
        break;
      case RecordType::message:
        if (role.empty()) return fail(Errc::invalid_record, "message.role: missing or not a string");
        meta.role = role;
        break;
      case RecordType::damaged_entry:
        meta.custom_type = was.text;  // the type it had (RecordMeta::custom_type)
        meta.target_id = optional_text(target);
        break;
      default:
        break;
    }
    return meta;
  }

  if (!ref.present || ref.is_null) return fail(Errc::invalid_record, "ref: missing");
  meta.ref = ref.text;
  switch (meta.type) {
    case RecordType::operation_started:
      meta.run_id = meta.id;
      break;
    case RecordType::ref_created:
      if (!name.present) return fail(Errc::invalid_record, "name: missing");
      meta.name = name.text;
      meta.target_id = optional_text(at);
      break;
    case RecordType::ref_deleted:
      if (!name.present) return fail(Errc::invalid_record, "name: missing");
      meta.name = name.text;
      break;
    case RecordType::damaged:
      meta.custom_type = was.text;
      meta.run_id = run.text;
      meta.name = name.text;
      meta.target_id = optional_text(at);
      break;
    case RecordType::input_resolved:
      meta.target_id = optional_text(request);  // the request it answers
      [[fallthrough]];
    default:
      if (run.is_null) return fail(Errc::invalid_record, "runId: expected a string, found null");
      meta.run_id = run.text;
      break;
  }
  return meta;
}

namespace {
std::optional<std::string_view> view(const std::optional<std::string>& text) {
  return text ? std::optional<std::string_view>(*text) : std::nullopt;
}
std::optional<std::string_view> view(const std::string& text) { return text; }
}  // namespace

RecordMeta meta_of(const Record& record) {
  RecordMeta meta;
  meta.seq = record.seq;
  meta.type = type_of(record);
  if (const auto* entry = std::get_if<TreeEntry>(&record.body)) {
    meta.id = entry->id;
    meta.parent_id = view(entry->parent_id);
    meta.ref = entry->ref ? std::string_view(*entry->ref) : std::string_view("main");
    if (const auto* leaf = std::get_if<Leaf>(&entry->body)) meta.target_id = view(leaf->target_id);
    if (const auto* label = std::get_if<Label>(&entry->body)) meta.target_id = view(label->target_id);
    if (const auto* custom = std::get_if<Custom>(&entry->body)) meta.custom_type = custom->custom_type;
    if (const auto* custom = std::get_if<CustomMessageBody>(&entry->body)) meta.custom_type = custom->custom_type;
    if (const auto* message = std::get_if<MessageBody>(&entry->body)) meta.role = role_of(message->message);
    if (const auto* damaged = std::get_if<DamagedEntry>(&entry->body)) {
      if (damaged->damage.was) meta.custom_type = to_string(*damaged->damage.was);
      meta.target_id = view(damaged->target_id);
    }
  } else if (const auto* harness = std::get_if<HarnessRecord>(&record.body)) {
    meta.id = harness->id;
    meta.ref = harness->ref;
    meta.run_id = run_id_of(*harness);
    if (const auto* created = std::get_if<RefCreated>(&harness->body)) {
      meta.name = created->name;
      meta.target_id = view(created->at);
    }
    if (const auto* deleted = std::get_if<RefDeleted>(&harness->body)) meta.name = deleted->name;
    if (const auto* resolved = std::get_if<InputResolved>(&harness->body)) meta.target_id = resolved->request_id;
    if (const auto* damaged = std::get_if<Damaged>(&harness->body)) {
      if (damaged->damage.was) meta.custom_type = to_string(*damaged->damage.was);
      if (damaged->name) meta.name = *damaged->name;
      meta.target_id = view(damaged->at);
    }
  } else if (const auto* ignorable = std::get_if<IgnorableRecord>(&record.body)) {
    if (auto it = ignorable->json.find("id"); it != ignorable->json.end() && it->is_string()) {
      meta.id = it->get_ref<const std::string&>();
    }
  }
  return meta;
}

}  // namespace cairn
