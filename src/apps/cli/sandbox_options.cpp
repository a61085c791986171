#include "sandbox_options.hpp"

#include <fmt/format.h>

#include "agent/directories.hpp"
#include "agent/sandbox_settings.hpp"
#include "cairn/tools/sandbox.hpp"

namespace cairn::cli {

namespace {

// The files of the store behind `uri`: a session's log is the tools' to
// read only through cairn, never to rewrite behind its back.
std::vector<std::string> store_files(const std::string& uri) {
  if (uri.starts_with("jsonl:")) return {uri.substr(6)};
  if (uri.starts_with("sqlite:")) {
    const std::string file = uri.substr(7);
    return {file, file + "-wal", file + "-shm", file + "-journal"};
  }
  return {};  // memory: has none; a PostgreSQL server is out of reach with the network off
}

}  // namespace

void add_sandbox_options(CLI::App* app, SandboxFlags& flags) {
  app->add_option_function<std::string>(
         "--sandbox", [&flags](const std::string& mode) { flags.mode = parse_sandbox_mode_name(mode); },
         "The sandbox of every process a tool starts (bash, MCP stdio servers), enforced by the kernel: "
         "workspace-write (read everything but ~/.ssh, ~/.gnupg, cairn's configuration and the store; write only "
         "this directory and a private $TMPDIR; .git/hooks and .cairn stay read-only; no network), read-only (the "
         "same, and the directory is read-only too), off (no sandbox). Default: settings.json's \"sandbox\", else "
         "workspace-write")
      ->type_name("MODE")
      ->check(CLI::IsMember({"read-only", "workspace-write", "off"}));
  app->add_flag("--sandbox-network", flags.network,
                "Let sandboxed processes use the network (sockets other than AF_UNIX)");
}

namespace {
// ThreadSanitizer's runtime starts a thread in every forked child, and a
// process of more than one thread cannot make a user namespace: a TSan
// build of cairn cannot enter the sandbox at all, so it runs without one
// unless asked (and then refuses, as on any machine that cannot). That
// build is for finding races; the release and ASan builds test the sandbox.
#if defined(__SANITIZE_THREAD__)
constexpr SandboxMode kDefaultSandbox = SandboxMode::off;
#else
constexpr SandboxMode kDefaultSandbox = SandboxMode::workspace_write;
#endif
}  // namespace

Outcome<void> resolve_sandbox(agent::AgentOptions& shape, const SandboxFlags& flags, const std::string& store,
                              bool tools_run) {
  agent::SandboxSettings settings;
  if (const auto config = agent::global_config_dir()) {
    auto read = agent::read_sandbox_settings(*config / "settings.json");
    if (!read) return std::unexpected(report(kUsage, read.error().message));
    settings = std::move(*read);
  }
  shape.sandbox = flags.mode.value_or(settings.mode.value_or(kDefaultSandbox));
  shape.sandbox_network = flags.network || settings.network.value_or(false);
  shape.sandbox_hide = settings.hide;
  if (auto uri = store_uri(store)) {
    for (auto& file : store_files(*uri)) shape.sandbox_hide.push_back(std::move(file));
  }
  if (!tools_run) return {};
  if (const std::string missing = sandbox_unavailable(shape.sandbox); !missing.empty()) {
    return std::unexpected(report(kUsage, missing));
  }
  return {};
}

}  // namespace cairn::cli
