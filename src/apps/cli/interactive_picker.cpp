// `cairn -r` without an id: a numbered list of this directory's sessions,
// newest first, and the user's choice read from the terminal (before the
// interactive mode's line editor starts).
#include <unistd.h>

#include <filesystem>
#include <charconv>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "interactive_picker.hpp"
#include "tui/slash_commands.hpp"
#include "tui/terminal_text.hpp"
#include "tui/tree_view.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
std::string session_gist(Store& store, const std::string& id) {
  OpenOptions options;
  options.read_only = true;
  auto session = store.open(id, options);
  if (!session) return "(cannot open)";
  if (auto name = (*session)->name(); name && *name) return "\"" + **name + "\"";
  auto first = (*session)->find_entries(EntryQuery{.type = RecordType::message, .order = Order::oldest_first, .limit = 8});
  if (first) {
    for (const auto& entry : first->items) {
      const auto* body = std::get_if<MessageBody>(&entry.body);
      if (body && std::holds_alternative<UserMessage>(body->message)) return tui::entry_summary(entry);
    }
  }
  return "(empty)";
}

Outcome<std::string> pick_session(Store& store) {
  std::error_code ec;
  const auto here = std::filesystem::current_path(ec).lexically_normal();
  auto headers = store.list();
  if (!headers) return std::unexpected(report(headers.error()));
  std::vector<std::string> ids;
  for (const SessionHeader& header : *headers) {
    if (header.cwd.empty() || std::filesystem::path(header.cwd).lexically_normal() != here) continue;
    if (ids.size() == 20) break;
    ids.push_back(header.id);
    // The gist (a session's name or first prompt) in the form it is shown
    // in, before it is cut to its width.
    print_untrusted(stderr, "{:>2}  {}  {}  {}\n", ids.size(), header.id, header.timestamp.substr(0, 19),
                    tui::truncate_to_width(text_for(stderr, session_gist(store, header.id)), 60));
  }
  if (ids.empty()) return std::unexpected(report(kUsage, fmt::format("no sessions in {} to resume", here.string())));
  if (!::isatty(STDIN_FILENO)) return std::unexpected(report(kUsage, "-r without an id needs a terminal to pick on"));
  for (;;) {
    fmt::print(stderr, "session number (or id; Enter cancels): ");
    std::fflush(stderr);
    std::string line;
    if (!std::getline(std::cin, line) || tui::trim(line).empty()) return std::unexpected(kUsage);
    const std::string choice = tui::trim(line);
    std::size_t number = 0;
    const auto [end, error] = std::from_chars(choice.data(), choice.data() + choice.size(), number);
    if (error == std::errc() && end == choice.data() + choice.size() && number >= 1 && number <= ids.size()) {
      return ids[number - 1];
    }
    auto id = store.resolve_id(choice);
    if (id) return *id;
    print_untrusted(stderr, "no session matches '{}'\n", choice);
  }
}

}  // namespace cairn::cli
