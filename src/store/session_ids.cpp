// The rule for session ids (session_ids.hpp).
#include "session_ids.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "cairn/log/ids.hpp"

namespace cairn {

bool valid_session_id(std::string_view id) {
  if (id.empty() || id.size() > 128 || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::string invalid_session_id(std::string_view id) {
  return fmt::format("'{}' is not a valid session id (letters, digits, '-', '_' and '.', at most 128, not starting "
                     "with '.')",
                     id);
}

Result<SessionHeader> new_session_header(const CreateOptions& options, std::string_view store) {
  SessionHeader header;
  header.id = options.id ? *options.id : new_session_id();
  if (!valid_session_id(header.id)) {
    return fail(Errc::invalid_argument, fmt::format("{}: {}", store, invalid_session_id(header.id)));
  }
  header.timestamp = now_iso8601();
  header.cwd = options.cwd;
  header.parent_session = options.parent_session;
  header.extra = options.header_extra;
  return header;
}

}  // namespace cairn
