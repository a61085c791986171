#include "ripgrep.hpp"

#include <fmt/format.h>

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

}  // namespace cairn::tools
