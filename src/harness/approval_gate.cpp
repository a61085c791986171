// The approval gate of a tool batch (DESIGN.md, "Input requests"; invariant
// 13): between before_tool and tool_started, the policy decides whether a
// new call runs, is refused, or waits for a human. A wait is durable: the
// input_requested is appended before anyone is told, the run parks holding
// nothing, and whoever resumes it (this process or another) finds the
// answer in the log. A call is asked about once: a resumed run reads the
// request it made instead of asking again.
#include <fmt/format.h>

#include "run_procedure.hpp"

namespace cairn {
namespace {

std::optional<std::string> subject_of(const Tool& tool, const Json& args) {
  if (tool.approval_subject.empty() || !args.is_object()) return std::nullopt;
  auto it = args.find(tool.approval_subject);
  if (it == args.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool wants_network(const Tool& tool, const Json& args) {
  if (tool.network_argument.empty() || !args.is_object()) return false;
  auto it = args.find(tool.network_argument);
  return it != args.end() && it->is_boolean() && it->get<bool>();
}

Json pending_json(const PendingInput& input) {
  Json out = {{"requestId", input.id},     {"kind", to_string(input.kind)}, {"toolCallId", input.tool_call_id},
              {"toolName", input.tool_name}, {"arguments", input.arguments}, {"requestedAt", input.requested_at}};
  if (input.rule) out["rule"] = *input.rule;
  if (input.question) out["question"] = *input.question;
  if (!input.choices.empty()) out["choices"] = input.choices;
  if (input.sandbox) out["sandbox"] = encode(*input.sandbox);
  return out;
}

}  // namespace

std::optional<SandboxRecord> RunProcedure::sandbox_for(const PendingCall& p, bool human_allowed) {
  const auto recorded = with_op([](const OpState& op) { return op.sandbox; });
  std::optional<SandboxRecord> policy = recorded ? recorded : core_.options.sandbox;
  if (policy && policy->mode != SandboxMode::off && !policy->network && human_allowed &&
      wants_network(*p.tool, p.args)) {
    policy->network = true;
    policy->network_granted = true;
  }
  return policy;
}

void RunProcedure::gate(PendingCall& p, const std::string& assistant_id) {
  auto find = [&] {
    return with_op([&](const OpState& op) {
      const InputState* input = op.input_for(assistant_id, p.call.index);
      return input ? std::optional<InputState>(*input) : std::nullopt;
    });
  };
  std::optional<InputState> input = find();
  if (!input) {
    InputRequested request{.run_id = run_id_, .assistant_entry_id = assistant_id, .tool_index = p.call.index,
                           .tool_call_id = p.call.call_id, .tool_name = p.call.name, .arguments = p.args};
    if (p.tool->asks_user) {
      const Json* question = p.args.contains("question") ? &p.args["question"] : nullptr;
      if (!question || !question->is_string() || question->get<std::string>().empty()) {
        p.result = ToolResult::text(fmt::format("Tool {} needs a non-empty string argument 'question'", p.call.name), true);
        return;
      }
      request.kind = InputKind::question;
      request.question = question->get<std::string>();
      if (auto choices = p.args.find("choices"); choices != p.args.end() && choices->is_array()) {
        for (const Json& choice : *choices) {
          if (choice.is_string()) request.choices.push_back(choice.get<std::string>());
        }
      }
    } else {
      ApprovalVerdict verdict;
      try {
        verdict = core_.approve(ApprovalCall{.ref = rt_->name, .tool_name = p.call.name, .args = &p.args,
                                             .subject = subject_of(*p.tool, p.args),
                                             .sandbox = sandbox_for(p, false),
                                             .wants_network = wants_network(*p.tool, p.args)});
      } catch (const std::exception& e) {
        // A policy callback that throws cannot say yes: a human decides.
        core_.report_handler_error(rt_->name, run_id_, "approval", p.call.name, e.what());
        verdict = ApprovalVerdict{ApprovalDecision::ask, "the approval callback failed"};
      }
      if (verdict.decision == ApprovalDecision::allow) return;
      if (verdict.decision == ApprovalDecision::deny) {
        p.result = ToolResult::text(fmt::format("Tool call denied by the approval policy (rule {})", verdict.rule), true);
        return;
      }
      request.kind = InputKind::approval;
      request.rule = verdict.rule.empty() ? std::string("default") : verdict.rule;
      request.sandbox = sandbox_for(p, true);
    }
    ask(std::move(request));
    input = find();  // an answer may have come already
  }
  if (!input || !input->resolution) throw RunWaiting{};
  apply_answer(p, *input);
}

// Appends the request, then tells the listeners: durable before anyone sees it.
void RunProcedure::ask(InputRequested request) {
  const std::int64_t seq = append_harness(std::move(request));
  PendingInput pending;
  {
    std::lock_guard lock(core_.mu);
    const std::string& id = rt_->op->inputs.back().id;
    for (auto& candidate : rt_->op->pending_inputs()) {
      if (candidate.id == id) pending = std::move(candidate);
    }
  }
  if (!pending.id.empty()) core_.publish(event(EventType::input_requested, pending_json(pending), seq));
}

// The call as its answer leaves it: allowed (with the edited arguments,
// checked against the tool's schema like the model's), denied (the reason
// is the model's to read), or a question answered.
void RunProcedure::apply_answer(PendingCall& p, const InputState& input) {
  const InputResolved& answer = *input.resolution;
  if (answer.decision == InputDecision::allow) {
    if (!answer.arguments) return;
    if (auto it = config_.validators.find(p.call.name); it != config_.validators.end()) {
      if (auto valid = it->second->validate(*answer.arguments); !valid) {
        p.result = ToolResult::text(fmt::format("The arguments {} gave tool {} are not valid: {}", answer.by,
                                                p.call.name, valid.error().message),
                                    true);
        return;
      }
    }
    p.args = *answer.arguments;
    return;
  }
  if (answer.decision == InputDecision::answer) {
    p.result = ToolResult{.content = {TextContent{.text = answer.answer.value_or("")}},
                          .details = Json{{"question", input.request.question.value_or("")},
                                          {"answer", answer.answer.value_or("")},
                                          {"by", answer.by}},
                          .is_error = false};
    return;
  }
  const bool question = input.request.kind == InputKind::question;
  std::string text = question ? fmt::format("The user ({}) declined to answer", answer.by)
                              : fmt::format("Tool call denied by the user ({})", answer.by);
  if (answer.reason && !answer.reason->empty()) text += fmt::format(": {}", *answer.reason);
  p.result = ToolResult{.content = {TextContent{.text = std::move(text)}},
                        .details = Json{{"denied", true}, {"by", answer.by}},
                        .is_error = true};
}

}  // namespace cairn
