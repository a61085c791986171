#include "stream_redactor.hpp"

#include <algorithm>

namespace cairn {

std::string StreamRedactor::pass(int index, std::string_view delta) {
  std::string& held = held_[index];
  std::string text = held + std::string(delta);
  // The longest end of `text` that a secret begins with (and is not whole).
  std::size_t keep = 0;
  for (const std::string& secret : secrets_.values()) {
    for (std::size_t n = std::min(secret.size() - 1, text.size()); n > keep; --n) {
      if (std::string_view(text).substr(text.size() - n) == std::string_view(secret).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  std::size_t cut = text.size() - keep;
  // A whole secret across the cut goes out whole, redacted.
  for (const std::string& secret : secrets_.values()) {
    for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 1)) {
      revealed_ = true;
      if (at < cut && at + secret.size() > cut) cut = at + secret.size();
    }
  }
  held = text.substr(cut);
  text.resize(cut);
  if (revealed_) secrets_.redact_in_place(text);
  return text;
}

std::string StreamRedactor::release(int index) {
  auto it = held_.find(index);
  if (it == held_.end()) return {};
  std::string text = std::move(it->second);
  held_.erase(it);
  return text;
}

std::map<int, std::string> StreamRedactor::release_all() {
  std::map<int, std::string> out;
  for (auto& [index, text] : held_) {
    if (!text.empty()) out.emplace(index, std::move(text));
  }
  held_.clear();
  return out;
}

}  // namespace cairn
