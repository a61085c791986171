// JSON codec of harness records: the orchestration facts (operations, request
// attempts, tool starts, queues, deferred writes, refs) that make a run
// resumable. Shapes follow the design document's HarnessEntry types; each
// body's fields are one table (field_table.hpp), read both ways.
#include <fmt/format.h>

#include "log/checksum.hpp"
#include "cairn/overloaded.hpp"
#include "field_table.hpp"
#include "json_reader.hpp"
#include "record_codec_detail.hpp"

namespace cairn {
namespace detail {

// ---- values of the harness records' own types -------------------------------

template <>
struct FieldCodec<ProvisionedEntry> {
  static void write(Json& out, std::string_view key, const ProvisionedEntry& entry) {
    out[std::string(key)] = encode_provisioned(entry);
  }
  static void read(ObjectReader& r, std::string_view key, ProvisionedEntry& entry) {
    if (const Json* value = r.required(key)) entry = r.take(decode_provisioned(*value, r.field(key)));
  }
};

template <>
struct FieldCodec<std::vector<ProvisionedEntry>> {
  static void write(Json& out, std::string_view key, const std::vector<ProvisionedEntry>& entries) {
    Json list = Json::array();
    for (const auto& entry : entries) list.push_back(encode_provisioned(entry));
    out[std::string(key)] = std::move(list);
  }
  static void read(ObjectReader& r, std::string_view key, std::vector<ProvisionedEntry>& entries) {
    const Json* list = r.required(key);
    if (list == nullptr) return;
    if (!list->is_array()) return r.fail_at(key, "expected an array");
    for (std::size_t i = 0; i < list->size() && r.ok(); ++i) {
      entries.push_back(r.take(decode_provisioned((*list)[i], index_path(r.field(key), i))));
    }
  }
};

// An intent is an object whose kind says which of the three it is.
template <>
struct FieldCodec<OperationIntent> {
  static void write(Json& out, std::string_view key, const OperationIntent& intent) {
    Json object = {{"kind", to_string(kind_of(intent))}};
    std::visit([&](const auto& i) { write_object(object, i); }, intent);
    out[std::string(key)] = std::move(object);
  }
  static void read(ObjectReader& r, std::string_view key, OperationIntent& intent) {
    r.nested(key, ObjectReader::Presence::required, [&](ObjectReader& inner) {
      const OperationKind kind = inner.one_of<OperationKind>("kind");
      if (inner.ok()) intent = read_alternative<OperationIntent>(static_cast<std::size_t>(kind), inner);
    });
  }
};

template <>
struct FieldCodec<ModelRef> : NestedObject<ModelRef> {};

template <>
struct FieldCodec<SandboxRecord> : NestedObject<SandboxRecord> {};

// Optional: a tool_started written before sandboxes has none.
template <>
struct FieldCodec<std::optional<SandboxRecord>> {
  static void read(ObjectReader& r, std::string_view key, std::optional<SandboxRecord>& value) {
    r.nested(key, ObjectReader::Presence::optional, [&](ObjectReader& inner) {
      value.emplace();
      read_object(inner, *value);
    });
  }
};

// ---- the tables -------------------------------------------------------------

template <>
inline constexpr auto kFields<RunIntent> = std::tuple{
    field("initialMessages", &RunIntent::initial_messages),
    field("systemPromptOverride", &RunIntent::system_prompt_override),
    field("resumeData", &RunIntent::resume_data, Rule::object),
};

template <>
inline constexpr auto kFields<CompactionIntent> = std::tuple{
    field("customInstructions", &CompactionIntent::custom_instructions),
    field("resultEntryId", &CompactionIntent::result_entry_id),
};

template <>
inline constexpr auto kFields<NavigationIntent> = std::tuple{
    field("targetId", &NavigationIntent::target_id),
    field("destinationLeafId", &NavigationIntent::destination_leaf_id, Rule::nullable),
    field("summarize", &NavigationIntent::summarize),
    field("customInstructions", &NavigationIntent::custom_instructions),
    field("label", &NavigationIntent::label),
    field("summaryEntryId", &NavigationIntent::summary_entry_id),
    field("labelEntryId", &NavigationIntent::label_entry_id),
    field("leafEntryId", &NavigationIntent::leaf_entry_id),
};

template <>
inline constexpr auto kFields<ModelRef> = std::tuple{
    field("provider", &ModelRef::provider),
    field("modelId", &ModelRef::model_id),
};

template <>
inline constexpr auto kFields<OperationStarted> = std::tuple{
    field("sourceLeafId", &OperationStarted::source_leaf_id, Rule::nullable),
    field("intent", &OperationStarted::intent),
};

template <>
inline constexpr auto kFields<OperationCancelled> = std::tuple{
    field("runId", &OperationCancelled::run_id),
    field("reason", &OperationCancelled::reason),
};

// The error an operation failed with; its unknown keys are kept beside it,
// as Error itself has no room for them.
void write_error(Json& out, const OperationFinished& b) {
  if (!b.error) return;
  Json error = {{"code", b.error->code}, {"message", b.error->message}};
  append_extra(error, b.error_extra);
  out["error"] = std::move(error);
}

void read_error(ObjectReader& r, OperationFinished& b) {
  r.nested("error", ObjectReader::Presence::optional, [&](ObjectReader& er) {
    b.error = Error::recorded(er.string("code"), er.string("message"));
    b.error_extra = er.extra();
  });
}

template <>
inline constexpr auto kFields<OperationFinished> = std::tuple{
    field("runId", &OperationFinished::run_id),
    field("outcome", &OperationFinished::outcome),
    ByHand<OperationFinished>{write_error, read_error},
};

template <>
inline constexpr auto kFields<SandboxRecord> = std::tuple{
    field("mode", &SandboxRecord::mode),
    field("network", &SandboxRecord::network),
    field("networkGranted", &SandboxRecord::network_granted),
};

template <>
inline constexpr auto kFields<GenerationStarted> = std::tuple{
    field("runId", &GenerationStarted::run_id),
    field("purpose", &GenerationStarted::purpose),
    field("attempt", &GenerationStarted::attempt),
    field("model", &GenerationStarted::model),
};

// The call a tool_started or an input_requested is about: the same fields
// in both.
template <class T>
inline constexpr auto kCallFields = std::tuple{
    field("assistantEntryId", &T::assistant_entry_id),
    field("toolIndex", &T::tool_index),
    field("toolCallId", &T::tool_call_id),
    field("toolName", &T::tool_name),
};

template <>
inline constexpr auto kFields<ToolStarted> = std::tuple_cat(
    std::tuple{field("runId", &ToolStarted::run_id)},
    kCallFields<ToolStarted>,
    std::tuple{
        field("effectiveArgs", &ToolStarted::effective_args),
        field("resultEntryId", &ToolStarted::result_entry_id),
        field("replay", &ToolStarted::replay),
        field("childSession", &ToolStarted::child_session),
        field("sandbox", &ToolStarted::sandbox),
    });

template <>
inline constexpr auto kFields<QueueEnqueued> = std::tuple{
    field("queue", &QueueEnqueued::queue),
    field("runId", &QueueEnqueued::run_id),
    field("target", &QueueEnqueued::target),
};

template <>
inline constexpr auto kFields<WriteDeferred> = std::tuple{
    field("runId", &WriteDeferred::run_id),
    field("target", &WriteDeferred::target),
};

template <>
inline constexpr auto kFields<RefCreated> = std::tuple{
    field("name", &RefCreated::name),
    field("at", &RefCreated::at, Rule::nullable),
};

template <>
inline constexpr auto kFields<RefDeleted> = std::tuple{field("name", &RefDeleted::name)};

template <>
inline constexpr auto kFields<InputRequested> = std::tuple_cat(
    std::tuple{
        field("runId", &InputRequested::run_id),
        field("kind", &InputRequested::kind),
    },
    kCallFields<InputRequested>,
    std::tuple{
        field("arguments", &InputRequested::arguments),
        field("rule", &InputRequested::rule),
        field("question", &InputRequested::question),
        field("choices", &InputRequested::choices, Rule::omit_empty),
        field("sandbox", &InputRequested::sandbox),
    });

template <>
inline constexpr auto kFields<InputResolved> = std::tuple{
    field("runId", &InputResolved::run_id),
    field("requestId", &InputResolved::request_id),
    field("decision", &InputResolved::decision),
    field("arguments", &InputResolved::arguments, Rule::object),
    field("remember", &InputResolved::remember),
    field("reason", &InputResolved::reason),
    field("answer", &InputResolved::answer),
    field("by", &InputResolved::by),
};

template <>
inline constexpr auto kFields<Damaged> = std::tuple{
    field("runId", &Damaged::run_id),
    field("name", &Damaged::name),
    field("at", &Damaged::at),
    Inline<Damaged, DamageReport>{&Damaged::damage},
};

// The type a placeholder's record had, when it could be read: one this build knows.
void write_was(Json& out, const DamageReport& damage) {
  if (damage.was) out["was"] = to_string(*damage.was);
}

void read_was(ObjectReader& r, DamageReport& damage) {
  const auto was = r.optional_string("was");
  if (!was) return;
  damage.was = parse_record_type(*was);
  if (!damage.was) r.fail_at("was", fmt::format("unknown record type '{}'", *was));
}

// ---- the envelope -----------------------------------------------------------

Json encode_harness(const HarnessRecord& record, std::optional<std::int64_t> seq) {
  Json out = {{"type", to_string(type_of(record.body))}};
  if (seq) out["seq"] = *seq;
  out["id"] = record.id;
  out["ref"] = record.ref;
  out["timestamp"] = record.timestamp;
  std::visit([&](const auto& body) { write_object(out, body); }, record.body);
  append_extra(out, record.extra);
  return out;
}

Result<HarnessRecord> decode_harness(const Json& json, RecordType type) {
  ObjectReader r(json, "");
  r.skip("type");
  r.skip("seq");  // the record's, read by decode_record
  r.skip(kChecksumKey);  // the stored line's, checked by whoever read it
  HarnessRecord record;
  record.id = r.string("id");
  record.ref = r.string("ref");
  record.timestamp = r.string("timestamp");
  if (!is_harness_type(type)) {
    // Callers pass harness types only.
    r.fail_at("type", fmt::format("'{}' is not a harness record type", to_string(type)));
  } else {
    const auto index = static_cast<std::size_t>(type) - static_cast<std::size_t>(RecordType::operation_started);
    record.body = read_alternative<HarnessBody>(index, r);
  }
  record.extra = r.extra();
  if (!r.ok()) return std::unexpected(r.status().error());
  return record;
}

}  // namespace detail

Json encode(const SandboxRecord& policy) {
  Json out = Json::object();
  detail::write_object(out, policy);
  return out;
}

OperationKind kind_of(const OperationIntent& intent) {
  // The alternatives are in the enum's order.
  return static_cast<OperationKind>(intent.index());
}

std::string_view run_id_of(const HarnessRecord& record) {
  return std::visit(Overloaded{
                        // An operation is identified by its own start record.
                        [&](const OperationStarted&) { return std::string_view(record.id); },
                        [](const OperationCancelled& b) { return std::string_view(b.run_id); },
                        [](const OperationFinished& b) { return std::string_view(b.run_id); },
                        [](const GenerationStarted& b) { return std::string_view(b.run_id); },
                        [](const ToolStarted& b) { return std::string_view(b.run_id); },
                        // nextRun items belong to no operation until consumed.
                        [](const QueueEnqueued& b) { return b.run_id ? std::string_view(*b.run_id) : std::string_view(); },
                        [](const WriteDeferred& b) { return std::string_view(b.run_id); },
                        [](const RefCreated&) { return std::string_view(); },
                        [](const RefDeleted&) { return std::string_view(); },
                        [](const InputRequested& b) { return std::string_view(b.run_id); },
                        [](const InputResolved& b) { return std::string_view(b.run_id); },
                        [](const Damaged& b) { return b.run_id ? std::string_view(*b.run_id) : std::string_view(); },
                    },
                    record.body);
}

static_assert(std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(OperationKind::navigation),
                                                        OperationIntent>,
                             NavigationIntent>);

}  // namespace cairn
