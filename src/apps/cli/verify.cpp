// `cairn verify SESSION`: checks every invariant of DESIGN.md that the log
// alone can show (cairn/store/verify.hpp), reading the session without
// changing it. One line per check; the exit status is 0 only when all of
// them hold.
#include <fmt/format.h>

#include "cairn/store/verify.hpp"
#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct VerifyOptions {
  std::string store;
  std::string session;
};

int run_verify(const VerifyOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto opened = open_session(**store, options.session, /*read_only=*/true);
  if (!opened) return opened.error();
  auto verified = verify(**opened);
  if (!verified) return report(verified.error());
  auto children = verify_children(**store, **opened);
  if (!children) return report(children.error());
  verified->checks.push_back(std::move(*children));
  for (const VerifyCheck& check : verified->checks) {
    std::string notes;
    for (const auto& note : check.notes) notes += (notes.empty() ? " (" : "; ") + note;
    if (!notes.empty()) notes += ")";
    if (check.ok()) {
      print_untrusted(stdout, "ok    {}{}\n", check.name, notes);
      continue;
    }
    std::string more = check.failures.size() > 1 ? fmt::format(" (and {} more)", check.failures.size() - 1) : "";
    print_untrusted(stdout, "FAIL  {}: {}{}{}\n", check.name, check.failures.front(), more, notes);
  }
  print_untrusted(stdout, "{}: {} records, {}\n", (*opened)->id(), verified->records,
                  verified->ok() ? "all checks hold" : "checks FAILED");
  return verified->ok() ? kOk : kFailure;
}

}  // namespace

void register_verify_command(CLI::App& app, Commands& commands) {
  add_session_command(app, commands,
      "verify", "Check a session's log against the invariants (read-only); exit 0 only if all hold", run_verify);
}

}  // namespace cairn::cli
