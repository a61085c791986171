#include "cairn/store/inbox.hpp"

#include <array>
#include <utility>

namespace cairn {

namespace {

constexpr std::array<std::pair<InboxState, std::string_view>, 6> kStates{{
    {InboxState::pending, "pending"},
    {InboxState::applying, "applying"},
    {InboxState::applied, "applied"},
    {InboxState::decided, "decided"},
    {InboxState::withdrawn, "withdrawn"},
    {InboxState::failed, "failed"},
}};

thread_local std::shared_ptr<InboxMark> tls_mark;

}  // namespace

std::string_view to_string(InboxState state) {
  for (const auto& [value, name] : kStates) {
    if (value == state) return name;
  }
  return "?";
}

std::optional<InboxState> parse_inbox_state(std::string_view text) {
  for (const auto& [value, name] : kStates) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::shared_ptr<InboxMark> InboxMark::current() { return tls_mark; }

InboxMark::Scope::Scope(std::shared_ptr<InboxMark> mark) : previous_(std::exchange(tls_mark, std::move(mark))) {}

InboxMark::Scope::~Scope() { tls_mark = std::move(previous_); }

}  // namespace cairn
