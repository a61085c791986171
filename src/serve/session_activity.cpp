#include "session_activity.hpp"

#include "cairn/log/record.hpp"

namespace cairn::serve {

namespace {

// How many stored lines one read brings (a first look at a long session
// takes several).
constexpr std::size_t kFactsPage = 4096;

void add_tree_entry(SessionFacts& facts, const TreeEntry& entry) {
  if (const auto* body = std::get_if<MessageBody>(&entry.body)) {
    if (const auto* answer = std::get_if<AssistantMessage>(&body->message)) {
      facts.tokens += answer->usage.total_tokens;
      facts.cost += answer->usage.cost.total;
      facts.provider = answer->provider;
      facts.model = answer->model;
    }
  } else if (const auto* change = std::get_if<ModelChange>(&entry.body)) {
    facts.provider = change->provider;
    facts.model = change->model_id;
  } else if (const auto* info = std::get_if<SessionInfo>(&entry.body)) {
    facts.name = info->name;
  }
}

void add_harness_record(SessionFacts& facts, const HarnessRecord& record) {
  const std::string run(run_id_of(record));
  if (std::holds_alternative<OperationStarted>(record.body)) {
    facts.open_runs[run] = record.ref;
  } else if (std::holds_alternative<OperationFinished>(record.body)) {
    facts.open_runs.erase(run);
    std::erase_if(facts.pending_inputs, [&](const auto& pending) { return pending.second == run; });
  } else if (std::holds_alternative<InputRequested>(record.body)) {
    facts.pending_inputs[record.id] = run;
  } else if (const auto* resolved = std::get_if<InputResolved>(&record.body)) {
    facts.pending_inputs.erase(resolved->request_id);
  }
}

// Adds one stored line. A line that does not decode (a placeholder left by
// repair, a record of a newer cairn marked ignorable) adds only its time.
void add_line(SessionFacts& facts, const LogLine& line) {
  facts.seq = line.seq;
  const Json json = Json::parse(line.json, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return;
  if (auto at = json.find("timestamp"); at != json.end() && at->is_string()) facts.updated_at = at->get<std::string>();
  auto record = decode_record(json);
  if (!record) return;
  if (const auto* entry = std::get_if<TreeEntry>(&record->body)) add_tree_entry(facts, *entry);
  if (const auto* harness = std::get_if<HarnessRecord>(&record->body)) add_harness_record(facts, *harness);
}

}  // namespace

Json SessionFacts::activity() const { return Json{{"updatedAt", updated_at}, {"cost", cost}, {"tokens", tokens}}; }

std::string_view SessionFacts::log_status() const {
  if (!pending_inputs.empty()) return "awaiting_input";
  if (!open_runs.empty()) return "suspended";
  return "idle";
}

Result<SessionFacts> SessionActivity::facts(const std::string& id, const std::string& created, const std::string& stamp,
                                            const Reader& read) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mu_);
    auto& slot = entries_[id];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  std::lock_guard lock(entry->mu);
  if (entry->created != created) {
    // A session removed and made again under the same id starts over.
    entry->facts = {};
    entry->stamp.clear();
    entry->created = created;
  }
  if (!entry->stamp.empty() && entry->stamp == stamp) return entry->facts;
  // `stamp` was taken before this read: records appended meanwhile are read
  // now and the next look, seeing a newer stamp, reads from after them.
  SessionFacts facts = entry->facts;
  for (;;) {
    auto lines = read(facts.seq, kFactsPage);
    if (!lines) return std::unexpected(lines.error());
    for (const LogLine& line : *lines) add_line(facts, line);
    if (lines->size() < kFactsPage) break;
  }
  entry->facts = std::move(facts);
  entry->stamp = stamp;
  return entry->facts;
}

Result<SessionFacts> SessionActivity::facts(const std::string& id, const Session& session) {
  const std::int64_t size = session.size();
  return facts(id, session.header().timestamp, std::to_string(size), [&](std::int64_t after, std::size_t limit) {
    return session.get_log(after, limit);
  });
}

void SessionActivity::forget(const std::string& id) {
  std::lock_guard lock(mu_);
  entries_.erase(id);
}

}  // namespace cairn::serve
