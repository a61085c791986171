// Small POSIX file helpers shared by the file-backed stores.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "cairn/error.hpp"

namespace cairn {

// The whole file; io_error naming the path when it cannot be read. The
// string's capacity exceeds its size by at least `padding` bytes.
Result<std::string> read_file(const std::string& path, std::size_t padding = 0);
// Whole-file OFD locks on a session file. The writer holds it exclusively
// from writing a group until the group is synced or cut back, and while it
// cuts a torn tail; a reader holds it shared while it sizes and maps the file
// (map_log_file). So a reader never maps bytes that a truncation may remove.
Status lock_contents(int fd, bool exclusive, const std::string& path);
void unlock_contents(int fd);

// A whole file mapped read-only. Opening a session reads its file through
// this: reading into fresh memory costs a page fault per 4 KiB, which on
// these machines takes longer than indexing the records. A mapped page that a
// truncation removes would raise SIGBUS when touched, hence the locks above
// and MappedLog's rule.
class MappedFile {
  struct Key {
    explicit Key() = default;
  };

 public:
  MappedFile(Key, const char* base, std::size_t size) : base_(base), size_(size) {}
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::string_view text() const { return {base_, size_}; }

 private:
  friend Result<struct MappedLog> map_log_file(const std::string&);
  const char* base_;
  std::size_t size_;
};

// A session file as mapped for reading. A writer's open may cut the last
// line (damaged or torn) and any unterminated bytes after it, so those are
// copied into `tail` while the shared lock is held; `head`, everything before
// them, is all of the mapping that may be touched afterwards.
struct MappedLog {
  std::shared_ptr<const MappedFile> file;
  std::string_view head;
  std::string tail;
};
Result<MappedLog> map_log_file(const std::string& path);

// The first line (without newline), reading at most `limit` bytes.
Result<std::string> read_first_line(const std::string& path, std::size_t limit = 1 << 20);
// Writes all of `data` at `offset`, retrying short writes.
Status write_all(int fd, std::string_view data, long long offset, const std::string& path);
// fsync of a directory, so that a created, renamed or removed name is durable.
Status sync_directory(const std::string& dir);
std::string errno_text();

}  // namespace cairn
