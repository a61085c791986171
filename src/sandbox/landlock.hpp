// Landlock, the kernel's allow-list for file access by path (and, from ABI
// 4, TCP ports; from ABI 6, signals and abstract UNIX sockets). The rules a
// policy needs are planned in the parent (which rights the ABI knows, which
// paths get which) and created in the child after its mounts are in place:
// a rule holds an inode of a mount, so /tmp's rule must be made for the
// mount the child sees.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "child_failure.hpp"

namespace cairn::sandbox {

struct LandlockRule {
  std::string path;
  std::uint64_t access = 0;  // trimmed to a file's rights when the path is not a directory
};

struct LandlockPlan {
  int abi = 0;
  std::uint64_t handled_fs = 0;
  std::uint64_t handled_net = 0;  // ABI 4: no rule grants any, so TCP bind and connect are refused
  std::uint64_t scoped = 0;       // ABI 6: signals and abstract UNIX sockets stay inside the sandbox
  std::vector<LandlockRule> rules;
  // A second ruleset the child restricts itself with, made in the parent
  // (closed_ports_ruleset): with the network allowed, TCP connect to every
  // port but cairn's own. -1: none.
  int ports_ruleset = -1;
};

// The ruleset that lets TCP connect to every port but `closed`, made once
// per set of ports and kept open for the process (65 534 rules take ~60 ms
// to add, once; each child then pays ~30 ms in landlock_restrict_self).
// Needs ABI 4; -1 with `error` set when it cannot be made.
int closed_ports_ruleset(const std::vector<std::uint16_t>& closed, std::string& error);

// The ABI version; 0 without Landlock (disabled, or a kernel before 5.13).
int landlock_abi();

// Read (and execute) everywhere, everything in `writable`, and the device
// files every program writes (/dev/null and the like); with the network
// off, no TCP where the ABI can say so.
LandlockPlan plan_landlock(int abi, const std::vector<std::string>& writable, bool network);

// In the child, after fork: makes the ruleset and restricts this process
// (no_new_privs first, as Landlock requires). Async-signal-safe: system
// calls only, no allocation.
ChildFailure enter_landlock(const LandlockPlan& plan) noexcept;

}  // namespace cairn::sandbox
