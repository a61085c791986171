// `cairn repair SESSION`: the one command that changes a damaged log. It drops
// the damaged records (and everything after the first of them) and says what
// it removed; opening for inspection never does.
#include <fmt/format.h>

#include "cli.hpp"

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
  auto id = (*store)->resolve_id(options.session);
  if (!id) {
    if (id.error().code == "not_found") return report(kUsage, fmt::format("no session matches '{}'", options.session));
    return report(id.error());
  }
  auto repaired = (*store)->repair(*id);
  if (!repaired) return report(repaired.error());
  if (repaired->removed.empty() && repaired->removed_bytes == 0) {
    fmt::print("{}: nothing to repair ({} records)\n", *id, repaired->kept_records);
    return kOk;
  }
  fmt::print("{}: removed {} bytes from {}; kept {} records\n", *id, repaired->removed_bytes, repaired->location,
             repaired->kept_records);
  for (const auto& removed : repaired->removed) fmt::print("  removed {}\n", removed);
  return kOk;
}

}  // namespace

void register_repair_command(CLI::App& app, Commands& commands) {
  auto options = std::make_shared<RepairOptions>();
  CLI::App* sub = app.add_subcommand(
      "repair", "Drop a session's damaged records (and all after the first) and list what was removed");
  add_store_option(sub, options->store);
  sub->add_option("SESSION", options->session, "Session id or unique id prefix")->required()->type_name("");
  commands.push_back({sub, [options] { return run_repair(*options); }});
}

}  // namespace cairn::cli
