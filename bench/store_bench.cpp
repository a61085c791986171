// Store benchmarks. Prints, per backend and sync policy, append throughput for
// 1, 8 and 64 concurrent writers beside the disk's raw fdatasync rate measured
// in the same run, and open + build-context time and peak memory for 10k,
// 100k and 1M-record sessions.
//
//   cairn_bench_store [--dir DIR] [--quick] [--only memory|jsonl|sqlite] [--appends-only] [--help]
//   cairn_bench_store --open-once URI SESSION   (internal: one open in a fresh process)
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <cstdio>
#include <filesystem>
#include <tuple>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench_process.hpp"
#include "cairn/store/store.hpp"
#include "support/test_support.hpp"

extern char** environ;

using namespace cairn;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kUsage =
    "usage: cairn_bench_store [--dir DIR] [--quick] [--only memory|jsonl|sqlite] [--appends-only] [--help]\n"
    "\n"
    "Appends with 1, 8 and 64 writers under sync full and none, beside the disk's raw fdatasync rate,\n"
    "then opens 10k, 100k and 1M-record sessions (100k also linear) and builds their context.\n"
    "  --dir DIR        where to write (default: $TMPDIR/cairn-bench; emptied first)\n"
    "  --quick          0.5 s per append row and no 1M row\n"
    "  --only BACKEND   one backend: memory, jsonl or sqlite\n"
    "  --appends-only   the append rows only\n";

bool is_backend(std::string_view name) { return name == "memory" || name == "jsonl" || name == "sqlite"; }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The disk's own rate: append ~300 bytes and fdatasync, as a log would.
double raw_fdatasync_rate(const std::string& dir, double duration) {
  const std::string path = dir + "/raw-fdatasync.bin";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  const std::string record(300, 'x');
  std::int64_t n = 0;
  const auto start = Clock::now();
  while (seconds_since(start) < duration) {
    if (::write(fd, record.data(), record.size()) < 0 || ::fdatasync(fd) != 0) break;
    ++n;
  }
  const double rate = static_cast<double>(n) / seconds_since(start);
  ::close(fd);
  std::filesystem::remove(path);
  return rate;
}

// What any group commit can reach on this disk with `writers` closed-loop
// writers, by the protocol Session::append follows (session.cpp): each queues
// a 300-byte line and waits; the writer at the front writes every queued line
// with one pwrite and one fdatasync, hands the lead to the next queued writer
// and wakes its group. Nothing else: no encoding, validation or index, so the
// disk's latency under load decides (a writer's next line waits for its last
// one's sync).
double group_commit_ceiling(const std::string& dir, int writers, double duration) {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    enum { waiting, done, leading } state = waiting;
    void signal(decltype(state) to) {
      {
        std::lock_guard lock(mu);
        state = to;
      }
      cv.notify_one();
    }
  };
  const std::string path = dir + "/group-commit.bin";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::mutex queue_mu;
  std::deque<Waiter*> queue;
  off_t length = 0;
  const std::string line = std::string(299, 'x') + "\n";
  auto append = [&](Waiter& self) {
    std::unique_lock lock(queue_mu);
    queue.push_back(&self);
    if (queue.front() != &self) {
      lock.unlock();
      std::unique_lock wait(self.mu);
      self.cv.wait(wait, [&] { return self.state != Waiter::waiting; });
      if (self.state == Waiter::done) return;
      wait.unlock();
      lock.lock();
    }
    const std::vector<Waiter*> group(queue.begin(), queue.end());
    lock.unlock();
    std::string buffer;
    for (std::size_t i = 0; i < group.size(); ++i) buffer += line;
    if (::pwrite(fd, buffer.data(), buffer.size(), length) > 0) length += static_cast<off_t>(buffer.size());
    ::fdatasync(fd);
    lock.lock();
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(group.size()));
    Waiter* next = queue.empty() ? nullptr : queue.front();
    lock.unlock();
    if (next) next->signal(Waiter::leading);
    for (std::size_t w = 1; w < group.size(); ++w) group[w]->signal(Waiter::done);
  };
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      std::int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        Waiter self;
        append(self);
        ++n;
      }
      total += n;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(duration));
  stop = true;
  for (auto& thread : threads) thread.join();
  const double rate = static_cast<double>(total.load()) / seconds_since(start);
  ::close(fd);
  std::filesystem::remove(path);
  return rate;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

Record bench_message(std::int64_t i, const std::optional<std::string>& parent, const std::string& ref) {
  UserMessage message;
  message.content = fmt::format("request {}: please read src/module_{}.cpp and fix the failing test in it", i, i % 97);
  message.timestamp = 1764496998000 + i;
  TreeEntry entry;
  entry.parent_id = parent;
  entry.ref = ref;
  entry.body = MessageBody{std::move(message)};
  return Record{-1, std::move(entry)};
}

// Records per second with `writers` threads, each on its own ref, each
// appending one record per call for `duration` seconds.
double append_rate(Store& store, int writers, double duration) {
  auto created = store.create({.cwd = "/bench"});
  if (!created) return 0;
  std::shared_ptr<Session> session = *created;
  for (int w = 0; w < writers; ++w) {
    const std::string ref = fmt::format("w{}", w);
    if (!session->append(testing::harness(RefCreated{ref, std::nullopt}, ref))) return 0;
  }
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      const std::string ref = fmt::format("w{}", w);
      std::optional<std::string> parent;
      std::int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        Record record = bench_message(n, parent, ref);
        std::string id = new_entry_id();
        std::get<TreeEntry>(record.body).id = id;
        if (!session->append(std::move(record))) break;
        parent = std::move(id);
        ++n;
      }
      total += n;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(duration));
  stop = true;
  for (auto& thread : threads) thread.join();
  return static_cast<double>(total.load()) / seconds_since(start);
}

// A realistic session: turns of prompt, operation records, assistant messages
// with tool calls and results; a compaction every ~2000 records, as a long
// session has when it outgrows its context window.
void fill_session(Session& session, std::int64_t records, bool compacting) {
  std::optional<std::string> leaf;
  std::vector<Record> batch;
  std::int64_t turn = 0, since_compaction = 0;
  auto push_entry = [&](TreeBody body) {
    TreeEntry entry;
    entry.id = new_entry_id();
    entry.parent_id = leaf;
    entry.timestamp = "2026-11-30T10:00:00.000Z";
    entry.body = std::move(body);
    leaf = entry.id;
    batch.push_back(Record{-1, std::move(entry)});
  };
  auto push_harness = [&](HarnessBody body, std::string id = {}) {
    HarnessRecord record;
    record.id = id.empty() ? new_entry_id() : std::move(id);
    record.ref = "main";
    record.timestamp = "2026-11-30T10:00:00.000Z";
    record.body = std::move(body);
    batch.push_back(Record{-1, std::move(record)});
  };
  std::int64_t written = 0;
  while (written < records) {
    const std::string run = new_entry_id();
    TreeEntry prompt = std::get<TreeEntry>(bench_message(turn, std::nullopt, "main").body);
    prompt.id = new_entry_id();
    RunIntent intent;
    intent.initial_messages.push_back(prompt);
    push_harness(OperationStarted{leaf, std::move(intent)}, run);
    push_entry(std::move(prompt.body));
    push_harness(GenerationStarted{run, GenerationPurpose::step, 1, ModelRef{"anthropic", "claude-sonnet-4-5"}});
    AssistantMessage assistant;
    assistant.content.push_back(TextContent{"I'll read the file first to understand the failing test.", {}, Json::object()});
    assistant.content.push_back(ToolCall{.id = fmt::format("toolu_{}", turn), .name = "read",
                                         .arguments = Json{{"path", fmt::format("src/module_{}.cpp", turn % 97)}}});
    assistant.api = "anthropic-messages";
    assistant.provider = "anthropic";
    assistant.model = "claude-sonnet-4-5";
    assistant.usage = Usage{12000, 80, 11000, 0, 12080, Cost{0.0036, 0.0012, 0.0033, 0, 0.0081}, Json::object()};
    assistant.stop_reason = StopReason::tool_use;
    assistant.timestamp = 1764496998000 + turn;
    push_entry(MessageBody{assistant});
    const std::string assistant_id = *leaf;
    push_harness(ToolStarted{run, assistant_id, 0, fmt::format("toolu_{}", turn), "read",
                             Json{{"path", fmt::format("src/module_{}.cpp", turn % 97)}}, new_entry_id(), Replay::safe});
    ToolResultMessage result;
    result.tool_call_id = fmt::format("toolu_{}", turn);
    result.tool_name = "read";
    result.content.push_back(TextContent{"     1\t#include <vector>\n     2\t\n     3\tint add(int a, int b) { return a - b; }\n", {},
                                         Json::object()});
    result.timestamp = 1764496998000 + turn;
    push_entry(MessageBody{result});
    push_harness(GenerationStarted{run, GenerationPurpose::step, 1, ModelRef{"anthropic", "claude-sonnet-4-5"}});
    assistant.content = {TextContent{"The bug is in add(): it subtracts. I changed it to return a + b.", {}, Json::object()}};
    assistant.stop_reason = StopReason::stop;
    push_entry(MessageBody{assistant});
    push_harness(OperationFinished{run, OperationOutcome::completed, std::nullopt});
    since_compaction += 9;
    if (compacting && since_compaction >= 2000) {
      push_entry(Compaction{"## Goal\nFix the failing tests module by module.\n## Progress\nMany modules fixed.", *leaf, 150000,
                            std::nullopt, std::nullopt});
      since_compaction = 0;
    }
    ++turn;
    if (batch.size() >= 2000 || written + static_cast<std::int64_t>(batch.size()) >= records) {
      written += static_cast<std::int64_t>(batch.size());
      if (auto appended = session.append(std::move(batch)); !appended) {
        std::fprintf(stderr, "fill failed: %s\n", appended.error().message.c_str());
        std::exit(1);
      }
      batch.clear();
    }
  }
}

// --open-once: open read-only (or, with --write, for writing: the SQLite
// store then checks every payload's checksum) and build main's context;
// print ms, messages and peak RSS in KiB.
int open_once(const std::string& uri, const std::string& id, bool write) {
  const auto start = Clock::now();
  auto store = open_store(uri);
  auto session = (*store)->open(id, {.read_only = !write});
  if (!session) {
    std::fprintf(stderr, "%s\n", session.error().message.c_str());
    return 1;
  }
  auto context = (*session)->build_context();
  const double ms = seconds_since(start) * 1000;
  // VmHWM is this process image's own peak; getrusage's ru_maxrss would also
  // count the parent's resident set, which Linux carries across exec.
  const long peak_kib = cairn::bench::own_peak_kib();
  std::printf("%.3f %zu %ld\n", ms, context ? context->messages.size() : 0, peak_kib);
  return 0;
}

struct OpenFigures {
  double median_ms = 0;
  std::size_t messages = 0;
  long peak_kib = 0;
};

OpenFigures measure_open(const std::string& self, const std::string& uri, const std::string& id, int runs,
                         bool write = false) {
  std::vector<double> times;
  OpenFigures figures;
  for (int r = 0; r < runs; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) break;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::vector<std::string> args = {self, "--open-once", uri, id};
    if (write) args.push_back("--write");
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid;
    posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    char buffer[256] = {};
    ssize_t n = ::read(fds[0], buffer, sizeof buffer - 1);
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    double ms = 0;
    std::size_t messages = 0;
    long kib = 0;
    if (n > 0 && std::sscanf(buffer, "%lf %zu %ld", &ms, &messages, &kib) == 3) {
      times.push_back(ms);
      figures.messages = messages;
      figures.peak_kib = std::max(figures.peak_kib, kib);
    }
  }
  std::sort(times.begin(), times.end());
  if (!times.empty()) figures.median_ms = times[times.size() / 2];
  return figures;
}

std::int64_t file_bytes(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 4 || argc == 5) && std::string(argv[1]) == "--open-once") {
    return open_once(argv[2], argv[3], argc == 5 && std::string(argv[4]) == "--write");
  }
  std::string base = std::filesystem::temp_directory_path() / "cairn-bench";
  bool quick = false, appends_only = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--dir" && i + 1 < argc) {
      base = argv[++i];
    } else if (arg == "--only" && i + 1 < argc && is_backend(argv[i + 1])) {
      only = argv[++i];
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--appends-only") {
      appends_only = true;
    } else {
      std::fprintf(stderr, "cairn_bench_store: unknown or incomplete argument '%s'\n\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const double duration = quick ? 0.5 : 2.0;

  std::printf("cairn store benchmark (%s, %u cores)\n\n", base.c_str(), std::thread::hardware_concurrency());
  const double raw = raw_fdatasync_rate(base, duration);
  std::printf("raw fdatasync (300-byte appends): %.0f/s\n\n", raw);

  // The disk's rate drifts on a shared machine, so each full-sync row is
  // compared with a raw rate measured just before its own 1-writer run.
  std::printf("%-8s %-5s %10s %10s %10s %10s %14s %12s\n", "backend", "sync", "1 writer", "8 writers", "64 writers",
              "raw sync", "1w / raw sync", "64w / 1w");
  struct Backend {
    std::string name, uri;
  };
  const std::vector<Backend> backends = {{"memory", "memory:"},
                                         {"jsonl", "jsonl:" + base + "/append-jsonl"},
                                         {"sqlite", "sqlite:" + base + "/append.db"}};
  for (const Backend& backend : backends) {
    if (!only.empty() && backend.name != only) continue;
    for (SyncPolicy sync : {SyncPolicy::full, SyncPolicy::none}) {
      if (backend.name == "memory" && sync == SyncPolicy::full) continue;
      auto store = open_store(backend.uri, {sync});
      if (!store) {
        std::fprintf(stderr, "%s\n", store.error().message.c_str());
        return 1;
      }
      const bool full = sync == SyncPolicy::full;
      const double raw_here = full ? raw_fdatasync_rate(base, duration) : 0;
      const double one = append_rate(**store, 1, duration);
      const double eight = append_rate(**store, 8, duration);
      const double many = append_rate(**store, 64, duration);
      std::printf("%-8s %-5s %10.0f %10.0f %10.0f %10s %14s %12.1f\n", backend.name.c_str(), full ? "full" : "none",
                  one, eight, many, full ? fmt::format("{:.0f}", raw_here).c_str() : "-",
                  full ? fmt::format("{:.2f}", one / raw_here).c_str() : "-", many / one);
    }
  }
  std::printf("targets: jsonl/sqlite full 1w / raw sync >= 0.8; 64w / 1w >= 20 (full)\n");
  // The write-side ratios at 64 writers. The disk's latency drifts by 2x
  // within a minute here, so the rates compared are taken in turn, three
  // rounds, and each ratio is of their medians.
  if (only.empty()) {
    std::map<std::string, std::vector<double>> rates;
    std::map<std::string, std::unique_ptr<Store>> stores;
    for (const auto& [name, uri, sync] : {std::tuple{"jsonl/full", "jsonl:" + base + "/ratio-jsonl-full", SyncPolicy::full},
                                          std::tuple{"jsonl/none", "jsonl:" + base + "/ratio-jsonl-none", SyncPolicy::none},
                                          std::tuple{"sqlite/full", "sqlite:" + base + "/ratio.db", SyncPolicy::full}}) {
      auto store = open_store(uri, {sync});
      if (!store) {
        std::fprintf(stderr, "%s\n", store.error().message.c_str());
        return 1;
      }
      stores[name] = std::move(*store);
    }
    for (int round = 0; round < 3; ++round) {
      rates["bare"].push_back(group_commit_ceiling(base, 64, duration));
      for (auto& [name, store] : stores) rates[name].push_back(append_rate(*store, 64, duration));
    }
    std::printf("\n64 writers, medians of 3 rounds taken in turn (records/s): jsonl full %.0f, jsonl none %.0f, "
                "sqlite full %.0f; bare group commit on this disk %.0f\n",
                median(rates["jsonl/full"]), median(rates["jsonl/none"]), median(rates["sqlite/full"]),
                median(rates["bare"]));
    auto ratio = [&](const char* what, const char* a, const char* b, const char* target) {
      std::printf("  %-40s %6.2f   %s\n", what, median(rates[a]) / median(rates[b]), target);
    };
    ratio("jsonl full / jsonl none", "jsonl/full", "jsonl/none", "target >= 0.8");
    ratio("sqlite full / jsonl full", "sqlite/full", "jsonl/full", "target >= 0.8");
    ratio("bare group commit / jsonl none", "bare", "jsonl/none", "(the first ratio's ceiling on this disk)");
    ratio("jsonl full / bare group commit", "jsonl/full", "bare", "(cairn's share of that ceiling)");
  }
  std::printf("\n");
  if (appends_only) {
    std::filesystem::remove_all(base);
    return 0;
  }

  std::printf("%-8s %9s %11s %10s %12s %14s %14s %10s %16s\n", "backend", "records", "shape", "file MB",
              "open+ctx ms", "write-open ms", "ctx messages", "peak MB", "peak / file");
  std::vector<std::int64_t> sizes = {10000, 100000, 1000000};
  if (quick) sizes = {10000, 100000};
  for (const std::string name : {"jsonl", "sqlite"}) {
    if (!only.empty() && name != only) continue;
    for (std::int64_t records : sizes) {
      for (bool compacting : {true, false}) {
        if (!compacting && records != 100000) continue;
        const std::string dir = fmt::format("{}/open-{}-{}-{}", base, name, records, compacting);
        std::filesystem::create_directories(dir);
        const std::string uri = name == "jsonl" ? "jsonl:" + dir : "sqlite:" + dir + "/s.db";
        const std::string file = name == "jsonl" ? dir + "/open.jsonl" : dir + "/s.db";
        {
          auto store = open_store(uri, {SyncPolicy::none});
          auto session = (*store)->create({.id = "open", .cwd = "/bench"});
          if (!session) {
            std::fprintf(stderr, "%s\n", session.error().message.c_str());
            return 1;
          }
          fill_session(**session, records, compacting);
        }
        if (name == "sqlite") {  // fold the WAL into the database, as a closed database is
          auto store = open_store(uri);
          (void)(*store)->list();
        }
        const OpenFigures figures = measure_open(self, uri, "open", records >= 1000000 ? 3 : 7);
        const OpenFigures writing = measure_open(self, uri, "open", records >= 1000000 ? 3 : 7, /*write=*/true);
        const double file_mb = static_cast<double>(file_bytes(file) + file_bytes(file + "-wal")) / 1e6;
        std::printf("%-8s %9lld %11s %10.1f %12.1f %14.1f %14zu %10.1f %16.2f\n", name.c_str(),
                    static_cast<long long>(records), compacting ? "compacting" : "linear", file_mb, figures.median_ms,
                    writing.median_ms, figures.messages, static_cast<double>(figures.peak_kib) / 1024.0,
                    static_cast<double>(figures.peak_kib) * 1024.0 / 1e6 / file_mb);
        std::filesystem::remove_all(dir);
      }
    }
  }
  std::printf("targets: 100k open+ctx median <= 60 ms (jsonl), <= 120 ms (sqlite); 1M jsonl < 1000 ms with peak < 2 x file\n");
  std::printf("(write-open: every record's checksum checked before the first append; no target of its own)\n");
  std::filesystem::remove_all(base);
  return 0;
}
