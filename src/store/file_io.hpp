// Small POSIX file helpers shared by the file-backed stores.
#pragma once

#include <string>

#include "cairn/error.hpp"

namespace cairn {

// The whole file; io_error naming the path when it cannot be read. The
// string's capacity exceeds its size by at least `padding` bytes.
Result<std::string> read_file(const std::string& path, std::size_t padding = 0);
// The first line (without newline), reading at most `limit` bytes.
Result<std::string> read_first_line(const std::string& path, std::size_t limit = 1 << 20);
// Writes all of `data` at `offset`, retrying short writes.
Status write_all(int fd, std::string_view data, long long offset, const std::string& path);
// fsync of a directory, so that a created, renamed or removed name is durable.
Status sync_directory(const std::string& dir);
std::string errno_text();

}  // namespace cairn
