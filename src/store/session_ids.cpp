// The rule for session ids (session_ids.hpp).
#include "session_ids.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

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

}  // namespace cairn
