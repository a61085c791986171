// Store selection, session opening and error reporting shared by every command.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {

// Messages quote names, ids and errors from logs, models and servers.
int report(int code, std::string_view message) {
  print_untrusted(stderr, "cairn: {}\n", message);
  return code;
}

void print_warning(const std::string& message) { print_untrusted(stderr, "cairn: warning: {}\n", message); }

int exit_code_for(const Error& error) {
  if (error.is(Errc::not_found) || error.is(Errc::ambiguous_id) || error.is(Errc::invalid_argument) ||
      error.is(Errc::unknown_ref) || error.is(Errc::unknown_model) || error.is(Errc::ambiguous_model)) {
    return kUsage;
  }
  return kFailure;
}

int report(const Error& error) { return report(exit_code_for(error), error.message); }

void add_session_argument(CLI::App* command, std::string& session) {
  command->add_option("SESSION", session, "Session id or unique id prefix")->required()->type_name("");
}

void add_store_option(CLI::App* command, std::string& uri) {
  // An empty value would read as "not given" and pick the default store.
  const CLI::Validator named(
      [](std::string& value) { return value.empty() ? std::string("an empty value names no store") : std::string(); },
      "", "non-empty");
  command->add_option("--store", uri,
                      "Where sessions live: memory:, jsonl:DIR, sqlite:FILE or postgres://… (postgresql://…). Default: $CAIRN_STORE, else "
                      "sqlite:$XDG_DATA_HOME/cairn/sessions.db ($XDG_DATA_HOME defaults to ~/.local/share)")
      ->type_name("URI")
      ->check(named);
}

Outcome<std::string> store_uri(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("CAIRN_STORE"); env && *env) return std::string(env);

  std::filesystem::path data_home;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    data_home = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    data_home = std::filesystem::path(home) / ".local" / "share";
  } else {
    return std::unexpected(report(kFailure, "no store given: set --store, $CAIRN_STORE, $XDG_DATA_HOME or $HOME"));
  }
  const auto dir = data_home / "cairn";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return std::unexpected(report(kFailure, fmt::format("cannot create {}: {}", dir.string(), ec.message())));
  return "sqlite:" + (dir / "sessions.db").string();
}

// The environment variable `name`, a decimal number of seconds from `min`
// to 86400; nullopt when it is not set.
Outcome<std::optional<std::chrono::milliseconds>> seconds_setting(const char* name, double min) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds >= min) || seconds > 86400) {
    return std::unexpected(
        report(kUsage, fmt::format("{}='{}' is not a number of seconds between {} and 86400", name, text, min)));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// How long opening a session for writing waits for a lease another
// machine's process holds: CAIRN_LOCK_WAIT, else the lease's lifetime and
// 5 s (a holder that died lets its lease expire within one lifetime).
// Stores one process writes are never waited for: their holder is alive.
Outcome<std::chrono::milliseconds> lock_wait(const Store& store) {
  if (!store.uri().starts_with("postgres")) return std::chrono::milliseconds(0);
  auto wait = seconds_setting("CAIRN_LOCK_WAIT", 0);
  if (!wait) return std::unexpected(wait.error());
  if (*wait) return **wait;
  auto ttl = seconds_setting("CAIRN_LEASE_TTL", 0.05);
  if (!ttl) return std::unexpected(ttl.error());
  return ttl->value_or(StoreOptions{}.lease_ttl) + std::chrono::seconds(5);
}

Outcome<std::unique_ptr<Store>> open_store_for(const std::string& option) {
  auto uri = store_uri(option);
  if (!uri) return std::unexpected(uri.error());
  StoreOptions store_options;
  // How long a PostgreSQL writer's lease lasts.
  auto ttl = seconds_setting("CAIRN_LEASE_TTL", 0.05);
  if (!ttl) return std::unexpected(ttl.error());
  if (*ttl) store_options.lease_ttl = **ttl;
  auto store = open_store(*uri, store_options);
  if (!store) return std::unexpected(report(exit_code_for(store.error()), store.error().message));
  return std::move(*store);
}

Outcome<std::shared_ptr<Session>> open_session(Store& store, std::string_view id_or_prefix, bool read_only) {
  auto id = store.resolve_id(id_or_prefix);
  if (!id) {
    if (id.error().is(Errc::not_found)) {
      return std::unexpected(report(kUsage, fmt::format("no session matches '{}'", id_or_prefix)));
    }
    return std::unexpected(report(id.error()));
  }
  OpenOptions options;
  options.read_only = read_only;
  auto session = store.open(*id, options);
  if (!session && session.error().is(Errc::locked)) {
    // Held by a process of another machine, which may have died: its lease
    // is waited out, said once.
    auto wait = lock_wait(store);
    if (!wait) return std::unexpected(wait.error());
    if (wait->count() > 0) {
      print_untrusted(stderr, "cairn: {}; waiting up to {:.1f} s for it\n", session.error().message,
                      static_cast<double>(wait->count()) / 1000);
      options.lock_timeout = *wait;
      session = store.open(*id, options);
    }
  }
  // The id resolved a moment ago, so a failure here is about the session
  // itself (damaged, locked, newer): a failure, not a usage error.
  if (!session) return std::unexpected(report(kFailure, session.error().message));
  const OpenReport& opened = (*session)->open_report();
  if (opened.tail_cut) {
    print_untrusted(stderr, "cairn: warning: {} a torn tail of {} bytes after seq {}{}{}\n",
                    read_only ? "ignored" : "cut", opened.bytes_cut, opened.last_good_seq,
                    opened.detail.empty() ? "" : ": ", opened.detail);
  }
  return std::move(*session);
}

Outcome<std::string> resolve_entry_id(const Session& session, std::string_view id_or_prefix) {
  auto exact = session.get_entry(id_or_prefix);
  if (!exact) return std::unexpected(report(exact.error()));
  if (*exact) return std::string(id_or_prefix);
  auto log = session.get_log();
  if (!log) return std::unexpected(report(log.error()));
  std::vector<std::string> matches;
  for (const LogLine& line : *log) {
    if (!is_tree_type(line.type)) continue;
    auto json = Json::parse(line.json, nullptr, false);
    if (!json.is_object() || !json.contains("id") || !json["id"].is_string()) continue;
    const auto& id = json["id"].get_ref<const std::string&>();
    if (id.starts_with(id_or_prefix)) matches.push_back(id);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    return std::unexpected(report(kUsage, fmt::format("no entry matches '{}' in session {}", id_or_prefix,
                                                      session.id())));
  }
  return std::unexpected(report(kUsage, fmt::format("entry prefix '{}' matches {} entries in session {}",
                                                    id_or_prefix, matches.size(), session.id())));
}

}  // namespace cairn::cli
