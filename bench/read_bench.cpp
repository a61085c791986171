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
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cairn/store/pi_import.hpp"
#include "cairn/store/store.hpp"

extern char** environ;

using namespace cairn;
using Clock = std::chrono::steady_clock;

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

// pi's ids: 8 hex digits of a random UUID. Deterministic here.
std::string pi_id(std::uint64_t n) {
  // An odd multiplier is a bijection on 32 bits: no two entries share an id.
  return fmt::format("{:08x}", static_cast<std::uint32_t>(n + 1) * 0x9E3779B1u);
}

std::string iso(std::int64_t ms) {
  const std::int64_t s = ms / 1000;
  return fmt::format("2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z", 1 + (s / 86400) % 28, (s / 3600) % 24, (s / 60) % 60,
                     s % 60, ms % 1000);
}

// One entry line as pi 1.6's SessionManager appends it.
std::string pi_message_line(std::uint64_t n, std::int64_t ms) {
  const std::string head = fmt::format(R"({{"type":"message","id":"{}","parentId":{},"timestamp":"{}","message":)",
                                       pi_id(n), n == 0 ? "null" : fmt::format("\"{}\"", pi_id(n - 1)), iso(ms));
  const std::uint64_t turn = n / 4;
  const std::string usage =
      R"("usage":{"input":12000,"output":80,"cacheRead":11000,"cacheWrite":0,"totalTokens":23080,)"
      R"("cost":{"input":0.036,"output":0.0012,"cacheRead":0.0033,"cacheWrite":0,"total":0.0405}})";
  std::string message;
  switch (n % 4) {
    case 0:
      message = fmt::format(
          R"({{"role":"user","content":[{{"type":"text","text":"Please read src/module_{}.ts and fix the failing test in it; keep the public API as it is."}}],"timestamp":{}}})",
          turn % 97, ms);
      break;
    case 1:
      message = fmt::format(
          R"({{"role":"assistant","content":[{{"type":"thinking","thinking":"The test for module {} fails; read the source before changing anything.","thinkingSignature":"c2lnLTE="}},{{"type":"text","text":"I'll read the file first."}},{{"type":"toolCall","id":"toolu_{:06}","name":"read","arguments":{{"path":"src/module_{}.ts"}}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",{},"stopReason":"toolUse","timestamp":{}}})",
          turn % 97, turn, turn % 97, usage, ms);
      break;
    case 2:
      message = fmt::format(
          R"({{"role":"toolResult","toolCallId":"toolu_{:06}","toolName":"read","content":[{{"type":"text","text":"export function add(a: number, b: number) {{\n  return a - b;\n}}\n\nexport function sub(a: number, b: number) {{\n  return a - b;\n}}\n"}}],"isError":false,"timestamp":{}}})",
          turn, ms);
      break;
    default:
      message = fmt::format(
          R"({{"role":"assistant","content":[{{"type":"text","text":"The bug is in add(): it subtracts. I changed it to return a + b, and the test for module {} passes now."}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",{},"stopReason":"stop","timestamp":{}}})",
          turn % 97, usage, ms);
      break;
  }
  return head + message + "}\n";
}

void write_pi_file(const std::string& path, std::uint64_t messages) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  std::fputs(
      R"({"type":"session","version":3,"id":"5f0c2a4e-1b2c-4d3e-8f9a-0b1c2d3e4f50","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/home/dev/project"})"
      "\n",
      file);
  for (std::uint64_t n = 0; n < messages; ++n) {
    const std::string line = pi_message_line(n, 1761955200000 + static_cast<std::int64_t>(n) * 1500);
    std::fwrite(line.data(), 1, line.size(), file);
  }
  std::fclose(file);
}

std::int64_t file_bytes(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
}

long own_peak_kib() {
  long peak_kib = 0;
  if (FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, status)) {
      if (std::sscanf(line, "VmHWM: %ld kB", &peak_kib) == 1) break;
    }
    std::fclose(status);
  }
  return peak_kib;
}

// --open-once: the library's read-only open and build_context of main, in
// this fresh process; prints ms, messages and peak RSS in KiB.
int open_once(const std::string& uri, const std::string& id) {
  const auto start = Clock::now();
  auto store = open_store(uri);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  auto session = (*store)->open(id, {.read_only = true});
  if (!session) {
    std::fprintf(stderr, "%s\n", session.error().message.c_str());
    return 1;
  }
  auto context = (*session)->build_context();
  if (!context) {
    std::fprintf(stderr, "%s\n", context.error().message.c_str());
    return 1;
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::printf("%.3f %zu %ld\n", ms, context->messages.size(), own_peak_kib());
  return 0;
}

// --measure ARGS...: runs ARGS with stdout to /dev/null and prints its wall
// time in ms, its exit status and its peak RSS in KiB. This process is small
// when it spawns, so the resident set Linux carries into the child's
// ru_maxrss across exec is this one's few MiB, not the bench's.
int measure(char** args) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const auto start = Clock::now();
  pid_t pid;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args, environ) != 0) {
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    return 1;
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  struct rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::printf("%.3f %d %ld\n", ms, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
              usage.ru_maxrss);
  return 0;
}

struct Figures {
  double median_ms = 0;
  long peak_kib = 0;
  int exit_code = 0;
  std::size_t messages = 0;
};

// Runs `self ARGS` `runs` times; each prints "ms N kib".
Figures run_self(const std::string& self, std::vector<std::string> args, int runs) {
  args.insert(args.begin(), self);
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<double> times;
  Figures figures;
  for (int r = 0; r < runs; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) break;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    pid_t pid;
    const int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    char buffer[256] = {};
    const ssize_t n = spawned == 0 ? ::read(fds[0], buffer, sizeof buffer - 1) : -1;
    ::close(fds[0]);
    if (spawned == 0) ::waitpid(pid, nullptr, 0);
    double ms = 0;
    long middle = 0, kib = 0;
    if (n > 0 && std::sscanf(buffer, "%lf %ld %ld", &ms, &middle, &kib) == 3) {
      times.push_back(ms);
      figures.peak_kib = std::max(figures.peak_kib, kib);
      if (args[1] == "--measure" && middle != 0) figures.exit_code = static_cast<int>(middle);
      if (args[1] == "--open-once") figures.messages = static_cast<std::size_t>(middle);
    } else {
      figures.exit_code = -1;
    }
  }
  std::sort(times.begin(), times.end());
  if (!times.empty()) figures.median_ms = times[times.size() / 2];
  return figures;
}

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
  if (argc >= 3 && std::string(argv[1]) == "--measure") return measure(argv + 2);
  if (argc == 4 && std::string(argv[1]) == "--open-once") return open_once(argv[2], argv[3]);
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
    write_pi_file(pi_file, messages);
    const bool big = messages >= 100000;
    for (const std::string backend : {"jsonl", "sqlite"}) {
      const std::string dir = fmt::format("{}/{}-{}", base, backend, messages);
      std::filesystem::create_directories(dir);
      const std::string uri = backend == "jsonl" ? "jsonl:" + dir : "sqlite:" + dir + "/s.db";
      std::string id, file;
      {
        auto store = open_store(uri, {SyncPolicy::none});
        if (!store) {
          std::fprintf(stderr, "%s\n", store.error().message.c_str());
          return 1;
        }
        auto imported = import_pi_session(**store, pi_file);
        if (!imported) {
          std::fprintf(stderr, "import: %s\n", imported.error().message.c_str());
          return 1;
        }
        id = imported->session->id();
      }
      if (backend == "sqlite") {  // fold the WAL into the database, as a closed database is
        auto store = open_store(uri);
        (void)(*store)->list();
        file = dir + "/s.db";
      } else {
        for (const auto& item : std::filesystem::directory_iterator(dir)) {
          if (item.path().extension() == ".jsonl") file = item.path();
        }
      }
      const double file_mb =
          static_cast<double>(file_bytes(file) + file_bytes(file + "-wal")) / 1e6;

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
