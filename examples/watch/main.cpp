// Watching a ref: a snapshot of where it stands, then every event after it,
// with no gap and no duplicate. A run goes on on a second thread; this thread
// attaches while the run's tool is running and exits when the run has ended.
// Usage: watch [FILE.db]
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <memory>
#include <semaphore>
#include <string>
#include <thread>

#include <cairn/harness/harness.hpp>
#include <cairn/llm/faux.hpp>
#include <cairn/store/store.hpp>

namespace {

int report(const cairn::Error& error) {
  std::cerr << "error: " << error.code << ": " << error.message << '\n';
  return EXIT_FAILURE;
}

int report(const cairn::RunResult& run) {
  std::cerr << "error: the run ended " << cairn::to_string(run.outcome);
  if (run.error) std::cerr << ": " << run.error->code << ": " << run.error->message;
  std::cerr << '\n';
  return EXIT_FAILURE;
}

// One line per event: the seq of the durable record it announces ("-" for an
// ephemeral event such as a streamed delta), its type, and whose it is.
void print(const cairn::Event& event) {
  std::cout << "seq " << (event.seq ? std::to_string(*event.seq) : "-") << ' ' << cairn::to_string(event.type);
  if (event.data.contains("toolName")) std::cout << ' ' << event.data.at("toolName").get<std::string>();
  if (event.type == cairn::EventType::message_start || event.type == cairn::EventType::message_end)
    std::cout << ' ' << cairn::role_of(*event.message);
  if (event.type == cairn::EventType::message_update)
    std::cout << ' ' << event.data.at("assistantMessageEvent").at("type").get<std::string>();
  std::cout << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  const std::string db = argc > 1 ? argv[1] : "cairn-watch.db";
  auto store = cairn::open_store("sqlite:" + db);
  if (!store) return report(store.error());
  cairn::CreateOptions new_session;
  new_session.cwd = std::filesystem::current_path().string();
  auto session = (*store)->create(new_session);
  if (!session) return report(session.error());

  // The tool holds the run until the watcher has attached, so that the watch
  // starts mid-run every time and this program's output is always the same.
  // `mid_run` is released by the tool, or by the runner should the run end
  // before it ever reaches the tool.
  std::counting_semaphore<2> mid_run{0};
  std::binary_semaphore attached{0};
  cairn::Tool lookup;
  lookup.name = "lookup";
  lookup.description = "Looks a word up in the dictionary.";
  lookup.parameters = {{"type", "object"}, {"properties", {{"word", {{"type", "string"}}}}}, {"required", {"word"}}};
  lookup.replay = cairn::Replay::safe;  // a read: safe to run again after a crash
  lookup.execute = [&](const cairn::Json& args, const cairn::ToolContext& context) {
    mid_run.release();
    attached.acquire();
    const auto word = args.at("word").get<std::string>();
    context.update(cairn::ToolResult::text("looking up " + word));  // a tool_update event
    return cairn::ToolResult::text(word + ": a heap of stones that marks a path");
  };

  auto faux = std::make_shared<cairn::FauxProvider>();
  faux->push(cairn::FauxResponse::tool_call("call-1", "lookup", {{"word", "cairn"}}));
  faux->push(cairn::FauxResponse::text("A cairn is a heap of stones that marks a path."));
  cairn::HarnessOptions options;
  options.session = *session;
  options.model = cairn::FauxProvider::model();
  options.models.add(options.model, faux);
  options.tools.push_back(std::move(lookup));
  auto created = cairn::AgentHarness::create(std::move(options));
  if (!created) return report(created.error());
  cairn::AgentHarness& harness = created->harness;

  std::promise<void> ended;
  std::future<void> run_ended = ended.get_future();
  cairn::RunResult run;
  std::jthread runner([&] {
    run = harness.main().prompt("What is a cairn?");
    mid_run.release();
  });

  mid_run.acquire();
  auto watch = harness.main().watch();
  // The run may go on now: what it publishes from here waits in the watch's
  // buffer until start() below.
  attached.release();
  if (!watch) return report(watch.error());
  const cairn::RefSnapshot& snapshot = watch->snapshot();
  if (!snapshot.run) {  // the run ended before its tool: say why
    runner.join();
    return report(run);
  }
  std::cout << "snapshot: transcript " << snapshot.transcript.size() << " entries, cursor " << snapshot.cursor << ", run "
            << cairn::to_string(snapshot.run->status);
  for (const cairn::RunningTool& tool : snapshot.run->running_tools) std::cout << ", tool " << tool.tool_name << " running";
  std::cout << '\n';

  watch->start([&ended](const cairn::Event& event) {
    print(event);
    // A run ends with run_end; one whose appends failed, with fault.
    if (event.type == cairn::EventType::run_end || event.type == cairn::EventType::fault) ended.set_value();
  });
  run_ended.wait();
  runner.join();
  if (!run.ok()) return report(run);
  std::cout << "run " << run.run_id << " ended " << cairn::to_string(run.outcome) << "; session " << (*session)->id() << '\n';
}
