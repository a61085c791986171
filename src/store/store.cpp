// What every store shares: choosing one by URI, resolving id prefixes, forks.
#include "cairn/store/store.hpp"

#include <fmt/format.h>

namespace cairn {

Result<std::unique_ptr<Store>> open_store(std::string_view uri, const StoreOptions& options) {
  if (uri == "memory:" || uri == "memory") return make_memory_store(options);
  if (uri.starts_with("jsonl:")) return make_jsonl_store(std::string(uri.substr(6)), options);
  if (uri.starts_with("sqlite:")) {
    if (uri.size() == 7) return fail("invalid_argument", "sqlite: needs a file, e.g. sqlite:/var/lib/cairn/sessions.db");
    return make_sqlite_store(std::string(uri.substr(7)), options);
  }
  return fail("invalid_argument",
              fmt::format("unknown store URI '{}': use memory:, jsonl:DIR or sqlite:FILE", uri));
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
  if (matches.empty()) return fail("not_found", fmt::format("no session '{}' in {}", id_or_prefix, uri()));
  std::string list;
  for (std::size_t i = 0; i < matches.size() && i < 5; ++i) list += (i ? ", " : "") + matches[i];
  return fail("ambiguous_id", fmt::format("'{}' matches {} sessions in {} ({}{})", id_or_prefix, matches.size(), uri(),
                                          list, matches.size() > 5 ? ", ..." : ""));
}

Result<ForkResult> Store::fork(std::string_view source_id, const ForkOptions& options) {
  auto source = open(source_id, OpenOptions{.read_only = true});
  if (!source) return std::unexpected(source.error());
  const Session& from = **source;

  std::vector<Record> records;
  if (options.scope == ForkOptions::Scope::branch) {
    // The selected branch only: root to the fork point, as one chain on main.
    std::optional<std::string> point;
    if (options.entry_id) {
      auto entry = from.get_entry(*options.entry_id);
      if (!entry) return fail(entry.error().code, fmt::format("session {}: {}", source_id, entry.error().message));
      if (!*entry) return fail("not_found", fmt::format("session {} has no entry '{}'", source_id, *options.entry_id));
      point = options.position == ForkOptions::Position::at ? std::optional((*entry)->id) : (*entry)->parent_id;
    } else {
      auto refs = from.refs();
      auto it = std::find_if(refs.begin(), refs.end(), [&](const RefInfo& r) { return r.name == options.ref; });
      if (it == refs.end()) return fail("unknown_ref", fmt::format("session {} has no ref '{}'", source_id, options.ref));
      point = it->leaf_id;
    }
    for (const std::string& id : from.path_to(point)) {
      auto entry = from.get_entry(id);
      if (!entry) return fail(entry.error().code, fmt::format("session {}: {}", source_id, entry.error().message));
      if (!*entry) return fail("corrupt_log", fmt::format("session {}: entry '{}' is on the branch but not in the log", source_id, id));
      (*entry)->ref.reset();  // every copied entry moves the new session's main
      records.push_back(Record{-1, std::move(**entry)});
    }
  } else {
    // The whole tree: every entry and every ref, leaves preserved.
    // Orchestration records stay with the source: they describe its operations.
    // The log in one read (a store that reads lines on demand reads them in
    // one query, not one per record), decoding only what is copied.
    auto log = from.get_log();
    if (!log) return fail(log.error().code, fmt::format("session {}: {}", source_id, log.error().message));
    for (const LogLine& line : *log) {
      if (!is_tree_type(line.type) && line.type != RecordType::ref_created && line.type != RecordType::ref_deleted) {
        continue;
      }
      const Json json = Json::parse(line.json, nullptr, /*allow_exceptions=*/false);
      auto record = json.is_discarded() ? fail("corrupt_log", "stored line is not valid JSON") : decode_record(json);
      if (!record) {
        return fail(record.error().code,
                    fmt::format("session {}: seq {}: {}", source_id, line.seq, record.error().message));
      }
      record->seq = -1;
      records.push_back(std::move(*record));
    }
  }

  CreateOptions create_options;
  create_options.id = options.id;
  create_options.cwd = options.cwd.value_or(from.header().cwd);
  create_options.parent_session = from.id();
  auto created = create(create_options);
  if (!created) return std::unexpected(created.error());
  const auto copied = static_cast<std::int64_t>(records.size());
  if (auto appended = (*created)->append(std::move(records)); !appended) {
    const std::string new_id = (*created)->id();
    created->reset();
    (void)remove(new_id);
    return fail(appended.error().code, fmt::format("fork of {}: {}", source_id, appended.error().message));
  }
  return ForkResult{std::move(*created), copied};
}

}  // namespace cairn
