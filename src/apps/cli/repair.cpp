// `cairn repair SESSION`: the one command that changes a damaged log. It
// keeps every intact record byte for byte, copies the original bytes to a
// backup first, and replaces each damaged record by a placeholder of the
// same seq; an operation that may have started a tool in the damaged region
// can then be aborted and never resumed. Opening for inspection never
// changes anything.
#include <fmt/format.h>

#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct RepairOptions {
  std::string store;
  std::string session;
};

int run_repair(const RepairOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  // No open: a damaged session refuses to open, which is why it needs repair.
  // A session whose header is too damaged to be listed is still found by its
  // whole id, which its file or rows carry too.
  auto id = (*store)->resolve_id(options.session);
  if (!id && id.error().is(Errc::not_found)) id = options.session;
  if (!id) return report(id.error());
  auto repaired = (*store)->repair(*id);
  if (!repaired && repaired.error().is(Errc::not_found)) {
    return report(kUsage, fmt::format("no session matches '{}'", options.session));
  }
  if (!repaired) return report(repaired.error());
  if (!repaired->changed()) {
    print_untrusted(stdout, "{}: nothing to repair ({} records, every one intact)\n", *id, repaired->records);
    return kOk;
  }
  print_untrusted(stdout, "{}: repaired {}\n", *id, repaired->location);
  if (repaired->backup) print_untrusted(stdout, "  the original bytes are in {}\n", *repaired->backup);
  fmt::print("  {} records: {} intact and unchanged, {} replaced by placeholders\n", repaired->records,
             repaired->intact, repaired->replaced.size());
  for (const auto& line : repaired->replaced) print_untrusted(stdout, "  replaced {}\n", line);
  for (const auto& line : repaired->fixed) print_untrusted(stdout, "  fixed {}\n", line);

  // Which of the operations that held damage are still open, and on which ref.
  if (!repaired->abort_only_runs.empty()) {
    auto session = (*store)->open(*id, OpenOptions{.read_only = true});
    if (!session) return report(session.error());
    for (const RefInfo& ref : (*session)->refs()) {
      if (!ref.open_operation) continue;
      const auto& runs = repaired->abort_only_runs;
      if (std::find(runs.begin(), runs.end(), *ref.open_operation) == runs.end()) continue;
      print_untrusted(stdout,
                      "  run {} on ref {} may have started a tool in the damaged region: it will not be resumed, "
                      "so no such tool runs again; end it with `cairn abort {} --ref {}`\n",
                      *ref.open_operation, ref.name, *id, ref.name);
    }
  }
  return kOk;
}

}  // namespace

void register_repair_command(CLI::App& app, Commands& commands) {
  add_session_command(app, commands,
      "repair",
      "Replace a session's damaged records by placeholders of the same seq, keeping every intact record and a backup "
      "of the original bytes", run_repair);
}

}  // namespace cairn::cli
