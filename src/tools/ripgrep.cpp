#include "ripgrep.hpp"

#include <fmt/format.h>

#include "tool_call_processes.hpp"
#include "tool_environment.hpp"
#include "tool_support.hpp"

namespace cairn::tools {

RipgrepRun run_ripgrep(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                       std::vector<std::string> environment, std::stop_token cancel,
                       const std::function<bool(std::string_view)>& on_line) {
  ProcessSpec spec;
  // --no-require-git: a .gitignore counts outside a git checkout too.
  spec.argv = {"rg", "--no-config", "--hidden", "--no-require-git", "--glob=!.git"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.cwd = cwd;
  spec.environment = std::move(environment);
  spec.merge_stderr = false;
  spec.cancel = std::move(cancel);
  std::string pending;
  bool produced = false;
  spec.on_output = [&](std::string_view chunk) {
    produced = true;
    pending.append(chunk);
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (!on_line(std::string_view(pending).substr(start, nl - start))) return false;
    }
    pending.erase(0, start);
    return true;
  };
  RipgrepRun run;
  run.outcome = run_process(spec);
  if (!pending.empty() && run.outcome.end == ProcessOutcome::End::exited) on_line(pending);
  const std::string first_complaint = to_valid_utf8(run.outcome.stderr_output.substr(0, run.outcome.stderr_output.find('\n')));
  switch (run.outcome.end) {
    case ProcessOutcome::End::spawn_failed:
      run.error = run.outcome.error.find("No such file") != std::string::npos
                      ? "ripgrep (rg) is not installed; the grep and find tools need it"
                      : run.outcome.error;
      break;
    case ProcessOutcome::End::exited:
      // 0: found, 1: nothing found, 2: an error (possibly after some results).
      if (run.outcome.exit_code >= 2) {
        if (produced) run.warning = first_complaint;
        else run.error = to_valid_utf8(run.outcome.stderr_output.empty() ? fmt::format("rg exited with code {}", run.outcome.exit_code)
                                                                         : run.outcome.stderr_output);
      }
      break;
    case ProcessOutcome::End::signaled:
      run.error = fmt::format("rg was killed by signal {}", run.outcome.signal);
      break;
    case ProcessOutcome::End::timed_out:
    case ProcessOutcome::End::cancelled:
      run.error = "aborted";
      break;
    case ProcessOutcome::End::stopped:
      break;
  }
  while (!run.error.empty() && run.error.back() == '\n') run.error.pop_back();
  return run;
}

std::string_view strip_dot_slash(std::string_view path) {
  while (path.starts_with("./")) path.remove_prefix(2);
  return path;
}

std::optional<ToolResult> Search::failed(std::string_view tool, const RipgrepRun& run) const {
  if (run.error.empty()) return std::nullopt;
  if (run.error == "aborted") return error_result(fmt::format("{}: aborted", tool));
  return error_result(fmt::format("{} {} in {}: {}", tool, asked.pattern, asked.shown, run.error));
}

Tool ripgrep_tool(std::string name, std::string description, Json parameters, std::int64_t default_limit,
                  const CodingToolsOptions& options, std::function<ToolResult(const Search&)> body) {
  Tool tool = coding_tool(name, std::move(description), std::move(parameters), "path");
  tool.replay = Replay::safe;
  tool.settle = settle_call_processes(options.report);
  tool.execute = [name, default_limit, cwd = options.cwd, policy = options.environment,
                  body = std::move(body)](const Json& args, const ToolContext& context) -> ToolResult {
    auto asked = search_arguments(args, name, cwd, default_limit);
    if (!asked) return std::move(asked.error());
    const Search search{
        .args = args,
        .asked = std::move(*asked),
        .run = [&](const std::vector<std::string>& rg_args, const std::filesystem::path& dir,
                   const std::function<bool(std::string_view)>& on_line) {
          return run_ripgrep(rg_args, dir, tool_environment(policy, tool_call_marker(context.run_id, context.tool_call_id)),
                             context.cancel, on_line);
        }};
    return body(search);
  };
  return tool;
}

}  // namespace cairn::tools
