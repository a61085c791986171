// `cairn demo-session`: a small session with every common shape in it (a run
// with a tool call and its result, a model change, a branch on a second ref, a
// label, a session name), so that `cairn tree` and friends have something to
// show on a fresh install.
#include <filesystem>

#include <fmt/format.h>

#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct LogDemoOptions {
  std::string store;
};

const char* const kProvider = "anthropic";
const char* const kModel = "claude-sonnet-4-5";

Record record_of(TreeEntry entry) { return Record{-1, std::move(entry)}; }
Record record_of(HarnessRecord harness) { return Record{-1, std::move(harness)}; }

TreeEntry tree_entry(std::string id, std::optional<std::string> parent, TreeBody body,
                     std::optional<std::string> ref = std::nullopt) {
  return TreeEntry{std::move(id), std::move(parent), now_iso8601(), std::move(ref), std::move(body), Json::object()};
}

HarnessRecord harness_record(HarnessBody body, std::string id = new_entry_id(), std::string ref = "main") {
  return HarnessRecord{std::move(id), std::move(ref), now_iso8601(), std::move(body), Json::object()};
}

UserMessage user(std::string text) {
  return UserMessage{std::vector<UserBlock>{TextContent{std::move(text), std::nullopt, Json::object()}},
                     now_unix_ms(), Json::object()};
}

AssistantMessage assistant(std::vector<AssistantBlock> content, StopReason stop) {
  AssistantMessage message;
  message.content = std::move(content);
  message.api = "anthropic-messages";
  message.provider = kProvider;
  message.model = kModel;
  message.usage.input = 120;
  message.usage.output = 24;
  message.usage.total_tokens = 144;
  message.stop_reason = stop;
  message.timestamp = now_unix_ms();
  return message;
}

TextContent text(std::string value) { return TextContent{std::move(value), std::nullopt, Json::object()}; }

std::vector<Record> demo_records() {
  const ModelRef model{kProvider, kModel};
  const std::string run = new_entry_id();
  const std::string prompt = new_entry_id(), call_reply = new_entry_id(), result = new_entry_id(),
                    answer = new_entry_id(), model_change = new_entry_id(), branch = new_entry_id(),
                    label = new_entry_id(), name = new_entry_id();
  const std::string call_id = "toolu_demo_1";

  std::vector<Record> records;
  // A run: the prompt, a tool call, its result, the answer.
  TreeEntry prompt_entry = tree_entry(prompt, std::nullopt, MessageBody{user("Which files are in this directory?")});
  RunIntent intent;
  intent.initial_messages.push_back(prompt_entry);
  records.push_back(record_of(harness_record(OperationStarted{std::nullopt, std::move(intent)}, run)));
  records.push_back(record_of(std::move(prompt_entry)));
  records.push_back(record_of(harness_record(GenerationStarted{run, GenerationPurpose::step, 1, model})));
  records.push_back(record_of(tree_entry(
      call_reply, prompt,
      MessageBody{assistant({text("Let me look."), ToolCall{.id = call_id, .name = "ls", .arguments = Json{{"path", "."}}}},
                            StopReason::tool_use)})));
  records.push_back(record_of(
      harness_record(ToolStarted{run, call_reply, 0, call_id, "ls", Json{{"path", "."}}, result, Replay::safe})));
  records.push_back(record_of(tree_entry(
      result, call_reply,
      MessageBody{ToolResultMessage{call_id, "ls", {text("README.md\nsrc/\ntests/")}, std::nullopt, false,
                                    now_unix_ms(), Json::object()}})));
  records.push_back(record_of(harness_record(GenerationStarted{run, GenerationPurpose::step, 1, model})));
  records.push_back(record_of(tree_entry(
      answer, result,
      MessageBody{assistant({text("There are three entries: README.md, src/ and tests/.")}, StopReason::stop)})));
  records.push_back(record_of(harness_record(OperationFinished{run, OperationOutcome::completed, std::nullopt})));

  // Settings are entries on the branch: a model change continues main.
  records.push_back(record_of(tree_entry(model_change, answer, ModelChange{"openai", "gpt-5"})));
  // A second ref anchored at the answer; its first entry is the answer's
  // second child, which makes the answer a branch point.
  records.push_back(record_of(harness_record(RefCreated{"experiment", answer}, new_entry_id(), "experiment")));
  records.push_back(record_of(
      tree_entry(branch, answer, MessageBody{user("Now summarise README.md instead.")}, "experiment")));
  // A label on the prompt and a session name, appended on main like any entry.
  records.push_back(record_of(tree_entry(label, model_change, Label{prompt, "start"})));
  records.push_back(record_of(tree_entry(name, label, SessionInfo{"demo: listing files"})));
  return records;
}

int run_log_demo(const LogDemoOptions& options) {
  auto store = open_store_for(options.store);
  if (!store) return store.error();
  CreateOptions create;
  std::error_code ec;
  create.cwd = std::filesystem::current_path(ec).string();
  auto created = (*store)->create(create);
  if (!created) return report(created.error());
  std::shared_ptr<Session> session = std::move(*created);
  const std::string id = session->id();
  if (auto appended = session->append(demo_records()); !appended) {
    session.reset();  // let go of the writer lock, then remove the empty session
    // Best effort: the failure reported is the append's.
    (void)(*store)->remove(id);
    return report(kFailure, fmt::format("demo session: {}", appended.error().message));
  }
  print_untrusted(stdout, "{}\n", id);
  return kOk;
}

}  // namespace

void register_demo_command(CLI::App& app, Commands& commands) {
  auto [sub, options] = add_command(app, commands,
      "demo-session",
      "Create a small sample session (a run with a tool call, a model change, a branch, a label, a name); print "
      "its id", run_log_demo);
  add_store_option(sub, options->store);
}

}  // namespace cairn::cli
