// The Agent2Agent protocol (A2A v1.0) beside cairn's own API: the agent
// card, the JSON-RPC binding (POST /a2a/jsonrpc) and the HTTP+JSON binding
// (/a2a/rest/…). A context is a (session, ref): its id is "SESSION/REF"; a
// task is an operation: "SESSION/REF/RUN" (a2a_task.hpp). A message without
// a task starts a run (in a new session when it names no context); a
// message to a working task steers it; a task waiting for an approval or a
// question is TASK_STATE_INPUT_REQUIRED with a data part describing the
// call, and a message to it answers (a data part {"decision": "allow" |
// "deny" | "answer", "reason"?, "answer"?, "arguments"?, "requestId"?}, or
// text: "allow"/"yes" allows, other text denies with it as the reason, and
// answers a question); cancel is abort. Task state comes from the log, so
// it is the same after a restart. Our seq cursor is an extension: each
// update of a stream announces one record, whose seq it carries in
// `metadata["cairn.seq"]` and as its SSE id, and SubscribeToTask honours
// Last-Event-ID.
//
// Every field is read by its type: a wrong one is invalid params naming the
// field, never a server error. A blocking send waits for its task without
// holding a thread.
#pragma once

#include <memory>
#include <string_view>

#include "api.hpp"
#include "http_types.hpp"
#include "session_pool.hpp"

namespace cairn::serve {

class A2a {
 public:
  A2a(SessionPool& pool, Metrics& metrics, std::shared_ptr<WorkQueue> work)
      : pool_(pool), metrics_(metrics), work_(std::move(work)) {}

  // GET /.well-known/agent-card.json
  Reply card(const HttpRequest& request) const;
  // POST /a2a/jsonrpc
  Reply jsonrpc(const HttpRequest& request);
  // /a2a/rest + `path`
  Reply rest(const HttpRequest& request, std::string_view path);

 private:
  SessionPool& pool_;
  Metrics& metrics_;
  std::shared_ptr<WorkQueue> work_;
};

}  // namespace cairn::serve
