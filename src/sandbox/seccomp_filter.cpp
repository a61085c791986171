#include "seccomp_filter.hpp"

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace cairn::sandbox {

namespace {

struct ContextRelease {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextRelease>;

// clone's namespace flags (CLONE_NEWTIME only reaches unshare and clone3).
constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET,
                                             CLONE_NEWUTS, CLONE_NEWIPC,  CLONE_NEWCGROUP};

constexpr const char* kDenied[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "unshare", "setns",
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog",
};

std::string build(scmp_filter_ctx ctx, bool network) {
  const auto deny = [&](int syscall, unsigned count, const scmp_arg_cmp* args, int error) -> std::string {
    const int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(error), syscall, count, args);
    if (rc == 0) return {};
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, syscall);
    std::string message = fmt::format("seccomp rule for {}: {}", name ? name : "a syscall", std::strerror(-rc));
    std::free(name);
    return message;
  };
  for (const char* name : kDenied) {
    const int number = seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) continue;  // not a syscall of this architecture (umount on x86-64)
    if (auto failed = deny(number, 0, nullptr, EPERM); !failed.empty()) return failed;
  }
  for (unsigned long flag : kNamespaceFlags) {
    const scmp_arg_cmp has_flag = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    if (auto failed = deny(SCMP_SYS(clone), 1, &has_flag, EPERM); !failed.empty()) return failed;
  }
  if (auto failed = deny(SCMP_SYS(clone3), 0, nullptr, ENOSYS); !failed.empty()) return failed;
  for (unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    const scmp_arg_cmp is_request = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, request);
    if (auto failed = deny(SCMP_SYS(ioctl), 1, &is_request, EPERM); !failed.empty()) return failed;
  }
  if (!network) {
    const scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
    if (auto failed = deny(SCMP_SYS(socket), 1, &not_unix, EPERM); !failed.empty()) return failed;
    if (auto failed = deny(SCMP_SYS(socketpair), 1, &not_unix, EPERM); !failed.empty()) return failed;
  }
  return {};
}

SeccompProgram make_program(bool network) {
  SeccompProgram program;
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) {
    program.error = "seccomp_init failed";
    return program;
  }
  if (program.error = build(ctx.get(), network); !program.error.empty()) return program;
  // libseccomp 2.5 exports to a file descriptor only.
  const int fd = ::memfd_create("cairn-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    program.error = fmt::format("memfd_create: {}", std::strerror(errno));
    return program;
  }
  const int rc = seccomp_export_bpf(ctx.get(), fd);
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (rc != 0 || size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    program.error = fmt::format("exporting the seccomp filter failed: {}", std::strerror(rc ? -rc : EINVAL));
    ::close(fd);
    return program;
  }
  program.code.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
  const ssize_t n = ::pread(fd, program.code.data(), static_cast<std::size_t>(size), 0);
  ::close(fd);
  if (n != size) {
    program.code.clear();
    program.error = "reading the exported seccomp filter failed";
  }
  return program;
}

}  // namespace

const SeccompProgram& seccomp_program(bool network) {
  static const SeccompProgram with_network = make_program(true);
  static const SeccompProgram without_network = make_program(false);
  return network ? with_network : without_network;
}

ChildFailure enter_seccomp(const SeccompProgram& program) noexcept {
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(program.code.size());
  prog.filter = const_cast<sock_filter*>(program.code.data());
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return {ChildStep::seccomp, errno};
  return {};
}

}  // namespace cairn::sandbox
