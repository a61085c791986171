// reconcileToolBatch (durable-harness-design.txt): answers every call of a
// step's tool batch that has no result yet, live and on resume alike.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <thread>

#include <fmt/format.h>

#include "cairn/log/ids.hpp"
#include "model_output.hpp"
#include "run_procedure.hpp"

namespace cairn {
namespace {

// At most this many calls of a parallel batch run at once; the others start
// as running ones end, each with its tool_started only then.
constexpr std::size_t kMaxParallelCalls = 16;

Json tool_result_json(const ToolResult& result) {
  Json content = Json::array();
  for (const auto& block : result.content) content.push_back(encode(block));
  Json json = {{"content", std::move(content)}, {"isError", result.is_error}};
  if (result.details) json["details"] = *result.details;
  return json;
}

// The results of a parallel batch's calls, handed from the workers that ran
// them to the run's thread, which records them as they come.
class Completions {
 public:
  void push(std::size_t slot, ToolResult result) {
    {
      std::lock_guard lock(mu_);
      items_.emplace_back(slot, std::move(result));
    }
    cv_.notify_one();
  }
  std::pair<std::size_t, ToolResult> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !items_.empty(); });
    auto item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::size_t, ToolResult>> items_;
};

}  // namespace

// make_child_session_tool writes child.depth into a child's header.
int child_depth(const SessionHeader& header) {
  const auto child = header.extra.find("child");
  if (child == header.extra.end() || !child->is_object()) return 0;
  const auto depth = child->find("depth");
  return depth != child->end() && depth->is_number_integer() ? depth->get<int>() : 0;
}

// Each call's tool_started is appended right before it executes and its
// result as soon as it ends, so a crash loses no finished call's result and
// starts no call it had not reached: calls that never began take the full
// path (validation, before_tool, tool_started, execution, after_tool); calls
// that began before a crash are settled first (Tool::settle), then run
// again if their tool is replay-safe and get a synthetic "interrupted"
// result otherwise. A cancellation stops the batch between calls: what
// started runs to its end and keeps its result, the rest is the
// cancellation path's. Returns the results as step_end lists them.
Json RunProcedure::reconcile_tool_batch(const ToolBatch& batch, const std::string& step_id) {
  std::vector<const ToolCallState*> open;
  for (const auto& call : batch.calls) {
    if (!call.result_exists) open.push_back(&call);
  }
  BatchResults results;
  try {
    if (runs_in_parallel(open)) {
      run_parallel(open, batch.assistant_entry_id, step_id, results);
    } else {
      for (const ToolCallState* call : open) {
        check_cancelled();
        PendingCall p = prepare(*call, batch.assistant_entry_id);
        if (!p.result) start(p, batch.assistant_entry_id, step_id);
        if (!p.result) p.result = execute(p, cancel_, step_id);
        end_call(p, step_id, results);
        if (p.waiting) throw RunWaiting{};  // the calls after it wait with it
      }
    }
  } catch (const RunCancelled&) {
    // The calls not answered are the cancellation path's.
  }
  // (RunWaiting goes on up: the run parks, and its resume answers the rest.)
  std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Json out = Json::array();
  for (auto& [index, result] : results) out.push_back(std::move(result));
  return out;
}

// A batch runs its calls at the same time when more than one of them will
// execute and every such call's tool allows it.
bool RunProcedure::runs_in_parallel(const std::vector<const ToolCallState*>& open) {
  std::size_t executing = 0;
  bool all_parallel = true;
  for (const ToolCallState* call : open) {
    const Tool* tool = nullptr;
    if (call->started) {
      if (replay_of(*call->started) != Replay::never) tool = config_.find_tool(call->name);
    } else if (!call->raw_arguments) {
      tool = config_.find_active_tool(call->name);
    }
    if (!tool) continue;
    ++executing;
    all_parallel = all_parallel && tool->parallel;
  }
  return executing > 1 && all_parallel;
}

// The calls of a parallel batch: prepared, started and ended on the run's
// thread (hooks never run concurrently, and every append of the ref stays
// on one thread), executed on their own threads, at most kMaxParallelCalls
// at once; results are taken as they come.
void RunProcedure::run_parallel(const std::vector<const ToolCallState*>& open, const std::string& assistant_id,
                                const std::string& step_id, BatchResults& results) {
  std::vector<PendingCall> calls;
  calls.reserve(open.size());  // the workers hold pointers into it
  Completions done;
  // The calls' stop token: the run's cancellation, and the batch's own end
  // should the run stop early (a fault), so that no worker outlives it.
  std::stop_source stop;
  std::stop_callback relay(cancel_, [&stop] { stop.request_stop(); });
  std::vector<std::jthread> workers;
  struct StopFirst {
    std::stop_source& stop;
    ~StopFirst() { stop.request_stop(); }  // before the workers are joined
  } stop_first{stop};

  std::size_t running = 0;
  auto take_one = [&] {
    auto [slot, result] = done.pop();
    --running;
    calls[slot].result = std::move(result);
    end_call(calls[slot], step_id, results);
  };
  bool cancelled = false, waiting = false;
  try {
    for (const ToolCallState* call : open) {
      check_cancelled();
      PendingCall& p = calls.emplace_back(prepare(*call, assistant_id));
      if (!p.result) {
        while (running >= kMaxParallelCalls) take_one();
        start(p, assistant_id, step_id);
      }
      if (p.result) {
        end_call(p, step_id, results);
        continue;
      }
      const std::size_t slot = calls.size() - 1;
      workers.emplace_back([this, &p, &done, slot, token = stop.get_token(), &step_id, context = trace::current()] {
        trace::ContextScope scope(context);  // the call's span is the step's child, as on the run's thread
        done.push(slot, execute(p, token, step_id));
      });
      ++running;
    }
  } catch (const RunCancelled&) {
    cancelled = true;  // what started runs to its end below
  } catch (const RunWaiting&) {
    waiting = true;  // the same: the calls after it wait with it
  }
  while (running > 0) take_one();
  if (cancelled) throw RunCancelled{};
  waiting = waiting || std::any_of(calls.begin(), calls.end(), [](const PendingCall& p) { return p.waiting; });
  if (waiting) throw RunWaiting{};
}

// Decides what answers `call`: for a call that began before a crash, see
// resumed_call; for a new call, the checks before its start — arguments
// that are JSON, an active tool, valid arguments, before_tool, and the
// approval policy (approval_gate.cpp), which may make the run wait.
RunProcedure::PendingCall RunProcedure::prepare(const ToolCallState& call, const std::string& assistant_id) {
  if (call.started) return resumed_call(call);
  PendingCall p{.call = call, .args = call.args};
  check_cancelled();
  if (call.raw_arguments) {
    p.result = invalid_arguments_result(*call.raw_arguments);
    return p;
  }
  const Tool* tool = config_.find_active_tool(call.name);
  if (!tool) {
    p.result = ToolResult::text(config_.missing_tool_message(call.name, "not found"), true);
    return p;
  }
  if (auto it = config_.validators.find(call.name); it != config_.validators.end()) {
    if (auto valid = it->second->validate(call.args); !valid) {
      p.result = ToolResult::text(fmt::format("Invalid arguments for tool {}: {}", call.name, valid.error().message), true);
      return p;
    }
  }
  if (before_tool(p)) {
    p.tool = *tool;
    gate(p, assistant_id);
  }
  return p;
}

// A call whose tool_started exists: before_tool and validation already ran
// and cleared it, its effective arguments are the durable outcome. It is
// settled, then run again (replay safe) or recorded interrupted; a call
// that runs a child session (replay resume) is not settled but run again
// with its provisioned child, which it picks up where the child's log is.
RunProcedure::PendingCall RunProcedure::resumed_call(const ToolCallState& call) {
  PendingCall p{.call = call, .args = call.started->effective_args, .result_id = call.started->result_entry_id,
                .sandbox = call.started->sandbox};
  if (replay_of(*call.started) == Replay::resume) {
    p.child_session = call.started->child_session;
    if (const Tool* tool = config_.find_tool(call.name); tool && tool->replay == Replay::resume) {
      p.tool = *tool;
    } else {
      p.result = ToolResult::text(config_.missing_tool_message(call.name, "is not available to resume its child session"),
                                  true);
    }
    return p;
  }
  const std::optional<std::string> unsettled = settle(call);
  if (replay_of(*call.started) == Replay::safe && !unsettled) {
    if (const Tool* tool = config_.find_tool(call.name)) p.tool = *tool;
    if (!p.tool) p.result = ToolResult::text(config_.missing_tool_message(call.name, "is not available to run again"), true);
  } else {
    p.result = interrupted_result(unsettled ? "and it was not run again" : "and the tool is not safe to run again", unsettled);
  }
  return p;
}

// The before_tool hooks: they may replace the arguments or block the call.
// False when blocked (the call's result says so).
bool RunProcedure::before_tool(PendingCall& p) {
  each_hook("before_tool", core_.hooks.handlers(&Hooks::Lists::before_tool), [&](const auto& hook) {
    auto out = hook(hook_context(), BeforeToolEvent{p.call.call_id, p.call.name, p.args});
    if (!out) return true;
    if (out->args) {
      if (out->args->is_object()) {
        p.args = std::move(*out->args);
      } else {
        core_.report_handler_error(rt_->name, run_id_, "hook", "before_tool",
                                   "the arguments it returned are not a JSON object; the call keeps its own");
      }
    }
    if (out->block) {
      p.result = ToolResult::text(fmt::format("Tool call blocked: {}", *out->block), true);
      return false;
    }
    return true;
  });
  return !p.result;
}

// The call's start: its application context, then (for a new call) its
// tool_started, the durable fact that it began; a cancellation that came
// first throws RunCancelled instead, and the call never began.
void RunProcedure::start(PendingCall& p, const std::string& assistant_id, const std::string& step_id) {
  const auto& make_context = config_.tool_context;
  // Made here on the run's thread, so that the factory need not be
  // thread-safe. A factory that throws fails that call, not the run.
  try {
    if (make_context) p.app = make_context();
  } catch (const std::exception& e) {
    p.result = ToolResult::text(fmt::format("Tool {} could not start: its context failed: {}", p.tool->name, e.what()), true);
    return;
  }
  std::optional<std::int64_t> seq;
  if (!p.call.started) {
    p.result_id = core_.session->new_entry_id();
    if (p.tool->replay == Replay::resume) p.child_session = new_session_id();
    // The run's policy once it has one (a resume elsewhere keeps it), with
    // the network when a human allowed this call that asked for it.
    const bool human_allowed = with_op([&](const OpState& op) {
      const InputState* input = op.input_for(assistant_id, p.call.index);
      return input && input->request.kind == InputKind::approval && input->resolution &&
             input->resolution->decision == InputDecision::allow;
    });
    p.sandbox = sandbox_for(p, human_allowed);
    seq = append_harness(ToolStarted{.run_id = run_id_, .assistant_entry_id = assistant_id,
                                     .tool_index = p.call.index, .tool_call_id = p.call.call_id,
                                     .tool_name = p.call.name, .effective_args = p.args,
                                     .result_entry_id = p.result_id,
                                     .replay = p.tool->replay,
                                     .child_session = p.child_session,
                                     .sandbox = p.sandbox});
  }
  {
    std::lock_guard lock(core_.mu);
    rt_->running_tools.push_back(RunningTool{p.call.call_id, p.call.name, p.args, std::nullopt});
  }
  if (watched()) {
    core_.publish(event(EventType::tool_start, {{"stepId", step_id}, {"toolCallId", p.call.call_id}, {"toolName", p.call.name},
                                       {"args", p.args}},
                        seq));
  }
  p.began = true;
}

// Runs the call's tool, on the run's thread or a worker's. An exception
// becomes an error result.
ToolResult RunProcedure::execute(PendingCall& p, std::stop_token cancel, const std::string& step_id) {
  trace::Span span("cairn.harness.tool", [&] {
    Json payload = {{"runId", run_id_},
                    {"toolName", p.call.name},
                    {"toolCallId", p.call.call_id},
                    {"replay", to_string(p.tool->replay)},
                    {"gen_ai.operation.name", "execute_tool"},
                    {"gen_ai.tool.name", p.call.name},
                    {"gen_ai.tool.call.id", p.call.call_id}};
    if (p.call.started) payload["recovery"] = true;  // run again after a crash
    if (trace::capture_content()) payload["gen_ai.tool.call.arguments"] = secrets().redact(p.args.dump());
    return payload;
  });
  ToolResult result = execute_tool(p, std::move(cancel), step_id);
  if (span) {
    span.set("isError", result.is_error);
    if (trace::capture_content()) {
      Json content = tool_result_json(result);
      secrets().redact_in_place(content);
      span.set("gen_ai.tool.call.result", content.dump());
    }
    if (result.is_error) span.fail("tool_error", fmt::format("tool {} returned an error result", p.call.name));
  }
  return result;
}

ToolResult RunProcedure::execute_tool(PendingCall& p, std::stop_token cancel, const std::string& step_id) {
  ToolContext context{.ref = rt_->name, .run_id = run_id_, .tool_call_id = p.call.call_id, .cancel = std::move(cancel),
                      .app = std::move(p.app), .session_id = core_.session->header().id,
                      .depth = child_depth(core_.session->header()), .child_session = p.child_session, .recovery = p.call.started.has_value(),
                      .sandbox = p.sandbox};
  if (p.child_session) {
    // Relayed without a seq of this session: the child's own stays inside.
    context.relay = [this](const Json& linkage, const Event& child_event) {
      if (!watched()) return;
      Json inner = encode(child_event);
      Json data = {{"child", linkage}, {"event", std::move(inner)}};
      if (child_event.type == EventType::child_session_event) data = child_event.data;  // keep the innermost linkage
      core_.publish(event(EventType::child_session_event, std::move(data)));
    };
  }
  context.update = [this, &p, &step_id](const ToolResult& update) {
    ToolResult partial = update;
    sanitize_result(partial, secrets());
    {
      std::lock_guard lock(core_.mu);
      for (auto& running : rt_->running_tools) {
        if (running.tool_call_id == p.call.call_id) running.partial_result = partial;
      }
    }
    if (watched()) {
      core_.publish(event(EventType::tool_update, {{"stepId", step_id}, {"toolCallId", p.call.call_id}, {"toolName", p.call.name},
                                          {"partialResult", tool_result_json(partial)}}));
    }
  };
  try {
    return p.tool->execute ? p.tool->execute(p.args, context)
                           : ToolResult::text(fmt::format("Tool {} has no implementation", p.tool->name), true);
  } catch (ToolAwaitingInput& awaiting) {
    if (p.tool->replay == Replay::resume && !awaiting.inputs.empty()) {
      p.waiting = std::move(awaiting.inputs);
      return ToolResult{};
    }
    return ToolResult::text(fmt::format("Tool {} waited for input it cannot ask for (only a call of a child session can)",
                                        p.tool->name), true);
  } catch (const std::exception& e) {
    return ToolResult::text(fmt::format("Tool {} failed: {}", p.tool->name, e.what()), true);
  } catch (...) {
    return ToolResult::text(fmt::format("Tool {} failed", p.tool->name), true);
  }
}

// The call's end: after_tool for a call that ran, tool_end, and its result
// appended — even after a cancellation, since the call did end.
void RunProcedure::end_call(PendingCall& p, const std::string& step_id, BatchResults& results) {
  if (p.waiting) {
    // No result: the call stays open, the run parks, and its resume runs
    // the call again once the child's requests are answered.
    std::lock_guard lock(core_.mu);
    std::erase_if(rt_->running_tools, [&](const RunningTool& r) { return r.tool_call_id == p.call.call_id; });
    for (auto& input : *p.waiting) {
      rt_->child_inputs.push_back(RefRuntime::ChildInput{std::move(input), p.call.name, p.call.call_id});
    }
    return;
  }
  ToolResult result = std::move(*p.result);
  if (result.spend) add_spend(*result.spend);
  sanitize_result(result, secrets());
  if (p.began) {
    result = after_tool(p, std::move(result));
    sanitize_result(result, secrets());
    {
      std::lock_guard lock(core_.mu);
      std::erase_if(rt_->running_tools, [&](const RunningTool& r) { return r.tool_call_id == p.call.call_id; });
    }
    if (watched()) {
      core_.publish(event(EventType::tool_end, {{"stepId", step_id}, {"toolCallId", p.call.call_id}, {"toolName", p.call.name},
                                       {"result", tool_result_json(result)}, {"isError", result.is_error}}));
    }
  }
  ToolResultMessage message{.tool_call_id = p.call.call_id, .tool_name = p.call.name, .content = std::move(result.content),
                            .details = std::move(result.details), .is_error = result.is_error, .timestamp = now_unix_ms()};
  if (watched()) results.emplace_back(p.call.index, encode(AgentMessage(message)));
  append_if_missing(message_entry(std::move(message), p.result_id), /*after_cancel=*/true);
}

// The context of a call that began before its process died, for what is
// asked of its tool on its behalf (settle, end_child).
ToolContext RunProcedure::recovery_context(const ToolCallState& call) {
  ToolContext context{.ref = rt_->name, .run_id = run_id_, .tool_call_id = call.call_id, .update = [](const ToolResult&) {},
                      .session_id = core_.session->header().id,
                      .child_session = call.started ? call.started->child_session : std::nullopt, .recovery = true};
  if (config_.tool_context) context.app = config_.tool_context();
  return context;
}

// Runs `step` for a call's tool; returns why it failed, if it did (reported
// as the tool's handler error, secrets hidden).
template <typename Step>
std::optional<std::string> RunProcedure::on_behalf_of(const ToolCallState& call, std::string_view what, Step&& step) {
  std::string failure;
  try {
    step(recovery_context(call));
    return std::nullopt;
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "an unknown error";
  }
  failure = sanitize_text(std::move(failure), secrets());
  core_.report_handler_error(rt_->name, run_id_, "tool", call.name, fmt::format("{} failed: {}", what, failure));
  return failure;
}

// For a call that began before its process died: ends whatever of it may
// still run (Tool::settle) before anything is recorded for it. Returns why
// that failed, if it did.
std::optional<std::string> RunProcedure::settle(const ToolCallState& call) {
  const Tool* tool = config_.find_tool(call.name);
  if (!tool || !tool->settle) return std::nullopt;
  return on_behalf_of(call, "settle", [&](const ToolContext& context) { tool->settle(context); });
}

// A call that runs a child session, ended by its run's abort: its tool ends
// the child's run and answers with how it ended (Tool::end_child). A call
// whose tool cannot is "interrupted", still naming its child.
ToolResult RunProcedure::ended_child_result(const ToolCallState& call) {
  const Tool* tool = config_.find_tool(call.name);
  std::optional<ToolResult> ended;
  std::optional<std::string> failure;
  if (tool && tool->end_child) {
    failure = on_behalf_of(call, "ending its child session",
                           [&](const ToolContext& context) { ended = tool->end_child(context); });
  } else {
    failure = settle(call);
  }
  if (ended) return std::move(*ended);
  ToolResult result = interrupted_result("and the run was then aborted", failure);
  if (call.started && call.started->child_session) (*result.details)["childSession"] = *call.started->child_session;
  return result;
}

// The synthetic result of a call that began before its process died and is
// not run again; `why` says why not.
ToolResult RunProcedure::interrupted_result(std::string_view why, const std::optional<std::string>& unsettled) {
  std::string text = fmt::format("Tool execution was interrupted: the process stopped while it ran, {}", why);
  if (unsettled) text += fmt::format("; ending what it left running failed ({}): it may still be running", *unsettled);
  text += ". Its effects, if any, are unknown.";
  return ToolResult{.content = {TextContent{.text = std::move(text)}}, .details = Json{{"interrupted", true}}, .is_error = true};
}

ToolResult RunProcedure::after_tool(const PendingCall& p, ToolResult result) {
  each_hook("after_tool", core_.hooks.handlers(&Hooks::Lists::after_tool), [&](const auto& hook) {
    auto out = hook(hook_context(), AfterToolEvent{p.call.call_id, p.call.name, p.args, result});
    if (!out) return;
    if (out->content) result.content = std::move(*out->content);
    if (out->details) result.details = std::move(*out->details);
    if (out->is_error) result.is_error = *out->is_error;
  });
  return result;
}

}  // namespace cairn
