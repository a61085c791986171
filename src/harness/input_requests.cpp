// Answers to durable input requests (DESIGN.md, "Input requests"; invariant
// 13): respond() appends input_resolved for a request of the ref's open
// operation, under the ref's lock so that a request is answered at most
// once; the operation continues on resume(). And the approval policy's
// verdict, with the rules earlier answers asked the session to remember.
#include <fmt/format.h>

#include "core.hpp"

namespace cairn {
namespace {

InputResult refused(Errc code, std::string message) {
  return InputResult{.outcome = Outcome::rejected, .error = Error(code, std::move(message))};
}

// Why `response` cannot answer `request`, if it cannot.
std::optional<Error> misfit(const InputState& request, const InputResponse::Decision decision, const InputResolved& response) {
  using D = InputResponse::Decision;
  const bool question = request.request.kind == InputKind::question;
  if (question && decision == D::allow) {
    return Error(Errc::invalid_response, fmt::format("request {} is a question: answer it, or deny to decline", request.id));
  }
  if (!question && decision == D::answer) {
    return Error(Errc::invalid_response, fmt::format("request {} asks to approve a call: allow or deny it", request.id));
  }
  if (decision != D::allow && (response.arguments || response.remember)) {
    return Error(Errc::invalid_response, "edited arguments and a rule to remember go with allow only");
  }
  if (decision != D::deny && response.reason) {
    return Error(Errc::invalid_response, "a reason goes with deny only");
  }
  if (response.arguments && !response.arguments->is_object()) {
    return Error(Errc::invalid_response, "edited arguments must be a JSON object");
  }
  if (response.remember) {
    if (auto rule = ApprovalRule::parse(*response.remember, ApprovalDecision::allow); !rule) {
      return Error(Errc::invalid_response, rule.error().message);
    }
  }
  return std::nullopt;
}

}  // namespace

// An answer to a child session's request the parked operation waits for:
// passed on to the call's tool, which makes it durable in the child's log.
// Nothing when `request_id` is no such request.
std::optional<InputResult> HarnessCore::respond_child(const std::shared_ptr<RefRuntime>& rt, const std::string& request_id,
                                                      InputResponse& response) {
  std::lock_guard ref_lock(rt->ref_mu);
  ToolContext context{.ref = rt->name, .update = [](const ToolResult&) {}, .session_id = session->header().id, .recovery = true};
  std::function<InputResult(const ToolContext&, const std::string&, InputResponse)> pass_on;
  std::string tool_name;
  {
    std::lock_guard lock(mu);
    const auto child = std::find_if(rt->child_inputs.begin(), rt->child_inputs.end(),
                                    [&](const RefRuntime::ChildInput& c) { return c.input.id == request_id; });
    if (child == rt->child_inputs.end()) return std::nullopt;
    if (auto refusal_now = refusal(*rt)) return InputResult{.outcome = refusal_now->outcome, .error = std::move(refusal_now->error)};
    const auto tool = std::find_if(options.tools.begin(), options.tools.end(),
                                   [&](const Tool& t) { return t.name == child->tool_name; });
    if (tool == options.tools.end() || !tool->respond_child) {
      return refused(Errc::unknown_input, fmt::format("input request '{}' is child session {}'s, and tool {} that runs it "
                                                      "is not here to pass the answer on",
                                                      request_id, child->input.child_session.value_or("?"), child->tool_name));
    }
    pass_on = tool->respond_child;
    tool_name = tool->name;
    context.run_id = rt->op ? rt->op->id : std::string();
    context.tool_call_id = child->tool_call_id;
    context.child_session = child->input.child_session;
  }
  InputResult result;
  try {
    result = pass_on(context, request_id, response);
  } catch (const std::exception& e) {
    result = InputResult{.outcome = Outcome::faulted,
                         .error = Error(Errc::io_error, fmt::format("passing the answer to child session {} failed: {}",
                                                                   context.child_session.value_or("?"), e.what()))};
  }
  if (!result.ok()) return result;
  {
    std::lock_guard lock(mu);
    std::erase_if(rt->child_inputs, [&](const RefRuntime::ChildInput& c) { return c.input.id == request_id; });
    if (rt->suspended) rt->suspended->awaiting_input = rt->all_pending_inputs();
    if (rt->op && !rt->active) rt->status = idle_status(*rt);
  }
  Json inner = {{"type", "input_resolved"}, {"requestId", request_id},
                {"decision", to_string(response.decision)}, {"by", response.by}, {"seq", result.seq}};
  Json linkage = {{"session", context.child_session.value_or("")}, {"toolCallId", context.tool_call_id},
                  {"depth", child_depth(session->header()) + 1}};
  publish(Event{EventType::child_session_event, rt->name, context.run_id, std::nullopt,
                Json{{"child", std::move(linkage)}, {"event", std::move(inner)}}});
  return result;
}

InputResult HarnessCore::respond(const std::shared_ptr<RefRuntime>& rt, const std::string& request_id,
                                 InputResponse response) {
  if (auto passed = respond_child(rt, request_id, response)) return std::move(*passed);
  InputResolved body{.request_id = request_id,
                     .decision = response.decision,
                     .arguments = std::move(response.arguments),
                     .remember = std::move(response.remember),
                     .reason = std::move(response.reason),
                     .by = std::move(response.by)};
  if (response.decision == InputResponse::Decision::answer) body.answer = std::move(response.answer);
  if (body.by.empty()) return refused(Errc::invalid_response, "who answered (by) must not be empty");
  HarnessRecord record{.id = session->new_entry_id(), .ref = rt->name, .timestamp = now_iso8601()};
  {
    Json encoded = {{"reason", body.reason.value_or("")}, {"answer", body.answer.value_or("")},
                    {"remember", body.remember.value_or("")}, {"by", body.by}};
    if (body.arguments) encoded["arguments"] = *body.arguments;
    if (auto invalid = invalid_text(encoded, "the response", Errc::invalid_response)) {
      return InputResult{.outcome = Outcome::rejected, .error = std::move(*invalid)};
    }
  }
  std::int64_t seq;
  std::optional<Error> fold_error;
  {
    std::lock_guard ref_lock(rt->ref_mu);
    {
      std::lock_guard lock(mu);
      if (auto refusal_now = refusal(*rt)) {
        return InputResult{.outcome = refusal_now->outcome, .error = std::move(refusal_now->error)};
      }
      const InputState* request = nullptr;
      if (rt->op) {
        for (const auto& input : rt->op->inputs) {
          if (input.id == request_id) request = &input;
        }
      }
      if (!request) {
        return refused(Errc::unknown_input, fmt::format("ref '{}' has no input request '{}' open", rt->name, request_id));
      }
      if (request->resolution) {
        return refused(Errc::already_resolved, fmt::format("input request '{}' was already answered ({} by {})",
                                                           request_id, to_string(request->resolution->decision),
                                                           request->resolution->by));
      }
      if (auto bad = misfit(*request, response.decision, body)) return InputResult{.outcome = Outcome::rejected, .error = std::move(bad)};
      body.run_id = rt->op->id;
    }
    record.body = body;
    auto appended = session->append(Record{.body = record});
    if (!appended) {
      enter_fault(appended.error());
      return InputResult{.outcome = Outcome::faulted, .error = appended.error()};
    }
    seq = appended->first_seq;
    std::lock_guard lock(mu);
    fold_error = fold_own(*rt, Record{.seq = seq, .body = record});
    if (body.remember) remembered.push_back(*ApprovalRule::parse(*body.remember, ApprovalDecision::allow));
    if (rt->suspended) rt->suspended->awaiting_input = rt->all_pending_inputs();
  }
  if (fold_error) {
    enter_fault(*fold_error);
    return InputResult{.outcome = Outcome::faulted, .error = std::move(fold_error)};
  }
  Json data = {{"requestId", request_id}, {"decision", to_string(body.decision)}, {"by", body.by}};
  if (body.remember) data["remember"] = *body.remember;
  publish(Event{EventType::input_resolved, rt->name, body.run_id, seq, std::move(data)});
  return InputResult{.seq = seq};
}

ApprovalVerdict HarnessCore::approve(const ApprovalCall& call) {
  ApprovalPolicy policy;
  std::vector<ApprovalRule> rules;
  {
    std::lock_guard lock(mu);
    policy = options.approval;
    rules = remembered;
  }
  // Evaluated without the lock: the callback is the application's code.
  return policy.evaluate(call, rules);
}

// Every answer's remembered rule, oldest first. Unlike the operation state
// this reads no tail but the input_resolved records themselves, which are as
// many as the answers a human gave.
Status HarnessCore::restore_remembered() {
  HarnessQuery query{.type = RecordType::input_resolved};
  while (true) {
    auto page = session->find_harness_entries(query);
    if (!page) return std::unexpected(page.error());
    for (const auto& record : page->items) {
      const auto& resolved = std::get<InputResolved>(record.body);
      if (!resolved.remember) continue;
      // The field rules let only a parseable rule into the log; one that is
      // not (written by hand) is ignored rather than trusted.
      if (auto rule = ApprovalRule::parse(*resolved.remember, ApprovalDecision::allow)) remembered.push_back(*rule);
    }
    if (!page->next_cursor) break;
    query.cursor = page->next_cursor;
  }
  return {};
}

}  // namespace cairn
