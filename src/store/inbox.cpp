#include "cairn/store/inbox.hpp"

#include <utility>

#include "log/closed_sets.hpp"

namespace cairn {

// The spelling of InboxState, read both ways from one table (a closed set as
// the log's are): the database's `state` column holds these names.
constexpr std::array<std::string_view, 6> names_of(InboxState) {
  return {"pending", "applying", "applied", "decided", "withdrawn", "failed"};
}

namespace {

thread_local std::shared_ptr<InboxMark> tls_mark;

}  // namespace

std::string_view to_string(InboxState state) { return detail::name_of(state); }

std::optional<InboxState> parse_inbox_state(std::string_view text) { return detail::parse_name<InboxState>(text); }

std::shared_ptr<InboxMark> InboxMark::current() { return tls_mark; }

InboxMark::Scope::Scope(std::shared_ptr<InboxMark> mark) : previous_(std::exchange(tls_mark, std::move(mark))) {}

InboxMark::Scope::~Scope() { tls_mark = std::move(previous_); }

}  // namespace cairn
