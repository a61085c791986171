// The run procedure (durable-harness-design.txt: runProcedure, driverLoop,
// requestAssistant, reconcileToolBatch, cancellationPath), on the thread of
// the call that runs it (prompt, resume or abort). Its parts are in
// run_procedure.cpp (the procedure, the driver loop, auto-compaction, the
// cancellation path), request_assistant.cpp and tool_batch.cpp.
#pragma once

#include <any>
#include <tuple>
#include <utility>

#include "operation.hpp"

namespace cairn {

class StreamRedactor;

class RunProcedure final : public Operation {
 public:
  using Operation::Operation;

 private:
  OperationKind kind() const override { return OperationKind::run; }
  RunResult procedure() override;
  RunResult cancellation_path() override;
  RunResult failed(Error error) override;
  void describe_end(Outcome outcome, RunResult& result, Json& data) override;

  // ---- the loop (run_procedure.cpp) ------------------------------------------

  RunResult driver_loop();
  void checkpoint();
  std::vector<ProvisionedEntry> take_queued(std::vector<ProvisionedEntry> OpState::*queue, QueueMode mode);
  bool needs_response();
  void publish_queue_update();
  void step();
  std::optional<std::string> before_run_end();
  void compact_if_over_threshold();
  bool auto_compact(CompactionReason reason);
  ToolResult cancelled_call_result(const ToolCallState& call, bool damaged);
  AssistantMessage error_message(const Model& model, std::string text);

  // ---- requests (request_assistant.cpp) --------------------------------------

  AssistantMessage request_assistant();
  AttemptOutcome<AssistantMessage> request_attempt(const Attempt& attempt);
  Error retries_exhausted(const Attempt& attempt);
  const LlmContext& build_request(LlmContext& scratch);
  StreamOptions before_request(const Attempt& attempt);
  PayloadHook before_payload();
  ProviderResponse stream_response(const Attempt& attempt, const LlmContext& context, const StreamOptions& options,
                                   bool& started);
  void relay(const ProviderEvent& e, StreamRedactor& redactor, bool& started);
  std::string_view redact(const ProviderEvent& e, StreamRedactor& redactor, AssistantMessage& partial, std::string& passed,
                          std::vector<std::pair<int, std::string>>& released);
  void publish_update(ProviderEvent::Type type, int index, std::string_view delta,
                      std::shared_ptr<const AgentMessage> partial);
  static ProviderEvent::Type delta_type(const AssistantMessage& message, int index);
  AttemptOutcome<AssistantMessage> handle_response(ProviderResponse& response, bool started);
  AssistantMessage after_response(const ProviderResponse& response, AssistantMessage message);

  // ---- tools (tool_batch.cpp) ------------------------------------------------

  // One unanswered call of a batch, on its way to its result.
  struct PendingCall {
    ToolCallState call;
    std::optional<Tool> tool;  // set: execute it
    Json args;
    std::string result_id;             // provisioned in tool_started; empty: assigned at the append
    std::optional<ToolResult> result;  // set: the outcome is known, nothing (more) to execute
    bool began = false;                // tool_start was published and running_tools holds it
    std::any app;                      // the application's context for the call
    std::optional<std::string> child_session;  // replay resume: provisioned in tool_started
    std::optional<SandboxRecord> sandbox;      // recorded in tool_started: what the call runs under
    // Replay resume: the child parked on these requests (ToolAwaitingInput); no result.
    std::optional<std::vector<PendingInput>> waiting;
  };
  // A batch's results as step_end lists them: (call index, encoded result).
  using BatchResults = std::vector<std::pair<std::int64_t, Json>>;

  Json reconcile_tool_batch(const ToolBatch& batch, const std::string& step_id = {});
  bool runs_in_parallel(const std::vector<const ToolCallState*>& open);
  void run_parallel(const std::vector<const ToolCallState*>& open, const std::string& assistant_id,
                    const std::string& step_id, BatchResults& results);
  PendingCall prepare(const ToolCallState& call, const std::string& assistant_id);
  // approval_gate.cpp: the policy's verdict, or the answer to the call's
  // input request; throws RunWaiting while that request has no answer.
  void gate(PendingCall& p, const std::string& assistant_id);
  void ask(InputRequested request);
  void apply_answer(PendingCall& p, const InputState& input);
  // The sandbox a call runs under: the run's recorded policy, else the
  // harness's; with the network when the call asks for it and
  // `human_allowed` (its approval was answered allow).
  std::optional<SandboxRecord> sandbox_for(const PendingCall& p, bool human_allowed);
  PendingCall resumed_call(const ToolCallState& call);
  bool before_tool(PendingCall& p);
  void start(PendingCall& p, const std::string& assistant_id, const std::string& step_id);
  ToolResult execute(PendingCall& p, std::stop_token cancel, const std::string& step_id);
  ToolResult execute_tool(PendingCall& p, std::stop_token cancel, const std::string& step_id);
  void end_call(PendingCall& p, const std::string& step_id, BatchResults& results);
  ToolContext recovery_context(const ToolCallState& call);
  template <typename Step>
  std::optional<std::string> on_behalf_of(const ToolCallState& call, std::string_view what, Step&& step);
  std::optional<std::string> settle(const ToolCallState& call);
  ToolResult ended_child_result(const ToolCallState& call);
  static ToolResult interrupted_result(std::string_view why, const std::optional<std::string>& unsettled);
  ToolResult after_tool(const PendingCall& p, ToolResult result);

  bool overflow_compacted_ = false;  // a run compacts on overflow once
  bool threshold_refused_ = false;   // a run whose threshold compaction was refused does not retry it
};

}  // namespace cairn
