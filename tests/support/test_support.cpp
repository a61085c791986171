#include "support/test_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

namespace cairn::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "cairn-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

namespace {

TreeEntry entry_with(TreeBody body, std::optional<std::string> parent, std::string id, std::string ref) {
  TreeEntry entry;
  entry.id = std::move(id);
  entry.parent_id = std::move(parent);
  if (!ref.empty()) entry.ref = std::move(ref);
  entry.body = std::move(body);
  return entry;
}

}  // namespace

Record tree(TreeBody body, std::optional<std::string> parent, std::string id, std::string ref) {
  return Record{-1, entry_with(std::move(body), std::move(parent), std::move(id), std::move(ref))};
}

Record harness(HarnessBody body, std::string ref, std::string id) {
  HarnessRecord record;
  record.id = std::move(id);
  record.ref = std::move(ref);
  record.body = std::move(body);
  return Record{-1, std::move(record)};
}

Record user_entry(std::string text, std::optional<std::string> parent, std::string id, std::string ref) {
  return tree(MessageBody{UserMessage{std::move(text), 1764496998000, Json::object()}}, std::move(parent), std::move(id),
              std::move(ref));
}

Record assistant_entry(std::string text, std::optional<std::string> parent, std::string id, std::vector<ToolCall> calls,
                       std::string ref) {
  AssistantMessage message;
  message.content.push_back(TextContent{std::move(text), std::nullopt, Json::object()});
  for (ToolCall& call : calls) message.content.push_back(std::move(call));
  message.api = "openai-completions";
  message.provider = "faux";
  message.model = "faux-1";
  message.usage.input = 100;
  message.usage.output = 20;
  message.usage.total_tokens = 120;
  message.stop_reason = message.content.size() > 1 ? StopReason::tool_use : StopReason::stop;
  message.timestamp = 1764496999000;
  return tree(MessageBody{std::move(message)}, std::move(parent), std::move(id), std::move(ref));
}

Record tool_result_entry(const std::string& call_id, const std::string& tool, std::string text,
                         std::optional<std::string> parent, std::string id, std::string ref) {
  ToolResultMessage message;
  message.tool_call_id = call_id;
  message.tool_name = tool;
  message.content.push_back(TextContent{std::move(text), std::nullopt, Json::object()});
  message.timestamp = 1764497000000;
  return tree(MessageBody{std::move(message)}, std::move(parent), std::move(id), std::move(ref));
}

// ---- RandomLog ----------------------------------------------------------------

RandomLog::RandomLog(std::uint64_t seed, std::string) : rng_(seed) { refs_.push_back(Ref{"main", {}, {}}); }

std::string RandomLog::fresh_id() { return fmt::format("e{:06d}", id_counter_++); }

std::string RandomLog::pick_tree_id() {
  std::uniform_int_distribution<std::size_t> pick(0, tree_ids_.size() - 1);
  return tree_ids_[pick(rng_)];
}

std::vector<Record> RandomLog::next_batch(std::size_t max_records) {
  std::uniform_int_distribution<std::size_t> size(1, max_records);
  std::vector<Record> batch;
  for (std::size_t n = size(rng_); batch.size() < n;) batch.push_back(random_record());
  count_ += static_cast<std::int64_t>(batch.size());
  return batch;
}

Record RandomLog::random_record() {
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; };
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); };
  const std::string timestamp = fmt::format("2026-11-30T10:{:02d}:{:02d}.{:03d}Z", (count_ / 60000) % 60,
                                            (count_ / 1000) % 60, count_ % 1000);
  Ref& ref = refs_[pick(refs_.size())];
  const std::string ref_field = ref.name == "main" && chance(0.5) ? std::string{} : ref.name;

  // Orchestration records, about a third of the log as in a real session.
  if (chance(0.35)) {
    HarnessRecord record;
    record.id = fresh_id();
    record.ref = ref.name;
    record.timestamp = timestamp;
    if (!ref.open_run) {
      if (chance(0.15) && refs_.size() < 6) {
        const std::string name = fmt::format("ref{}", id_counter_);
        std::optional<std::string> at;
        if (!tree_ids_.empty() && chance(0.8)) at = pick_tree_id();
        record.ref = name;
        record.body = RefCreated{name, at};
        refs_.push_back(Ref{name, at, {}});
        return Record{-1, std::move(record)};
      }
      if (chance(0.05) && ref.name != "main") {
        record.body = RefDeleted{ref.name};
        std::erase_if(refs_, [&](const Ref& r) { return r.name == record.ref; });
        return Record{-1, std::move(record)};
      }
      if (chance(0.2)) {
        QueueEnqueued queued;
        queued.queue = QueueKind::next_run;
        queued.target = std::get<TreeEntry>(user_entry("later, please", std::nullopt, fresh_id()).body);
        record.body = std::move(queued);
        return Record{-1, std::move(record)};
      }
      OperationStarted started;
      started.source_leaf_id = ref.leaf;
      switch (pick(3)) {
        case 0: {
          RunIntent intent;
          intent.initial_messages.push_back(std::get<TreeEntry>(user_entry("do the thing", std::nullopt, fresh_id()).body));
          if (chance(0.3)) intent.resume_data = Json{{"ext", {{"job", count_}}}};
          started.intent = std::move(intent);
          break;
        }
        case 1:
          started.intent = CompactionIntent{chance(0.5) ? std::optional<std::string>("focus on tests") : std::nullopt,
                                            fresh_id()};
          break;
        default: {
          NavigationIntent intent;
          intent.target_id = tree_ids_.empty() ? "none" : pick_tree_id();
          intent.destination_leaf_id = tree_ids_.empty() ? std::nullopt : std::optional(intent.target_id);
          intent.summarize = chance(0.5);
          if (intent.summarize) intent.summary_entry_id = fresh_id();
          intent.leaf_entry_id = fresh_id();
          started.intent = std::move(intent);
        }
      }
      record.body = std::move(started);
      ref.open_run = record.id;
      return Record{-1, std::move(record)};
    }
    const std::string run = *ref.open_run;
    switch (pick(6)) {
      case 0:
        record.body = GenerationStarted{run, GenerationPurpose::step, static_cast<std::int64_t>(1 + pick(3)),
                                        ModelRef{"faux", "faux-1"}};
        break;
      case 1: {
        ToolStarted started;
        started.run_id = run;
        started.assistant_entry_id = tree_ids_.empty() ? "none" : pick_tree_id();
        started.tool_index = static_cast<std::int64_t>(pick(3));
        started.tool_call_id = fmt::format("call_{}", count_);
        started.tool_name = chance(0.5) ? "bash" : "read";
        started.effective_args = Json{{"command", "ls -la"}, {"timeout", 30}};
        started.result_entry_id = fresh_id();
        started.replay = started.tool_name == "bash" ? Replay::never : Replay::safe;
        record.body = std::move(started);
        break;
      }
      case 2: {
        QueueEnqueued queued;
        queued.queue = chance(0.5) ? QueueKind::steer : QueueKind::follow_up;
        queued.run_id = run;
        queued.target = std::get<TreeEntry>(user_entry("focus on the tests", std::nullopt, fresh_id()).body);
        record.body = std::move(queued);
        break;
      }
      case 3: {
        WriteDeferred deferred;
        deferred.run_id = run;
        deferred.target = std::get<TreeEntry>(tree(Custom{"ext-state", Json{{"n", count_}}}, std::nullopt, fresh_id()).body);
        record.body = std::move(deferred);
        break;
      }
      case 4:
        record.body = OperationCancelled{run, chance(0.5) ? CancelReason::user : CancelReason::shutdown};
        break;
      default: {
        static const OperationOutcome outcomes[] = {OperationOutcome::completed, OperationOutcome::aborted,
                                                    OperationOutcome::failed, OperationOutcome::cancelled};
        OperationFinished finished{run, outcomes[pick(4)], std::nullopt};
        if (finished.outcome == OperationOutcome::failed) finished.error = Error{Errc::retries_exhausted, "gave up after 3 attempts"};
        record.body = std::move(finished);
        ref.open_run.reset();
      }
    }
    return Record{-1, std::move(record)};
  }

  if (chance(0.02)) {
    Json json = {{"type", "x-telemetry"}, {"ignorable", true}, {"note", fmt::format("sample {}", count_)}};
    return Record{-1, IgnorableRecord{std::move(json)}};
  }

  // A tree entry: usually a child of the ref's leaf, sometimes a branch.
  std::optional<std::string> parent = ref.leaf;
  if (!tree_ids_.empty() && chance(0.1)) parent = pick_tree_id();
  const std::string id = fresh_id();
  Record record;
  switch (pick(14)) {
    case 0: case 1: case 2:
      record = user_entry(fmt::format("please look at file {}.cpp", count_), parent, id, ref_field);
      break;
    case 3: case 4: {
      std::vector<ToolCall> calls;
      for (std::size_t i = pick(3); i > 0; --i) {
        calls.push_back(ToolCall{.id = fmt::format("call_{}_{}", count_, i), .name = "read",
                                 .arguments = Json{{"path", fmt::format("src/{}.cpp", i)}, {"limit", 200}}});
      }
      record = assistant_entry("Reading the files now.", parent, id, std::move(calls), ref_field);
      break;
    }
    case 5: case 6:
      record = tool_result_entry(fmt::format("call_{}", count_), "read", "int main() { return 0; }\n", parent, id, ref_field);
      break;
    case 7:
      record = tree(ModelChange{"anthropic", chance(0.5) ? "claude-sonnet-4-5" : "claude-opus-4-1"}, parent, id, ref_field);
      break;
    case 8:
      record = tree(ThinkingLevelChange{chance(0.5) ? ThinkingLevel::high : ThinkingLevel::off}, parent, id, ref_field);
      break;
    case 9:
      record = tree(ActiveToolsChange{{"read", "bash"}}, parent, id, ref_field);
      break;
    case 10:
      record = tree(Compaction{"The user asked for X; we did Y.", tree_ids_.empty() ? id : pick_tree_id(),
                               static_cast<std::int64_t>(pick(100000)), std::nullopt, std::nullopt},
                    parent, id, ref_field);
      break;
    case 11:
      record = chance(0.5) ? tree(BranchSummary{tree_ids_.empty() ? "root" : pick_tree_id(), "Tried approach A.",
                                                std::nullopt, std::nullopt},
                                  parent, id, ref_field)
                           : tree(CustomMessageBody{"note", std::string("Remember the style guide."), std::nullopt, true},
                                  parent, id, ref_field);
      break;
    case 12:
      record = tree_ids_.empty() ? tree(Custom{"ext-state", Json{{"k", 1}}}, parent, id, ref_field)
                                 : tree(Label{pick_tree_id(), chance(0.8) ? std::optional<std::string>("checkpoint")
                                                                          : std::nullopt},
                                        parent, id, ref_field);
      break;
    default:
      record = chance(0.5) || tree_ids_.empty()
                   ? tree(SessionInfo{fmt::format("session {}", count_)}, parent, id, ref_field)
                   : tree(Leaf{pick_tree_id()}, parent, id, ref.name);
  }
  auto& entry = std::get<TreeEntry>(record.body);
  entry.timestamp = timestamp;
  tree_ids_.push_back(id);
  if (const auto* leaf = std::get_if<Leaf>(&entry.body)) {
    ref.leaf = leaf->target_id;
  } else {
    ref.leaf = id;
  }
  return record;
}

Json snapshot_reads(const Session& session) {
  Json out = Json::object();
  Json log = Json::array();
  const std::vector<LogLine> lines = session.get_log().value();
  for (const LogLine& line : lines) log.push_back(line.json);
  out["log"] = std::move(log);
  Json refs = Json::array();
  for (const RefInfo& ref : session.refs()) {
    Json context = Json::array();
    if (auto built = session.build_context(ref.name)) {
      for (const auto& message : built->messages) context.push_back(encode(message));
      out["model:" + ref.name] = built->model ? Json(built->model->provider + "/" + built->model->model_id) : Json();
      out["thinking:" + ref.name] = built->thinking_level;
    }
    refs.push_back({{"name", ref.name}, {"leaf", ref.leaf_id ? Json(*ref.leaf_id) : Json()},
                    {"open", ref.open_operation ? Json(*ref.open_operation) : Json()}, {"context", context}});
    if (auto branch = session.find_entries_on_branch({.order = Order::oldest_first}, {}, ref.name)) {
      Json ids = Json::array();
      for (const TreeEntry& entry : branch->items) ids.push_back(entry.id);
      refs.back()["branch"] = ids;
    }
  }
  out["refs"] = std::move(refs);
  Json pages = Json::array();
  EntryQuery query{.limit = 7};
  for (;;) {
    auto page = session.find_entries(query);
    if (!page) break;
    Json ids = Json::array();
    for (const TreeEntry& entry : page->items) ids.push_back(entry.id);
    pages.push_back(ids);
    if (!page->next_cursor) break;
    query.cursor = page->next_cursor;
  }
  out["entry_pages"] = std::move(pages);
  Json harness = Json::array();
  if (auto page = session.find_harness_entries({.type = RecordType::operation_started})) {
    for (const HarnessRecord& record : page->items) harness.push_back(record.id);
  }
  out["operations"] = std::move(harness);
  const SessionStats stats = session.stats().value();
  out["stats"] = {{"records", stats.records}, {"tree", stats.tree_entries}, {"harness", stats.harness_records},
                  {"bytes", stats.bytes}, {"open", stats.open_operations}};
  const std::optional<std::string> name = session.name().value();
  out["name"] = name ? Json(*name) : Json();
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<char*> exec_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (auto& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

double test_scale() {
  const char* text = std::getenv("CAIRN_TEST_SCALE");
  if (!text || !*text) return 1.0;
  const double scale = std::strtod(text, nullptr);
  return scale > 0.0 && scale <= 1.0 ? scale : 1.0;
}

int scaled(int count) { return std::max(1, static_cast<int>(std::lround(count * test_scale()))); }

}  // namespace cairn::testing
