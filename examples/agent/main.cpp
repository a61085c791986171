// The coding agent in a program of one's own: cairn's coding tools, its
// approval policy (with the user's and the project's settings files), its
// system prompt (with AGENTS.md) and MCP servers, over a session in a SQLite
// file. A scripted model stands in for the configured one, so that it runs
// offline: it lists the directory with `ls`, then answers.
// Usage: agent FILE.db
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <cairn/agent/coding_agent.hpp>
#include <cairn/llm/faux.hpp>
#include <cairn/store/store.hpp>

namespace {

int report(const cairn::Error& error) {
  std::cerr << "error: " << error.code << ": " << error.message << '\n';
  return EXIT_FAILURE;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string db = argc > 1 ? argv[1] : "cairn-agent.db";
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::shared_ptr<cairn::Store> store;
  if (auto opened = cairn::open_store("sqlite:" + db); opened) {
    store = std::move(*opened);
  } else {
    return report(opened.error());
  }
  cairn::CreateOptions new_session;
  new_session.cwd = cwd.string();  // where its tools work
  auto session = store->create(new_session);
  if (!session) return report(session.error());

  // The agent as `cairn --tools read,ls --approval auto-edit` would be.
  cairn::agent::AgentOptions options;
  options.tools = "read,ls";
  options.approval = cairn::agent::ApprovalMode::auto_edit;
  options.warn = [](const std::string& message) { std::cerr << "warning: " << message << '\n'; };
  auto agent = cairn::agent::CodingAgent::create(options, cwd);
  if (!agent) return report(agent.error());
  auto made = agent->harness_options(*session, store);
  if (!made) return report(made.error());

  // The script the "model" follows, in place of the model the agent chose.
  auto faux = std::make_shared<cairn::FauxProvider>();
  faux->push(cairn::FauxResponse::tool_call("call-1", "ls", {{"path", "."}}));
  faux->push(cairn::FauxResponse::text("The directory holds the session's database."));
  made->options.model = cairn::FauxProvider::model();
  made->options.models.add(made->options.model, faux);

  auto created = cairn::AgentHarness::create(std::move(made->options));
  if (!created) return report(created.error());
  auto harness = std::make_unique<cairn::AgentHarness>(std::move(created->harness));
  // Keeps the harness's tools those of the MCP servers as they change; let
  // go of before the harness.
  const std::shared_ptr<void> attached = made->attach(*harness);

  std::cout << "tools:";
  for (const auto& name : harness->tool_names()) std::cout << ' ' << name;
  std::cout << '\n';
  const cairn::Subscription printing = harness->on_event([](const cairn::Event& event) {
    if (event.type != cairn::EventType::tool_end) return;
    std::cout << "tool_end " << event.data.at("toolName").get<std::string>() << " -> "
              << event.data.at("result").at("content").at(0).at("text").get<std::string>() << '\n';
  });
  const cairn::RunResult run = harness->main().prompt("What is in this directory?");
  if (!run.ok()) {
    std::cerr << "error: the run ended " << cairn::to_string(run.outcome) << (run.error ? ": " + run.error->message : "")
              << '\n';
    return EXIT_FAILURE;
  }
  std::cout << "run_end " << cairn::to_string(run.outcome) << "\nsession: " << (*session)->id() << " in " << db
            << '\n';
}
