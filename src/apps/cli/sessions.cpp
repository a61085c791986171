// `cairn sessions` lists the store's sessions; `cairn new` creates an empty one.
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct SessionsOptions {
  std::string store;
  bool json = false;
};

// What the list says of a session beyond its header: how many input
// requests of its open operations wait for an answer, and the sandbox its
// newest tool call ran under (none: no call, or a log from before sandboxes).
struct SessionState {
  std::size_t waiting = 0;
  std::optional<SandboxRecord> sandbox;
};

std::optional<SandboxRecord> newest_sandbox(Session& session) {
  auto newest = session.find_harness_entries(
      HarnessQuery{.type = RecordType::tool_started, .order = Order::newest_first, .limit = 1});
  if (!newest || newest->items.empty()) return std::nullopt;
  const auto* started = std::get_if<ToolStarted>(&newest->items.front().body);
  return started ? started->sandbox : std::nullopt;
}

// Read-only, and cheap: refs, the open operations' requests, one record.
SessionState session_state(Store& store, const std::string& id) {
  SessionState state;
  auto session = store.open(id, OpenOptions{.read_only = true});
  if (!session) return state;  // `cairn verify` says what is wrong with it
  state.sandbox = newest_sandbox(**session);
  std::size_t& waiting = state.waiting;
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
  return state;
}

// A subagent's session: its header's "child" object (make_child_session_tool).
const Json* child_of(const SessionHeader& header) {
  auto it = header.extra.find("child");
  return it != header.extra.end() && it->is_object() && header.parent_session ? &*it : nullptr;
}

int run_sessions(const SessionsOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  auto listed = (*store)->list();
  if (!listed) return report(listed.error());
  // Lineage: each subagent's session right under its parent's (oldest
  // first there), indented one step per level; a child whose parent is
  // not in the store stays where its time puts it.
  std::map<std::string, std::vector<const SessionHeader*>> children;
  std::set<std::string> present;
  for (const auto& header : *listed) present.insert(header.id);
  for (auto it = listed->rbegin(); it != listed->rend(); ++it) {
    if (child_of(*it) && present.count(*it->parent_session)) children[*it->parent_session].push_back(&*it);
  }
  std::vector<std::pair<const SessionHeader*, int>> ordered;  // header, depth
  std::function<void(const SessionHeader&, int)> add = [&](const SessionHeader& header, int depth) {
    ordered.emplace_back(&header, depth);
    if (auto kids = children.find(header.id); kids != children.end() && depth < 16) {
      for (const SessionHeader* kid : kids->second) add(*kid, depth + 1);
    }
  };
  for (const auto& header : *listed) {
    if (!(child_of(header) && present.count(*header.parent_session))) add(header, 0);
  }
  for (const auto& [entry, depth] : ordered) {
    const SessionHeader& header = *entry;
    const SessionState state = session_state(**store, header.id);
    const std::size_t waiting = state.waiting;
    if (options.json) {
      Json line = encode(header);
      if (waiting > 0) line["awaitingInput"] = waiting;
      if (state.sandbox) line["sandbox"] = encode(*state.sandbox);
      fmt::print("{}\n", line.dump());
      continue;
    }
    std::string origin;
    if (const Json* child = child_of(header)) {
      origin = fmt::format("  (subagent of {}, call {}{})", *header.parent_session, child->value("toolCallId", std::string("?")),
                           child->contains("agent") ? fmt::format(", agent {}", child->value("agent", std::string())) : "");
    } else if (header.parent_session) {
      origin = fmt::format("  (fork of {})", *header.parent_session);
    }
    if (auto it = header.extra.find("importedFrom"); it != header.extra.end() && it->is_object()) {
      origin += fmt::format("  (imported from {})", it->value("format", std::string("?")));
    }
    if (waiting > 0) origin += fmt::format("  (waits for input: {}; see cairn resume {})", waiting, header.id);
    // A session whose tools ran with the user's full rights says so.
    if (state.sandbox && state.sandbox->mode == SandboxMode::off) origin += "  (no sandbox)";
    print_untrusted(stdout, "{}{}  {}  {}{}\n", std::string(2 * static_cast<std::size_t>(depth), ' '), header.id,
                    header.timestamp, header.cwd, origin);
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
    if (session.error().is(Errc::already_exists)) return report(kUsage, session.error().message);
    return report(session.error());
  }
  print_untrusted(stdout, "{}\n", (*session)->id());
  return kOk;
}

}  // namespace

void register_session_commands(CLI::App& app, Commands& commands) {
  {
    auto [sub, options] = add_command(app, commands, "sessions", "List the store's sessions, newest first: id, created, cwd, whether a run waits for input, and "
        "(no sandbox) when its newest tool call ran without one; a subagent's session is indented under its parent's", run_sessions);
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
