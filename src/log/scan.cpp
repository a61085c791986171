// Extracting a record's index fields from its stored line, without building
// the full typed record: the open path runs this once per line, so it uses
// simdjson, which also checks that the whole line is well-formed JSON.
#include <simdjson.h>

#include <fmt/format.h>

#include "cairn/log/index.hpp"

namespace cairn {
namespace {

// A string field, if present and a string; an error if present and not.
Result<std::optional<std::string>> string_field(simdjson::dom::object object, std::string_view key,
                                                bool nullable) {
  simdjson::dom::element value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS) return std::optional<std::string>{};
  if (value.is_null()) {
    if (nullable) return std::optional<std::string>{};
    return fail("invalid_record", fmt::format("{}: expected a string, found null", key));
  }
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) {
    return fail("invalid_record", fmt::format("{}: expected a string", key));
  }
  return std::optional<std::string>{std::string(text)};
}

Result<std::string> required_string(simdjson::dom::object object, std::string_view key) {
  auto field = string_field(object, key, false);
  if (!field) return std::unexpected(field.error());
  if (!*field) return fail("invalid_record", fmt::format("{}: missing", key));
  return std::move(**field);
}

}  // namespace

Result<RecordMeta> scan_line(std::string_view line) {
  // One parser per thread: it keeps its buffers between lines.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(line.data(), line.size()).get(doc); error != simdjson::SUCCESS) {
    return fail("corrupt_log", fmt::format("not valid JSON ({})", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return fail("corrupt_log", "not a JSON object");
  }

  RecordMeta meta;
  simdjson::dom::element seq;
  if (object.at_key("seq").get(seq) != simdjson::SUCCESS) return fail("corrupt_log", "no seq");
  if (std::int64_t value; seq.get_int64().get(value) == simdjson::SUCCESS && value >= 0) {
    meta.seq = value;
  } else {
    return fail("corrupt_log", "seq is not a non-negative integer");
  }

  auto type_name = required_string(object, "type");
  if (!type_name) return std::unexpected(type_name.error());
  auto type = parse_record_type(*type_name);
  if (!type) {
    bool ignorable = false;
    if (object.at_key("ignorable").get(ignorable) == simdjson::SUCCESS && ignorable) {
      meta.type = RecordType::ignorable;
      if (auto id = string_field(object, "id", true); id && *id) meta.id = std::move(**id);
      return meta;
    }
    return fail("unknown_type", fmt::format("unknown record type '{}'", *type_name));
  }
  meta.type = *type;

  auto id = required_string(object, "id");
  if (!id) return std::unexpected(id.error());
  meta.id = std::move(*id);

  if (is_tree_type(meta.type)) {
    simdjson::dom::element parent;
    if (object.at_key("parentId").get(parent) != simdjson::SUCCESS) {
      return fail("invalid_record", "parentId: missing");
    }
    auto parent_id = string_field(object, "parentId", true);
    if (!parent_id) return std::unexpected(parent_id.error());
    meta.parent_id = std::move(*parent_id);
    auto ref = string_field(object, "ref", false);
    if (!ref) return std::unexpected(ref.error());
    meta.ref = ref->value_or("main");
    switch (meta.type) {
      case RecordType::leaf:
      case RecordType::label: {
        auto target = string_field(object, "targetId", true);
        if (!target) return std::unexpected(target.error());
        meta.target_id = std::move(*target);
        break;
      }
      case RecordType::custom:
      case RecordType::custom_message: {
        auto custom_type = string_field(object, "customType", false);
        if (!custom_type) return std::unexpected(custom_type.error());
        meta.custom_type = custom_type->value_or("");
        break;
      }
      case RecordType::message: {
        simdjson::dom::object message;
        if (object.at_key("message").get(message) != simdjson::SUCCESS) {
          return fail("invalid_record", "message: missing or not an object");
        }
        auto role = required_string(message, "role");
        if (!role) return fail("invalid_record", "message.role: missing or not a string");
        meta.role = std::move(*role);
        break;
      }
      default:
        break;
    }
    return meta;
  }

  auto ref = required_string(object, "ref");
  if (!ref) return std::unexpected(ref.error());
  meta.ref = std::move(*ref);
  switch (meta.type) {
    case RecordType::operation_started:
      meta.run_id = meta.id;
      break;
    case RecordType::ref_created: {
      auto name = required_string(object, "name");
      if (!name) return std::unexpected(name.error());
      meta.name = std::move(*name);
      auto at = string_field(object, "at", true);
      if (!at) return std::unexpected(at.error());
      meta.target_id = std::move(*at);
      break;
    }
    case RecordType::ref_deleted: {
      auto name = required_string(object, "name");
      if (!name) return std::unexpected(name.error());
      meta.name = std::move(*name);
      break;
    }
    default: {
      auto run_id = string_field(object, "runId", false);
      if (!run_id) return std::unexpected(run_id.error());
      meta.run_id = run_id->value_or("");
      break;
    }
  }
  return meta;
}

RecordMeta meta_of(const Record& record) {
  RecordMeta meta;
  meta.seq = record.seq;
  meta.type = type_of(record);
  if (const auto* entry = std::get_if<TreeEntry>(&record.body)) {
    meta.id = entry->id;
    meta.parent_id = entry->parent_id;
    meta.ref = entry->ref.value_or("main");
    if (const auto* leaf = std::get_if<Leaf>(&entry->body)) meta.target_id = leaf->target_id;
    if (const auto* label = std::get_if<Label>(&entry->body)) meta.target_id = label->target_id;
    if (const auto* custom = std::get_if<Custom>(&entry->body)) meta.custom_type = custom->custom_type;
    if (const auto* custom = std::get_if<CustomMessageBody>(&entry->body)) meta.custom_type = custom->custom_type;
    if (const auto* message = std::get_if<MessageBody>(&entry->body)) meta.role = role_of(message->message);
  } else if (const auto* harness = std::get_if<HarnessRecord>(&record.body)) {
    meta.id = harness->id;
    meta.ref = harness->ref;
    meta.run_id = run_id_of(*harness);
    if (const auto* created = std::get_if<RefCreated>(&harness->body)) {
      meta.name = created->name;
      meta.target_id = created->at;
    }
    if (const auto* deleted = std::get_if<RefDeleted>(&harness->body)) meta.name = deleted->name;
  } else if (const auto* ignorable = std::get_if<IgnorableRecord>(&record.body)) {
    if (auto it = ignorable->json.find("id"); it != ignorable->json.end() && it->is_string()) {
      meta.id = it->get<std::string>();
    }
  }
  return meta;
}

}  // namespace cairn
