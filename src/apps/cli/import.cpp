// `cairn import pi FILE`: a pi coding-agent session file becomes a session.
#include <fmt/format.h>

#include "cairn/store/pi_import.hpp"
#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct ImportOptions {
  std::string store;
  std::string file;
};

int run_import_pi(const ImportOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto imported = import_pi_session(**store, options.file);
  if (!imported) {
    // A missing or unreadable file is the caller's to fix.
    if (imported.error().is(Errc::not_found)) return report(kUsage, imported.error().message);
    return report(imported.error());
  }
  for (const auto& note : imported->notes) print_untrusted(stderr, "cairn: note: {}\n", note);
  fmt::print(stderr, "cairn: imported {} entries from a pi v{} session\n", imported->imported, imported->version);
  print_untrusted(stdout, "{}\n", imported->session->id());
  return kOk;
}

}  // namespace

void register_import_command(CLI::App& app, Commands& commands) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* import = app.add_subcommand("import", "Import a session written by another program");
  import->require_subcommand(1);
  add_store_option(import, options->store);
  CLI::App* pi = import->add_subcommand(
      "pi", "Import a pi coding-agent session file (format v1-v3, migrated as pi does); print the new id, notes on "
            "stderr");
  add_store_option(pi, options->store);
  pi->add_option("FILE", options->file, "The pi session file (.jsonl)")->required()->type_name("");
  commands.push_back({pi, [options] { return run_import_pi(*options); }});
}

}  // namespace cairn::cli
