// `cairn sessions` lists the store's sessions; `cairn new` creates an empty one.
#include <filesystem>

#include <fmt/format.h>

#include "cli.hpp"

namespace cairn::cli {
namespace {

struct SessionsOptions {
  std::string store;
  bool json = false;
};

// How many input requests of the session's open operations wait for an
// answer; read-only, and cheap for a session with nothing open.
std::size_t awaiting_input(Store& store, const std::string& id) {
  auto session = store.open(id, OpenOptions{.read_only = true});
  if (!session) return 0;  // `cairn verify` says what is wrong with it
  std::size_t waiting = 0;
  for (const RefInfo& ref : (*session)->refs()) {
    if (!ref.open_operation) continue;
    HarnessQuery query{.ref = ref.name, .run_id = *ref.open_operation};
    query.type = RecordType::input_requested;
    auto asked = (*session)->find_harness_entries(query);
    query.type = RecordType::input_resolved;
    auto answered = (*session)->find_harness_entries(query);
    if (!asked || !answered) continue;
    if (asked->items.size() > answered->items.size()) waiting += asked->items.size() - answered->items.size();
  }
  return waiting;
}

int run_sessions(const SessionsOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto headers = (*store)->list();
  if (!headers) return report(headers.error());
  for (const SessionHeader& header : *headers) {
    const std::size_t waiting = awaiting_input(**store, header.id);
    if (options.json) {
      Json line = encode(header);
      if (waiting > 0) line["awaitingInput"] = waiting;
      fmt::print("{}\n", line.dump());
      continue;
    }
    std::string origin;
    if (header.parent_session) origin = fmt::format("  (fork of {})", *header.parent_session);
    if (auto it = header.extra.find("importedFrom"); it != header.extra.end() && it->is_object()) {
      origin += fmt::format("  (imported from {})", it->value("format", std::string("?")));
    }
    if (waiting > 0) origin += fmt::format("  (waits for input: {}; see cairn resume {})", waiting, header.id);
    fmt::print("{}  {}  {}{}\n", header.id, header.timestamp, header.cwd, origin);
  }
  return kOk;
}

struct NewOptions {
  std::string store;
  std::string cwd;
  std::string id;
};

int run_new(const NewOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  CreateOptions create;
  if (!options.id.empty()) create.id = options.id;
  if (options.cwd.empty()) {
    std::error_code ec;
    create.cwd = std::filesystem::current_path(ec).string();
  } else {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(options.cwd, ec);
    create.cwd = ec ? options.cwd : absolute.lexically_normal().string();
  }
  auto session = (*store)->create(create);
  if (!session) {
    if (session.error().code == "already_exists") return report(kUsage, session.error().message);
    return report(session.error());
  }
  fmt::print("{}\n", (*session)->id());
  return kOk;
}

}  // namespace

void register_session_commands(CLI::App& app, Commands& commands) {
  {
    auto [sub, options] = add_command(app, commands, "sessions", "List the store's sessions, newest first: id, created, cwd, and whether a run waits for input", run_sessions);
    add_store_option(sub, options->store);
    sub->add_flag("--json", options->json, "Print each session's header as one JSON object per line");
  }
  {
    auto [sub, options] = add_command(app, commands, "new", "Create an empty session and print its id", run_new);
    add_store_option(sub, options->store);
    sub->add_option("--cwd", options->cwd, "The session's working directory (default: the current directory)")
        ->type_name("DIR");
    sub->add_option("--id", options->id, "The new session's id (default: a fresh time-ordered UUID)")
        ->type_name("ID");
  }
}

}  // namespace cairn::cli
