// Who holds a PostgreSQL session's lease, as its `owner` column says, and
// whether that holder is a process of this machine that has died.
//
// A lease that outlives its process (SIGKILL, a crash) would keep every
// other writer out until it expires — 15 s by default — although on the same
// machine it can be seen at once that the holder is gone. The owner names
// the machine's boot (not only its host name, which two machines may share)
// and PID namespace, the pid, and the process's start time (so that a pid
// reused by a later process is not taken for the holder).
#pragma once

#include <string>
#include <string_view>

namespace cairn::pg {

// This process as a lease owner:
// "HOST pid PID #NONCE boot BOOT_ID pidns INODE start TICKS".
const std::string& this_owner();

// What a lease's owner column says, for a person: "pid 12 on host-a".
std::string describe_owner(std::string_view owner);

// True when `owner` names a process of this boot and PID namespace that is
// no longer running (gone, a zombie, or its pid now another process's).
// False whenever that cannot be known: another machine or namespace, an
// owner written before these fields, /proc unreadable.
bool holder_is_gone(std::string_view owner);

}  // namespace cairn::pg
