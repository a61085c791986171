// Lease owners of the PostgreSQL store: a holder of this machine that has
// died is seen to be gone; one that lives, one of another machine or PID
// namespace, and an owner written before these fields never are.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "store/lease_holder.hpp"

namespace cairn::pg {
namespace {

// The owner `pid` would have written, on this machine: this process's owner
// with its pid and start time replaced.
std::string owner_of(pid_t pid, std::string_view start) {
  std::string owner = this_owner();
  const auto pid_at = owner.find(" pid ") + 5;
  owner.replace(pid_at, owner.find(' ', pid_at) - pid_at, std::to_string(pid));
  const auto start_at = owner.find(" start ") + 7;
  owner.replace(start_at, std::string::npos, start);
  return owner;
}

// Field 22 of /proc/PID/stat: when the process started, in clock ticks.
std::string start_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  std::getline(in, stat);
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;
  return field;
}

TEST(LeaseHolder, ThisProcessNamesItsBootNamespaceAndStartAndIsNotGone) {
  const std::string& owner = this_owner();
  for (const char* field : {" pid ", " #", " boot ", " pidns ", " start "}) {
    EXPECT_NE(owner.find(field), std::string::npos) << owner;
  }
  EXPECT_FALSE(holder_is_gone(owner));
  EXPECT_EQ(describe_owner(owner).rfind("pid " + std::to_string(::getpid()) + " on ", 0), 0u) << describe_owner(owner);
}

TEST(LeaseHolder, AHolderThatDiedOrWhosePidIsAnotherProcessIsGone) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string start = start_of(child);
  EXPECT_FALSE(holder_is_gone(owner_of(child, start)));
  // A live process whose start time differs from the owner's: the pid was
  // reused, the holder is gone.
  EXPECT_TRUE(holder_is_gone(owner_of(child, "1")));
  ::kill(child, SIGKILL);
  // A zombie (killed, not yet waited for) holds nothing.
  ::usleep(50'000);
  EXPECT_TRUE(holder_is_gone(owner_of(child, start)));
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(holder_is_gone(owner_of(child, start)));  // no such process
}

TEST(LeaseHolder, AnotherMachineNamespaceOrAnOlderOwnerIsNeverGone) {
  const pid_t gone_pid = 9'999'999;  // above pid_max: no such process here
  std::string other_boot = owner_of(gone_pid, "1");
  const auto boot_at = other_boot.find(" boot ") + 6;
  other_boot.replace(boot_at, other_boot.find(' ', boot_at) - boot_at, "00000000-0000-0000-0000-000000000000");
  EXPECT_FALSE(holder_is_gone(other_boot));
  std::string other_ns = owner_of(gone_pid, "1");
  const auto ns_at = other_ns.find(" pidns ") + 7;
  other_ns.replace(ns_at, other_ns.find(' ', ns_at) - ns_at, "1");
  EXPECT_FALSE(holder_is_gone(other_ns));
  EXPECT_TRUE(holder_is_gone(owner_of(gone_pid, "1")));
  EXPECT_FALSE(holder_is_gone("vm pid 9999999 #0123456789abcdef"));  // before boot, pidns and start
  EXPECT_FALSE(holder_is_gone("garbage"));
  EXPECT_FALSE(holder_is_gone(""));
}

}  // namespace
}  // namespace cairn::pg
