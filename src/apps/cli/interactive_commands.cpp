// Interactive mode: the slash commands (the table and /help are in
// tui/slash_commands.cpp).
#include <algorithm>
#include <charconv>
#include <map>
#include <filesystem>

#include <fmt/format.h>

#include "interactive_app.hpp"
#include "interactive_picker.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

// Every tree entry of the session, in log order.
std::vector<TreeEntry> all_entries(const Session& session) {
  std::vector<TreeEntry> entries;
  EntryQuery query{.order = Order::oldest_first};
  for (;;) {
    auto page = session.find_entries(query);
    if (!page) break;
    for (auto& entry : page->items) entries.push_back(std::move(entry));
    if (!page->next_cursor) break;
    query.cursor = page->next_cursor;
  }
  return entries;
}

std::vector<std::string> ids_of(const std::vector<TreeEntry>& entries) {
  std::vector<std::string> ids;
  ids.reserve(entries.size());
  for (const auto& entry : entries) ids.push_back(entry.id);
  return ids;
}

}  // namespace

bool InteractiveApp::refuse_while_busy(const std::string& what) {
  if (!busy_) return false;
  warn(fmt::format("{} waits until the operation on this ref ends (Ctrl+C aborts it)", what));
  return true;
}

void InteractiveApp::command(const tui::SlashCommand& command) {
  const std::string& name = command.name;
  const std::string& args = command.args;
  if (name == "help") {
    terminal_.print(tui::help_text());
  } else if (name == "model") {
    cmd_model(args);
  } else if (name == "thinking") {
    cmd_thinking(args);
  } else if (name == "thinking-show") {
    renderer_.set_show_thinking(!renderer_.show_thinking());
    say(renderer_.show_thinking() ? "(thinking shown in full)" : "(thinking collapsed to one line)");
  } else if (name == "compact") {
    cmd_compact(args);
  } else if (name == "tree") {
    cmd_tree();
  } else if (name == "fork") {
    cmd_fork();
  } else if (name == "label") {
    cmd_label(args);
  } else if (name == "name") {
    cmd_name(args);
  } else if (name == "session") {
    cmd_session();
  } else if (name == "sessions") {
    cmd_sessions();
  } else if (name == "new") {
    cmd_new();
  } else if (name == "resume") {
    cmd_resume(args);
  } else if (name == "ref") {
    cmd_ref(args);
  } else {
    say(tui::unknown_command_hint(name));
  }
}

void InteractiveApp::cmd_model(const std::string& args) {
  const Model current = setup_.ref.model();
  const std::string current_id = current.provider + "/" + current.id;
  if (args.empty()) {
    std::vector<std::string> lines;
    bool listed_current = false;
    for (const ConfiguredModel* model : setup_.registry.available()) {
      const bool is_current = model->qualified_id() == current_id;
      listed_current = listed_current || is_current;
      lines.push_back(fmt::format("{} {}", is_current ? '*' : ' ', model->qualified_id()));
    }
    if (!listed_current && !current.provider.empty()) {
      const bool configured_here = setup_.model && setup_.model->qualified_id() == current_id;
      lines.insert(lines.begin(), fmt::format("* {}  ({})", current_id, configured_here ? setup_.model->origin : "this branch's"));
    }
    std::string out = "Models (/model PROVIDER/ID switches this branch):\n";
    for (const auto& line : lines) out += line + "\n";
    terminal_.print(visible_text(out));  // a branch's model is the log's word
    return;
  }
  std::string provider, id;
  if (setup_.model && (args == setup_.model->qualified_id() || args == setup_.model->model.id)) {
    provider = setup_.model->model.provider;
    id = setup_.model->model.id;
  } else {
    auto found = setup_.registry.find(args);
    if (!found) {
      warn(found.error().message);
      return;
    }
    if (!(*found)->available()) {
      warn(fmt::format("{} has no key: {}", (*found)->qualified_id(), describe_key(**found)));
      return;
    }
    provider = (*found)->model.provider;
    id = (*found)->model.id;
  }
  auto set = setup_.ref.set_model(provider, id);
  if (!set) {
    warn(fmt::format("cannot switch the model: {}", set.error().message));
    return;
  }
  status_.state().model = provider + "/" + id;
  say(fmt::format("(model {}/{}{})", provider, id, busy_ ? ", from the run's next step" : ""));
}

void InteractiveApp::cmd_thinking(const std::string& args) {
  if (args.empty()) {
    say(fmt::format("thinking level: {} (one of: off, minimal, low, medium, high, xhigh)",
                    to_string(setup_.ref.thinking_level())));
    return;
  }
  const auto level = parse_thinking_level(args);
  if (!level) {
    warn(fmt::format("unknown thinking level '{}': one of off, minimal, low, medium, high, xhigh", args));
    return;
  }
  auto set = setup_.ref.set_thinking_level(*level);
  if (!set) {
    warn(fmt::format("cannot set the thinking level: {}", set.error().message));
    return;
  }
  status_.state().thinking_level = args;
  say(fmt::format("(thinking {})", args));
}

void InteractiveApp::cmd_compact(const std::string& args) {
  if (refuse_while_busy("/compact")) return;
  std::optional<std::string> instructions;
  if (!args.empty()) instructions = args;
  start_work("compaction", [instructions](AgentRef& ref) { return ref.compact(instructions); });
}

void InteractiveApp::cmd_tree() {
  if (refuse_while_busy("/tree")) return;
  const std::vector<TreeEntry> entries = all_entries(*setup_.session);
  if (entries.empty()) {
    say("(the session has no entries yet)");
    return;
  }
  std::map<std::string, std::vector<std::string>> refs_at;
  for (const RefStatus& ref : setup_.harness->refs()) {
    if (ref.leaf_id) refs_at[*ref.leaf_id].push_back(ref.name);
  }
  last_tree_ = tui::build_tree_view(entries, refs_at, setup_.ref.leaf_id(), terminal_.width() - 1);
  std::string out;
  for (const auto& line : last_tree_.lines) out += line + "\n";
  terminal_.print(out);
  const std::vector<std::string> ids = ids_of(entries);
  ask("go to entry (number or id; Enter cancels): ", [this, ids](const std::string& answer) {
    if (tui::trim(answer).empty()) {
      say("(staying where you are)");
      return;
    }
    auto target = tui::resolve_entry_choice(answer, last_tree_, ids);
    if (!target) {
      warn(target.error());
      return;
    }
    const std::string id = *target;
    ask("summarise the branch you leave? [y/N] ", [this, id](const std::string& reply) {
      const std::string choice = tui::trim(reply);
      const bool summarize = !choice.empty() && (choice[0] == 'y' || choice[0] == 'Y');
      start_work("navigation", [id, summarize](AgentRef& ref) {
        return ref.navigate_tree(id, NavigateOptions{.summarize = summarize});
      });
    });
  });
}

void InteractiveApp::cmd_fork() {
  if (refuse_while_busy("/fork")) return;
  auto forked = setup_.ref.fork(*setup_.store);
  if (!forked) {
    warn(fmt::format("fork failed: {}", forked.error().message));
    return;
  }
  const std::string id = forked->session->id();
  for (const auto& line : forked->left_out) say(fmt::format("(left out: {})", line));
  forked->session.reset();  // the switch opens it again, for writing
  AgentCommandOptions options = options_for_switch();
  options.session = id;
  if (switch_session(std::move(options))) say(fmt::format("(forked: now in session {})", id));
}

void InteractiveApp::cmd_label(const std::string& args) {
  auto [entry, text] = tui::split_first_word(args);
  if (entry.empty()) {
    warn("usage: /label ENTRY TEXT (ENTRY: an id, a prefix, or a number from /tree; no TEXT clears the label)");
    return;
  }
  const std::vector<std::string> ids = ids_of(all_entries(*setup_.session));
  auto target = tui::resolve_entry_choice(entry, last_tree_, ids);
  if (!target) {
    warn(target.error());
    return;
  }
  std::optional<std::string> label;
  if (!text.empty()) label = text;
  auto set = setup_.ref.session().set_label(*target, label);
  if (!set) {
    warn(fmt::format("cannot label {}: {}", target->substr(0, 8), set.error().message));
    return;
  }
  say(label ? fmt::format("(labelled {} \"{}\")", target->substr(0, 8), *label)
            : fmt::format("(label of {} cleared)", target->substr(0, 8)));
}

void InteractiveApp::cmd_name(const std::string& args) {
  if (args.empty()) {
    auto name = setup_.ref.session().name();
    say(name && *name ? fmt::format("session name: {}", **name) : std::string("the session has no name; /name TEXT sets one"));
    return;
  }
  auto set = setup_.ref.session().set_name(args);
  if (!set) {
    warn(fmt::format("cannot name the session: {}", set.error().message));
    return;
  }
  say(fmt::format("(session named \"{}\")", args));
}

void InteractiveApp::cmd_session() {
  const Session& session = *setup_.session;
  std::string out;
  out += fmt::format("session  {}\n", session.id());
  auto uri = store_uri(setup_.options.store);
  out += fmt::format("store    {}\n", uri ? *uri : std::string("?"));
  out += fmt::format("cwd      {}\n", session.header().cwd);
  if (session.header().parent_session) out += fmt::format("forked   from {}\n", *session.header().parent_session);
  if (auto name = session.name(); name && *name) out += fmt::format("name     {}\n", **name);
  std::string refs;
  for (const RefStatus& ref : setup_.harness->refs()) {
    if (!refs.empty()) refs += ", ";
    refs += ref.name == setup_.ref.name() ? "*" + ref.name : ref.name;
    refs += ref.leaf_id ? " at " + ref.leaf_id->substr(0, 8) : " (empty)";
    if (ref.run) refs += fmt::format(" ({} {})", to_string(ref.run->kind), to_string(ref.run->status));
  }
  out += fmt::format("refs     {}\n", refs);
  if (auto stats = session.stats()) {
    out += fmt::format("log      {} records, {} entries\n", stats->records, stats->tree_entries);
  }
  const tui::StatusState& state = status_.state();
  out += fmt::format("spent    {} tokens in, {} out, {}\n", state.input_tokens, state.output_tokens,
                     tui::format_cost(state.cost));
  terminal_.print(visible_text(out));  // the cwd, the name and the refs are the log's words
}

void InteractiveApp::cmd_sessions() {
  auto headers = setup_.store->list();
  if (!headers) {
    warn(headers.error().message);
    return;
  }
  std::string out;
  for (const SessionHeader& header : *headers) {
    out += fmt::format("{} {}  {}  {}\n", header.id == setup_.session->id() ? '*' : ' ', header.id, header.timestamp,
                       header.cwd);
  }
  if (out.empty()) out = "(no sessions)\n";
  terminal_.print(visible_text(out));
}

AgentCommandOptions InteractiveApp::options_for_switch() const {
  AgentCommandOptions options = launch_options_;
  options.session.clear();
  options.continue_latest = false;
  options.resume.reset();
  options.ref = "main";
  // Keep the model and thinking level in use (an ad-hoc endpoint stays as
  // the command line gave it).
  if (options.api.empty() && !status_.state().model.empty()) options.model = status_.state().model;
  // A level chosen here goes along; the default writes no entry.
  if (status_.state().thinking_level != "off" || options.thinking) {
    options.thinking = parse_thinking_level(status_.state().thinking_level);
  }
  return options;
}

void InteractiveApp::cmd_new() {
  if (refuse_while_busy("/new")) return;
  if (switch_session(options_for_switch())) say(fmt::format("(new session {})", setup_.session->id()));
}

void InteractiveApp::cmd_resume(const std::string& args) {
  if (refuse_while_busy("/resume")) return;
  const auto open = [this](const std::string& id_or_prefix) {
    auto id = setup_.store->resolve_id(id_or_prefix);
    if (!id) {
      warn(id.error().is(Errc::not_found) ? fmt::format("no session matches '{}'", id_or_prefix) : id.error().message);
      return;
    }
    if (*id == setup_.session->id()) {
      say("(already in that session)");
      return;
    }
    AgentCommandOptions options = launch_options_;
    options.session = *id;
    options.continue_latest = false;
    options.resume.reset();
    options.ref = "main";
    if (switch_session(std::move(options))) say(fmt::format("(now in session {})", *id));
  };
  if (!args.empty()) {
    open(args);
    return;
  }
  // The picker: this directory's sessions, newest first.
  auto headers = setup_.store->list();
  if (!headers) {
    warn(headers.error().message);
    return;
  }
  std::vector<std::string> ids;
  std::string out;
  const auto here = setup_.cwd.lexically_normal();
  for (const SessionHeader& header : *headers) {
    if (header.cwd.empty() || std::filesystem::path(header.cwd).lexically_normal() != here) continue;
    if (ids.size() == 20) break;
    ids.push_back(header.id);
    out += fmt::format("{:>2}{} {}  {}  {}\n", ids.size(), header.id == setup_.session->id() ? '*' : ' ',
                       header.id, header.timestamp.substr(0, 19),
                       tui::truncate_to_width(visible_text(session_gist(*setup_.store, header.id)), 60));
  }
  if (ids.empty()) {
    say("(no sessions in this directory; /sessions lists the store's)");
    return;
  }
  terminal_.print(visible_text(out));
  ask("session number (or id; Enter cancels): ", [ids, open](const std::string& answer) {
    const std::string choice = tui::trim(answer);
    if (choice.empty()) return;
    std::size_t number = 0;
    const auto [end, error] = std::from_chars(choice.data(), choice.data() + choice.size(), number);
    if (error == std::errc() && end == choice.data() + choice.size() && number >= 1 && number <= ids.size()) {
      open(ids[number - 1]);
    } else {
      open(choice);
    }
  });
}

void InteractiveApp::cmd_ref(const std::string& args) {
  if (args.empty()) {
    std::string out;
    for (const RefStatus& ref : setup_.harness->refs()) {
      out += fmt::format("{} {}{}\n", ref.name == setup_.ref.name() ? '*' : ' ', ref.name,
                         ref.leaf_id ? " at " + ref.leaf_id->substr(0, 8) : std::string(" (empty)"));
    }
    terminal_.print(visible_text(out) + "(/ref NAME switches, creating it at this ref's leaf)\n");
    return;
  }
  if (refuse_while_busy("/ref")) return;
  if (args == setup_.ref.name()) {
    say(fmt::format("(already on {})", args));
    return;
  }
  if (auto existing = setup_.harness->ref(args)) {
    setup_.ref = *existing;
    say(fmt::format("(now on ref {})", args));
  } else {
    auto created = setup_.harness->create_ref(args, setup_.ref.leaf_id());
    if (!created) {
      warn(fmt::format("cannot create ref {}: {}", args, created.error().message));
      return;
    }
    setup_.ref = *created;
    say(fmt::format("(created ref {} at this leaf; now on it)", args));
  }
  subscribe();
  reset_status();
  refresh();
  offer_resume();
}

bool InteractiveApp::switch_session(AgentCommandOptions options) {
  subscription_.reset();
  SetupMode mode;
  mode.announce_session = false;
  // setup_agent reports its own failures on stderr: they land where the
  // footer was.
  terminal_.pause();
  auto next = setup_agent(options, mode);
  terminal_.resume();
  if (!next) {
    warn("(staying in this session)");
    subscribe();
    return false;
  }
  // The old harness goes before its session before its store.
  setup_.harness.reset();
  setup_.session.reset();
  setup_.store.reset();
  setup_ = std::move(*next);
  last_tree_ = {};
  subscribe();
  reset_status();
  show_transcript();
  refresh();
  offer_resume();
  return true;
}

}  // namespace cairn::cli
