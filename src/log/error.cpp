#include "cairn/error.hpp"

#include <cassert>

namespace cairn {

std::string_view to_string(Errc code) {
  switch (code) {
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::invalid_record: return "invalid_record";
    case Errc::unknown_type: return "unknown_type";
    case Errc::duplicate_id: return "duplicate_id";
    case Errc::unknown_parent: return "unknown_parent";
    case Errc::unknown_ref: return "unknown_ref";
    case Errc::ref_exists: return "ref_exists";
    case Errc::operation_open: return "operation_open";
    case Errc::operation_not_open: return "operation_not_open";
    case Errc::newer_version: return "newer_version";
    case Errc::corrupt_log: return "corrupt_log";
    case Errc::not_found: return "not_found";
    case Errc::ambiguous_id: return "ambiguous_id";
    case Errc::already_exists: return "already_exists";
    case Errc::locked: return "locked";
    case Errc::stale_writer: return "stale_writer";
    case Errc::faulted: return "faulted";
    case Errc::read_only: return "read_only";
    case Errc::io_error: return "io_error";
    case Errc::invalid_config: return "invalid_config";
    case Errc::unknown_model: return "unknown_model";
    case Errc::ambiguous_model: return "ambiguous_model";
    case Errc::unsupported_api: return "unsupported_api";
    case Errc::sse_line_too_long: return "sse_line_too_long";
    case Errc::busy: return "busy";
    case Errc::no_active_run: return "no_active_run";
    case Errc::not_suspended: return "not_suspended";
    case Errc::missing_identities: return "missing_identities";
    case Errc::sandbox_unavailable: return "sandbox_unavailable";
    case Errc::damaged_log: return "damaged_log";
    case Errc::unknown_tool: return "unknown_tool";
    case Errc::ref_active: return "ref_active";
    case Errc::main_ref: return "main_ref";
    case Errc::invalid_message: return "invalid_message";
    case Errc::invalid_entry: return "invalid_entry";
    case Errc::unknown_entry: return "unknown_entry";
    case Errc::unknown_skill: return "unknown_skill";
    case Errc::unknown_template: return "unknown_template";
    case Errc::closed: return "closed";
    case Errc::invalid_arguments: return "invalid_arguments";
    case Errc::unknown_input: return "unknown_input";
    case Errc::already_resolved: return "already_resolved";
    case Errc::invalid_response: return "invalid_response";
    case Errc::retries_exhausted: return "retries_exhausted";
    case Errc::provider_error: return "provider_error";
    case Errc::context_overflow: return "context_overflow";
    case Errc::nothing_to_compact: return "nothing_to_compact";
    case Errc::would_split_tool_call: return "would_split_tool_call";
    case Errc::compaction_failed: return "compaction_failed";
    case Errc::branch_summary_failed: return "branch_summary_failed";
    case Errc::server_unavailable: return "server_unavailable";
    case Errc::server_error: return "server_error";
    case Errc::timed_out: return "timed_out";
    case Errc::cancelled: return "cancelled";
    case Errc::internal_error: return "internal_error";
  }
  assert(false && "an Errc without its spelling");
  return "internal_error";
}

}  // namespace cairn
