#include "utf8.hpp"

#include <fmt/format.h>

#include "cairn/utf8.hpp"

namespace cairn {
namespace {

void find_in(const Json& value, std::string& path, std::optional<InvalidUtf8>& found) {
  if (found) return;
  if (value.is_string()) {
    if (auto at = invalid_utf8_at(value.get_ref<const std::string&>())) found = InvalidUtf8{path, *at};
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size() && !found; ++i) {
      const std::size_t mark = path.size();
      path += fmt::format("[{}]", i);
      find_in(value[i], path, found);
      path.resize(mark);
    }
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end() && !found; ++it) {
      const std::size_t mark = path.size();
      if (auto at = invalid_utf8_at(it.key())) {
        found = InvalidUtf8{path.empty() ? "a key" : path + "'s key", *at};
        return;
      }
      if (!path.empty()) path += '.';
      path += it.key();
      find_in(it.value(), path, found);
      path.resize(mark);
    }
  }
}

}  // namespace

bool make_valid_utf8(std::string& text) {
  // Checked first, at SIMD speed: nearly every text is valid already.
  auto first = invalid_utf8_at(text);
  if (!first) return false;
  text = text.substr(0, *first) + to_valid_utf8(std::string_view(text).substr(*first));
  return true;
}

bool make_valid_utf8(Json& value) {
  if (value.is_string()) return make_valid_utf8(value.get_ref<std::string&>());
  bool changed = false;
  if (value.is_array()) {
    for (Json& item : value) changed |= make_valid_utf8(item);
  } else if (value.is_object()) {
    bool bad_key = false;
    for (auto it = value.begin(); it != value.end(); ++it) {
      changed |= make_valid_utf8(it.value());
      bad_key |= invalid_utf8_at(it.key()).has_value();
    }
    if (bad_key) {
      // Keys cannot be changed in place: rebuilt only when one needs it.
      Json rebuilt = Json::object();
      for (auto it = value.begin(); it != value.end(); ++it) {
        std::string key = it.key();
        make_valid_utf8(key);
        rebuilt[key] = std::move(it.value());
      }
      value = std::move(rebuilt);
      changed = true;
    }
  }
  return changed;
}

std::optional<InvalidUtf8> find_invalid_utf8(const Json& value) {
  std::optional<InvalidUtf8> found;
  std::string path;
  find_in(value, path, found);
  return found;
}

std::string InvalidUtf8::describe(std::string_view what) const {
  return fmt::format("{} is not valid UTF-8: {} has a byte that begins no UTF-8 character at offset {}", what,
                     path.empty() ? "the text" : path, offset);
}

}  // namespace cairn
