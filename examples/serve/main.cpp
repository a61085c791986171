// Serving a harness of your own over HTTP: every session of a SQLite store,
// each with a word_count tool and a scripted model (offline), behind a
// bearer token, with the API, live streams and A2A of `cairn serve`.
// Usage: serve FILE.db TOKEN. It prints its port and serves until stdin ends.
#include <iostream>
#include <sstream>

#include <cairn/llm/faux.hpp>
#include <cairn/serve/server.hpp>
#include <cairn/store/store.hpp>

namespace {

class WordCounter : public cairn::serve::HarnessFactory {
 public:
  // Each session's harness: the model calls word_count, then answers.
  cairn::Result<Made> make(const std::shared_ptr<cairn::Session>&, const std::shared_ptr<cairn::Store>&) override {
    auto faux = std::make_shared<cairn::FauxProvider>();
    faux->push(cairn::FauxResponse::tool_call("call-1", "word_count", {{"text", "the quick brown fox jumps over the lazy dog"}}));
    faux->push(cairn::FauxResponse::text("The sentence has 9 words."));
    cairn::Tool tool;
    tool.name = "word_count";
    tool.description = "Counts the words of a text.";
    tool.parameters = {{"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}, {"required", {"text"}}};
    tool.replay = cairn::Replay::safe;  // it changes nothing: a call cut short by a crash may run again
    tool.execute = [](const cairn::Json& args, const cairn::ToolContext&) {
      std::istringstream words(args.at("text").get<std::string>());
      std::size_t count = 0;
      for (std::string word; words >> word;) ++count;
      return cairn::ToolResult::text(std::to_string(count));
    };
    Made made;
    made.options.model = cairn::FauxProvider::model();
    made.options.models.add(made.options.model, faux);
    made.options.tools.push_back(std::move(tool));
    return made;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: serve FILE.db TOKEN\n";
    return 2;
  }
  auto store = cairn::open_store(std::string("sqlite:") + argv[1]);
  if (!store) return std::cerr << "error: " << store.error().message << '\n', 1;
  cairn::serve::ServerOptions options;
  options.port = 0;  // a free one
  options.tokens = {argv[2]};
  auto server = cairn::serve::Server::start(std::move(*store), std::make_shared<WordCounter>(), options);
  if (!server) return std::cerr << "error: " << server.error().message << '\n', 1;
  std::cout << "port " << (*server)->port() << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
  }
  (*server)->stop();
  (*server)->wait();
}
