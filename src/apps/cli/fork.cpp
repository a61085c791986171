// `cairn fork SESSION`: a new session holding a branch (or the whole tree) of
// another; prints the new session's id.
#include <fmt/format.h>

#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct ForkCommandOptions {
  std::string store;
  std::string session;
  std::string entry;
  bool before = false;
  bool tree = false;
  std::string ref = "main";
  std::string id;
};

int run_fork(const ForkCommandOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();

  ForkOptions fork;
  fork.scope = options.tree ? ForkOptions::Scope::tree : ForkOptions::Scope::branch;
  fork.position = options.before ? ForkOptions::Position::before : ForkOptions::Position::at;
  fork.ref = options.ref;
  if (!options.id.empty()) fork.id = options.id;

  std::string source_id;
  {
    // Resolve the session and the entry (which may be a short id from
    // `cairn tree`) on a read-only view, released before the fork opens it.
    auto source = open_session(**store, options.session, /*read_only=*/true);
    if (!source) return source.error();
    source_id = (*source)->id();
    if (!options.entry.empty()) {
      auto entry = resolve_entry_id(**source, options.entry);
      if (!entry) return entry.error();
      fork.entry_id = *entry;
    }
  }
  if (options.tree && (fork.entry_id || options.before)) {
    return report(kUsage, "--tree copies the whole tree; it takes no --entry or --before");
  }

  auto forked = (*store)->fork(source_id, fork);
  if (!forked) {
    if (forked.error().is(Errc::already_exists)) return report(kUsage, forked.error().message);
    return report(forked.error());
  }
  for (const std::string& line : forked->left_out) {
    print_untrusted(stderr, "cairn fork: only closed history was copied: {}\n", line);
  }
  print_untrusted(stdout, "{}\n", forked->session->id());
  return kOk;
}

}  // namespace

void register_fork_command(CLI::App& app, Commands& commands) {
  auto [sub, options] = add_session_command(app, commands,
      "fork", "Create a new session from a session's branch (up to an entry) or its whole tree; print its id", run_fork);
  sub->add_option("--entry", options->entry,
                  "The fork point: an entry id or unique prefix (default: the leaf of --ref)")
      ->type_name("ID");
  sub->add_flag("--before", options->before, "Fork before the entry (its parent becomes the leaf) instead of at it");
  sub->add_flag("--tree", options->tree, "Copy the whole tree, every branch, instead of one branch");
  sub->add_option("--ref", options->ref, "The ref whose branch is copied (default: main)")->type_name("R");
  sub->add_option("--id", options->id, "The new session's id (default: a fresh one)")->type_name("NEWID");
}

}  // namespace cairn::cli
