// What went wrong in a child between fork and exec, sent to the parent over
// a close-on-exec pipe: the pipe reads end-of-file when exec succeeded, this
// struct when it did not. Plain data, written with one write(2).
#pragma once

namespace cairn::sandbox {

enum class ChildStep : int {
  none = 0,
  setup_process,      // process group, signals, file descriptors, working directory
  user_namespace,     // unshare(CLONE_NEWUSER | CLONE_NEWNS)
  id_map,             // /proc/self/{setgroups,uid_map,gid_map}
  private_mounts,     // making every mount private to the namespace
  hide_path,          // an empty read-only mount over a denied path
  read_only_path,     // a read-only bind of .git/hooks or .cairn
  landlock_ruleset,   // landlock_create_ruleset
  landlock_rule,      // landlock_add_rule
  no_new_privs,       // prctl(PR_SET_NO_NEW_PRIVS)
  landlock_restrict,  // landlock_restrict_self
  seccomp,            // installing the seccomp filter
  exec,               // execve
};

struct ChildFailure {
  ChildStep step = ChildStep::none;
  int error = 0;   // errno
  int index = -1;  // which path, for hide_path, read_only_path and landlock_rule
  explicit operator bool() const { return step != ChildStep::none; }
};

}  // namespace cairn::sandbox
