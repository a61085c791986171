// How the API answers: JSON bodies, errors with the status their code maps
// to, and SSE frames.
#include <fmt/format.h>

#include "http_types.hpp"

namespace cairn::serve {

std::string_view to_string(HttpErrc code) {
  switch (code) {
    case HttpErrc::no_route: return "no_route";
    case HttpErrc::method_not_allowed: return "method_not_allowed";
    case HttpErrc::unauthorized: return "unauthorized";
    case HttpErrc::forbidden: return "forbidden";
    case HttpErrc::body_too_large: return "body_too_large";
    case HttpErrc::unsupported_media_type: return "unsupported_media_type";
    case HttpErrc::unavailable: return "unavailable";
  }
  return "no_route";
}

Error http_error(HttpErrc code, std::string message) { return Error::recorded(std::string(to_string(code)), std::move(message)); }

int http_status(HttpErrc code) {
  switch (code) {
    case HttpErrc::no_route: return 404;
    case HttpErrc::method_not_allowed: return 405;
    case HttpErrc::unauthorized: return 401;
    case HttpErrc::forbidden: return 403;
    case HttpErrc::body_too_large: return 413;
    case HttpErrc::unsupported_media_type: return 415;
    case HttpErrc::unavailable: return 503;
  }
  return 500;
}

int http_status(Errc code) {
  switch (code) {
    // The client's request is malformed.
    case Errc::invalid_argument:
    case Errc::invalid_message:
    case Errc::invalid_entry:
    case Errc::invalid_response:
    case Errc::invalid_arguments:
      return 400;
    // It names what is not there.
    case Errc::not_found:
    case Errc::unknown_ref:
    case Errc::unknown_input:
    case Errc::unknown_entry:
    case Errc::unknown_model:
    case Errc::unknown_tool:
    case Errc::unknown_skill:
    case Errc::unknown_template:
      return 404;
    // It conflicts with the session's state: asked again later, or
    // otherwise, it may be taken.
    case Errc::already_exists:
    case Errc::ref_exists:
    case Errc::locked:
    case Errc::busy:
    case Errc::operation_open:
    case Errc::already_resolved:
    case Errc::ref_active:
    case Errc::main_ref:
    case Errc::not_suspended:
    case Errc::no_active_run:
    case Errc::missing_identities:
    case Errc::sandbox_unavailable:
    case Errc::damaged_log:
    case Errc::ambiguous_id:
    case Errc::ambiguous_model:
    case Errc::read_only:
    case Errc::nothing_to_compact:
    case Errc::would_split_tool_call:
    case Errc::stale_writer:
      return 409;
    // The session or the server cannot take it now.
    case Errc::faulted:
    case Errc::closed:
      return 503;
    // The server's own failures, and a provider's or a tool server's that a
    // run already reported in order.
    case Errc::invalid_record:
    case Errc::unknown_type:
    case Errc::duplicate_id:
    case Errc::unknown_parent:
    case Errc::operation_not_open:
    case Errc::newer_version:
    case Errc::corrupt_log:
    case Errc::io_error:
    case Errc::invalid_config:
    case Errc::unsupported_api:
    case Errc::sse_line_too_long:
    case Errc::retries_exhausted:
    case Errc::provider_error:
    case Errc::context_overflow:
    case Errc::compaction_failed:
    case Errc::branch_summary_failed:
    case Errc::server_unavailable:
    case Errc::server_error:
    case Errc::timed_out:
    case Errc::cancelled:
    case Errc::internal_error:
      return 500;
  }
  return 500;
}

namespace {

// The Errc an error's code spells, if any. Errc's values run from 0 to
// internal_error, its last (error.hpp lists them).
std::optional<Errc> errc_of(std::string_view code) {
  for (int i = 0; i <= static_cast<int>(Errc::internal_error); ++i) {
    if (to_string(static_cast<Errc>(i)) == code) return static_cast<Errc>(i);
  }
  return std::nullopt;
}

}  // namespace

int http_status(const Error& error) {
  if (auto code = errc_of(error.code)) return http_status(*code);
  for (const HttpErrc code : {HttpErrc::no_route, HttpErrc::method_not_allowed, HttpErrc::unauthorized, HttpErrc::forbidden,
                              HttpErrc::body_too_large, HttpErrc::unsupported_media_type, HttpErrc::unavailable}) {
    if (error.code == to_string(code)) return http_status(code);
  }
  return 500;
}

HttpResponse json_response(int status, const Json& body) {
  return HttpResponse{.status = status, .body = body.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

HttpResponse error_response(int status, std::string_view code, std::string_view message) {
  return json_response(status, Json{{"error", {{"code", code}, {"message", message}}}});
}

HttpResponse error_response(const Error& error) { return error_response(http_status(error), error.code, error.message); }

std::string sse_frame(const Json& data, std::optional<std::int64_t> id) {
  std::string frame;
  if (id) frame = fmt::format("id: {}\n", *id);
  frame += "data: ";
  frame += data.dump(-1, ' ', false, Json::error_handler_t::replace);
  frame += "\n\n";
  return frame;
}

}  // namespace cairn::serve
