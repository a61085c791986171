// What every store shares: choosing one by URI, resolving id prefixes, forks.
#include "cairn/store/store.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "pg_conn.hpp"
#include "whole_session.hpp"

namespace cairn {

Result<std::unique_ptr<Store>> open_store(std::string_view uri, const StoreOptions& options) {
  if (uri == "memory:" || uri == "memory") return make_memory_store(options);
  if (uri.starts_with("jsonl:")) return make_jsonl_store(std::string(uri.substr(6)), options);
  if (uri.starts_with("sqlite:")) {
    if (uri.size() == 7) return fail(Errc::invalid_argument, "sqlite: needs a file, e.g. sqlite:/var/lib/cairn/sessions.db");
    return make_sqlite_store(std::string(uri.substr(7)), options);
  }
  if (uri.starts_with("postgres://") || uri.starts_with("postgresql://")) {
    return make_postgres_store(std::string(uri), options);
  }
  return fail(Errc::invalid_argument,
              fmt::format("unknown store URI '{}': use memory:, jsonl:DIR, sqlite:FILE or postgres://…", pg::redact(uri)));
}

Result<std::optional<std::shared_ptr<Session>>> Store::claim(const ClaimOptions&) {
  return fail(Errc::invalid_argument, fmt::format("{} is written by one process at a time: workers need a store many "
                                                  "processes share (postgres://…)",
                                                  uri()));
}

Status Store::end_claim(std::string_view, ClaimEnd, std::string_view) {
  return fail(Errc::invalid_argument, fmt::format("{} has no claims (postgres://… has)", uri()));
}

Result<std::vector<LogLine>> Store::read_log(std::string_view id, std::int64_t after_seq, std::size_t limit) {
  // A fresh read-only open: what the other writer's appends made durable so
  // far, checked as every open checks it.
  auto session = open(id, OpenOptions{.read_only = true});
  if (!session) return std::unexpected(session.error());
  return (*session)->get_log(after_seq, limit);
}

Result<std::string> Store::log_stamp(std::string_view id) {
  auto session = open(id, OpenOptions{.read_only = true});
  if (!session) return std::unexpected(session.error());
  return std::to_string((*session)->size());
}

namespace {

// The stores one process writes have nobody to announce appends across
// processes: their followers poll.
class PollFollow final : public LogFollow {
 public:
  PollFollow(std::chrono::milliseconds poll, std::function<void()> changed)
      : thread_([poll, changed = std::move(changed)](std::stop_token stop) {
          std::mutex mu;
          std::condition_variable_any tick;
          std::unique_lock lock(mu);
          while (!tick.wait_for(lock, stop, poll, [] { return false; }) && !stop.stop_requested()) changed();
        }) {}

 private:
  std::jthread thread_;
};

}  // namespace

Result<std::unique_ptr<LogFollow>> Store::follow(std::string_view, std::chrono::milliseconds poll,
                                                 std::function<void()> changed) {
  if (poll <= std::chrono::milliseconds::zero()) return fail(Errc::invalid_argument, "a follow's poll must be positive");
  return std::make_unique<PollFollow>(poll, std::move(changed));
}

Result<std::string> Store::resolve_id(std::string_view id_or_prefix) {
  auto headers = list();
  if (!headers) return std::unexpected(headers.error());
  std::vector<std::string> matches;
  for (const SessionHeader& header : *headers) {
    if (header.id == id_or_prefix) return header.id;
    if (!id_or_prefix.empty() && header.id.starts_with(id_or_prefix)) matches.push_back(header.id);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) return fail(Errc::not_found, fmt::format("no session '{}' in {}", id_or_prefix, uri()));
  std::string list;
  for (std::size_t i = 0; i < matches.size() && i < 5; ++i) list += (i ? ", " : "") + matches[i];
  return fail(Errc::ambiguous_id, fmt::format("'{}' matches {} sessions in {} ({}{})", id_or_prefix, matches.size(), uri(),
                                          list, matches.size() > 5 ? ", ..." : ""));
}

namespace {

// The entries of the operations still open in a session: each open
// operation's ref's entries after its operation_started (an operation's
// appends are the only ones that move its ref while it is open).
class OpenHistory {
 public:
  explicit OpenHistory(const Session& session) {
    for (const RefInfo& ref : session.refs()) {
      if (!ref.open_operation) continue;
      const auto started = session.seq_of(*ref.open_operation);
      if (!started) continue;
      opens_.push_back(Open{ref.name, *ref.open_operation, *started});
    }
  }

  bool any() const { return !opens_.empty(); }

  // Whether the entry at `seq`, which moved `ref`, belongs to an open operation.
  bool is_open(const TreeEntry& entry, std::int64_t seq) const {
    const std::string& ref = entry.ref ? *entry.ref : kMain;
    return std::any_of(opens_.begin(), opens_.end(),
                       [&](const Open& open) { return open.ref == ref && seq > open.started_seq; });
  }

  std::vector<std::string> report(const Session& session) const {
    std::vector<std::string> lines;
    for (const Open& open : opens_) {
      std::string kind = "operation";
      if (auto record = session.get_record(open.started_seq); record && *record) {
        if (const auto* h = std::get_if<HarnessRecord>(&(*record)->body)) {
          if (const auto* started = std::get_if<OperationStarted>(&h->body)) {
            kind = std::string(to_string(kind_of(started->intent)));
          }
        }
      }
      lines.push_back(fmt::format("ref {}: {} {} open since seq {}; the entries it appended were not copied", open.ref,
                                  kind, open.id, open.started_seq));
    }
    return lines;
  }

 private:
  static inline const std::string kMain = "main";
  struct Open {
    std::string ref;
    std::string id;
    std::int64_t started_seq = 0;
  };
  std::vector<Open> opens_;
};

}  // namespace

Result<ForkResult> Store::fork(std::string_view source_id, const ForkOptions& options) {
  auto source = open(source_id, OpenOptions{.read_only = true});
  if (!source) return std::unexpected(source.error());
  const Session& from = **source;
  OpenHistory open_history(from);

  std::vector<Record> records;
  if (options.scope == ForkOptions::Scope::branch) {
    // The selected branch only: root to the fork point, as one chain on main.
    std::optional<std::string> point;
    if (options.entry_id) {
      auto entry = from.get_entry(*options.entry_id);
      if (!entry) return fail(entry.error(), fmt::format("session {}: {}", source_id, entry.error().message));
      if (!*entry) return fail(Errc::not_found, fmt::format("session {} has no entry '{}'", source_id, *options.entry_id));
      point = options.position == ForkOptions::Position::at ? std::optional((*entry)->id) : (*entry)->parent_id;
    } else {
      auto refs = from.refs();
      auto it = std::find_if(refs.begin(), refs.end(), [&](const RefInfo& r) { return r.name == options.ref; });
      if (it == refs.end()) return fail(Errc::unknown_ref, fmt::format("session {} has no ref '{}'", source_id, options.ref));
      point = it->leaf_id;
    }
    for (const std::string& id : from.path_to(point)) {
      auto entry = from.get_entry(id);
      if (!entry) return fail(entry.error(), fmt::format("session {}: {}", source_id, entry.error().message));
      if (!*entry) return fail(Errc::corrupt_log, fmt::format("session {}: entry '{}' is on the branch but not in the log", source_id, id));
      // The branch is cut where an open operation's entries begin: what
      // follows them on the path was appended on top of unfinished work.
      if (open_history.any() && open_history.is_open(**entry, from.seq_of(id).value_or(-1))) break;
      (*entry)->ref.reset();  // every copied entry moves the new session's main
      records.push_back(Record{-1, std::move(**entry)});
    }
  } else {
    // The whole tree: every entry and every ref, leaves preserved.
    // Orchestration records stay with the source: they describe its operations.
    // The log in one read (a store that reads lines on demand reads them in
    // one query, not one per record), decoding only what is copied.
    std::unordered_map<std::string, std::optional<std::string>> skipped;  // entry id → its parent
    auto log = from.get_log();
    if (!log) return fail(log.error(), fmt::format("session {}: {}", source_id, log.error().message));
    for (const LogLine& line : *log) {
      if (!is_tree_type(line.type) && line.type != RecordType::ref_created && line.type != RecordType::ref_deleted) {
        continue;
      }
      auto decoded = decode_record_line(line.json);
      auto record = decoded ? std::move(*decoded) : fail(Errc::corrupt_log, "stored line is not valid JSON");
      if (!record) {
        return fail(record.error(),
                    fmt::format("session {}: seq {}: {}", source_id, line.seq, record.error().message));
      }
      if (auto* entry = std::get_if<TreeEntry>(&record->body)) {
        // An open operation's entries stay behind, and so does anything
        // chained on them.
        if ((entry->parent_id && skipped.contains(*entry->parent_id)) || open_history.is_open(*entry, line.seq)) {
          skipped.emplace(entry->id, entry->parent_id);
          continue;
        }
      } else if (auto* harness = std::get_if<HarnessRecord>(&record->body)) {
        // A ref created on an entry left behind starts at its nearest copied ancestor.
        if (auto* created = std::get_if<RefCreated>(&harness->body)) {
          while (created->at && skipped.contains(*created->at)) created->at = skipped.at(*created->at);
        }
      }
      record->seq = -1;
      records.push_back(std::move(*record));
    }
  }

  CreateOptions create_options;
  create_options.id = options.id;
  create_options.cwd = options.cwd.value_or(from.header().cwd);
  create_options.parent_session = from.id();
  auto created = create_whole_session(*this, create_options, [&](Session& scratch) -> Result<std::int64_t> {
    if (records.empty()) return 0;
    auto appended = scratch.append(std::move(records));
    if (!appended) return fail(appended.error(), fmt::format("fork of {}: {}", source_id, appended.error().message));
    return appended->count;
  });
  if (!created) return std::unexpected(created.error());
  return ForkResult{std::move(created->session), created->records, open_history.report(from)};
}

}  // namespace cairn
