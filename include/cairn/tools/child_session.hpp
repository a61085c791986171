// Child sessions (subagents): a tool whose call runs a prompt in a session of
// its own — its own log, model, tools, system prompt and approval policy —
// and whose result is the child's final answer.
//
// The call's replay is "resume": the harness provisions the child's id in
// the call's tool_started, before the child exists, so the child is created
// exactly once; when the parent resumes after a crash, the call runs again
// with that id and picks the child up where the child's log says it is — a
// finished child's answer is read, a suspended child's run is resumed, a
// child that was created but never ran is prompted. The child's work is
// neither lost nor done twice: its own tools follow their own replay rules.
//
// A child's header names its parent (parentSession) and, under "child", the
// spawning ref, run and tool call, its depth and its agent's name. Its events
// reach the parent's observers as child_session_event. Aborting the parent's
// run aborts the child durably (operation_cancelled in the child's log),
// and a parent aborted after a crash ends its child's run first — aborting
// it, or finishing the abort a crash interrupted (Tool::end_child) — so that
// the call's result always names the child and how its run ended.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cairn/harness/harness.hpp"
#include "cairn/store/store.hpp"

namespace cairn {

// What the configure callback is told of the child a call spawns.
struct ChildSpawn {
  std::string child_session;  // the child's id
  std::string parent_session;
  std::string parent_ref;
  std::string parent_run_id;
  std::string tool_call_id;
  int depth = 1;  // 1: a child of a top-level session
  Json args;      // the call's arguments
  bool recovery = false;  // the child may exist already (the call runs again after a crash)
};

struct ChildSessionToolOptions {
  std::string name = "task";
  std::string description =
      "Delegate a self-contained task to a subagent that works in its own session with its own context, and "
      "get its final answer back. Give it everything it needs in `prompt`: it does not see this conversation.";
  // The arguments' schema; `prompt` (a string) is required by the tool
  // whatever the schema says. Default: {prompt, description?}.
  Json parameters;
  // Where children are created: the store holding the parent's session.
  std::shared_ptr<Store> store;
  // The child's harness: model, tools, system prompt, approval policy,
  // secrets. Its session is the tool's to set. An error fails the call (an
  // error result naming it), before any child is created.
  std::function<Result<HarnessOptions>(const ChildSpawn&)> configure;
  // The child header's cwd.
  std::string cwd;
  // Calls deeper than this get an error result (a child's children count one
  // more; the parent is depth 0).
  int max_depth = 3;
  // How long to wait for the child's session when another writer holds it
  // (a process that is still letting it go).
  std::chrono::milliseconds lock_timeout{5000};
};

// The tool. Its result: the child's final answer as text (an error result
// when the child failed, was aborted or could not run), and in details
// {childSession, outcome, runId, spend: {input, output, cacheRead,
// cacheWrite, totalTokens, cost}, error?}; ToolResult::spend carries the
// same usage into the parent's operation spend.
Tool make_child_session_tool(ChildSessionToolOptions options);

}  // namespace cairn
