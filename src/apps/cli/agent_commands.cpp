// `cairn resume`, `cairn abort` and `cairn compact`: operations on a session's
// ref outside of a prompt.
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "agent_run.hpp"
#include "agent_setup.hpp"
#include "approval_cli.hpp"
#include "cli.hpp"
#include "tui/utf8_check.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct OperationOptions {
  AgentCommandOptions agent;
  std::string session;
  bool json = false;
  std::string instructions;  // compact
  bool wait = false;         // resume --wait
};

std::string ref_flag(const AgentRef& ref) { return ref.name() == "main" ? "" : " --ref " + ref.name(); }

// A rejected resume, in the user's words.
int report_rejected(const AgentSetup& setup, const RunResult& result) {
  const Error& error = *result.error;
  if (error.is(Errc::missing_identities)) {
    return report(kUsage, fmt::format("{}; name what it used with --model, or --api, --base-url and --model",
                                      error.message));
  }
  return report(exit_code_for(error) == kUsage ? kUsage : kFailure,
                fmt::format("session {}: {}", setup.session->id(), error.message));
}

// Whether every request in `ids` has its answer in the session's log, read
// without taking the session (the process that answers needs it).
Outcome<bool> answered(const OperationOptions& options, const std::string& session_id,
                       const std::vector<std::string>& ids) {
  auto store = open_store_for(options.agent.store);
  if (!store) return std::unexpected(store.error());
  auto session = (*store)->open(session_id, OpenOptions{.read_only = true});
  if (!session) return std::unexpected(report(kFailure, session.error().message));
  auto resolved = (*session)->find_harness_entries(HarnessQuery{.type = RecordType::input_resolved});
  if (!resolved) return std::unexpected(report(kFailure, resolved.error().message));
  std::size_t found = 0;
  for (const auto& id : ids) {
    for (const auto& record : resolved->items) {
      if (std::get<InputResolved>(record.body).request_id == id) {
        ++found;
        break;
      }
    }
  }
  return found == ids.size();
}

int run_resume(const OperationOptions& options) {
  bool first = true;
  for (;;) {
    std::string session_id;
    std::vector<std::string> waiting_for;
    {
      SetupMode mode{.existing_session = options.session,
                     .create_missing_ref = false,
                     .need_model = false,
                     .need_suspended = true,
                     .announce_session = first};
      auto setup = setup_agent(options.agent, mode);
      if (!setup) return setup.error();
      const SuspendedOperation* waiting = setup->suspended_here();
      if (first) print_untrusted(stderr, "cairn: {}\n", describe_suspended(*waiting));

      AgentRef ref = setup->ref;
      RunResult result;
      bool signalled = false;
      {
        EventPrinter printer(*setup->harness, ref.name(), options.json ? PrintFormat::json : text_format_for_stdout());
        // The operation reports how it ended; its result is what is printed.
        SignalAbort on_signal([ref]() mutable { (void)ref.abort(); });
        result = ref.resume();
        signalled = on_signal.fired();
        printer.finish();
      }
      switch (result.outcome) {
        case cairn::Outcome::ok:
          return kOk;
        case cairn::Outcome::aborted:
          // Completing an abort begun before the crash is what resume was for;
          // an abort asked for now, by a signal, is not.
          return signalled ? kFailure : kOk;
        case cairn::Outcome::cancelled:
          return kOk;
        case cairn::Outcome::rejected:
          return report_rejected(*setup, result);
        case cairn::Outcome::faulted:
          return report(kFailure, fmt::format("the operation stopped again and is suspended; `cairn resume {}{}` "
                                              "continues it",
                                              setup->session->id(), ref_flag(ref)));
        case cairn::Outcome::awaiting_input:
          report_awaiting_input(setup->session->id(), ref.name(), result.awaiting_input);
          if (!options.wait) return kAwaitingInput;
          // Each round waits for new requests: they are said each time.
          fmt::print(stderr, "cairn: waiting for the answer (this process holds nothing: Ctrl+C leaves it waiting)\n");
          session_id = setup->session->id();
          for (const auto& input : result.awaiting_input) waiting_for.push_back(input.id);
          break;
        case cairn::Outcome::failed:
          return kFailure;
      }
    }  // the harness, the session and its lock are released here
    first = false;
    // --wait: poll the log until every answer is there, then resume again.
    for (;;) {
      auto done = answered(options, session_id, waiting_for);
      if (!done) return done.error();
      if (*done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

int run_abort(const OperationOptions& options) {
  SetupMode mode{
      .existing_session = options.session, .create_missing_ref = false, .need_model = false, .need_suspended = true,
      .mcp = false};
  auto setup = setup_agent(options.agent, mode);
  if (!setup) return setup.error();
  const SuspendedOperation* waiting = setup->suspended_here();
  const std::string what = describe_suspended(*waiting);
  AgentRef ref = setup->ref;
  if (waiting->cancelled) {
    // Cancelled before the crash: resuming completes that abort.
    RunResult result = ref.resume();
    if (result.outcome == cairn::Outcome::aborted || result.outcome == cairn::Outcome::ok || result.outcome == cairn::Outcome::cancelled) {
      print_untrusted(stderr, "cairn: ended {}\n", what);
      return kOk;
    }
    if (result.outcome == cairn::Outcome::rejected) return report_rejected(*setup, result);
    return report(kFailure, result.error ? result.error->message : "the abort did not complete");
  }
  AbortResult result = ref.abort();
  ref.wait_for_idle();
  if (!result.ok()) return report(kFailure, result.error ? result.error->message : "the abort failed");
  print_untrusted(stderr, "cairn: aborted {}\n", what);
  return kOk;
}

int run_compact(const OperationOptions& options) {
  if (auto bad = tui::first_invalid_utf8(options.instructions)) {
    return report(kUsage, fmt::format("the instructions are not valid UTF-8 ({})", *bad));
  }
  SetupMode mode{.existing_session = options.session, .create_missing_ref = false};
  auto setup = setup_agent(options.agent, mode);
  if (!setup) return setup.error();
  if (const SuspendedOperation* waiting = setup->suspended_here()) {
    return report(kUsage, fmt::format("session {} has {}; `cairn resume` or `cairn abort` it first",
                                      setup->session->id(), describe_suspended(*waiting)));
  }
  AgentRef ref = setup->ref;
  RunResult result;
  {
    EventPrinter printer(*setup->harness, ref.name(), options.json ? PrintFormat::json : text_format_for_stdout());
    // The operation reports how it ended; its result is what is printed.
    SignalAbort on_signal([ref]() mutable { (void)ref.abort(); });
    std::optional<std::string> instructions;
    if (!options.instructions.empty()) instructions = options.instructions;
    result = ref.compact(instructions);
    printer.finish();
  }
  if (result.ok()) {
    if (!options.json && result.entry) {
      if (const auto* compaction = std::get_if<Compaction>(&result.entry->body)) {
        print_untrusted(stdout, "{}\n", compaction->summary);
      }
    }
    return kOk;
  }
  if (result.outcome == cairn::Outcome::rejected) return report_rejected(*setup, result);
  if (result.outcome == cairn::Outcome::faulted) {
    return report(kFailure, result.error ? result.error->message : std::string("the session stopped accepting writes"));
  }
  return kFailure;  // failed or aborted: compaction_end said why on stderr
}

}  // namespace

void register_agent_commands(CLI::App& app, Commands& commands) {
  {
    auto [sub, options] = add_command(app, commands,
        "resume",
        "Continue the suspended operation of a session's ref (one a crash or a kill interrupted) to its end, "
        "streaming like -p. A tool call that was running is not run again: it gets an \"interrupted\" result. "
        "Exit 0 when it completes or ends aborted, 1 when it fails, 2 when nothing is suspended, 3 when it waits for "
        "an answer (see cairn approve)", run_resume);
    add_session_argument(sub, options->session);
    add_agent_options(sub, options->agent, kRefChoice | kModelChoice | kAgentShape);
    sub->add_flag("--json", options->json, "Print every event as one JSON line on stdout instead of the text");
    sub->add_flag("--wait", options->wait,
                  "When the run waits for an answer (approve, deny, answer), wait for it — holding no lock, so "
                  "another process can give it — and go on; without it, exit 3 as -p does");
  }
  {
    auto [sub, options] = add_command(app, commands,
        "abort",
        "End the suspended operation of a session's ref without running anything more: calls that were running "
        "get \"interrupted\" results, the run ends aborted. Exit 0 when ended, 2 when nothing is suspended", run_abort);
    add_session_argument(sub, options->session);
    add_agent_options(sub, options->agent, kRefChoice);
  }
  {
    auto [sub, options] = add_command(app, commands,
        "compact",
        "Summarise the older context of a session's ref into a compaction entry (the log keeps every entry); "
        "print the summary", run_compact);
    add_session_argument(sub, options->session);
    sub->add_option("INSTRUCTIONS", options->instructions, "What the summary should focus on");
    add_agent_options(sub, options->agent, kRefChoice | kModelChoice | kAgentShape);
    sub->add_flag("--json", options->json, "Print every event as one JSON line on stdout instead of the summary");
  }
}

}  // namespace cairn::cli
