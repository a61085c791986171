#include "cairn/secrets.hpp"

#include <algorithm>

namespace cairn {

Secrets::Secrets(const std::vector<std::string>& values) {
  for (const std::string& value : values) add(value);
}

void Secrets::add(std::string_view value) {
  if (value.size() < kMinLength) return;
  if (std::find(values_.begin(), values_.end(), value) != values_.end()) return;
  values_.emplace_back(value);
  std::stable_sort(values_.begin(), values_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

bool Secrets::appears_in(std::string_view text) const {
  return std::any_of(values_.begin(), values_.end(),
                     [&](const std::string& secret) { return text.find(secret) != std::string_view::npos; });
}

bool Secrets::redact_in_place(std::string& text) const {
  bool changed = false;
  for (const std::string& secret : values_) {
    for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + kMark.size())) {
      text.replace(at, secret.size(), kMark);
      changed = true;
    }
  }
  return changed;
}

bool Secrets::redact_in_place(Json& value) const {
  if (values_.empty()) return false;
  if (value.is_string()) return redact_in_place(value.get_ref<std::string&>());
  bool changed = false;
  if (value.is_array()) {
    for (Json& item : value) changed |= redact_in_place(item);
  } else if (value.is_object()) {
    // Keys cannot be changed in place: the object is rebuilt only when one holds a secret.
    bool key_holds_secret = false;
    for (auto it = value.begin(); it != value.end(); ++it) {
      changed |= redact_in_place(it.value());
      key_holds_secret |= appears_in(it.key());
    }
    if (key_holds_secret) {
      Json rebuilt = Json::object();
      for (auto it = value.begin(); it != value.end(); ++it) rebuilt[redact(it.key())] = std::move(it.value());
      value = std::move(rebuilt);
      changed = true;
    }
  }
  return changed;
}

}  // namespace cairn
