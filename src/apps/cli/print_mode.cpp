// `cairn -p`: one prompt, streamed to stdout, progress on stderr.
#include "print_mode.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "agent_run.hpp"
#include "approval_cli.hpp"
#include "tui/utf8_check.hpp"

namespace cairn::cli {
namespace {

Outcome<std::string> prompt_from_stdin() {
  if (::isatty(STDIN_FILENO)) {
    return std::unexpected(report(kUsage, "-p needs a PROMPT, or the prompt on standard input"));
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, stdin);
    text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(stdin)) return std::unexpected(report(kFailure, "cannot read the prompt from standard input"));
  return text;
}

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

int run_print_mode(const AgentCommandOptions& options, std::optional<std::string> prompt, bool json) {
  if (!prompt) {
    auto read = prompt_from_stdin();
    if (!read) return read.error();
    prompt = std::move(*read);
  }
  if (blank(*prompt)) return report(kUsage, "the prompt is empty");
  // Before a session is opened or anything accepted.
  if (auto bad = tui::first_invalid_utf8(*prompt)) {
    return report(kUsage, fmt::format("the prompt is not valid UTF-8 ({}); nothing was sent. Convert it first, e.g. "
                                      "with `iconv -f latin1 -t utf-8`",
                                      *bad));
  }

  auto setup = setup_agent(options);
  if (!setup) return setup.error();
  if (const SuspendedOperation* waiting = setup->suspended_here()) {
    const std::string ref = setup->ref.name() == "main" ? "" : " --ref " + setup->ref.name();
    return report(kUsage, fmt::format("session {} has {}; finish it with `cairn resume {}{}` or end it with "
                                      "`cairn abort {}{}` first",
                                      setup->session->id(), describe_suspended(*waiting), setup->session->id(), ref,
                                      setup->session->id(), ref));
  }

  AgentRef ref = setup->ref;
  RunResult result;
  {
    EventPrinter printer(*setup->harness, ref.name(), json ? PrintFormat::json : text_format_for_stdout());
    // The run itself reports how it ended (aborted, or faulted when the abort
    // could not be written): the prompt's result is what the mode prints.
    SignalAbort on_signal([ref]() mutable { (void)ref.abort(); });
    result = ref.prompt(std::move(*prompt));
    printer.finish();
  }
  switch (result.outcome) {
    case cairn::Outcome::ok:
      return kOk;  // a signal after the end found nothing to abort
    case cairn::Outcome::rejected:
      return report(exit_code_for(*result.error), result.error->message);
    case cairn::Outcome::faulted:
      // The fault event said what happened; the run stays resumable.
      return report(kFailure, fmt::format("the run stopped and is suspended; `cairn resume {}` continues it",
                                          setup->session->id()));
    case cairn::Outcome::awaiting_input:
      // Parked durably: nothing waits in this process, which may exit.
      return report_awaiting_input(setup->session->id(), ref.name(), result.awaiting_input);
    default:
      return kFailure;  // failed or aborted: run_end said so on stderr
  }
}

}  // namespace cairn::cli
