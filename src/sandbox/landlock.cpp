#include "landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

namespace cairn::sandbox {

namespace {

// The rights of later ABIs, by value: Debian 12's kernel headers (6.1) stop
// at ABI 2, the kernels cairn runs on do not.
constexpr std::uint64_t kFsTruncate = 1ULL << 14;   // ABI 3
constexpr std::uint64_t kFsIoctlDev = 1ULL << 15;   // ABI 5
constexpr std::uint64_t kNetBindTcp = 1ULL << 0;    // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ULL << 1; // ABI 4
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ULL << 1;              // ABI 6

// landlock_ruleset_attr as ABI 6 has it; the kernel is told how much of it
// the ABI knows (an older kernel refuses a larger struct with non-zero tail).
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};

constexpr std::uint64_t kRead =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr std::uint64_t kWriteAbi1 =
    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
    LANDLOCK_ACCESS_FS_MAKE_SYM;
// What a rule on a file (not a directory) may hold.
constexpr std::uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                      LANDLOCK_ACCESS_FS_READ_FILE | kFsTruncate | kFsIoctlDev;

std::uint64_t fs_rights(int abi) {
  std::uint64_t rights = kRead | kWriteAbi1;
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) rights |= kFsTruncate;
  if (abi >= 5) rights |= kFsIoctlDev;
  return rights;
}

std::size_t attr_size(int abi) {
  if (abi >= 6) return sizeof(RulesetAttr);
  if (abi >= 4) return 2 * sizeof(std::uint64_t);
  return sizeof(std::uint64_t);
}

constexpr int kRuleNetPort = 2;  // LANDLOCK_RULE_NET_PORT, ABI 4
constexpr int kRulesetFdFloor = 100;

struct NetPortAttr {
  std::uint64_t allowed_access;
  std::uint64_t port;
} __attribute__((packed));

}  // namespace

int closed_ports_ruleset(const std::vector<std::uint16_t>& closed, std::string& error) {
  static std::mutex mu;
  static std::map<std::vector<std::uint16_t>, int> made;  // open for the process's life
  std::lock_guard lock(mu);
  if (auto it = made.find(closed); it != made.end()) return it->second;
  RulesetAttr attr{0, kNetConnectTcp, 0};
  const long ruleset = ::syscall(SYS_landlock_create_ruleset, &attr, attr_size(4), 0);
  if (ruleset < 0) {
    error = fmt::format("creating the Landlock ruleset of TCP ports failed: {}", std::strerror(errno));
    return -1;
  }
  // Above the descriptors a child's dup2 sets (0 to 3, sandboxed_spawn.cpp):
  // in a process with few files open, the ruleset would be made as one of
  // them, and the child would restrict itself with its stdout.
  const int fd = ::fcntl(static_cast<int>(ruleset), F_DUPFD_CLOEXEC, kRulesetFdFloor);
  ::close(static_cast<int>(ruleset));
  if (fd < 0) {
    error = fmt::format("moving the Landlock ruleset of TCP ports failed: {}", std::strerror(errno));
    return -1;
  }
  for (std::uint32_t port = 0; port <= 0xffff; ++port) {
    if (std::find(closed.begin(), closed.end(), port) != closed.end()) continue;
    NetPortAttr rule{kNetConnectTcp, port};
    if (::syscall(SYS_landlock_add_rule, fd, kRuleNetPort, &rule, 0) != 0) {
      error = fmt::format("adding the Landlock rule of TCP port {} failed: {}", port, std::strerror(errno));
      ::close(fd);
      return -1;
    }
  }
  made.emplace(closed, fd);
  return fd;
}

int landlock_abi() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

LandlockPlan plan_landlock(int abi, const std::vector<std::string>& writable, bool network) {
  LandlockPlan plan;
  plan.abi = abi;
  plan.handled_fs = fs_rights(abi);
  if (abi >= 4 && !network) plan.handled_net = kNetBindTcp | kNetConnectTcp;
  if (abi >= 6) plan.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  // ioctl on devices: reading is everywhere, so is asking a terminal its size.
  plan.rules.push_back({"/", kRead | (abi >= 5 ? kFsIoctlDev : 0)});
  for (const char* device : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
    plan.rules.push_back({device, plan.handled_fs & kFileRights});
  }
  for (const auto& root : writable) plan.rules.push_back({root, plan.handled_fs});
  return plan;
}

ChildFailure enter_landlock(const LandlockPlan& plan) noexcept {
  RulesetAttr attr{plan.handled_fs, plan.handled_net, plan.scoped};
  const long ruleset = ::syscall(SYS_landlock_create_ruleset, &attr, attr_size(plan.abi), 0);
  if (ruleset < 0) return {ChildStep::landlock_ruleset, errno};
  const int ruleset_fd = static_cast<int>(ruleset);
  for (std::size_t i = 0; i < plan.rules.size(); ++i) {
    const auto& rule = plan.rules[i];
    const int fd = ::open(rule.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;  // a device this machine lacks: nothing to allow
      return {ChildStep::landlock_rule, errno, static_cast<int>(i)};
    }
    struct stat st;
    std::uint64_t access = rule.access;
    if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= kFileRights;
    landlock_path_beneath_attr beneath{};
    beneath.allowed_access = access;
    beneath.parent_fd = fd;
    const long added = ::syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    const int saved = errno;
    ::close(fd);
    if (added < 0) return {ChildStep::landlock_rule, saved, static_cast<int>(i)};
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return {ChildStep::no_new_privs, errno};
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd, 0) != 0) return {ChildStep::landlock_restrict, errno};
  ::close(ruleset_fd);
  if (plan.ports_ruleset >= 0 && ::syscall(SYS_landlock_restrict_self, plan.ports_ruleset, 0) != 0) {
    return {ChildStep::landlock_restrict, errno};
  }
  return {};
}

}  // namespace cairn::sandbox
