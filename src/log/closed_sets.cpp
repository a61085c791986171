// The public spelling functions of the closed sets, all from the tables of
// closed_sets.hpp.
#include "closed_sets.hpp"

#include <fmt/format.h>

namespace cairn {

namespace detail {

std::string unknown_value(std::string_view text, const std::string_view* names, std::size_t count) {
  std::string expected;
  for (std::size_t i = 0; i < count; ++i) {
    if (i > 0) expected += i + 1 == count ? " or " : ", ";
    expected += fmt::format("'{}'", names[i]);
  }
  return fmt::format("unknown value '{}' (expected {})", text, expected);
}

}  // namespace detail

using detail::name_of;
using detail::parse_name;

std::string_view to_string(StopReason reason) { return name_of(reason); }
std::optional<StopReason> parse_stop_reason(std::string_view text) { return parse_name<StopReason>(text); }

std::string_view to_string(ThinkingLevel level) { return name_of(level); }
std::optional<ThinkingLevel> parse_thinking_level(std::string_view text) { return parse_name<ThinkingLevel>(text); }

std::string_view to_string(OperationKind kind) { return name_of(kind); }
std::optional<OperationKind> parse_operation_kind(std::string_view text) { return parse_name<OperationKind>(text); }

std::string_view to_string(CancelReason reason) { return name_of(reason); }
std::optional<CancelReason> parse_cancel_reason(std::string_view text) { return parse_name<CancelReason>(text); }

std::string_view to_string(OperationOutcome outcome) { return name_of(outcome); }
std::optional<OperationOutcome> parse_operation_outcome(std::string_view text) {
  return parse_name<OperationOutcome>(text);
}

std::string_view to_string(GenerationPurpose purpose) { return name_of(purpose); }
std::optional<GenerationPurpose> parse_generation_purpose(std::string_view text) {
  return parse_name<GenerationPurpose>(text);
}

std::string_view to_string(Replay replay) { return name_of(replay); }
std::optional<Replay> parse_replay(std::string_view text) { return parse_name<Replay>(text); }
std::string_view to_string(SandboxMode mode) { return name_of(mode); }
std::optional<SandboxMode> parse_sandbox_mode(std::string_view text) { return parse_name<SandboxMode>(text); }

std::string_view to_string(QueueKind queue) { return name_of(queue); }
std::optional<QueueKind> parse_queue_kind(std::string_view text) { return parse_name<QueueKind>(text); }

std::string_view to_string(InputKind kind) { return name_of(kind); }
std::optional<InputKind> parse_input_kind(std::string_view text) { return parse_name<InputKind>(text); }

std::string_view to_string(InputDecision decision) { return name_of(decision); }
std::optional<InputDecision> parse_input_decision(std::string_view text) { return parse_name<InputDecision>(text); }

}  // namespace cairn
