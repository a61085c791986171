// Records: the lines of a session log. Tree entries (pi's session format v3
// plus `leaf` and `active_tools_change`) form the tree shared by all refs;
// harness records describe orchestration (DESIGN.md, Vocabulary). Both carry
// `seq`, contiguous from 0 across every kind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/json.hpp"
#include "cairn/log/message.hpp"

namespace cairn {

// Every record type this build knows, in one enum so indexes stay small.
enum class RecordType : std::uint8_t {
  message, model_change, thinking_level_change, active_tools_change, compaction, branch_summary, custom,
  custom_message, label, session_info, leaf, damaged_entry,
  operation_started, operation_cancelled, operation_finished, generation_started, tool_started,
  queue_enqueued, write_deferred, ref_created, ref_deleted, input_requested, input_resolved, damaged,
  ignorable,  // an unknown type marked ignorable
};

std::string_view to_string(RecordType type);
std::optional<RecordType> parse_record_type(std::string_view name);

// ---- tree entry bodies ------------------------------------------------------

struct MessageBody {
  AgentMessage message;
};
struct ModelChange {
  std::string provider;
  std::string model_id;
};
struct ThinkingLevelChange {
  ThinkingLevel thinking_level = ThinkingLevel::off;
};
struct ActiveToolsChange {
  std::vector<std::string> active_tool_names;
};
struct Compaction {
  std::string summary;
  std::string first_kept_entry_id;
  std::int64_t tokens_before = 0;
  std::optional<Json> details;
  std::optional<bool> from_hook;
};
struct BranchSummary {
  std::string from_id;
  std::string summary;
  std::optional<Json> details;
  std::optional<bool> from_hook;
};
// Application state in the session; projects to nothing.
struct Custom {
  std::string custom_type;
  std::optional<Json> data;
};
// An application message that does enter the model's context (as a user message).
struct CustomMessageBody {
  std::string custom_type;
  UserContent content;
  std::optional<Json> details;
  bool display = true;
};
// Latest-wins bookmark on an entry; an absent label clears it.
struct Label {
  std::string target_id;
  std::optional<std::string> label;
  bool label_null = false;  // the clear was written as `"label": null` rather than omitted
};
// Latest-wins session name.
struct SessionInfo {
  std::optional<std::string> name;
};
// Moves `ref`'s leaf to `target_id` (null: before the first entry). The only
// way a leaf moves other than by appending a child at it.
struct Leaf {
  std::optional<std::string> target_id;
};

// What `cairn repair` knows of a record it found damaged (a checksum that
// failed, bytes that did not parse, a rule the record broke) and replaced by
// a placeholder of the same seq. The original bytes are in the backup repair
// named; the placeholder keeps what could be recovered of the record's index
// fields (from its damaged bytes, an SQLite row's columns, or the records
// that refer to it), so the tree and the operations around it stay whole.
struct DamageReport {
  // The record's type, when it could be read. A placeholder acts on the log's
  // state as that type would (a damaged operation_finished still closes its
  // operation, a damaged leaf still moves its ref), and in no other way.
  std::optional<RecordType> was;
  std::string reason;        // why repair found it damaged
  std::int64_t bytes = 0;    // its size as it was stored
  // The operations that were open when it was written. The record may have
  // been one of their tool starts or results, so none of them may run a tool
  // again: they can be aborted, never resumed.
  std::vector<std::string> open_runs;
  // Set when the record itself was intact but depended on a damaged one in a
  // way no placeholder could satisfy (its parent's id was lost): it is kept
  // here, as stored, instead of in the log's live state.
  std::optional<std::string> original;
  std::string repaired_at;  // ISO 8601
};

// The placeholder of a damaged tree entry: a node of the tree, so that the
// entries below it stay attached; it projects to nothing.
struct DamagedEntry {
  DamageReport damage;
  std::optional<std::string> target_id;  // was leaf or label: the target, when recovered
};

using TreeBody = std::variant<MessageBody, ModelChange, ThinkingLevelChange, ActiveToolsChange, Compaction,
                              BranchSummary, Custom, CustomMessageBody, Label, SessionInfo, Leaf, DamagedEntry>;

struct TreeEntry {
  std::string id;
  std::optional<std::string> parent_id;
  std::string timestamp;  // ISO 8601, UTC
  // The ref whose leaf this append moved. Absent reads as "main" (pi files).
  std::optional<std::string> ref;
  TreeBody body;
  Json extra;  // unknown keys: null or an object, as a message's (message.hpp)
};

// A tree entry whose id is allocated (and persisted inside a harness record)
// before the entry exists; parentId and timestamp are assigned when it is
// appended. Encoded without those two fields.
using ProvisionedEntry = TreeEntry;

// ---- closed sets -------------------------------------------------------------

// The values a record field may take, each spelled in JSON as the log and the
// HTTP API write it (to_string; also what it becomes as a Json, see
// cairn/json.hpp). parse_* reads that spelling back and nothing else; the
// decoders refuse any other value, naming the field.

// What an operation does: operation_started's intent kind.
enum class OperationKind { run, compaction, navigation };
std::string_view to_string(OperationKind kind);
std::optional<OperationKind> parse_operation_kind(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<OperationKind> = true;

// Why an operation was cancelled: a caller's abort, or the harness shutting down.
enum class CancelReason { user, shutdown };
std::string_view to_string(CancelReason reason);
std::optional<CancelReason> parse_cancel_reason(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<CancelReason> = true;

// How an operation ended, as its operation_finished records it.
enum class OperationOutcome { completed, aborted, failed, cancelled };
std::string_view to_string(OperationOutcome outcome);
std::optional<OperationOutcome> parse_operation_outcome(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<OperationOutcome> = true;

// What a request cycle asks the model for: the run's next step, or a summary
// for a compaction or a navigation ("branch_summary").
enum class GenerationPurpose { step, compaction, branch_summary };
std::string_view to_string(GenerationPurpose purpose);
std::optional<GenerationPurpose> parse_generation_purpose(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<GenerationPurpose> = true;

// May a call whose tool_started exists, but whose result does not, run again
// after a crash? `safe`: yes (reads, idempotent writes). `never`: the effect
// may have happened; recovery records a synthetic "interrupted" result.
// `resume`: the call runs a child session whose id the harness provisions
// in its tool_started (ToolContext::child_session); after a crash the call
// runs again with that id, and the tool picks the child up where its own
// log says it is (make_child_session_tool) instead of starting over.
enum class Replay { never, safe, resume };
std::string_view to_string(Replay replay);
std::optional<Replay> parse_replay(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<Replay> = true;

// Which sandbox a tool call's processes ran under (DESIGN.md, "Sandbox"),
// spelled "off" | "readOnly" | "workspaceWrite" in a tool_started (the CLI
// spells them read-only and workspace-write, as Codex does). read_only:
// nothing is writable but a private temporary directory; workspace_write:
// also the session's working directory; off: no sandbox.
enum class SandboxMode { off, read_only, workspace_write };
std::string_view to_string(SandboxMode mode);
std::optional<SandboxMode> parse_sandbox_mode(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<SandboxMode> = true;

// The policy a tool_started records: what a resume on any machine applies to
// the run's later calls. The paths it covers (the workspace, the hidden
// files) are the machine's own; the record names only what they mean.
struct SandboxRecord {
  SandboxMode mode = SandboxMode::off;
  bool network = false;  // sockets other than AF_UNIX allowed
  // Set on a call that asked for the network (bash's `network` argument)
  // under a policy without it, and that a human allowed: the network is
  // this call's alone, never the run's policy for its later calls.
  std::optional<bool> network_granted;
  Json extra = Json::object();
  bool operator==(const SandboxRecord& other) const {
    return mode == other.mode && network == other.network && network_granted == other.network_granted;
  }
  // The policy of the run this call belongs to: without a grant of its own.
  SandboxRecord run_policy() const {
    SandboxRecord out = *this;
    if (out.network_granted.value_or(false)) out.network = false;
    out.network_granted.reset();
    return out;
  }
};

// The three queues of a ref (durable-harness-design.txt, timelines), spelled
// "steer" | "followUp" | "nextRun".
enum class QueueKind { steer, follow_up, next_run };
std::string_view to_string(QueueKind queue);
std::optional<QueueKind> parse_queue_kind(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<QueueKind> = true;

// What an input request asks a human: to approve a tool call, or to answer
// the question tool's question.
enum class InputKind { approval, question };
std::string_view to_string(InputKind kind);
std::optional<InputKind> parse_input_kind(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<InputKind> = true;

// The answer to an input request: allow or deny a call, or answer a question.
enum class InputDecision { allow, deny, answer };
std::string_view to_string(InputDecision decision);
std::optional<InputDecision> parse_input_decision(std::string_view text);
template <>
inline constexpr bool kSpelledInJson<InputDecision> = true;

// ---- harness record bodies --------------------------------------------------

struct RunIntent {
  std::vector<ProvisionedEntry> initial_messages;
  std::optional<std::string> system_prompt_override;
  std::optional<Json> resume_data;
  Json extra = Json::object();
};
struct CompactionIntent {
  std::optional<std::string> custom_instructions;
  std::string result_entry_id;
  Json extra = Json::object();
};
struct NavigationIntent {
  std::string target_id;
  std::optional<std::string> destination_leaf_id;
  bool summarize = false;
  std::optional<std::string> custom_instructions;
  std::optional<std::string> label;
  std::optional<std::string> summary_entry_id;
  std::optional<std::string> label_entry_id;
  std::string leaf_entry_id;
  Json extra = Json::object();
};
using OperationIntent = std::variant<RunIntent, CompactionIntent, NavigationIntent>;

struct OperationStarted {
  std::optional<std::string> source_leaf_id;
  OperationIntent intent;
};
struct OperationCancelled {
  std::string run_id;
  CancelReason reason = CancelReason::user;
};
struct OperationFinished {
  std::string run_id;
  OperationOutcome outcome = OperationOutcome::completed;
  std::optional<Error> error;
  Json error_extra = Json::object();  // unknown keys of `error` (Error itself has no extra)
};
struct ModelRef {
  std::string provider;
  std::string model_id;
  Json extra = Json::object();
};
struct GenerationStarted {
  std::string run_id;
  GenerationPurpose purpose = GenerationPurpose::step;
  std::int64_t attempt = 1;
  ModelRef model;
};
struct ToolStarted {
  std::string run_id;
  std::string assistant_entry_id;
  std::int64_t tool_index = 0;
  std::string tool_call_id;
  std::string tool_name;
  Json effective_args = Json::object();
  std::string result_entry_id;
  Replay replay = Replay::never;
  // replay "resume": the id of the child session the call runs, provisioned
  // here before the session exists, so that it is created exactly once.
  std::optional<std::string> child_session;
  // The sandbox the call's processes run under; absent in logs written
  // before there was one, and when the harness was given no policy.
  std::optional<SandboxRecord> sandbox;
};
struct QueueEnqueued {
  QueueKind queue = QueueKind::steer;
  std::optional<std::string> run_id;
  ProvisionedEntry target;
};
struct WriteDeferred {
  std::string run_id;
  ProvisionedEntry target;
};
struct RefCreated {
  std::string name;
  std::optional<std::string> at;
};
struct RefDeleted {
  std::string name;
};
// A durable question to a human about one tool call of a run's batch
// (DESIGN.md, "Input requests"): approve it (kind "approval": the policy's
// rule said ask) or answer it (kind "question": the call is the question
// tool's). The record's id is the request's id. Appended after before_tool
// and before any tool_started of the call; the operation then waits.
struct InputRequested {
  std::string run_id;
  InputKind kind = InputKind::approval;
  std::string assistant_entry_id;
  std::int64_t tool_index = 0;
  std::string tool_call_id;
  std::string tool_name;
  Json arguments = Json::object();  // the call's arguments as the policy saw them
  std::optional<std::string> rule;  // approval: the rule that asked ("default" for the policy's default)
  std::optional<std::string> question;  // question: its text
  std::vector<std::string> choices;     // question: the offered answers, if any
  // approval: the sandbox the call runs under if it is allowed, shown to
  // whoever answers (absent without a sandbox policy, and in older logs).
  std::optional<SandboxRecord> sandbox;
};
// The answer to an input request: "allow" (optionally with edited
// arguments, and a rule to remember so that matching calls no longer ask),
// "deny" (with a reason the model reads) or "answer" (a question's). The
// record's timestamp is when; `by` is who.
struct InputResolved {
  std::string run_id;
  std::string request_id;
  InputDecision decision = InputDecision::allow;
  std::optional<Json> arguments;       // allow: the edited arguments the call runs with
  std::optional<std::string> remember;  // allow: a rule, e.g. "bash(npm run test:*)"
  std::optional<std::string> reason;    // deny
  std::optional<std::string> answer;    // answer
  std::string by;
};
// The placeholder of a damaged record that was not a tree entry (or whose
// kind could not be told).
struct Damaged {
  DamageReport damage;
  std::optional<std::string> run_id;  // the operation it belonged to, when recovered
  std::optional<std::string> name;    // was ref_created / ref_deleted: the ref
  std::optional<std::string> at;      // was ref_created: its anchor
};

using HarnessBody = std::variant<OperationStarted, OperationCancelled, OperationFinished, GenerationStarted,
                                 ToolStarted, QueueEnqueued, WriteDeferred, RefCreated, RefDeleted, InputRequested,
                                 InputResolved, Damaged>;

struct HarnessRecord {
  std::string id;
  std::string ref;
  std::string timestamp;
  HarnessBody body;
  Json extra = Json::object();
};

// A record of a type this build does not know, marked `"ignorable": true` by
// its writer: kept verbatim, skipped by every projection.
struct IgnorableRecord {
  Json json;
};

struct Record {
  std::int64_t seq = -1;  // assigned by the session at append
  std::variant<TreeEntry, HarnessRecord, IgnorableRecord> body;
};

// ---- type names -------------------------------------------------------------

bool is_tree_type(RecordType type);
bool is_harness_type(RecordType type);
RecordType type_of(const TreeBody& body);
RecordType type_of(const HarnessBody& body);
RecordType type_of(const Record& record);
bool is_placeholder(RecordType type);  // damaged_entry or damaged
// The damage report of a placeholder record; null for every other record.
const DamageReport* damage_of(const Record& record);

// The operation kind of an OperationStarted.
OperationKind kind_of(const OperationIntent& intent);

// Harness records that belong to an operation name it; operation_started is its
// own run. Empty for records outside any operation (nextRun items, refs).
std::string_view run_id_of(const HarnessRecord& record);  // a view into `record`

// ---- codec ------------------------------------------------------------------

// Encodes a record as its log line's JSON object: {"type":…,"seq":…,…}. A
// record whose seq is negative is encoded without seq.
Json encode(const Record& record);
Json encode(const TreeEntry& entry);
Json encode(const HarnessRecord& record);
Json encode_provisioned(const ProvisionedEntry& entry);
// As a tool_started holds it: {"mode", "network", "networkGranted"?}.
Json encode(const SandboxRecord& policy);

// Decodes one log line's object. Checks the shape and the field rules of its
// type (check_fields); unknown types without "ignorable": true are refused with
// code unknown_type. `require_seq`: records read from a cairn log must carry
// seq. An ignorable record keeps its JSON less `seq` (Record::seq holds it).
Result<Record> decode_record(const Json& json, bool require_seq = true);
// These two check the shape only (JSON types, required keys); run
// check_fields on the record that holds the result for the value rules.
Result<TreeEntry> decode_tree_entry(const Json& json, std::string_view path = "");
Result<ProvisionedEntry> decode_provisioned(const Json& json, std::string_view path);

// Appends the stored line of a message entry (user, assistant or tool result
// message, no extra keys) with seq 0: the bytes of encode(Record{0, entry})
// .dump(), written without a JSON value. False, with nothing appended, for
// any other entry and for one whose values JSON cannot hold losslessly (NaN,
// infinity, text that is not UTF-8): the encoder then decides and words it.
[[nodiscard]] bool append_entry_line(std::string& out, const TreeEntry& entry);

// A stored log line decoded: what decode_record(Json::parse(line)) returns,
// record or error, or nullopt when the line is not JSON (each reader words
// that itself). The message entries that make up most of a log are decoded
// straight from the line's bytes, without a JSON DOM (decode_common_line).
std::optional<Result<Record>> decode_record_line(std::string_view line);
// That fast path alone: a message entry of the shapes cairn and pi write,
// with its seq, decoded from the bytes; nullopt for anything it does not take
// whole (another type, an unknown or duplicate key, a value of the wrong
// type), which the general decoders then decide. Shape only, like
// decode_tree_entry: check_fields is not run.
std::optional<Record> decode_common_line(std::string_view line);

}  // namespace cairn
