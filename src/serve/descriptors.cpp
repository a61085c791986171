#include "descriptors.hpp"

#include <dirent.h>
#include <sys/resource.h>

namespace cairn::serve {

std::size_t raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return descriptor_limit();
}

std::size_t descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur == RLIM_INFINITY) return static_cast<std::size_t>(1) << 20;
  return static_cast<std::size_t>(limit.rlim_cur);
}

std::optional<std::size_t> open_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  std::size_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count - 1;  // the directory's own
}

std::size_t DescriptorBudget::in_use() const {
  const std::size_t open = open_descriptors().value_or(0);
  const std::size_t connections = connections_open ? connections_open() : 0;
  return open > connections ? open - connections : 0;
}

bool DescriptorBudget::short_for_session() const {
  if (total == 0) return false;
  const std::size_t ours = total > for_connections + spare ? total - for_connections - spare : 0;
  return in_use() >= ours;
}

}  // namespace cairn::serve
