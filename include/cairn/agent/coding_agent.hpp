// The coding agent as a library: its options, resolved once (the tools
// chosen, the models, the default model, the MCP servers started), then the
// harness of each session it runs in. The `cairn` command, `cairn serve`
// and programs that embed the agent make their harnesses here.
//
//   cairn::agent::AgentOptions options;
//   options.approval = "auto-edit";
//   auto agent = cairn::agent::CodingAgent::create(options, cwd);
//   if (!agent) ...;                                   // a bad option: the error says which
//   auto made = agent->harness_options(session, store);
//   if (!made) ...;
//   auto created = cairn::AgentHarness::create(std::move(made->options));
//   auto harness = std::make_unique<cairn::AgentHarness>(std::move(created->harness));
//   std::shared_ptr<void> attached = made->attach(*harness);  // let go of it before the harness
//
// examples/agent/main.cpp is a whole program.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cairn/agent/options.hpp"
#include "cairn/error.hpp"
#include "cairn/harness/harness.hpp"
#include "cairn/llm/model_registry.hpp"
#include "cairn/store/store.hpp"

namespace cairn::agent {

// The MCP servers of the agent's configuration, started once; their tools
// go to every harness made. Made by CodingAgent::create.
class McpServers;

class CodingAgent {
 public:
  // What the options resolve to.
  struct Resolved {
    AgentOptions options;
    ModelRegistry registry;                        // every configured model
    std::optional<ConfiguredModel> default_model;  // for a session whose branch names none that is here
    std::vector<std::string> tool_names;           // the coding tools chosen, and task
    std::filesystem::path cwd;                     // for a session whose header names no directory that exists
    std::shared_ptr<McpServers> mcp;               // null: none (none configured, or no tools)
  };

  // Resolves `options` for sessions working in `cwd` by default: the tools
  // --tools / --no-tools leave, the models (models_file, else the user's
  // models.json; keys from the environment), the model named, else the
  // first available one (none: a harness without a model, which can run
  // nothing), and the MCP servers of the user's, the project's (`cwd`) and
  // options.mcp_configs' configuration, started and waited for up to 10 s
  // (not with no_tools). Errors: a bad option or configuration file.
  static Result<CodingAgent> create(AgentOptions options, std::filesystem::path cwd);
  // A program that resolves them itself (the cairn command reports each
  // problem its own way, and starts its MCP servers once per process).
  explicit CodingAgent(Resolved resolved);

  // The harness of one session.
  struct SessionOptions {
    HarnessOptions options;
    // Called with the harness made from `options`: keeps its tools those of
    // the MCP servers as their lists change, while what it returns lives.
    // Let go of that before the harness.
    std::function<std::shared_ptr<void>(AgentHarness&)> attach;
  };
  // The harness options of `session`: the model its main branch last used
  // when it is here, else the default one; the coding tools working in the
  // session's directory when it exists, else in cwd(); the task tool's
  // subagents in child sessions of `store`; the system prompt with the
  // context files (AGENTS.md) found from that directory; the approval
  // policy with the user's and the project's settings files; the keys and
  // secrets kept out of everything written. Several threads may call it at
  // once. Errors: a bad settings file, a model whose provider cannot be made.
  Result<SessionOptions> harness_options(const std::shared_ptr<Session>& session,
                                         const std::shared_ptr<Store>& store) const;

  const ModelRegistry& registry() const { return resolved_.registry; }
  const std::optional<ConfiguredModel>& default_model() const { return resolved_.default_model; }
  const std::filesystem::path& cwd() const { return resolved_.cwd; }

 private:
  Resolved resolved_;
};

}  // namespace cairn::agent
