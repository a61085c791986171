// See bench_process.hpp.
#include "bench_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <utility>

extern char** environ;

namespace cairn::bench {

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

std::int64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

int measure_main(char** args) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // No input: a command that would read a prompt from stdin reads none.
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  // A bench that kills commands on purpose keeps their complaints out of its table.
  if (const char* errors = std::getenv("CAIRN_BENCH_STDERR")) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors, O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  const std::int64_t start = monotonic_ns();
  pid_t pid;
  const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    return 1;
  }
  // The bench may need the pid at once (to kill a command it has seen
  // reach its model), so this line is flushed before the wait.
  std::printf("spawned %d %lld\n", static_cast<int>(pid), static_cast<long long>(start));
  std::fflush(stdout);
  int status = 0;
  struct rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  const double ms = static_cast<double>(monotonic_ns() - start) / 1e6;
  std::printf("%.3f %d %ld\n", ms, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
              usage.ru_maxrss);
  return 0;
}

std::optional<Child> Child::spawn(const std::vector<std::string>& argv) {
  std::vector<char*> pointers;
  for (const auto& arg : argv) pointers.push_back(const_cast<char*>(arg.c_str()));
  pointers.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  pid_t pid;
  const int spawned = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    return std::nullopt;
  }
  return Child(pid, fds[0]);
}

Child::Child(Child&& other) noexcept : pid_(other.pid_), fd_(other.fd_), buffer_(std::move(other.buffer_)) {
  other.pid_ = -1;
  other.fd_ = -1;
}

Child::~Child() { (void)finish(); }

std::optional<std::string> Child::next_line() {
  while (true) {
    if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    char chunk[4096];
    const ssize_t n = fd_ < 0 ? 0 : ::read(fd_, chunk, sizeof chunk);
    if (n <= 0) {
      if (buffer_.empty()) return std::nullopt;
      return std::exchange(buffer_, std::string());
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

std::string Child::finish() {
  std::string last;
  while (auto line = next_line()) {
    if (!line->empty()) last = *line;
  }
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  fd_ = -1;
  pid_ = -1;
  return last;
}

std::optional<Sample> parse_sample(const std::string& line) {
  Sample sample;
  if (std::sscanf(line.c_str(), "%lf %ld %ld", &sample.ms, &sample.middle, &sample.kib) != 3) return std::nullopt;
  return sample;
}

Figures summarise(std::vector<Sample> samples) {
  Figures figures;
  if (samples.empty()) {
    figures.exit_code = -1;
    return figures;
  }
  std::sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.ms < b.ms; });
  figures.median_ms = samples[samples.size() / 2].ms;
  figures.min_ms = samples.front().ms;
  figures.max_ms = samples.back().ms;
  figures.samples = static_cast<int>(samples.size());
  for (const Sample& sample : samples) figures.peak_kib = std::max(figures.peak_kib, sample.kib);
  figures.middle = samples.back().middle;
  return figures;
}

Figures run_self(const std::string& self, const std::vector<std::string>& args, int runs) {
  std::vector<std::string> argv = {self};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_children(argv, runs);
}

Figures run_children(const std::vector<std::string>& argv, int runs) {
  const bool measuring = argv.size() > 1 && argv[1] == "--measure";
  std::vector<Sample> samples;
  int exit_code = 0;
  for (int r = 0; r < runs; ++r) {
    auto child = Child::spawn(argv);
    if (!child) break;
    auto sample = parse_sample(child->finish());
    if (!sample) {
      exit_code = -1;
      continue;
    }
    if (measuring && sample->middle != 0 && exit_code == 0) exit_code = static_cast<int>(sample->middle);
    samples.push_back(*sample);
  }
  Figures figures = summarise(std::move(samples));
  if (exit_code != 0) figures.exit_code = exit_code;
  return figures;
}

}  // namespace cairn::bench
