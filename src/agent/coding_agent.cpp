// The coding agent of one process: options resolved once, a harness per session.
#include "cairn/agent/coding_agent.hpp"

#include <chrono>
#include <system_error>

#include <fmt/format.h>

#include "cairn/llm/models_file.hpp"
#include "chosen_tools.hpp"
#include "environment_policy.hpp"
#include "harness_options.hpp"
#include "mcp_servers.hpp"
#include "named_model.hpp"

namespace cairn::agent {

Result<CodingAgent> CodingAgent::create(AgentOptions options, std::filesystem::path cwd) {
  auto tool_names = chosen_tools(options);
  if (!tool_names) return std::unexpected(tool_names.error());
  std::optional<std::filesystem::path> models_file;
  if (!options.models_file.empty()) models_file = options.models_file;
  auto registry = ModelRegistry::load(models_file, process_environment());
  if (!registry) return std::unexpected(registry.error());
  auto named = named_model(*registry, options);
  if (!named) return std::unexpected(named.error());
  std::optional<ConfiguredModel> model = std::move(*named);
  if (!model && !registry->available().empty()) model = *registry->available().front();
  std::shared_ptr<McpServers> mcp;
  if (!options.no_tools) {
    auto started = McpServers::start(options.mcp_configs, cwd, std::chrono::seconds(10),
                                     mcp_withheld_variables(options, *registry, model), options.warn);
    if (!started) return std::unexpected(started.error());
    mcp = std::move(*started);
  }
  return CodingAgent(Resolved{.options = std::move(options),
                              .registry = std::move(*registry),
                              .default_model = std::move(model),
                              .tool_names = std::move(*tool_names),
                              .cwd = std::move(cwd),
                              .mcp = std::move(mcp)});
}

CodingAgent::CodingAgent(Resolved resolved) : resolved_(std::move(resolved)) {}

Result<CodingAgent::SessionOptions> CodingAgent::harness_options(const std::shared_ptr<Session>& session,
                                                                 const std::shared_ptr<Store>& store) const {
  // The model: the one the main branch last used when it is here, else the default.
  std::optional<ConfiguredModel> model = resolved_.default_model;
  if (auto settings = session->branch_settings("main"); settings && settings->model) {
    auto found = resolved_.registry.find(fmt::format("{}/{}", settings->model->provider, settings->model->model_id));
    if (found && (*found)->available()) model = **found;
  }
  // The tools work in the session's directory when it exists, else in cwd().
  std::filesystem::path cwd = resolved_.cwd;
  std::error_code ec;
  if (!session->header().cwd.empty() && std::filesystem::is_directory(session->header().cwd, ec)) {
    cwd = session->header().cwd;
  }
  auto made = coding_harness_options(resolved_.options, resolved_.registry, model, resolved_.tool_names, session, cwd,
                                     resolved_.mcp, store);
  if (!made) return std::unexpected(made.error());
  SessionOptions options{.options = std::move(made->harness)};
  options.attach = [mcp = resolved_.mcp, own_tools = std::move(made->own_tools)](AgentHarness& harness) mutable {
    return std::static_pointer_cast<void>(std::make_shared<McpToolsBinding>(mcp, harness, std::move(own_tools)));
  };
  return options;
}

}  // namespace cairn::agent
