// Issue 45's published benchmark: what opening a session costs against its
// length. Sessions of 1k, 10k, 100k and 1M entries in two shapes (linear;
// a compaction every 1,000 entries) are generated as pi files, imported into
// the JSONL, SQLite and PostgreSQL stores, and timed: the library's open +
// build_context in a fresh process, `cairn context --json` and `cairn
// resume`'s time to its first model request as whole processes, each with its
// peak RSS; beside pi 1.6.0's own SessionManager opening the same pi file
// and building its context (bench/pi/open.mjs, timing itself). Each figure is
// printed beside its acceptance reference; --doc writes the table and a
// gnuplot plot into a Markdown document.
//
//   cairn_bench_open [--quick] [--sizes LIST] [--stores LIST] [--shapes LIST] [--runs N]
//                    [--doc FILE] [--plot SVG] [--dir DIR] [--cairn PATH] [--node PATH] [--no-pi] [--keep]
//   cairn_bench_open --help
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_process.hpp"
#include "bench_store.hpp"
#include "open_references.hpp"
#include "open_report.hpp"
#include "pi_session.hpp"
#include "resume_timing.hpp"
#include "support/pg_cluster.hpp"

using namespace cairn::bench;
namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    "usage: cairn_bench_open [options]\n"
    "\n"
    "Issue 45's benchmark: opening a session against its length. Generates pi-shaped\n"
    "sessions (linear; a compaction every 1,000 entries), imports each into the JSONL,\n"
    "SQLite and PostgreSQL stores (PostgreSQL on a private cluster it starts), and\n"
    "times, each with its peak RSS:\n"
    "  - the library's open + build_context, in a fresh process;\n"
    "  - `cairn context --json`, as a whole process;\n"
    "  - `cairn resume`'s time from its start to its first model request (a local\n"
    "    server that never answers; the session is left suspended by a killed -p);\n"
    "  - pi 1.6.0's SessionManager opening the same pi file and building its\n"
    "    context, timing itself (node bench/pi/open.mjs; npm ci in bench/pi first).\n"
    "Prints each median beside issue 45's acceptance reference.\n"
    "\n"
    "  --quick         3 runs a figure, sizes 1k, 10k, 100k (default: 5 runs, up to 1M)\n"
    "  --sizes LIST    entries, e.g. 1000,10000 (overrides the sizes of --quick)\n"
    "  --stores LIST   of jsonl,sqlite,postgres (default: all three)\n"
    "  --shapes LIST   of linear,compacting (default: both)\n"
    "  --runs N        runs a figure\n"
    "  --doc FILE      write the run's table and plot between the markers of FILE\n"
    "                  (e.g. docs/benchmarks.md; the plot beside it, see --plot)\n"
    "  --plot SVG      the plot's file (default: benchmarks-open.svg beside --doc);\n"
    "                  needs gnuplot (Debian: gnuplot-nox)\n"
    "  --dir DIR       where sessions are written (default: $TMPDIR/cairn-open-bench)\n"
    "  --cairn PATH    the cairn executable (default: the one built beside this bench)\n"
    "  --node PATH     node, for pi (default: node on PATH)\n"
    "  --no-pi         leave pi's rows out\n"
    "  --keep          leave the sessions in DIR\n";

std::vector<std::string> split(const std::string& list, char separator = ',') {
  std::vector<std::string> items;
  std::stringstream stream(list);
  for (std::string item; std::getline(stream, item, separator);) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M UTC", &tm);
  return buffer;
}

std::string machine() {
  struct utsname name{};
  ::uname(&name);
  struct sysinfo info{};
  ::sysinfo(&info);
  const double gib = static_cast<double>(info.totalram) * info.mem_unit / (1024.0 * 1024 * 1024);
  return fmt::format("{} cores (nproc), {:.1f} GiB memory, {} {} {}", ::sysconf(_SC_NPROCESSORS_ONLN), gib,
                     name.sysname, name.release, name.machine);
}

// pi's package version as installed, and node's, for the run's description.
std::string pi_description(const std::string& node, const std::string& script) {
  std::ifstream package(fs::path(script).parent_path() / "node_modules/@earendil-works/pi-coding-agent/package.json");
  std::stringstream text;
  text << package.rdbuf();
  std::smatch match;
  const std::string json = text.str();
  const std::string version =
      std::regex_search(json, match, std::regex(R"re("version"\s*:\s*"([^"]+)")re")) ? match[1].str() : "?";
  std::string node_version = "?";
  if (auto child = Child::spawn({node, "--version"})) node_version = child->finish();
  return fmt::format("@earendil-works/pi-coding-agent {} (SessionManager.open + buildSessionContext, timing itself) "
                     "on node {}",
                     version, node_version);
}

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "", ':')) {
    const fs::path candidate = fs::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

struct Options {
  bool quick = false, keep = false, pi = true;
  int runs = 0;
  std::vector<std::uint64_t> sizes;
  std::vector<std::string> stores = {"jsonl", "sqlite", "postgres"};
  std::vector<PiShape> shapes = {PiShape::linear, PiShape::compacting};
  std::string doc, plot, dir, cairn, node;
};

// Parses argv; exits on --help or a bad argument.
Options parse(int argc, char** argv, const std::string& self) {
  Options options;
  options.dir = fs::temp_directory_path() / "cairn-open-bench";
  options.cairn = (fs::path(self).parent_path().parent_path() / "cairn").string();
  options.node = find_on_path("node");
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--keep") {
      options.keep = true;
    } else if (arg == "--no-pi") {
      options.pi = false;
    } else if (arg == "--runs" && has_value) {
      options.runs = std::atoi(argv[++i]);
    } else if (arg == "--sizes" && has_value) {
      for (const auto& size : split(argv[++i])) options.sizes.push_back(std::stoull(size));
    } else if (arg == "--stores" && has_value) {
      options.stores = split(argv[++i]);
    } else if (arg == "--shapes" && has_value) {
      options.shapes.clear();
      for (const auto& shape : split(argv[++i])) {
        options.shapes.push_back(shape == "linear" ? PiShape::linear : PiShape::compacting);
      }
    } else if (arg == "--doc" && has_value) {
      options.doc = argv[++i];
    } else if (arg == "--plot" && has_value) {
      options.plot = argv[++i];
    } else if (arg == "--dir" && has_value) {
      options.dir = argv[++i];
    } else if (arg == "--cairn" && has_value) {
      options.cairn = argv[++i];
    } else if (arg == "--node" && has_value) {
      options.node = argv[++i];
    } else {
      std::fprintf(stderr, "cairn_bench_open: unknown argument '%s'\n\n%s", arg.c_str(), kUsage);
      std::exit(2);
    }
  }
  if (options.sizes.empty()) {
    options.sizes = {1'000, 10'000, 100'000};
    if (!options.quick) options.sizes.push_back(1'000'000);
  }
  if (options.runs <= 0) options.runs = options.quick ? 3 : 5;
  if (!options.doc.empty() && options.plot.empty()) {
    options.plot = (fs::path(options.doc).parent_path() / "benchmarks-open.svg").string();
  }
  return options;
}

// Keeps cairn's processes off this machine's own configuration and data:
// every one the bench starts sees a home of its own under DIR.
void private_home(const std::string& dir) {
  for (const char* sub : {"home", "config", "data", "cache"}) fs::create_directories(fs::path(dir) / sub);
  ::setenv("HOME", (fs::path(dir) / "home").c_str(), 1);
  ::setenv("XDG_CONFIG_HOME", (fs::path(dir) / "config").c_str(), 1);
  ::setenv("XDG_DATA_HOME", (fs::path(dir) / "data").c_str(), 1);
  ::setenv("XDG_CACHE_HOME", (fs::path(dir) / "cache").c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--measure") return measure_main(argv + 2);
  if (argc == 4 && std::string(argv[1]) == "--open-once") return open_once_main(argv[2], argv[3]);
  const std::string self = fs::read_symlink("/proc/self/exe");
  const Options options = parse(argc, argv, self);
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(i ? argv[i] : "cairn_bench_open");
  if (::access(options.cairn.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "cairn_bench_open: no cairn executable at %s (build cairn_cli, or pass --cairn)\n",
                 options.cairn.c_str());
    return 1;
  }
  fs::remove_all(options.dir);
  fs::create_directories(options.dir);
  private_home(options.dir);
  const std::string command_errors = options.dir + "/commands.stderr";
  ::setenv("CAIRN_BENCH_STDERR", command_errors.c_str(), 1);

  // pi: its script beside this bench's source, its packages installed there.
  const std::string pi_script = std::string(CAIRN_SOURCE_DIR) + "/bench/pi/open.mjs";
  std::string pi_missing;
  if (!options.pi) {
    pi_missing = "left out (--no-pi)";
  } else if (options.node.empty()) {
    pi_missing = "no node on PATH";
  } else if (!fs::exists(fs::path(pi_script).parent_path() / "node_modules/@earendil-works/pi-coding-agent")) {
    pi_missing = "pi is not installed: run `npm ci` in bench/pi";
  }

  std::unique_ptr<cairn::testing::PgCluster> cluster;
  std::vector<std::string> stores;
  for (const auto& store : options.stores) {
    if (store == "postgres" && !cluster) {
      std::string why;
      // fsync off: every figure here reads; the import's commits need no durability.
      cluster = cairn::testing::PgCluster::start_new(false, &why);
      if (!cluster) {
        std::fprintf(stderr, "PostgreSQL left out: %s\n", why.c_str());
        continue;
      }
    }
    stores.push_back(store);
  }
  ModelServer model;

  const RunInfo info{.date = utc_now(),
                     .command = command,
                     .machine = machine(),
                     .pi = pi_missing.empty() ? pi_description(options.node, pi_script) : pi_missing};
  std::printf("cairn open benchmark, %s\n%s\npi: %s\n%d runs a figure; sessions in %s\n\n", info.date.c_str(),
              info.machine.c_str(), info.pi.c_str(), options.runs, options.dir.c_str());
  print_header();

  std::vector<Row> rows;
  References references;
  for (const PiShape shape : options.shapes) {
    for (const std::uint64_t entries : options.sizes) {
      const std::string pi_file = fmt::format("{}/pi-{}-{}.jsonl", options.dir, shape_name(shape), entries);
      write_pi_file(pi_file, entries, shape);
      const Row base{.shape = shape_name(shape), .entries = entries};
      if (pi_missing.empty()) {
        Row row = base;
        row.store = "pi";
        row.work = kPiOpen;
        row.file_mb = static_cast<double>(file_bytes(pi_file)) / 1e6;
        row.figures = run_children({options.node, pi_script, pi_file}, options.runs);
        if (row.figures.exit_code != 0) row.note = "pi's script failed (see its error above)";
        references.judge(row);
        print_row(row);
        rows.push_back(row);
      }
      double jsonl_mb = 0;
      for (const auto& store : stores) {
        const std::string dir = fmt::format("{}/{}-{}-{}", options.dir, store, shape_name(shape), entries);
        fs::create_directories(dir);
        std::string uri = store == "jsonl" ? "jsonl:" + dir : store == "sqlite" ? "sqlite:" + dir + "/s.db" : "";
        if (store == "postgres") {
          std::string why;
          uri = cluster->new_database(&why);
          if (uri.empty()) {
            std::fprintf(stderr, "PostgreSQL: %s\n", why.c_str());
            continue;
          }
        }
        const auto imported = import_pi(uri, pi_file);
        if (!imported) return 1;
        if (store == "jsonl") jsonl_mb = static_cast<double>(imported->bytes) / 1e6;
        Row row = base;
        row.store = store;
        // PostgreSQL has no file of its own: its rows hold the same log as JSONL's.
        row.file_mb = imported->bytes > 0 ? static_cast<double>(imported->bytes) / 1e6
                                          : (jsonl_mb > 0 ? jsonl_mb : static_cast<double>(file_bytes(pi_file)) / 1e6);
        auto record = [&](const char* work, std::optional<Figures> figures, const char* failed) {
          Row timed = row;
          timed.work = work;
          if (figures && figures->exit_code == 0) {
            timed.figures = *figures;
          } else {
            timed.note = failed;
          }
          references.judge(timed);
          print_row(timed);
          rows.push_back(timed);
        };
        record(kLibraryOpen, run_self(self, {"--open-once", uri, imported->id}, options.runs),
               "the open failed (its error is above)");
        record(kContextJson,
               run_self(self, {"--measure", options.cairn, "context", imported->id, "--json", "--store", uri},
                        options.runs),
               "cairn context failed (its stderr: commands.stderr in --dir, with --keep)");
        // Last: suspending the session and each resume append to it.
        record(kResume, time_resume(self, options.cairn, uri, imported->id, model, options.runs),
               "cairn sent no model request (its stderr: commands.stderr in --dir, with --keep)");
        if (options.keep) {
          std::printf("           (kept: --store %s, session %s)\n", uri.c_str(), imported->id.c_str());
        } else {
          fs::remove_all(dir);
        }
      }
      if (!options.keep) fs::remove(pi_file);
    }
  }
  if (!options.doc.empty()) {
    if (!write_plot(options.plot, options.dir, rows)) return 1;
    if (!write_doc(options.doc, options.plot, info, rows)) {
      std::fprintf(stderr, "cannot write %s\n", options.doc.c_str());
      return 1;
    }
    std::printf("\nwrote %s and %s\n", options.doc.c_str(), options.plot.c_str());
  }
  if (!options.keep) fs::remove_all(options.dir);
  return 0;
}
