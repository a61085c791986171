// Embedding cairn: a durable session in a SQLite file, one tool of our own,
// and the scripted "faux" provider, so that it runs offline. Every event is
// printed as the harness publishes it. Usage: embed [FILE.db]
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

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

cairn::Tool word_count_tool() {
  cairn::Tool tool;
  tool.name = "word_count";
  tool.description = "Counts the words (runs of non-space characters) of a text.";
  // The harness checks every call against this schema before the tool runs;
  // a call that does not match gets an error result and never runs.
  tool.parameters = {{"type", "object"},
                     {"properties", {{"text", {{"type", "string"}, {"description", "The text to count."}}}}},
                     {"required", {"text"}},
                     {"additionalProperties", false}};
  // Counting changes nothing outside this process, so a call cut short by a
  // crash may simply run again on resume. A tool with an effect (sending mail,
  // moving money) keeps the default, Replay::never: after a crash it gets an
  // "interrupted" result instead, and never runs twice.
  tool.replay = cairn::Replay::safe;
  tool.execute = [](const cairn::Json& args, const cairn::ToolContext&) {
    std::istringstream words(args.at("text").get<std::string>());
    std::size_t count = 0;
    for (std::string word; words >> word;) ++count;
    return cairn::ToolResult::text(std::to_string(count));
  };
  return tool;
}

// One line per event: its type, the seq of the durable record it announces
// (none for ephemeral events such as streamed deltas), and what is worth seeing.
void print(const cairn::Event& event) {
  const cairn::Json& data = event.data;
  std::cout << cairn::to_string(event.type);
  if (event.seq) std::cout << " seq=" << *event.seq;
  const auto text = [&](const char* key) { return data.at(key).get<std::string>(); };
  switch (event.type) {
    case cairn::EventType::message_start:
    case cairn::EventType::message_end: std::cout << ' ' << cairn::role_of(*event.message); break;
    case cairn::EventType::message_update: {
      const cairn::Json& update = data.at("assistantMessageEvent");
      std::cout << ' ' << update.at("type").get<std::string>();
      if (update.contains("delta")) std::cout << ' ' << update.at("delta").get<std::string>();
      break;
    }
    case cairn::EventType::tool_start: std::cout << ' ' << text("toolName") << ' ' << data.at("args"); break;
    case cairn::EventType::tool_end: std::cout << ' ' << text("toolName") << " -> " << data.at("result").at("content"); break;
    case cairn::EventType::run_end: std::cout << ' ' << text("outcome"); break;
    default: break;
  }
  std::cout << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  const std::string db = argc > 1 ? argv[1] : "cairn-embed.db";
  auto store = cairn::open_store("sqlite:" + db);
  if (!store) return report(store.error());
  cairn::CreateOptions new_session;
  new_session.cwd = std::filesystem::current_path().string();
  auto session = (*store)->create(new_session);
  if (!session) return report(session.error());

  // The script the "model" follows: call the tool, then answer with its result.
  auto faux = std::make_shared<cairn::FauxProvider>();
  faux->push(cairn::FauxResponse::tool_call("call-1", "word_count", {{"text", "the quick brown fox jumps over the lazy dog"}}));
  faux->push(cairn::FauxResponse::text("The sentence has 9 words."));

  cairn::HarnessOptions options;
  options.session = *session;
  options.model = cairn::FauxProvider::model();
  options.models.add(options.model, faux);
  options.tools.push_back(word_count_tool());
  options.system_prompt = "You count words with the word_count tool.";
  auto created = cairn::AgentHarness::create(std::move(options));
  if (!created) return report(created.error());
  cairn::AgentHarness& harness = created->harness;

  // Listeners run on the thread that publishes: here, the one inside prompt().
  const cairn::Subscription printing = harness.on_event(print);
  const cairn::RunResult run = harness.main().prompt("How many words are in my sentence?");
  if (!run.ok()) return report(run);

  std::string answer;  // the text of the run's last assistant message
  if (run.final_message)
    for (const auto& block : run.final_message->content)
      if (const auto* text = std::get_if<cairn::TextContent>(&block)) answer += text->text;
  std::cout << "answer: " << answer << "\nsession: " << (*session)->id() << " in " << db << '\n';
}
