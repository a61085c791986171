// Whole-process figures for the benchmarks: a command's wall time and peak
// RSS, taken by a small child of the bench (`BENCH --measure ARGS...`), and
// the figures a bench's own fresh child prints about itself.
//
// Why a child measures: Linux carries the resident set of the process that
// spawns into the spawned one's ru_maxrss across exec. The bench holds
// generated sessions, a model server, sometimes a PostgreSQL client; the
// `--measure` child is a few MiB, so the peak it reports is the command's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cairn::bench {

std::int64_t file_bytes(const std::string& path);
// This process's peak resident set (VmHWM), in KiB.
long own_peak_kib();
// CLOCK_MONOTONIC in ns: one clock for every process of the machine, so a
// child's start and the bench's receipt of its request can be subtracted.
std::int64_t monotonic_ns();

// The body of `BENCH --measure ARGS...`: runs ARGS (stdout to /dev/null,
// stdin from /dev/null), prints "spawned PID START_NS" as soon as it runs, then "MS EXIT PEAK_KIB"
// when it has ended. EXIT is 128 + the signal when it was killed. ARGS's
// stderr is appended to the file $CAIRN_BENCH_STDERR when that is set.
int measure_main(char** args);

// One child of the bench, its stdout read line by line.
class Child {
 public:
  // Spawns `argv` (argv[0] a path); nullopt when it cannot be run.
  static std::optional<Child> spawn(const std::vector<std::string>& argv);
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();
  // The next line of its stdout without the newline; nullopt at its end.
  std::optional<std::string> next_line();
  // Reads to the end, reaps it; its last line, or empty.
  std::string finish();

 private:
  Child(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

// Figures from `runs` fresh children: the median time, the largest peak.
struct Figures {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  long peak_kib = 0;
  int exit_code = 0;  // the first non-zero exit seen; -1 when a child printed no figures
  long middle = 0;    // the middle figure of the child's last line (e.g. messages)
  int samples = 0;
};

// Figures of one sample each: "MS MIDDLE KIB" lines.
struct Sample {
  double ms = 0;
  long middle = 0;
  long kib = 0;
};
std::optional<Sample> parse_sample(const std::string& line);
Figures summarise(std::vector<Sample> samples);

// Runs `self ARGS` `runs` times; each child's last line is "MS MIDDLE KIB".
// With ARGS = {"--measure", ...} MIDDLE is the exit status, which lands in
// exit_code when it is not 0.
Figures run_self(const std::string& self, const std::vector<std::string>& args, int runs);
// The same for any program whose last line is "MS MIDDLE KIB".
Figures run_children(const std::vector<std::string>& argv, int runs);

}  // namespace cairn::bench
