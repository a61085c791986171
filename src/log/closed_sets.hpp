// The JSON spelling of every closed set a record holds (cairn/log/record.hpp,
// cairn/log/message.hpp): one table per enum, read both ways, so that the
// public to_string and parse_* functions and the decoders' check of a field
// can never disagree about a name.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "cairn/log/record.hpp"

namespace cairn::detail {

// The names of an enum's values, in the order of its values (each counts from 0).
constexpr std::array<std::string_view, 5> names_of(StopReason) {
  return {"stop", "length", "toolUse", "error", "aborted"};
}
constexpr std::array<std::string_view, 6> names_of(ThinkingLevel) {
  return {"off", "minimal", "low", "medium", "high", "xhigh"};
}
constexpr std::array<std::string_view, 3> names_of(OperationKind) { return {"run", "compaction", "navigation"}; }
constexpr std::array<std::string_view, 2> names_of(CancelReason) { return {"user", "shutdown"}; }
constexpr std::array<std::string_view, 4> names_of(OperationOutcome) {
  return {"completed", "aborted", "failed", "cancelled"};
}
constexpr std::array<std::string_view, 3> names_of(GenerationPurpose) {
  return {"step", "compaction", "branch_summary"};
}
constexpr std::array<std::string_view, 3> names_of(Replay) { return {"never", "safe", "resume"}; }
constexpr std::array<std::string_view, 3> names_of(SandboxMode) { return {"off", "readOnly", "workspaceWrite"}; }
constexpr std::array<std::string_view, 3> names_of(QueueKind) { return {"steer", "followUp", "nextRun"}; }
constexpr std::array<std::string_view, 2> names_of(InputKind) { return {"approval", "question"}; }
constexpr std::array<std::string_view, 3> names_of(InputDecision) { return {"allow", "deny", "answer"}; }

template <class E>
concept ClosedSet = std::is_enum_v<E> && requires(E value) { names_of(value); };

template <ClosedSet E>
constexpr std::string_view name_of(E value) {
  constexpr auto names = names_of(E{});
  const auto index = static_cast<std::size_t>(value);
  // Only a value cast from outside the set gets here; it has no spelling.
  return index < names.size() ? names[index] : std::string_view("unknown");
}

template <ClosedSet E>
constexpr std::optional<E> parse_name(std::string_view text) {
  constexpr auto names = names_of(E{});
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

// What a field holding `text` instead of a value of E is told:
// "unknown value 'x' (expected 'a', 'b' or 'c')".
std::string unknown_value(std::string_view text, const std::string_view* names, std::size_t count);
template <ClosedSet E>
std::string unknown_value(std::string_view text) {
  constexpr auto names = names_of(E{});
  return unknown_value(text, names.data(), names.size());
}

}  // namespace cairn::detail
