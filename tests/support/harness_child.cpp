// The child of the harness's real-process crash test. Opens the session in a
// SQLite store (sync full), resumes every suspended operation, makes sure ref
// r2 exists, then prompts main and r2 concurrently, one run after another,
// until it is killed. Reports through stdout, one write per line (below
// PIPE_BUF, so the two threads' lines never interleave):
//   ready                    the harness is open; kills are timed from here
//   resumed REF RUN_ID       a suspended operation it resumed to its end
//   run REF RUN_ID           a run it finished
// Anything unexpected is reported on stderr and ends the child with status 1,
// which the parent tells apart from its own SIGKILL.
//
//   cairn_harness_crash_child SQLITE_FILE SESSION_ID MARKER_DIR
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cairn/harness/harness.hpp"
#include "cairn/store/store.hpp"
#include "support/harness_scenario.hpp"

using namespace cairn;

namespace {

void report(const std::string& line) {
  if (::write(STDOUT_FILENO, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(1);
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "harness crash child: %s\n", what.c_str());
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SQLITE_FILE SESSION_ID MARKER_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path marker_dir = argv[3];
  auto store = open_store(std::string("sqlite:") + argv[1]);
  if (!store) die(store.error().message);
  // The parent lets go of the session before it spawns the child; the wait
  // only covers a slow release on a loaded machine.
  auto session = (*store)->open(argv[2], {.lock_timeout = std::chrono::milliseconds(10000)});
  if (!session) die(session.error().message);
  auto created = AgentHarness::create(testing::scenario::options(*session, marker_dir));
  if (!created) die(fmt::format("AgentHarness::create: {}: {}", created.error().code, created.error().message));
  AgentHarness& harness = created->harness;
  report("ready\n");

  // What a previous child left and the parent did not finish: a kill may land
  // in here too, which is the crash-during-resume case.
  for (const auto& suspended : created->suspended) {
    auto ref = harness.ref(suspended.ref);
    if (!ref) die(fmt::format("suspended operation on ref {}, which the harness does not have", suspended.ref));
    auto result = ref->resume();
    if (!result.ok()) {
      die(fmt::format("resume of {} on {}: {}: {}", suspended.id, suspended.ref, to_string(result.outcome),
                      result.error ? result.error->message : std::string()));
    }
    report(fmt::format("resumed {} {}\n", suspended.ref, suspended.id));
  }
  if (!harness.ref("r2")) {
    auto r2 = harness.create_ref("r2", std::nullopt);
    if (!r2) die(fmt::format("create_ref r2: {}: {}", r2.error().code, r2.error().message));
  }

  // Two refs at once, so kills also land while both operations append
  // (group commits holding records of both).
  std::vector<std::jthread> workers;
  for (const std::string name : {"main", "r2"}) {
    workers.emplace_back([&harness, name] {
      auto ref = harness.ref(name);
      if (!ref) die(fmt::format("no ref {}", name));
      for (;;) {
        auto result = ref->prompt(name);
        if (!result.ok()) {
          die(fmt::format("run on {}: {}: {}", name, to_string(result.outcome),
                          result.error ? result.error->message : std::string()));
        }
        report(fmt::format("run {} {}\n", name, result.run_id));
      }
    });
  }
}
