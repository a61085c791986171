// Read-path benchmark on a session shaped as pi writes one: a linear branch of
// messages (user, assistant with thinking and a tool call, tool result,
// assistant answer, repeated), no compaction — what a long pi session is
// before it compacts, and what tree, log, verify and export always read whole.
// The pi v3 file is generated here and imported with the library's pi import
// into a JSONL and a SQLite store; then each CLI read command runs as a whole
// process (time and peak RSS), and the library's open + build_context runs in
// a fresh process of its own.
//
//   cairn_bench_read [--dir DIR] [--quick] [--cairn PATH] [--keep]
//   cairn_bench_read --help
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_process.hpp"
#include "bench_store.hpp"
#include "pi_session.hpp"

using namespace cairn;
using namespace cairn::bench;

namespace {

constexpr const char* kUsage =
    "usage: cairn_bench_read [--dir DIR] [--quick] [--cairn PATH] [--keep]\n"
    "\n"
    "Times every CLI read command (context --json, context, tree, verify, log --json)\n"
    "as a whole process, and the library's open + build_context in a fresh process,\n"
    "on pi-shaped linear sessions of 10k and 100k messages, on the JSONL and the\n"
    "SQLite store; prints the median time and the peak RSS beside the session's size.\n"
    "\n"
    "  --dir DIR     where the sessions are written (default: $TMPDIR/cairn-read-bench)\n"
    "  --quick       fewer runs per figure (3 instead of 7)\n"
    "  --cairn PATH  the cairn executable (default: the one built beside this bench)\n"
    "  --keep        leave the pi files and the stores in DIR (for profiling)\n";

void print_row(const std::string& backend, std::uint64_t messages, double file_mb, const std::string& work,
               const Figures& figures, const std::string& target) {
  const double peak_mb = static_cast<double>(figures.peak_kib) / 1024.0;
  std::printf("%-7s %8llu %8.1f  %-22s %9.1f %9.1f %8.2f  %-s%s\n", backend.c_str(),
              static_cast<unsigned long long>(messages), file_mb, work.c_str(), figures.median_ms, peak_mb,
              peak_mb * 1.048576 / file_mb, target.c_str(),
              figures.exit_code != 0 ? fmt::format("  (exit {})", figures.exit_code).c_str() : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--measure") return measure_main(argv + 2);
  if (argc == 4 && std::string(argv[1]) == "--open-once") return open_once_main(argv[2], argv[3]);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  std::string base = std::filesystem::temp_directory_path() / "cairn-read-bench";
  std::string cairn = (std::filesystem::path(self).parent_path().parent_path() / "cairn").string();
  bool quick = false, keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--dir" && i + 1 < argc) {
      base = argv[++i];
    } else if (arg == "--cairn" && i + 1 < argc) {
      cairn = argv[++i];
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr, "cairn_bench_read: unknown argument '%s'\n\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  if (::access(cairn.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "cairn_bench_read: no cairn executable at %s (build cairn_cli, or pass --cairn)\n",
                 cairn.c_str());
    return 1;
  }
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  const int runs = quick ? 3 : 7;

  std::printf("cairn read benchmark (%s; %s)\n", base.c_str(), cairn.c_str());
  std::printf("reference, pi 1.6.0 in process on its own file (open + build context): "
              "100k: 583-591 ms, 10k: 58-97 ms\n\n");
  std::printf("%-7s %8s %8s  %-22s %9s %9s %8s  %s\n", "store", "messages", "file MB", "work", "median ms", "peak MB",
              "peak/file", "target");
  for (std::uint64_t messages : {std::uint64_t{10000}, std::uint64_t{100000}}) {
    const std::string pi_file = fmt::format("{}/pi-{}.jsonl", base, messages);
    write_pi_file(pi_file, messages, PiShape::linear);
    const bool big = messages >= 100000;
    for (const std::string backend : {"jsonl", "sqlite"}) {
      const std::string dir = fmt::format("{}/{}-{}", base, backend, messages);
      std::filesystem::create_directories(dir);
      const std::string uri = backend == "jsonl" ? "jsonl:" + dir : "sqlite:" + dir + "/s.db";
      const auto imported = import_pi(uri, pi_file);
      if (!imported) return 1;
      const std::string& id = imported->id;
      const double file_mb = static_cast<double>(imported->bytes) / 1e6;

      const std::string library_target =
          big ? (backend == "jsonl" ? "<= 60 ms" : "<= 120 ms") : "";
      print_row(backend, messages, file_mb, "open + build_context", run_self(self, {"--open-once", uri, id}, runs),
                library_target);
      struct Command {
        std::string name;
        std::vector<std::string> args;
        std::string target;
      };
      const std::vector<Command> commands = {
          {"context --json", {"context", id, "--json"}, big ? "<= 200 ms" : "<= 40 ms"},
          {"context", {"context", id}, big ? "<= 300 ms" : "<= 40 ms"},
          {"tree", {"tree", id}, big ? "<= 300 ms" : "<= 40 ms"},
          {"verify", {"verify", id}, big ? "<= 300 ms" : "<= 40 ms"},
          {"log --json", {"log", id, "--json"}, big ? "" : "<= 40 ms"},  // the floor: bytes as stored
      };
      for (const Command& command : commands) {
        std::vector<std::string> args = {"--measure", cairn};
        args.insert(args.end(), command.args.begin(), command.args.end());
        args.insert(args.end(), {"--store", uri});
        print_row(backend, messages, file_mb, command.name, run_self(self, args, runs),
                  command.target + (big ? ", peak <= 2 x file" : ""));
      }
      if (keep) std::printf("        (kept: --store %s, session %s)\n", uri.c_str(), id.c_str());
      if (!keep) std::filesystem::remove_all(dir);
    }
    if (!keep) std::filesystem::remove(pi_file);
  }
  if (!keep) std::filesystem::remove_all(base);
  return 0;
}
