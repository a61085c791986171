// Check 21 of `cairn verify` (cairn/store/verify.hpp): when a parent
// operation ends, every child operation it started has ended. The child
// sessions are other sessions of the store, named by the parent's
// tool_started records of replay "resume"; each is read without a lock.
#include <map>
#include <set>

#include <fmt/format.h>

#include "cairn/store/verify.hpp"

namespace cairn {
namespace {

// Every harness record of `type` in `session`, oldest first, page by page.
template <typename Visit>
Status each_record(const Session& session, RecordType type, Visit&& visit) {
  HarnessQuery query{.type = type, .limit = 512};
  for (;;) {
    auto page = session.find_harness_entries(query);
    if (!page) return std::unexpected(page.error());
    for (const HarnessRecord& record : page->items) visit(record);
    if (!page->next_cursor) return {};
    query.cursor = page->next_cursor;
  }
}

}  // namespace

Result<VerifyCheck> verify_children(Store& store, const Session& session) {
  VerifyCheck check{.name = "21 a finished operation's subagent sessions have no open operation"};
  std::set<std::string> finished_runs;
  auto finished = each_record(session, RecordType::operation_finished, [&](const HarnessRecord& record) {
    if (const auto* body = std::get_if<OperationFinished>(&record.body)) finished_runs.insert(body->run_id);
  });
  if (!finished) return std::unexpected(finished.error());
  std::map<std::string, std::string> children;  // child session → the finished run that started it
  auto started = each_record(session, RecordType::tool_started, [&](const HarnessRecord& record) {
    const auto* body = std::get_if<ToolStarted>(&record.body);
    if (body && body->child_session && finished_runs.contains(body->run_id)) {
      children.emplace(*body->child_session, body->run_id);
    }
  });
  if (!started) return std::unexpected(started.error());

  std::size_t read = 0;
  for (const auto& [child, run] : children) {
    auto opened = store.open(child, OpenOptions{.read_only = true});
    if (!opened) {
      // A call the crash stopped before its child was created has none.
      if (!opened.error().is(Errc::not_found)) {
        check.failures.push_back(fmt::format("subagent session {} (of run {}) cannot be read: {}", child, run,
                                             opened.error().message));
      }
      continue;
    }
    ++read;
    for (const RefInfo& ref : (*opened)->refs()) {
      if (!ref.open_operation) continue;
      check.failures.push_back(fmt::format("run {} finished, but its subagent session {} has ref '{}' with operation "
                                           "{} open (`cairn abort {}` ends it)",
                                           run, child, ref.name, *ref.open_operation, child));
    }
  }
  check.notes.push_back(children.empty() ? std::string("no subagent sessions")
                                         : fmt::format("{} subagent session{} read", read, read == 1 ? "" : "s"));
  return check;
}

}  // namespace cairn
