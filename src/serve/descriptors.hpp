// File descriptors, which a server runs out of before it runs out of
// memory: the process's limit, how many are open, and the share the
// server's sessions may take without starving its connections.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>

#include "cairn/serve/server.hpp"  // raise_descriptor_limit

namespace cairn::serve {


// The soft limit on open files now.
std::size_t descriptor_limit();

// How many descriptors the process has open (counted in /proc/self/fd);
// none when that cannot be read.
std::optional<std::size_t> open_descriptors();

// What the sessions of a server may hold: all the process's descriptors
// but those held back for its connections and a few spare (a store's
// temporary files, a tool's pipes, the listening socket).
struct DescriptorBudget {
  std::size_t total = 0;            // 0: no budget is kept
  std::size_t for_connections = 0;  // the connection cap
  std::size_t spare = 32;
  std::function<std::size_t()> connections_open;  // may be empty: none

  // Whether one more session would leave the connections too few (checked
  // before a session is opened; a session takes a few descriptors).
  bool short_for_session() const;
  // The figures, for an error message.
  std::size_t in_use() const;
};

}  // namespace cairn::serve
