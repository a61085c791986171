#include "namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace cairn::sandbox {

namespace {

namespace fs = std::filesystem;

bool write_proc(const char* path, const std::string& text) noexcept {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return n == static_cast<ssize_t>(text.size());
}

// Makes the bind mount at `path` read-only. A mount the namespace inherited
// keeps its locked flags (nosuid, nodev, noexec, atime): a remount must
// repeat them or the kernel refuses it.
bool remount_read_only(const char* path) noexcept {
  struct statfs st;
  if (::statfs(path, &st) != 0) return false;
  const unsigned long kept =
      static_cast<unsigned long>(st.f_flags) & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME);
  return ::mount(nullptr, path, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, nullptr) == 0;
}

}  // namespace

MountPlan plan_mounts(const std::vector<std::string>& deny, const std::vector<std::string>& read_only) {
  MountPlan plan;
  plan.uid_map = fmt::format("{0} {0} 1\n", ::getuid());
  plan.gid_map = fmt::format("{0} {0} 1\n", ::getgid());
  const auto resolved = [](const std::string& path) -> std::optional<fs::path> {
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);
    if (ec) return std::nullopt;
    return real;
  };
  for (const auto& path : deny) {
    const auto real = resolved(path);
    if (!real) continue;
    std::error_code ec;
    if (fs::is_directory(*real, ec)) plan.hide_dirs.push_back(real->string());
    else plan.hide_files.push_back(real->string());
  }
  for (const auto& path : read_only) {
    if (const auto real = resolved(path)) plan.read_only.push_back(real->string());
  }
  return plan;
}

ChildFailure enter_namespaces(const MountPlan& plan) noexcept {
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return {ChildStep::user_namespace, errno};
  // An unprivileged process may map its own ids only once setgroups is off.
  if (!write_proc("/proc/self/setgroups", "deny") || !write_proc("/proc/self/uid_map", plan.uid_map) ||
      !write_proc("/proc/self/gid_map", plan.gid_map)) {
    return {ChildStep::id_map, errno};
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return {ChildStep::private_mounts, errno};
  // Read-only first: a hidden path inside one of them is then mounted over
  // the read-only bind, not under it.
  for (std::size_t i = 0; i < plan.read_only.size(); ++i) {
    const char* path = plan.read_only[i].c_str();
    if (::mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) != 0 || !remount_read_only(path)) {
      return {ChildStep::read_only_path, errno, static_cast<int>(i)};
    }
  }
  for (std::size_t i = 0; i < plan.hide_dirs.size(); ++i) {
    const char* path = plan.hide_dirs[i].c_str();
    if (::mount("cairn-hidden", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0500") != 0) {
      return {ChildStep::hide_path, errno, static_cast<int>(i)};
    }
  }
  for (std::size_t i = 0; i < plan.hide_files.size(); ++i) {
    const char* path = plan.hide_files[i].c_str();
    if (::mount("/dev/null", path, nullptr, MS_BIND, nullptr) != 0 || !remount_read_only(path)) {
      return {ChildStep::hide_path, errno, static_cast<int>(plan.hide_dirs.size() + i)};
    }
  }
  return {};
}

}  // namespace cairn::sandbox
