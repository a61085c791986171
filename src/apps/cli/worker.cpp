// `cairn worker`: a process that takes over the runs other processes left.
// On a store many machines share (PostgreSQL), it claims a session whose
// operations are open and whose writer is gone (Store::claim: nobody holds
// its lease, or the lease expired), resumes every suspended operation in it
// with the agent options the worker was started with, says how that ended
// (Store::end_claim), lets the session go, and claims the next. A session
// whose operations keep failing is left alone after --max-claims claims.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "agent_run.hpp"
#include "agent_setup.hpp"
#include "cli.hpp"
#include "util/untrusted_text.hpp"

namespace cairn::cli {
namespace {

struct WorkerOptions {
  AgentCommandOptions agent;
  double poll = 1.0;
  int max_claims = 3;
  bool once = false;
};

const char* outcome_name(cairn::Outcome outcome) {
  switch (outcome) {
    case cairn::Outcome::ok: return "ok";
    case cairn::Outcome::rejected: return "rejected";
    case cairn::Outcome::failed: return "failed";
    case cairn::Outcome::aborted: return "aborted";
    case cairn::Outcome::cancelled: return "cancelled";
    case cairn::Outcome::faulted: return "faulted";
    case cairn::Outcome::awaiting_input: return "awaiting input";
  }
  return "?";
}

// Resumes every suspended operation of `session` (claimed, open for
// writing) and says how the turn ended.
void work_on(Store& store, std::shared_ptr<Session> session, const WorkerOptions& options) {
  const std::string id = session->id();
  auto end = [&](ClaimEnd how, const std::string& detail) {
    if (auto ended = store.end_claim(id, how, detail); !ended) {
      print_untrusted(stderr, "cairn worker: session {}: {}\n", id, ended.error().message);
    }
  };
  // The tools work where the session was started.
  const std::filesystem::path cwd = session->header().cwd;
  std::error_code ec;
  if (cwd.empty() || !std::filesystem::is_directory(cwd, ec)) {
    const std::string why = fmt::format("its directory '{}' is not on this machine", cwd.string());
    print_untrusted(stderr, "cairn worker: session {}: {}; left for another worker\n", id, why);
    end(ClaimEnd::failed, why);
    return;
  }
  std::filesystem::current_path(cwd, ec);
  SetupMode mode{.create_missing_ref = false, .need_model = false, .announce_session = false, .opened = session};
  session.reset();  // the setup holds it now
  auto setup = setup_agent(options.agent, mode);
  if (!setup) {
    end(ClaimEnd::failed, "the worker could not set up its agent (its output says why)");
    return;
  }
  ClaimEnd how = ClaimEnd::finished;
  std::string detail;
  const std::vector<SuspendedOperation> suspended = setup->suspended;
  print_untrusted(stderr, "cairn worker: session {}: resuming {} operation{}\n", id, suspended.size(),
                  suspended.size() == 1 ? "" : "s");
  for (const SuspendedOperation& operation : suspended) {
    auto ref = setup->harness->ref(operation.ref);
    if (!ref) continue;
    const RunResult result = ref->resume();
    std::string line = fmt::format("cairn worker: session {} ref {}: {} {}", id, operation.ref, to_string(operation.kind),
                                   outcome_name(result.outcome));
    if (result.error) line += ": " + result.error->message;
    print_untrusted(stderr, "{}\n", line);  // the ref's name, the run's error
    switch (result.outcome) {
      case cairn::Outcome::ok:
      case cairn::Outcome::aborted:
      case cairn::Outcome::cancelled:
      case cairn::Outcome::failed:  // the run ended (failed): nothing is left to resume
        break;
      case cairn::Outcome::awaiting_input:
        if (how == ClaimEnd::finished) how = ClaimEnd::waiting;
        break;
      case cairn::Outcome::rejected:
      case cairn::Outcome::faulted:
        how = ClaimEnd::failed;
        detail = result.error ? result.error->message : std::string(outcome_name(result.outcome));
        break;
    }
  }
  end(how, detail);
}

int run_worker(const WorkerOptions& options) {
  if (!(options.poll > 0) || options.poll > 3600) return report(kUsage, "--poll takes seconds between 0 and 3600");
  if (options.max_claims < 1) return report(kUsage, "--max-claims takes a number of claims from 1");
  auto store = open_store_for(options.agent.store);
  if (!store) return store.error();
  // A first SIGINT or SIGTERM stops claiming (the session in hand is
  // finished); a second leaves at once — its lease expires and another
  // worker resumes what was running.
  std::atomic<int> signals{0};
  SignalAbort on_signal([&signals] {
    if (++signals >= 2) std::_Exit(130);
    fmt::print(stderr, "cairn worker: stopping after the session in hand (again to leave at once)\n");
  });
  print_untrusted(stderr, "cairn worker: claiming the suspended runs of {} every {} s\n", (*store)->uri(),
                  options.poll);
  const auto pause = std::chrono::duration<double>(options.poll);
  while (signals == 0) {
    auto claimed = (*store)->claim(ClaimOptions{.max_claims = options.max_claims});
    if (!claimed) {
      if (claimed.error().is(Errc::invalid_argument)) return report(kUsage, claimed.error().message);
      print_untrusted(stderr, "cairn worker: {}\n", claimed.error().message);
    } else if (*claimed) {
      work_on(**store, std::move(**claimed), options);
      continue;
    } else if (options.once) {
      return kOk;
    }
    for (auto waited = std::chrono::duration<double>(0); waited < pause && signals == 0;
         waited += std::chrono::milliseconds(50)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return kOk;
}

}  // namespace

void register_worker_command(CLI::App& app, Commands& commands) {
  auto [sub, options] = add_command(app, commands,
      "worker",
      "Take over the runs other processes left suspended on a shared store (postgres://…): claim a session whose "
      "operations are open and whose writer's lease is gone, resume them with this command's agent options, let it "
      "go, claim the next. Runs until SIGINT or SIGTERM",
      run_worker);
  add_agent_options(sub, options->agent, kModelChoice | kAgentShape);
  sub->add_option("--poll", options->poll, "Seconds between looks for work when there is none (default 1)");
  sub->add_option("--max-claims", options->max_claims,
                  "Leave a session alone after this many claims whose operations did not finish (default 3)");
  sub->add_flag("--once", options->once, "Exit when nothing is left to claim instead of waiting for more");
}

}  // namespace cairn::cli
