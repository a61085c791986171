// The durable harness: an agent loop over a session log that records every
// decision before its effect (durable-harness-design.txt; DESIGN.md, Harness
// semantics). Operations on different refs run concurrently; a blocking call
// (prompt, resume) runs the operation on the caller's thread, and steer,
// abort and the rest may be called from any thread, hooks and listeners
// included. No harness lock is held across a provider request, a tool, a
// hook or a listener.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cairn/error.hpp"
#include "cairn/harness/approval.hpp"
#include "cairn/harness/events.hpp"
#include "cairn/harness/hooks.hpp"
#include "cairn/harness/results.hpp"
#include "cairn/harness/session_tree.hpp"
#include "cairn/harness/tool.hpp"
#include "cairn/harness/watch.hpp"
#include "cairn/llm/provider.hpp"
#include "cairn/secrets.hpp"
#include "cairn/store/session.hpp"
#include "cairn/store/store.hpp"

namespace cairn {

struct RetryPolicy {
  int max_attempts = 4;  // attempts per request cycle, the first included
  std::chrono::milliseconds base_delay{1000};
  std::chrono::milliseconds max_delay{30000};
  double jitter = 0.2;  // ± this fraction of the delay
};

enum class QueueMode { one_at_a_time, all };

// A skill: instructions the model reads when the user invokes it (pi's
// SKILL.md). `location` is where it came from, for relative references.
struct Skill {
  std::string name;
  std::string description;
  std::string content;
  std::string location;
};

// A prompt with arguments: $1 … $9 are the positional arguments, $@ and
// $ARGUMENTS all of them joined by spaces.
struct PromptTemplate {
  std::string name;
  std::string description;
  std::string content;
};

struct Resources {
  std::vector<Skill> skills;
  std::vector<PromptTemplate> prompt_templates;
};

// A template's text with `args` substituted.
std::string expand_template(const std::string& content, const std::vector<std::string>& args);

// The system prompt: a fixed text, or a function evaluated for every request.
// The function sees the active tools, so a tool change mid-run rebuilds it.
class SystemPrompt {
 public:
  using Fn = std::function<std::string(const std::vector<std::string>& active_tools)>;

  SystemPrompt() = default;
  SystemPrompt(std::string text) : fn_([text = std::move(text)](const std::vector<std::string>&) { return text; }) {}
  SystemPrompt(const char* text) : SystemPrompt(std::string(text)) {}
  template <class F>
    requires std::is_invocable_r_v<std::string, F&, const std::vector<std::string>&>
  SystemPrompt(F fn) : fn_(std::move(fn)) {}

  explicit operator bool() const { return static_cast<bool>(fn_); }
  // Empty when none is configured.
  std::string operator()(const std::vector<std::string>& active_tools) const {
    return fn_ ? fn_(active_tools) : std::string();
  }

 private:
  Fn fn_;
};

struct HarnessOptions {
  std::shared_ptr<Session> session;
  Models models;
  Model model;  // initial: a branch's own model_change entries win
  ThinkingLevel thinking_level = ThinkingLevel::off;
  std::vector<Tool> tools;
  std::optional<std::vector<std::string>> active_tool_names;  // default: every tool
  // Made for each tool call and handed to the tool as ToolContext::app (the
  // working directory, a client, whatever the application's tools share).
  std::function<std::any()> tool_context;
  SystemPrompt system_prompt;
  Resources resources;
  StreamOptions stream_options;
  RetryPolicy retry;
  CompactionSettings compaction;
  QueueMode steering_mode = QueueMode::one_at_a_time;
  QueueMode follow_up_mode = QueueMode::one_at_a_time;
  // AgentMessages to provider messages, before each request.
  std::function<std::vector<LlmMessage>(const std::vector<AgentMessage>&)> convert_to_llm;
  // Which tool calls run unasked, wait for a human's answer, or are refused.
  // The default allows every call.
  ApprovalPolicy approval;
  // Values (provider keys) that must reach no record, event or result: the
  // harness redacts them from model responses, streamed partials and tool
  // results before it appends or publishes them.
  Secrets secrets;
  // What more to say of a call to a tool that is not there (a tool of a
  // server that is missing or gone, when tools come from outside): appended
  // to the call's error result. A run suspended in a replay-safe call of a
  // tool this describes resumes, the call answered with that error; one of
  // a tool it does not describe (nullopt) is refused with missing_identities.
  std::function<std::optional<std::string>(std::string_view tool_name)> describe_missing_tool;
  // The sandbox policy of tool calls (DESIGN.md, "Sandbox"), recorded in
  // each call's tool_started and handed to the tool as ToolContext::sandbox.
  // A run keeps the policy its first call recorded: a resume, here or on
  // another machine, applies that one to the run's later calls, not this.
  // Empty: nothing is recorded and the tools decide.
  std::optional<SandboxRecord> sandbox;
  // Whether this process can enforce a recorded policy: an error message
  // when it cannot (cairn::sandbox_unavailable), and resume() then refuses
  // the run with sandbox_unavailable. Empty: every policy is taken as
  // enforceable.
  std::function<std::string(const SandboxRecord& policy)> sandbox_check;
};

class HarnessCore;

struct NavigateOptions {
  bool summarize = false;
  std::optional<std::string> custom_instructions;  // replace the summary prompt's instructions
  std::optional<std::string> label;  // set on the target entry
};

// The operation surface of one ref: a small handle, cheap to copy. A handle
// of a deleted ref rejects every call with unknown_ref.
class AgentRef {
 public:
  const std::string& name() const { return name_; }
  std::optional<std::string> leaf_id() const;

  RunResult prompt(std::string text, std::vector<ImageContent> images = {});
  RunResult prompt(std::vector<AgentMessage> messages);
  // A prompt that invokes a skill (rejected with unknown_skill when there is
  // no such skill), or a prompt template with its arguments (unknown_template).
  RunResult skill(const std::string& name, const std::string& additional_instructions = {});
  RunResult prompt_from_template(const std::string& name, const std::vector<std::string>& args = {});
  // Summarises the ref's older context into a compaction entry, as its own
  // operation (kind "compaction"): the log keeps every entry, the context
  // the model sees starts at the summary. Fails, durably and with the cause,
  // when there is nothing to shed or the summary cannot be had.
  RunResult compact(std::optional<std::string> custom_instructions = std::nullopt);
  // Moves the ref's leaf to `target_id` (to its parent when it is a user
  // message, whose text comes back as editor_text), as its own operation
  // (kind "navigation"). With `summarize`, the branch left behind is
  // summarised into a branch_summary entry at the new leaf.
  RunResult navigate_tree(const std::string& target_id, NavigateOptions options = {});
  // A new session in `store` (the one holding this harness's session) from
  // this ref's branch — up to options.entry_id when given, else its leaf —
  // or, with Scope::tree, the whole tree; the new header names this session
  // as its parent. While this ref or another runs, only closed history is
  // copied and ForkResult::left_out says what stayed behind.
  Result<ForkResult> fork(Store& store, ForkOptions options = {}) const;
  // Continues this ref's suspended operation to its durable end. One that
  // awaits input continues once every request it waits for is answered;
  // before that, resume() returns awaiting_input at once and changes nothing.
  ResumeResult resume();
  // Durable the moment it returns: operation_cancelled is in the log, the run
  // is signalled, and reconciliation goes on in the background. An operation
  // awaiting input is ended here: its asked calls get "aborted" results.
  AbortResult abort();

  // The input requests of this ref's open operation that await an answer.
  std::vector<PendingInput> pending_inputs() const;
  // Answers one of them: the input_resolved is durable when this returns ok.
  // It does not continue the operation: resume() does, here or in whichever
  // process next opens the session. Rejected with unknown_input,
  // already_resolved or invalid_response; nothing is appended then.
  InputResult respond(const std::string& request_id, InputResponse response);

  QueueResult steer(std::string text, std::vector<ImageContent> images = {});
  QueueResult steer(AgentMessage message);
  QueueResult follow_up(std::string text, std::vector<ImageContent> images = {});
  QueueResult follow_up(AgentMessage message);
  QueueResult next_run(std::string text, std::vector<ImageContent> images = {});
  QueueResult next_run(AgentMessage message);

  // Blocks until this ref has no active operation (a suspended one does not count).
  void wait_for_idle() const;
  // Runs `callback` once the ref is idle: now, on this thread, if it is.
  void run_when_idle(std::function<void()> callback);

  // Branch-anchored config: read from the ref's branch, written as entries
  // (deferred while the ref runs).
  Model model() const;
  Result<std::string> set_model(const std::string& provider, const std::string& id);
  ThinkingLevel thinking_level() const;
  Result<std::string> set_thinking_level(ThinkingLevel level);
  std::vector<std::string> active_tools() const;
  Result<std::string> set_active_tools(std::vector<std::string> names);

  // This ref's view of the session: reads default to its leaf, writes chain
  // to it (deferred while it runs).
  SessionTree session() const { return SessionTree(core_, name_); }

  Subscription on_event(EventListener listener) const;  // this ref's events only
  // This ref's transcript, run state and queues, then its events from there.
  Result<RefWatch> watch() const;

  AgentRef(std::shared_ptr<HarnessCore> core, std::string name) : core_(std::move(core)), name_(std::move(name)) {}

 private:
  std::shared_ptr<HarnessCore> core_;
  std::string name_;
};

class AgentHarness {
 public:
  struct Created;
  // Opens the session's state, finds every ref's unfinished operation, starts
  // no effects. Fails when the log's tail of an open operation is not one the
  // harness could have written (corrupt_log, naming the seq).
  static Result<Created> create(HarnessOptions options);

  ~AgentHarness();
  AgentHarness(AgentHarness&&) noexcept;
  AgentHarness& operator=(AgentHarness&&) noexcept;

  AgentRef main() const;
  std::optional<AgentRef> ref(std::string_view name) const;
  Result<AgentRef> create_ref(std::string name, std::optional<std::string> at);
  Status delete_ref(const std::string& name);
  std::vector<RefStatus> refs() const;

  // Registries shared by every ref. A running operation takes them whole at
  // each checkpoint (and when it starts): a change made while a step runs
  // applies from the next step, never to half of one.
  std::vector<std::string> tool_names() const;
  Status set_tools(std::vector<Tool> tools);
  Resources resources() const;
  void set_resources(Resources resources);
  RetryPolicy retry_policy() const;
  void set_retry_policy(RetryPolicy policy);
  CompactionSettings compaction_settings() const;
  void set_compaction_settings(CompactionSettings settings);
  QueueMode steering_mode() const;
  void set_steering_mode(QueueMode mode);
  QueueMode follow_up_mode() const;
  void set_follow_up_mode(QueueMode mode);
  StreamOptions stream_options() const;
  void set_stream_options(StreamOptions options);

  Hooks& hooks();
  Subscription on_event(EventListener listener);  // every ref's events
  // The refs inventory, then every event from there.
  SessionWatch watch_session();
  bool faulted() const;
  std::shared_ptr<Session> session() const;

  // Detaches: new calls are rejected with `closed`; running operations are
  // not aborted (they finish, or stay resumable in the log).
  void close();

 private:
  explicit AgentHarness(std::shared_ptr<HarnessCore> core);
  std::shared_ptr<HarnessCore> core_;
};

struct AgentHarness::Created {
  AgentHarness harness;
  std::vector<SuspendedOperation> suspended;
};

}  // namespace cairn
