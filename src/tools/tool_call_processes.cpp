#include "tool_call_processes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cairn::tools {

namespace {

using Clock = std::chrono::steady_clock;

void append_escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '.' || c == '_' || c == '-') out += c;
    else out += fmt::format("%{:02X}", byte);
  }
}

bool holds_marker(pid_t pid, std::string_view entry) {
  // The environment the process was started with, NUL-separated; a zombie's
  // reads empty, which is right: it runs nothing.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/environ", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // gone, or another user's
  std::string environment;
  char buffer[16384];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) environment.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  for (std::size_t start = 0; start < environment.size();) {
    const std::size_t end = std::min(environment.find('\0', start), environment.size());
    if (std::string_view(environment).substr(start, end - start) == entry) return true;
    start = end + 1;
  }
  return false;
}

std::vector<pid_t> scan(std::string_view marker) {
  const std::string entry = fmt::format("{}={}", kToolCallVariable, marker);
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  const pid_t self = ::getpid();
  while (dirent* dir = ::readdir(proc)) {
    if (dir->d_name[0] < '0' || dir->d_name[0] > '9') continue;
    const auto pid = static_cast<pid_t>(std::atol(dir->d_name));
    if (pid != self && holds_marker(pid, entry)) found.push_back(pid);
  }
  ::closedir(proc);
  return found;
}

// Kills `pid` only if it still is the marked process the scan saw: the pidfd
// pins the process, so a pid reused in between is left alone. (Through
// syscall(): glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.)
void kill_marked(pid_t pid, std::string_view entry) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    if (errno == ENOSYS && holds_marker(pid, entry)) ::kill(pid, SIGKILL);  // a kernel before 5.3
    return;  // else gone already
  }
  if (holds_marker(pid, entry)) {
    const pid_t pgid = ::getpgid(pid);
    // Its group too when it leads one, but never the group this process is in.
    if (pgid == pid && pgid != ::getpgrp()) ::kill(-pgid, SIGKILL);
    ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  }
  ::close(pidfd);
}

}  // namespace

std::string tool_call_marker(std::string_view run_id, std::string_view tool_call_id) {
  std::string marker;
  append_escaped(marker, run_id);
  marker += ':';
  append_escaped(marker, tool_call_id);
  return marker;
}

std::vector<pid_t> marked_processes(std::string_view marker) { return scan(marker); }

std::function<void(const ToolContext&)> settle_call_processes(std::function<void(const std::string&)> report) {
  return [report = std::move(report)](const ToolContext& context) {
    const auto left = end_marked_processes(tool_call_marker(context.run_id, context.tool_call_id), kSettleLimit);
    if (left.empty() || !report) return;
    report(fmt::format("tool call {} of run {}: {} process{} still running after {} s of SIGKILL (pid {})",
                       context.tool_call_id, context.run_id, left.size(), left.size() == 1 ? "" : "es",
                       kSettleLimit.count() / 1000, fmt::join(left, ", ")));
  };
}

std::vector<pid_t> end_marked_processes(std::string_view marker, std::chrono::milliseconds limit) {
  const std::string entry = fmt::format("{}={}", kToolCallVariable, marker);
  const auto give_up = Clock::now() + limit;
  for (;;) {
    std::vector<pid_t> found = scan(marker);
    if (found.empty() || Clock::now() >= give_up) return found;
    for (const pid_t pid : found) kill_marked(pid, entry);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace cairn::tools
