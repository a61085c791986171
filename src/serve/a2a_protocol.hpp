// The Agent2Agent protocol (A2A v1.0) beside cairn's own API: the agent
// card (agent_card.cpp), the JSON-RPC binding (POST /a2a/jsonrpc,
// a2a_jsonrpc.cpp) and the HTTP+JSON binding (/a2a/rest/…, a2a_rest.cpp),
// both over one service (a2a_service.hpp). A context is a (session, ref):
// its id is "SESSION/REF"; a task is an operation: "SESSION/REF/RUN"
// (a2a_task.hpp). A message without a task starts a run (in a new session
// when it names no context); a message to a working task steers it; a task
// waiting for an approval or a question is TASK_STATE_INPUT_REQUIRED with a
// data part describing the call, and a message to it answers (a data part
// {"decision": "allow" | "deny" | "answer", "reason"?, "answer"?,
// "arguments"?, "requestId"?}, or text: "allow"/"yes" allows, other text
// denies with it as the reason, and answers a question); cancel is abort.
// Task state comes from the log, so it is the same after a restart. Our seq
// cursor is an extension: each update of a stream announces one record,
// whose seq it carries in `metadata["cairn.seq"]` and as its SSE id, and
// SubscribeToTask honours Last-Event-ID.
//
// This file: what both bindings share to read a request and say an error.
// Every field is read by its type: a wrong one is invalid params naming the
// field, never a server error.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "a2a_task.hpp"
#include "http_types.hpp"

namespace cairn::serve {

inline constexpr std::string_view kSeqExtension = "https://github.com/cairn-harness/cairn/a2a/seq-cursor/v1";

// An error as both bindings spell it.
struct A2aError {
  int code;            // JSON-RPC
  const char* reason;  // google.rpc.ErrorInfo
  int http;
  const char* status;
  std::string message;
};

A2aError task_not_found(std::string_view id);
A2aError not_cancelable(std::string message);
A2aError unsupported(std::string message);
A2aError invalid_params(std::string message);
A2aError invalid_request(std::string message);
A2aError version_not_supported();
A2aError internal(std::string message);
A2aError unavailable(std::string message);
// A harness's or the pool's error as A2A says it.
A2aError from_error(const Error& error);
// Its google.rpc.ErrorInfo details (empty reason: none).
Json error_info(const A2aError& error);

template <class T>
using A2aResult = std::expected<T, A2aError>;

#define A2A_TRY(var, expr)                                         \
  auto var##_result = (expr);                                      \
  if (!var##_result) return std::unexpected(var##_result.error()); \
  auto var = std::move(*var##_result)

// A client's text in a message about it: at most 80 bytes of it.
std::string shown(std::string_view text);

// An object of a request, read field by field: a field of another type is
// invalid params naming it by its path ("params.message.parts[1].text").
class Fields {
 public:
  Fields(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  static A2aResult<Fields> of(const Json& value, std::string path);
  std::string path(std::string_view key) const;
  const Json* find(const char* key) const;
  // Absent, null and (the SDK's default) empty are all "not given".
  A2aResult<std::string> string(const char* key) const;
  A2aResult<std::optional<bool>> boolean(const char* key) const;
  // An integer, or (protobuf's JSON for 64-bit integers) one in a string.
  A2aResult<std::optional<std::int64_t>> integer(const char* key) const;
  A2aResult<std::optional<Fields>> object(const char* key) const;
  A2aResult<const Json*> array(const char* key) const;

 private:
  const Json& object_;
  std::string path_;
};

std::optional<std::int64_t> parse_integer(std::string_view text);

// "SESSION/REF": each part a name as the REST routes take it.
A2aResult<std::pair<std::string, std::string>> parse_context(std::string_view id);
// "SESSION/REF/RUN". Not a task id of ours: not found, as any unknown task.
A2aResult<TaskId> parse_task(std::string_view id);
// Last-Event-ID: none, or a seq.
A2aResult<std::optional<std::int64_t>> last_event_id(const HttpRequest& request);
// The A2A-Version header names 1.0 (or none).
bool version_ok(const HttpRequest& request);

// A message's parts: its text (text parts joined) and its first data part.
struct MessageParts {
  std::string text;
  Json data;
};
A2aResult<MessageParts> read_parts(const Fields& message);

// ListTasks' parameters, from either binding.
struct ListParams {
  std::string context, status;
  std::int64_t page_size = 50, offset = 0;
  std::optional<std::int64_t> history;
};
A2aResult<ListParams> list_params(const Fields& fields);

}  // namespace cairn::serve
