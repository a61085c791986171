// Values cairn must never write: provider keys and tokens. Whatever reaches
// the log, an event or a file cairn writes (a model's text, a tool's output,
// an error message) passes through redact() first when the value may be in it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/json.hpp"

namespace cairn {

class Secrets {
 public:
  // Shorter values are not secrets worth the name (a test key "x", an empty
  // variable): redacting them would blank that character in every message.
  static constexpr std::size_t kMinLength = 8;
  static constexpr std::string_view kMark = "[redacted]";

  Secrets() = default;
  explicit Secrets(const std::vector<std::string>& values);

  // Ignores values shorter than kMinLength and ones already held.
  void add(std::string_view value);
  bool empty() const { return values_.empty(); }
  const std::vector<std::string>& values() const { return values_; }

  // Whether any secret occurs in `text`.
  [[nodiscard]] bool appears_in(std::string_view text) const;
  // Every occurrence of a secret replaced by kMark; true when `text` changed.
  bool redact_in_place(std::string& text) const;
  [[nodiscard]] std::string redact(std::string text) const {
    redact_in_place(text);
    return text;
  }
  // Every string inside `value` (object keys included); true when one changed.
  bool redact_in_place(Json& value) const;

 private:
  std::vector<std::string> values_;  // longest first, so a secret that contains another goes whole
};

}  // namespace cairn
