// JSON codec of records: record type names, tree entries (pi's session format
// v3 plus cairn's `seq`, `ref`, `leaf` and `active_tools_change`), provisioned
// entries, and the envelope shared with harness records (harness_codec.cpp).
// Each tree entry body's fields are one table (field_table.hpp), read both ways.
#include <array>
#include <limits>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "log/index.hpp"
#include "cairn/log/record.hpp"
#include "cairn/overloaded.hpp"
#include "json_reader.hpp"
#include "field_table.hpp"
#include "record_codec_detail.hpp"

namespace cairn {

using detail::ObjectReader;

// ---- type names -------------------------------------------------------------

namespace {

constexpr std::array<std::pair<RecordType, std::string_view>, 24> kTypeNames{{
    {RecordType::message, "message"},
    {RecordType::model_change, "model_change"},
    {RecordType::thinking_level_change, "thinking_level_change"},
    {RecordType::active_tools_change, "active_tools_change"},
    {RecordType::compaction, "compaction"},
    {RecordType::branch_summary, "branch_summary"},
    {RecordType::custom, "custom"},
    {RecordType::custom_message, "custom_message"},
    {RecordType::label, "label"},
    {RecordType::session_info, "session_info"},
    {RecordType::leaf, "leaf"},
    {RecordType::damaged_entry, "damaged_entry"},
    {RecordType::operation_started, "operation_started"},
    {RecordType::operation_cancelled, "operation_cancelled"},
    {RecordType::operation_finished, "operation_finished"},
    {RecordType::generation_started, "generation_started"},
    {RecordType::tool_started, "tool_started"},
    {RecordType::queue_enqueued, "queue_enqueued"},
    {RecordType::write_deferred, "write_deferred"},
    {RecordType::ref_created, "ref_created"},
    {RecordType::ref_deleted, "ref_deleted"},
    {RecordType::input_requested, "input_requested"},
    {RecordType::input_resolved, "input_resolved"},
    {RecordType::damaged, "damaged"},
}};

}  // namespace

std::string_view to_string(RecordType type) {
  for (const auto& [known, name] : kTypeNames) {
    if (known == type) return name;
  }
  return "ignorable";
}

std::optional<RecordType> parse_record_type(std::string_view name) {
  for (const auto& [type, known] : kTypeNames) {
    if (known == name) return type;
  }
  return std::nullopt;
}

bool is_tree_type(RecordType type) { return type <= RecordType::damaged_entry; }

bool is_harness_type(RecordType type) {
  return type >= RecordType::operation_started && type <= RecordType::damaged;
}

bool is_placeholder(RecordType type) { return type == RecordType::damaged_entry || type == RecordType::damaged; }

const DamageReport* damage_of(const Record& record) {
  if (const auto* entry = std::get_if<TreeEntry>(&record.body)) {
    if (const auto* damaged = std::get_if<DamagedEntry>(&entry->body)) return &damaged->damage;
  } else if (const auto* harness = std::get_if<HarnessRecord>(&record.body)) {
    if (const auto* damaged = std::get_if<Damaged>(&harness->body)) return &damaged->damage;
  }
  return nullptr;
}

// The variants list their alternatives in enum order, so the index maps directly.
RecordType type_of(const TreeBody& body) { return static_cast<RecordType>(body.index()); }

RecordType type_of(const HarnessBody& body) {
  return static_cast<RecordType>(static_cast<std::size_t>(RecordType::operation_started) + body.index());
}

RecordType type_of(const Record& record) {
  if (const auto* entry = std::get_if<TreeEntry>(&record.body)) return type_of(entry->body);
  if (const auto* harness = std::get_if<HarnessRecord>(&record.body)) return type_of(harness->body);
  return RecordType::ignorable;
}

static_assert(std::variant_size_v<TreeBody> == static_cast<std::size_t>(RecordType::damaged_entry) + 1);
static_assert(std::variant_size_v<HarnessBody> ==
              static_cast<std::size_t>(RecordType::damaged) - static_cast<std::size_t>(RecordType::operation_started) + 1);
static_assert(std::is_same_v<std::variant_alternative_t<11, TreeBody>, DamagedEntry>);
static_assert(std::is_same_v<std::variant_alternative_t<11, HarnessBody>, Damaged>);

// ---- tree entry bodies ------------------------------------------------------

namespace detail {

template <>
struct FieldCodec<AgentMessage> {
  static void write(Json& out, std::string_view key, const AgentMessage& message) {
    out[std::string(key)] = encode(message);
  }
  static void read(ObjectReader& r, std::string_view key, AgentMessage& message) {
    if (const Json* value = r.required(key)) message = r.take(decode_message(*value, r.field(key)));
  }
};

template <>
inline constexpr auto kFields<MessageBody> = std::tuple{field("message", &MessageBody::message)};

template <>
inline constexpr auto kFields<ModelChange> = std::tuple{
    field("provider", &ModelChange::provider),
    field("modelId", &ModelChange::model_id),
};

template <>
inline constexpr auto kFields<ThinkingLevelChange> = std::tuple{
    field("thinkingLevel", &ThinkingLevelChange::thinking_level),
};

template <>
inline constexpr auto kFields<ActiveToolsChange> = std::tuple{
    field("activeToolNames", &ActiveToolsChange::active_tool_names),
};

template <>
inline constexpr auto kFields<Compaction> = std::tuple{
    field("summary", &Compaction::summary),
    field("firstKeptEntryId", &Compaction::first_kept_entry_id),
    field("tokensBefore", &Compaction::tokens_before),
    field("details", &Compaction::details),
    field("fromHook", &Compaction::from_hook),
};

template <>
inline constexpr auto kFields<BranchSummary> = std::tuple{
    field("fromId", &BranchSummary::from_id),
    field("summary", &BranchSummary::summary),
    field("details", &BranchSummary::details),
    field("fromHook", &BranchSummary::from_hook),
};

template <>
inline constexpr auto kFields<Custom> = std::tuple{
    field("customType", &Custom::custom_type),
    field("data", &Custom::data),
};

template <>
inline constexpr auto kFields<CustomMessageBody> = std::tuple{
    field("customType", &CustomMessageBody::custom_type),
    field("content", &CustomMessageBody::content),
    field("details", &CustomMessageBody::details),
    field("display", &CustomMessageBody::display),
};

// null and absent both clear a label; which one was written is kept.
void write_label(Json& out, const Label& b) {
  if (b.label) {
    out["label"] = *b.label;
  } else if (b.label_null) {
    out["label"] = nullptr;
  }
}

void read_label(ObjectReader& r, Label& b) {
  const Json* label = r.optional("label");
  b.label_null = label != nullptr && label->is_null();
  if (!b.label_null) b.label = r.optional_string("label");
}

template <>
inline constexpr auto kFields<Label> = std::tuple{
    field("targetId", &Label::target_id),
    ByHand<Label>{write_label, read_label},
};

template <>
inline constexpr auto kFields<SessionInfo> = std::tuple{field("name", &SessionInfo::name)};

template <>
inline constexpr auto kFields<Leaf> = std::tuple{field("targetId", &Leaf::target_id, Rule::nullable)};

template <>
inline constexpr auto kFields<DamagedEntry> = std::tuple{
    field("targetId", &DamagedEntry::target_id),
    Inline<DamagedEntry, DamageReport>{&DamagedEntry::damage},
};

std::vector<std::string> read_strings(ObjectReader& r, std::string_view key, bool required) {
  std::vector<std::string> names;
  const Json* list = required ? r.required(key) : r.optional(key);
  if (list == nullptr) return names;
  if (!list->is_array()) {
    r.fail_at(key, "expected an array");
    return names;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    const Json& name = (*list)[i];
    if (!name.is_string()) {
      r.fail_at(index_path(key, i), "expected a string");
      return names;
    }
    names.push_back(name.get<std::string>());
  }
  return names;
}

}  // namespace detail

namespace {

// Keys a provisioned entry must not carry: they are assigned at append.
constexpr std::array<std::string_view, 4> kAssignedAtAppend{"seq", "parentId", "timestamp", "ref"};

Result<TreeEntry> decode_tree(const Json& json, const std::string& path, bool provisioned) {
  ObjectReader r(json, path);
  std::string type_name = r.string("type");
  if (!r.ok()) return std::unexpected(r.status().error());
  auto type = parse_record_type(type_name);
  if (!type) {
    // Worded as decode_record words it; a nested entry also names where it is.
    std::string what = fmt::format("unknown record type '{}'", type_name);
    return fail(Errc::unknown_type, path.empty() ? what : fmt::format("{}: {}", r.field("type"), what));
  }
  if (!is_tree_type(*type)) {
    return detail::invalid(r.field("type"), fmt::format("'{}' is not a tree entry type", type_name));
  }
  TreeEntry entry;
  entry.id = r.string("id");
  if (provisioned) {
    for (auto key : kAssignedAtAppend) {
      if (r.has(key)) r.fail_at(key, "not allowed in a provisioned entry");
    }
  } else {
    r.skip("seq");  // the record's, read by decode_record
    r.skip(kChecksumKey);  // the stored line's, checked by whoever read it
    entry.parent_id = r.nullable_string("parentId");
    entry.timestamp = r.string("timestamp");
    entry.ref = r.optional_string("ref");
  }
  entry.body = detail::read_alternative<TreeBody>(static_cast<std::size_t>(*type), r);
  entry.extra = r.extra();
  if (!r.ok()) return std::unexpected(r.status().error());
  return entry;
}

Json encode_tree(const TreeEntry& entry, std::optional<std::int64_t> seq, bool provisioned) {
  Json out = {{"type", to_string(type_of(entry.body))}};
  if (seq) out["seq"] = *seq;
  out["id"] = entry.id;
  if (!provisioned) {
    out["parentId"] = entry.parent_id ? Json(*entry.parent_id) : Json(nullptr);
    out["timestamp"] = entry.timestamp;
    if (entry.ref) out["ref"] = *entry.ref;
  }
  std::visit([&](const auto& body) { detail::write_object(out, body); }, entry.body);
  detail::append_extra(out, entry.extra);
  return out;
}

std::optional<std::int64_t> seq_of(const Record& record) {
  if (record.seq < 0) return std::nullopt;
  return record.seq;
}

// An ignorable record keeps its JSON as read, less `seq` (Record::seq holds it).
Json encode_ignorable(const IgnorableRecord& record, std::optional<std::int64_t> seq) {
  Json out = Json::object();
  if (const auto type = record.json.find("type"); type != record.json.end()) out["type"] = *type;
  if (seq) out["seq"] = *seq;
  detail::append_extra(out, record.json);
  return out;
}

// Reads `seq`: required in a cairn log, optional elsewhere (pi files).
Result<std::int64_t> read_seq(const Json& json, bool require_seq) {
  auto it = json.find("seq");
  if (it == json.end()) {
    if (require_seq) return detail::invalid("seq", "missing");
    return -1;
  }
  if (it->is_number_unsigned()) {
    auto seq = it->get<std::uint64_t>();
    if (seq <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return static_cast<std::int64_t>(seq);
    }
  } else if (it->is_number_integer() && it->get<std::int64_t>() >= 0) {
    return it->get<std::int64_t>();
  }
  return detail::invalid("seq", "expected a non-negative integer");
}

Result<Record> decode_record_unchecked(const Json& json, bool require_seq) {
  if (!json.is_object()) return detail::invalid("record", "expected an object");
  auto type_it = json.find("type");
  if (type_it == json.end()) return detail::invalid("type", "missing");
  if (!type_it->is_string()) return detail::invalid("type", "expected a string");
  auto seq = read_seq(json, require_seq);
  if (!seq) return std::unexpected(seq.error());

  const auto& type_name = type_it->get_ref<const std::string&>();
  auto type = parse_record_type(type_name);
  if (!type) {
    auto ignorable = json.find("ignorable");
    if (ignorable == json.end() || *ignorable != true) {
      return fail(Errc::unknown_type, fmt::format("unknown record type '{}'", type_name));
    }
    Json kept = json;
    kept.erase("seq");
    kept.erase(std::string(kChecksumKey));
    return Record{*seq, IgnorableRecord{std::move(kept)}};
  }
  if (is_tree_type(*type)) {
    auto entry = decode_tree(json, "", false);
    if (!entry) return std::unexpected(entry.error());
    return Record{*seq, std::move(*entry)};
  }
  auto harness = detail::decode_harness(json, *type);
  if (!harness) return std::unexpected(harness.error());
  return Record{*seq, std::move(*harness)};
}

}  // namespace

// ---- public codec -----------------------------------------------------------

Json encode(const TreeEntry& entry) { return encode_tree(entry, std::nullopt, false); }

Json encode_provisioned(const ProvisionedEntry& entry) { return encode_tree(entry, std::nullopt, true); }

Json encode(const HarnessRecord& record) { return detail::encode_harness(record, std::nullopt); }

Json encode(const Record& record) {
  return std::visit(Overloaded{
                        [&](const TreeEntry& entry) { return encode_tree(entry, seq_of(record), false); },
                        [&](const HarnessRecord& harness) { return detail::encode_harness(harness, seq_of(record)); },
                        [&](const IgnorableRecord& ignorable) { return encode_ignorable(ignorable, seq_of(record)); },
                    },
                    record.body);
}

// The reader checks every access; the try blocks only keep a nlohmann throw
// this code did not foresee from escaping as an exception.

Result<TreeEntry> decode_tree_entry(const Json& json, std::string_view path) {
  try {
    return decode_tree(json, std::string(path), false);
  } catch (const Json::exception& error) {
    return detail::invalid(path.empty() ? "record" : path, error.what());
  }
}

Result<ProvisionedEntry> decode_provisioned(const Json& json, std::string_view path) {
  try {
    return decode_tree(json, std::string(path), true);
  } catch (const Json::exception& error) {
    return detail::invalid(path.empty() ? "record" : path, error.what());
  }
}

Result<Record> decode_record(const Json& json, bool require_seq) {
  try {
    auto record = decode_record_unchecked(json, require_seq);
    if (!record) return record;
    // Decoding checked the shape; the field rules are the same ones every
    // append passes, so a record read back is as valid as one written.
    if (auto status = check_fields(*record); !status) return std::unexpected(status.error());
    return record;
  } catch (const Json::exception& error) {
    return detail::invalid("record", error.what());
  }
}

}  // namespace cairn
