#include "names.hpp"

#include <fmt/format.h>

#include "http_types.hpp"

namespace cairn::serve {

Status check_name(std::string_view name, std::string_view what) {
  if (name.empty() || name.size() > kMaxNameBytes || name == "." || name == "..") {
    return fail(Errc::invalid_argument, fmt::format("bad {} id: empty, longer than {} bytes, or . or ..", what, kMaxNameBytes));
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') {
      return fail(Errc::invalid_argument, fmt::format("bad {} id: it holds a separator or control character", what));
    }
  }
  return {};
}

Result<std::string> path_name(std::string_view raw, std::string_view what) {
  bool ok = false;
  std::string text = percent_decode(raw, ok);
  if (!ok) return fail(Errc::invalid_argument, fmt::format("bad percent-encoding in the {} id", what));
  if (auto checked = check_name(text, what); !checked) return std::unexpected(checked.error());
  return text;
}

}  // namespace cairn::serve
