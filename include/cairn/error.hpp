// Results, not exceptions: every expected failure in cairn is a value, and a
// value that cannot be ignored.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace cairn {

// Every error code cairn returns, the one list of them. A code is part of the
// API (logs, events, the command line and its JSON spell it as below), so a
// code is never renamed or reused for another meaning; new ones are added.
enum class Errc {
  // ---- log and store ----
  invalid_argument,    // a caller passed something malformed (bad URI, bad option, bad id)
  invalid_record,      // a record breaks its type's field rules or is not lossless JSON
  unknown_type,        // a record type this build does not know, without "ignorable": true
  duplicate_id,        // an id already used in the session
  unknown_parent,      // parentId (or another reference) names no earlier entry
  unknown_ref,         // a ref that does not exist (or was deleted)
  ref_exists,          // creating a ref that already exists
  operation_open,      // operation_started while the ref already has an open operation
  operation_not_open,  // a record names a run that is not the ref's open operation
  newer_version,       // the session header's format version is newer than this build
  corrupt_log,         // a damaged record before the tail, a seq gap, a bad header, a log the harness could not have written
  not_found,           // no session (or entry) with that id
  ambiguous_id,        // a session id prefix matches several sessions
  already_exists,      // create() with an id that is taken
  locked,              // another writer holds the session
  stale_writer,        // this writer's lock generation is no longer current
  faulted,             // an earlier append failed; the session (or harness) accepts no more
  read_only,           // the session was opened for reading, or the store is one this user may only read
  io_error,            // the operating system refused a read, write or sync

  // ---- models and providers ----
  invalid_config,     // models.json (or another configuration file) is malformed
  unknown_model,      // a model that is not configured
  ambiguous_model,    // a model id that several providers have
  unsupported_api,    // a model whose API kind this build cannot speak
  sse_line_too_long,  // a server-sent event line longer than the limit

  // ---- harness: rejected, the call changed nothing ----
  busy,                // the ref already has an active or suspended operation
  no_active_run,       // steer / follow_up with no run on the ref
  not_suspended,       // resume with no suspended operation on the ref
  missing_identities,  // resume while the log names tools or models this harness lacks
  damaged_log,         // resume of an operation open where `cairn repair` replaced a damaged record
  sandbox_unavailable, // resume of a run whose recorded sandbox policy this machine cannot enforce
  unknown_tool,        // an active tool name that is not registered
  ref_active,          // delete_ref of a ref whose operation is active or suspended
  main_ref,            // delete_ref("main")
  invalid_message,     // a queued or prompted message that is not user-side, or holds text that is not UTF-8
  invalid_entry,       // a SessionTree write other than a message holding such text
  unknown_entry,       // an anchor that names no entry
  unknown_skill,       // skill() of a skill the resources do not have
  unknown_template,    // prompt_from_template() of a template they do not have
  closed,              // the harness was closed
  invalid_arguments,   // a tool call's arguments that do not match the tool's schema
  unknown_input,       // respond() naming no input request of the ref's open operation
  already_resolved,    // respond() to an input request that has its answer already
  invalid_response,    // a response that does not fit its request (allow to a question, edited arguments not an object, a bad rule)

  // ---- harness: failed, the operation ended in order, durably ----
  retries_exhausted,      // every allowed attempt of a request failed
  provider_error,         // the provider failed in a way retrying cannot fix
  context_overflow,       // the request exceeded the context window, and compacting did not help
  nothing_to_compact,     // a compaction that would shed nothing
  would_split_tool_call,  // a compaction whose cut would orphan a tool result
  compaction_failed,      // the summary request failed in a way retrying cannot fix
  branch_summary_failed,  // the same for a navigation's branch summary

  // ---- tool servers (MCP) ----
  server_unavailable,  // the server is not running (it failed to start, or died and is being restarted)
  server_error,        // the server answered with an error, or with something that is not the protocol
  timed_out,           // no answer within the call's time
  cancelled,           // the caller stopped waiting (an abort)

  // ---- harness: faulted (or a store's own code, above) ----
  internal_error,  // a bug stopped a run; the operation restores as suspended
};

// The code as the log, the API and the command line spell it.
std::string_view to_string(Errc code);

// A failure's code and a message a person can act on. `code` is a string so
// that an error read back from a log keeps the code it was written with,
// even one a later build added; everything cairn itself fails with is an
// Errc.
struct Error {
  std::string code;
  std::string message;

  Error() = default;
  Error(Errc errc, std::string text) : code(to_string(errc)), message(std::move(text)) {}
  // An error as a log or a peer recorded it.
  static Error recorded(std::string code, std::string message) {
    Error error;
    error.code = std::move(code);
    error.message = std::move(message);
    return error;
  }
  bool is(Errc errc) const { return code == to_string(errc); }
  // The same failure told with more of its context: the code stays.
  Error with_message(std::string text) const {
    Error error = *this;
    error.message = std::move(text);
    return error;
  }
};

// std::expected that must be looked at: dropping one is a compile error
// (-Werror=unused-result), so a failure is never lost by forgetting it.
// Where dropping it is right, `(void)` says so beside a comment saying why.
template <class T>
class [[nodiscard]] Result : public std::expected<T, Error> {
  using Base = std::expected<T, Error>;

 public:
  using Base::Base;
  using Base::operator=;
  Result() = default;
  Result(const Base& other) : Base(other) {}
  Result(Base&& other) : Base(std::move(other)) {}
};
using Status = Result<void>;

inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected<Error>(Error(code, std::move(message)));
}
inline std::unexpected<Error> fail(Error error) { return std::unexpected<Error>(std::move(error)); }
// `cause` told with more of its context: its code, `message` instead of its own.
inline std::unexpected<Error> fail(const Error& cause, std::string message) { return fail(cause.with_message(std::move(message))); }

}  // namespace cairn
