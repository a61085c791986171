// make_child_session_tool: a call that runs a prompt in a child session and
// answers with the child's final message (cairn/tools/child_session.hpp).
#include "cairn/tools/child_session.hpp"

#include <atomic>
#include <stop_token>

#include <fmt/format.h>

namespace cairn {
namespace {

Json default_parameters() {
  return Json{{"type", "object"},
              {"properties",
               {{"prompt", {{"type", "string"}, {"description", "The task, with everything the subagent needs to know"}}},
                {"description", {{"type", "string"}, {"description", "A short (3-5 word) description of the task"}}}}},
              {"required", Json::array({"prompt"})}};
}

ToolResult error_result(std::string text, Json details = Json::object()) {
  ToolResult result = ToolResult::text(std::move(text), true);
  if (!details.empty()) result.details = std::move(details);
  return result;
}

Json spend_json(const Usage& spend) {
  return Json{{"input", spend.input},           {"output", spend.output},
              {"cacheRead", spend.cache_read},   {"cacheWrite", spend.cache_write},
              {"totalTokens", spend.total_tokens}, {"cost", spend.cost.total}};
}

// What the child's log says its model requests cost, over every process that
// worked on it: the usage of each assistant message it holds.
Usage logged_spend(const Session& session) {
  Usage spend;
  EntryQuery query{.type = RecordType::message, .order = Order::oldest_first, .limit = 512};
  for (;;) {
    auto page = session.find_entries(query);
    if (!page) break;
    for (const auto& entry : page->items) {
      const auto* body = std::get_if<MessageBody>(&entry.body);
      const auto* assistant = body ? std::get_if<AssistantMessage>(&body->message) : nullptr;
      if (assistant) add_usage(spend, assistant->usage);
    }
    if (!page->next_cursor) break;
    query.cursor = page->next_cursor;
  }
  return spend;
}

std::string text_of(const AssistantMessage& message) {
  std::string text;
  for (const auto& block : message.content) {
    if (const auto* t = std::get_if<TextContent>(&block)) {
      if (!text.empty() && !t->text.empty()) text += "\n";
      text += t->text;
    }
  }
  return text;
}

// The last assistant message on the child's main branch: its answer.
std::optional<AssistantMessage> last_answer(const Session& session) {
  auto context = session.build_context("main");
  if (!context) return std::nullopt;
  for (auto it = context->messages.rbegin(); it != context->messages.rend(); ++it) {
    if (const auto* assistant = std::get_if<AssistantMessage>(&*it)) return *assistant;
  }
  return std::nullopt;
}

// How the child's last finished run on main ended, if one did.
std::optional<OperationFinished> finished_run(const Session& session) {
  auto page = session.find_harness_entries(
      HarnessQuery{.type = RecordType::operation_finished, .ref = "main", .order = Order::newest_first, .limit = 1});
  if (!page || page->items.empty()) return std::nullopt;
  if (const auto* finished = std::get_if<OperationFinished>(&page->items.front().body)) return *finished;
  return std::nullopt;
}

Outcome outcome_of(OperationOutcome logged) {
  if (logged == OperationOutcome::completed) return Outcome::ok;
  if (logged == OperationOutcome::aborted) return Outcome::aborted;
  if (logged == OperationOutcome::cancelled) return Outcome::cancelled;
  return Outcome::failed;
}

// How the child's last run on main ended, with its answer, if it ended.
std::optional<RunResult> how_it_ended(const Session& session) {
  auto finished = finished_run(session);
  if (!finished) return std::nullopt;
  return RunResult{.outcome = outcome_of(finished->outcome), .run_id = finished->run_id,
                   .final_message = last_answer(session), .error = finished->error};
}

// The call's result: the child's answer, or how its run ended without one,
// with the child's session, outcome and spend in the details.
ToolResult child_result(const Session& session, const std::string& child_session, const RunResult& result) {
  const Usage spend = logged_spend(session);
  Json details = {{"childSession", child_session},
                  {"outcome", to_string(result.outcome)},
                  {"runId", result.run_id},
                  {"spend", spend_json(spend)}};
  if (result.error) details["error"] = Json{{"code", result.error->code}, {"message", result.error->message}};
  ToolResult out;
  out.details = std::move(details);
  out.spend = spend;
  switch (result.outcome) {
    case Outcome::ok: {
      std::string text = result.final_message ? text_of(*result.final_message) : std::string();
      if (text.empty()) text = "(the subagent finished without a text answer)";
      out.content = {TextContent{.text = std::move(text)}};
      return out;
    }
    case Outcome::aborted:
    case Outcome::cancelled:
      out.content = {TextContent{.text = fmt::format("The subagent (session {}) was aborted before it finished.",
                                                     child_session)}};
      break;
    case Outcome::awaiting_input:
      out.content = {TextContent{.text = fmt::format(
                         "The subagent (session {}) stopped to wait for a human's answer, which it cannot get "
                         "here; its session keeps the question.",
                         child_session)}};
      break;
    case Outcome::faulted:
      out.content = {TextContent{.text = fmt::format(
                         "The subagent (session {}) stopped: its log could not be written ({}).", child_session,
                         result.error ? result.error->message : std::string("no cause given"))}};
      break;
    case Outcome::failed:
    case Outcome::rejected:
      out.content = {TextContent{.text = fmt::format("The subagent (session {}) failed: {}", child_session,
                                                     result.error ? result.error->message : std::string("no cause given"))}};
      break;
  }
  out.is_error = true;
  return out;
}

class ChildCall {
 public:
  ChildCall(const ChildSessionToolOptions& options, const Json& args, const ToolContext& context)
      : options_(options), args_(args), context_(context) {}

  ToolResult run() {
    const std::string prompt = args_.is_object() && args_.contains("prompt") && args_["prompt"].is_string()
                                   ? args_["prompt"].get<std::string>()
                                   : std::string();
    if (prompt.empty()) return error_result("The subagent needs a task: `prompt` must be a non-empty string.");
    if (!context_.child_session) return error_result(fmt::format("Tool {} was run without a child session id", options_.name));
    const int depth = context_.depth + 1;
    if (depth > options_.max_depth) {
      return error_result(fmt::format("A subagent cannot start another one here: {} levels of subagents is the limit.",
                                      options_.max_depth));
    }
    const ChildSpawn spawn{.child_session = *context_.child_session, .parent_session = context_.session_id,
                           .parent_ref = context_.ref, .parent_run_id = context_.run_id,
                           .tool_call_id = context_.tool_call_id, .depth = depth, .args = args_,
                           .recovery = context_.recovery};
    if (!options_.store || !options_.configure) return error_result(fmt::format("Tool {} is not configured", options_.name));
    auto configured = options_.configure(spawn);
    if (!configured) return error_result(fmt::format("The subagent could not be set up: {}", configured.error().message));
    auto session = open_or_create(spawn);
    if (!session) {
      return error_result(fmt::format("The subagent's session {} could not be opened: {}", spawn.child_session,
                                      session.error().message),
                          Json{{"childSession", spawn.child_session}});
    }
    configured->session = *session;
    auto created = AgentHarness::create(std::move(*configured));
    if (!created) {
      return error_result(fmt::format("The subagent's session {} could not be opened: {}", spawn.child_session,
                                      created.error().message),
                          Json{{"childSession", spawn.child_session}});
    }
    RunResult result = drive(created->harness, created->suspended, prompt, spawn);
    created->harness.close();
    if (result.outcome == Outcome::awaiting_input && !result.awaiting_input.empty()) {
      // The parent parks with the child's questions as its own; its resume
      // runs this call again, which resumes the child.
      for (auto& input : result.awaiting_input) {
        if (!input.child_session) input.child_session = spawn.child_session;  // a grandchild's keeps its own
      }
      throw ToolAwaitingInput{std::move(result.awaiting_input)};
    }
    return child_result(**session, spawn.child_session, result);
  }

 private:
  // The child's session: the one provisioned, if a crash left it, else new.
  Result<std::shared_ptr<Session>> open_or_create(const ChildSpawn& spawn) {
    auto opened = options_.store->open(spawn.child_session, OpenOptions{.lock_timeout = options_.lock_timeout});
    if (opened || !opened.error().is(Errc::not_found)) return opened;
    Json child = {{"parentRef", spawn.parent_ref}, {"parentRunId", spawn.parent_run_id},
                  {"toolCallId", spawn.tool_call_id}, {"depth", spawn.depth}};
    if (args_.contains("agent") && args_["agent"].is_string()) child["agent"] = args_["agent"];
    if (args_.contains("description") && args_["description"].is_string()) child["description"] = args_["description"];
    return options_.store->create(CreateOptions{.id = spawn.child_session, .cwd = options_.cwd,
                                                .parent_session = spawn.parent_session,
                                                .header_extra = Json{{"child", std::move(child)}}});
  }

  // Runs the child to its end: resumes its suspended run, reads its finished
  // one, or prompts it. The parent's cancellation aborts it, durably.
  RunResult drive(AgentHarness& harness, const std::vector<SuspendedOperation>& suspended, const std::string& prompt,
                  const ChildSpawn& spawn) {
    AgentRef main = harness.main();
    const Json linkage = {{"session", spawn.child_session}, {"toolCallId", spawn.tool_call_id}, {"depth", spawn.depth}};
    std::atomic<bool> aborting = false;
    auto abort_child = [&] {
      if (!aborting.exchange(true)) (void)main.abort();
    };
    // A cancellation before the child's run was accepted finds it idle: the
    // run's own start then checks (run_start is published once it is).
    Subscription relay = harness.on_event([&](const Event& event) {
      if (event.type == EventType::run_start && context_.cancel.stop_requested()) {
        aborting = false;
        abort_child();
      }
      if (context_.relay) context_.relay(linkage, event);
    });
    std::stop_callback on_cancel(context_.cancel, abort_child);

    const bool has_suspended = std::any_of(suspended.begin(), suspended.end(),
                                           [](const SuspendedOperation& s) { return s.ref == "main"; });
    if (has_suspended) return main.resume();
    if (auto ended = how_it_ended(*harness.session())) return *ended;
    if (context_.cancel.stop_requested()) {
      return RunResult{.outcome = Outcome::aborted, .error = Error(Errc::closed, "the parent's run was aborted first")};
    }
    return main.prompt(prompt);
  }

  const ChildSessionToolOptions& options_;
  const Json& args_;
  const ToolContext& context_;
};

// The child's harness over its session, as the call's configuration makes it.
Result<AgentHarness::Created> open_child(const ChildSessionToolOptions& options, const ToolContext& context) {
  if (!context.child_session || !options.store || !options.configure) {
    return fail(Errc::invalid_argument, "no child session to open");
  }
  auto session = options.store->open(*context.child_session,
                                     OpenOptions{.lock_timeout = options.lock_timeout});
  if (!session) return std::unexpected(session.error());
  ChildSpawn spawn{.child_session = *context.child_session, .parent_session = context.session_id,
                   .parent_ref = context.ref, .parent_run_id = context.run_id, .tool_call_id = context.tool_call_id,
                   .depth = context.depth + 1, .recovery = true};
  auto configured = options.configure(spawn);
  if (!configured) return std::unexpected(configured.error());
  configured->session = *session;
  return AgentHarness::create(std::move(*configured));
}

// What the child's main ref waits for, as the parent lists it. (A harness
// needs its session open for writing; the child's is let go at once.)
std::vector<PendingInput> child_pending_inputs(const ChildSessionToolOptions& options, const ToolContext& context) {
  auto created = open_child(options, context);
  if (!created) {
    if (created.error().is(Errc::not_found)) return {};
    throw std::runtime_error(created.error().message);
  }
  std::vector<PendingInput> inputs = created->harness.main().pending_inputs();
  created->harness.close();
  for (auto& input : inputs) {
    if (!input.child_session) input.child_session = *context.child_session;
  }
  return inputs;
}

InputResult respond_in_child(const ChildSessionToolOptions& options, const ToolContext& context,
                             const std::string& request_id, InputResponse response) {
  auto created = open_child(options, context);
  if (!created) {
    return InputResult{.outcome = Outcome::rejected,
                       .error = created.error().with_message(fmt::format("child session {}: {}",
                                                                         context.child_session.value_or("?"),
                                                                         created.error().message))};
  }
  InputResult result = created->harness.main().respond(request_id, std::move(response));
  created->harness.close();
  return result;
}

// The parent's run is aborted while this call has no result (its process
// died, perhaps while it aborted): the child's run is ended — its abort
// finished, or made — and the result says how it ended. A child that was
// never created ran nothing.
ToolResult end_child(const ChildSessionToolOptions& options, const ToolContext& context) {
  const std::string child = context.child_session.value_or("?");
  auto created = open_child(options, context);
  if (!created) {
    if (!created.error().is(Errc::not_found)) {
      throw std::runtime_error(fmt::format("child session {}: {}", child, created.error().message));
    }
    ToolResult never = ToolResult::text(
        fmt::format("The subagent (session {}) never started: its parent's run was aborted first.", child), true);
    never.details = Json{{"childSession", child}, {"outcome", to_string(Outcome::aborted)}};
    return never;
  }
  AgentHarness& harness = created->harness;
  for (const auto& op : created->suspended) {
    if (op.ref != "main") continue;
    AbortResult aborted = harness.main().abort();
    harness.main().wait_for_idle();
    if (!aborted.ok()) {
      throw std::runtime_error(fmt::format("child session {}: {}", child,
                                           aborted.error ? aborted.error->message : "its abort failed"));
    }
  }
  const std::shared_ptr<Session> session = harness.session();
  RunResult result = how_it_ended(*session).value_or(
      RunResult{.outcome = Outcome::aborted, .error = Error(Errc::closed, "the parent's run was aborted first")});
  harness.close();
  return child_result(*session, child, result);
}

}  // namespace

Tool make_child_session_tool(ChildSessionToolOptions options) {
  Tool tool;
  tool.name = options.name;
  tool.description = options.description;
  tool.parameters = options.parameters.is_object() && !options.parameters.empty() ? options.parameters
                                                                                   : default_parameters();
  tool.replay = Replay::resume;
  auto shared = std::make_shared<const ChildSessionToolOptions>(std::move(options));
  tool.execute = [shared](const Json& args, const ToolContext& context) {
    return ChildCall(*shared, args, context).run();
  };
  tool.end_child = [shared](const ToolContext& context) { return end_child(*shared, context); };
  tool.child_inputs = [shared](const ToolContext& context) { return child_pending_inputs(*shared, context); };
  tool.respond_child = [shared](const ToolContext& context, const std::string& request_id, InputResponse response) {
    return respond_in_child(*shared, context, request_id, std::move(response));
  };
  return tool;
}

}  // namespace cairn
