// Lossless JSON: a value every JSON writer can spell and every reader gets back.
#include "cairn/json.hpp"

#include <cmath>
#include <vector>

namespace cairn {

bool is_lossless(const Json& value) {
  // An explicit stack rather than recursion: the value may come from a parsed
  // line nested deeply enough to exhaust the call stack.
  std::vector<const Json*> pending{&value};
  while (!pending.empty()) {
    const Json* current = pending.back();
    pending.pop_back();
    switch (current->type()) {
      case Json::value_t::number_float:
        if (!std::isfinite(current->get_ref<const Json::number_float_t&>())) return false;
        break;
      case Json::value_t::object:
      case Json::value_t::array:
        for (const Json& child : *current) pending.push_back(&child);
        break;
      // Binary values and discarded parse results have no JSON text at all.
      case Json::value_t::binary:
      case Json::value_t::discarded:
        return false;
      default:
        break;
    }
  }
  return true;
}

}  // namespace cairn
