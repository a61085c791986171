// The seccomp filter of a sandbox: built once per network setting with
// libseccomp in the parent, exported as a BPF program, and installed in the
// child with one system call (libseccomp allocates; a child forked from a
// threaded process must not).
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "child_failure.hpp"

namespace cairn::sandbox {

struct SeccompProgram {
  std::vector<sock_filter> code;
  std::string error;  // set when it could not be built
};

// Refused with EPERM: ptrace and reading other processes' memory, new
// namespaces (unshare, setns, clone with CLONE_NEW*; clone3, whose flags a
// filter cannot see, answers ENOSYS so that libc falls back to clone),
// mount and the new mount API, pivot_root, chroot, kernel modules, kexec,
// keyctl and the key syscalls, bpf, perf_event_open, userfaultfd, io_uring
// (its operations would pass the socket rule), and the terminal ioctls that
// type into another program's input (TIOCSTI, TIOCLINUX). With the network
// off, also socket() of any family but AF_UNIX.
const SeccompProgram& seccomp_program(bool network);

// In the child: installs `program` (no_new_privs must be set already).
ChildFailure enter_seccomp(const SeccompProgram& program) noexcept;

}  // namespace cairn::sandbox
