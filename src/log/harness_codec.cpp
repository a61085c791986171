// JSON codec of harness records: the orchestration facts (operations, request
// attempts, tool starts, queues, deferred writes, refs) that make a run
// resumable. Shapes follow the design document's HarnessEntry types.
#include <fmt/format.h>

#include "log/checksum.hpp"
#include "cairn/overloaded.hpp"
#include "json_reader.hpp"
#include "record_codec_detail.hpp"

namespace cairn {

using detail::ObjectReader;

namespace {


Json optional_string_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// ---- encoding ---------------------------------------------------------------

Json encode_intent(const OperationIntent& intent) {
  Json out = {{"kind", to_string(kind_of(intent))}};
  const Json* extra = nullptr;
  std::visit(Overloaded{
                 [&](const RunIntent& i) {
                   Json messages = Json::array();
                   for (const auto& entry : i.initial_messages) messages.push_back(encode_provisioned(entry));
                   out["initialMessages"] = std::move(messages);
                   if (i.system_prompt_override) out["systemPromptOverride"] = *i.system_prompt_override;
                   if (i.resume_data) out["resumeData"] = *i.resume_data;
                   extra = &i.extra;
                 },
                 [&](const CompactionIntent& i) {
                   if (i.custom_instructions) out["customInstructions"] = *i.custom_instructions;
                   out["resultEntryId"] = i.result_entry_id;
                   extra = &i.extra;
                 },
                 [&](const NavigationIntent& i) {
                   out["targetId"] = i.target_id;
                   out["destinationLeafId"] = optional_string_json(i.destination_leaf_id);
                   out["summarize"] = i.summarize;
                   if (i.custom_instructions) out["customInstructions"] = *i.custom_instructions;
                   if (i.label) out["label"] = *i.label;
                   if (i.summary_entry_id) out["summaryEntryId"] = *i.summary_entry_id;
                   if (i.label_entry_id) out["labelEntryId"] = *i.label_entry_id;
                   out["leafEntryId"] = i.leaf_entry_id;
                   extra = &i.extra;
                 },
             },
             intent);
  detail::append_extra(out, *extra);
  return out;
}

void encode_harness_body(Json& out, const HarnessBody& body) {
  std::visit(Overloaded{
                 [&](const OperationStarted& b) {
                   out["sourceLeafId"] = optional_string_json(b.source_leaf_id);
                   out["intent"] = encode_intent(b.intent);
                 },
                 [&](const OperationCancelled& b) {
                   out["runId"] = b.run_id;
                   out["reason"] = to_string(b.reason);
                 },
                 [&](const OperationFinished& b) {
                   out["runId"] = b.run_id;
                   out["outcome"] = to_string(b.outcome);
                   if (b.error) {
                     Json error = {{"code", b.error->code}, {"message", b.error->message}};
                     detail::append_extra(error, b.error_extra);
                     out["error"] = std::move(error);
                   }
                 },
                 [&](const GenerationStarted& b) {
                   out["runId"] = b.run_id;
                   out["purpose"] = to_string(b.purpose);
                   out["attempt"] = b.attempt;
                   Json model = {{"provider", b.model.provider}, {"modelId", b.model.model_id}};
                   detail::append_extra(model, b.model.extra);
                   out["model"] = std::move(model);
                 },
                 [&](const ToolStarted& b) {
                   out["runId"] = b.run_id;
                   out["assistantEntryId"] = b.assistant_entry_id;
                   out["toolIndex"] = b.tool_index;
                   out["toolCallId"] = b.tool_call_id;
                   out["toolName"] = b.tool_name;
                   out["effectiveArgs"] = b.effective_args;
                   out["resultEntryId"] = b.result_entry_id;
                   out["replay"] = to_string(b.replay);
                   if (b.child_session) out["childSession"] = *b.child_session;
                 },
                 [&](const QueueEnqueued& b) {
                   out["queue"] = to_string(b.queue);
                   if (b.run_id) out["runId"] = *b.run_id;
                   out["target"] = encode_provisioned(b.target);
                 },
                 [&](const WriteDeferred& b) {
                   out["runId"] = b.run_id;
                   out["target"] = encode_provisioned(b.target);
                 },
                 [&](const RefCreated& b) {
                   out["name"] = b.name;
                   out["at"] = optional_string_json(b.at);
                 },
                 [&](const RefDeleted& b) { out["name"] = b.name; },
                 [&](const InputRequested& b) {
                   out["runId"] = b.run_id;
                   out["kind"] = to_string(b.kind);
                   out["assistantEntryId"] = b.assistant_entry_id;
                   out["toolIndex"] = b.tool_index;
                   out["toolCallId"] = b.tool_call_id;
                   out["toolName"] = b.tool_name;
                   out["arguments"] = b.arguments;
                   if (b.rule) out["rule"] = *b.rule;
                   if (b.question) out["question"] = *b.question;
                   if (!b.choices.empty()) out["choices"] = b.choices;
                 },
                 [&](const InputResolved& b) {
                   out["runId"] = b.run_id;
                   out["requestId"] = b.request_id;
                   out["decision"] = to_string(b.decision);
                   if (b.arguments) out["arguments"] = *b.arguments;
                   if (b.remember) out["remember"] = *b.remember;
                   if (b.reason) out["reason"] = *b.reason;
                   if (b.answer) out["answer"] = *b.answer;
                   out["by"] = b.by;
                 },
                 [&](const Damaged& b) {
                   if (b.run_id) out["runId"] = *b.run_id;
                   if (b.name) out["name"] = *b.name;
                   if (b.at) out["at"] = *b.at;
                   detail::encode_damage(out, b.damage);
                 },
             },
             body);
}

// ---- decoding ---------------------------------------------------------------

ProvisionedEntry read_provisioned(ObjectReader& r, std::string_view key) {
  const Json* value = r.required(key);
  if (value == nullptr) return {};
  return r.take(decode_provisioned(*value, r.field(key)));
}

std::vector<ProvisionedEntry> read_provisioned_list(ObjectReader& r, std::string_view key) {
  std::vector<ProvisionedEntry> entries;
  const Json* list = r.required(key);
  if (list == nullptr) return entries;
  if (!list->is_array()) {
    r.fail_at(key, "expected an array");
    return entries;
  }
  for (std::size_t i = 0; i < list->size() && r.ok(); ++i) {
    entries.push_back(r.take(decode_provisioned((*list)[i], detail::index_path(r.field(key), i))));
  }
  return entries;
}

OperationIntent decode_intent(ObjectReader& r) {
  const OperationKind kind = r.one_of<OperationKind>("kind");
  if (!r.ok()) return RunIntent{};
  if (kind == OperationKind::run) {
    RunIntent i;
    i.initial_messages = read_provisioned_list(r, "initialMessages");
    i.system_prompt_override = r.optional_string("systemPromptOverride");
    i.resume_data = r.optional_object("resumeData");
    i.extra = r.extra();
    return i;
  }
  if (kind == OperationKind::compaction) {
    CompactionIntent i;
    i.custom_instructions = r.optional_string("customInstructions");
    i.result_entry_id = r.string("resultEntryId");
    i.extra = r.extra();
    return i;
  }
  NavigationIntent i;
  i.target_id = r.string("targetId");
  i.destination_leaf_id = r.nullable_string("destinationLeafId");
  i.summarize = r.boolean("summarize");
  i.custom_instructions = r.optional_string("customInstructions");
  i.label = r.optional_string("label");
  i.summary_entry_id = r.optional_string("summaryEntryId");
  i.label_entry_id = r.optional_string("labelEntryId");
  i.leaf_entry_id = r.string("leafEntryId");
  i.extra = r.extra();
  return i;
}

OperationStarted decode_operation_started(ObjectReader& r) {
  OperationStarted b;
  b.source_leaf_id = r.nullable_string("sourceLeafId");
  r.nested("intent", ObjectReader::Presence::required, [&](ObjectReader& ir) { b.intent = decode_intent(ir); });
  return b;
}

OperationFinished decode_operation_finished(ObjectReader& r) {
  OperationFinished b;
  b.run_id = r.string("runId");
  b.outcome = r.one_of<OperationOutcome>("outcome");
  r.nested("error", ObjectReader::Presence::optional, [&](ObjectReader& er) {
    b.error = Error::recorded(er.string("code"), er.string("message"));
    b.error_extra = er.extra();
  });
  return b;
}

GenerationStarted decode_generation_started(ObjectReader& r) {
  GenerationStarted b;
  b.run_id = r.string("runId");
  b.purpose = r.one_of<GenerationPurpose>("purpose");
  b.attempt = r.integer("attempt");
  r.nested("model", ObjectReader::Presence::required, [&](ObjectReader& mr) {
    b.model.provider = mr.string("provider");
    b.model.model_id = mr.string("modelId");
    b.model.extra = mr.extra();
  });
  return b;
}

ToolStarted decode_tool_started(ObjectReader& r) {
  ToolStarted b;
  b.run_id = r.string("runId");
  b.assistant_entry_id = r.string("assistantEntryId");
  b.tool_index = r.integer("toolIndex");
  b.tool_call_id = r.string("toolCallId");
  b.tool_name = r.string("toolName");
  b.effective_args = r.object("effectiveArgs");
  b.result_entry_id = r.string("resultEntryId");
  b.replay = r.one_of<Replay>("replay");
  b.child_session = r.optional_string("childSession");
  return b;
}

InputRequested decode_input_requested(ObjectReader& r) {
  InputRequested b;
  b.run_id = r.string("runId");
  b.kind = r.one_of<InputKind>("kind");
  b.assistant_entry_id = r.string("assistantEntryId");
  b.tool_index = r.integer("toolIndex");
  b.tool_call_id = r.string("toolCallId");
  b.tool_name = r.string("toolName");
  b.arguments = r.object("arguments");
  b.rule = r.optional_string("rule");
  b.question = r.optional_string("question");
  b.choices = detail::read_strings(r, "choices", /*required=*/false);
  return b;
}

InputResolved decode_input_resolved(ObjectReader& r) {
  InputResolved b;
  b.run_id = r.string("runId");
  b.request_id = r.string("requestId");
  b.decision = r.one_of<InputDecision>("decision");
  b.arguments = r.optional_object("arguments");
  b.remember = r.optional_string("remember");
  b.reason = r.optional_string("reason");
  b.answer = r.optional_string("answer");
  b.by = r.string("by");
  return b;
}

HarnessBody decode_harness_body(RecordType type, ObjectReader& r) {
  switch (type) {
    case RecordType::operation_started:
      return decode_operation_started(r);
    case RecordType::operation_cancelled: {
      OperationCancelled b;
      b.run_id = r.string("runId");
      b.reason = r.one_of<CancelReason>("reason");
      return b;
    }
    case RecordType::operation_finished:
      return decode_operation_finished(r);
    case RecordType::generation_started:
      return decode_generation_started(r);
    case RecordType::tool_started:
      return decode_tool_started(r);
    case RecordType::queue_enqueued: {
      QueueEnqueued b;
      b.queue = r.one_of<QueueKind>("queue");
      b.run_id = r.optional_string("runId");
      b.target = read_provisioned(r, "target");
      return b;
    }
    case RecordType::write_deferred: {
      WriteDeferred b;
      b.run_id = r.string("runId");
      b.target = read_provisioned(r, "target");
      return b;
    }
    case RecordType::ref_created: {
      RefCreated b;
      b.name = r.string("name");
      b.at = r.nullable_string("at");
      return b;
    }
    case RecordType::ref_deleted:
      return RefDeleted{r.string("name")};
    case RecordType::input_requested:
      return decode_input_requested(r);
    case RecordType::input_resolved:
      return decode_input_resolved(r);
    case RecordType::damaged: {
      Damaged b;
      b.run_id = r.optional_string("runId");
      b.name = r.optional_string("name");
      b.at = r.optional_string("at");
      b.damage = detail::decode_damage(r);
      return b;
    }
    default:
      // Callers pass harness types only.
      r.fail_at("type", fmt::format("'{}' is not a harness record type", to_string(type)));
      return RefDeleted{};
  }
}

}  // namespace

OperationKind kind_of(const OperationIntent& intent) {
  return std::visit(Overloaded{
                        [](const RunIntent&) { return OperationKind::run; },
                        [](const CompactionIntent&) { return OperationKind::compaction; },
                        [](const NavigationIntent&) { return OperationKind::navigation; },
                    },
                    intent);
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

namespace detail {

void encode_damage(Json& out, const DamageReport& damage) {
  if (damage.was) out["was"] = to_string(*damage.was);
  out["reason"] = damage.reason;
  out["bytes"] = damage.bytes;
  out["openRuns"] = damage.open_runs;
  if (damage.original) out["original"] = *damage.original;
  out["repairedAt"] = damage.repaired_at;
}

DamageReport decode_damage(ObjectReader& r) {
  DamageReport damage;
  if (const auto was = r.optional_string("was")) {
    damage.was = parse_record_type(*was);
    if (!damage.was) r.fail_at("was", fmt::format("unknown record type '{}'", *was));
  }
  damage.reason = r.string("reason");
  damage.bytes = r.integer("bytes");
  if (const Json* runs = r.required("openRuns")) {
    if (!runs->is_array()) {
      r.fail_at("openRuns", "expected an array");
    } else {
      for (const Json& run : *runs) {
        if (!run.is_string()) {
          r.fail_at("openRuns", "expected an array of strings");
          break;
        }
        damage.open_runs.push_back(run.get<std::string>());
      }
    }
  }
  damage.original = r.optional_string("original");
  damage.repaired_at = r.string("repairedAt");
  return damage;
}

Json encode_harness(const HarnessRecord& record, std::optional<std::int64_t> seq) {
  Json out = {{"type", to_string(type_of(record.body))}};
  if (seq) out["seq"] = *seq;
  out["id"] = record.id;
  out["ref"] = record.ref;
  out["timestamp"] = record.timestamp;
  encode_harness_body(out, record.body);
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
  record.body = decode_harness_body(type, r);
  record.extra = r.extra();
  if (!r.ok()) return std::unexpected(r.status().error());
  return record;
}

}  // namespace detail
}  // namespace cairn
