#include "file_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace cairn {

std::string errno_text() { return std::strerror(errno); }

Result<std::string> read_file(const std::string& path, std::size_t padding) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno == ENOENT ? Errc::not_found : Errc::io_error, fmt::format("cannot open {}: {}", path, errno_text()));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return fail(Errc::io_error, fmt::format("cannot stat {}: {}", path, errno_text()));
  }
  // Read straight into the string: no zero-fill of a buffer about to be overwritten.
  std::string data;
  std::size_t done = 0;
  Status status;
  data.resize_and_overwrite(static_cast<std::size_t>(st.st_size) + padding, [&](char* buffer, std::size_t size) {
    while (done < size - padding) {
      ssize_t n = ::pread(fd, buffer + done, size - padding - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = fail(Errc::io_error, fmt::format("cannot read {}: {}", path, errno_text()));
        break;
      }
      if (n == 0) break;  // the file shrank while we read
      done += static_cast<std::size_t>(n);
    }
    std::memset(buffer + done, 0, size - done);  // the padding, kept zeroed for determinism
    return done;
  });
  if (!status) {
    ::close(fd);
    return std::unexpected(status.error());
  }
  ::close(fd);
  return data;
}

MappedFile::~MappedFile() {
  if (size_ > 0) ::munmap(const_cast<char*>(base_), size_);
}

Status lock_contents(int fd, bool exclusive, const std::string& path) {
  struct flock lock{};
  lock.l_type = exclusive ? F_WRLCK : F_RDLCK;
  lock.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file, however long
  while (::fcntl(fd, F_OFD_SETLKW, &lock) != 0) {
    if (errno != EINTR) return fail(Errc::io_error, fmt::format("cannot lock {}: {}", path, errno_text()));
  }
  return {};
}

void unlock_contents(int fd) {
  struct flock lock{};
  lock.l_type = F_UNLCK;
  lock.l_whence = SEEK_SET;
  ::fcntl(fd, F_OFD_SETLK, &lock);
}

Result<MappedLog> map_log_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno == ENOENT ? Errc::not_found : Errc::io_error, fmt::format("cannot open {}: {}", path, errno_text()));
  if (auto locked = lock_contents(fd, /*exclusive=*/false, path); !locked) {
    ::close(fd);
    return std::unexpected(locked.error());
  }
  // Unlocked explicitly: the mapping holds the open file description, and
  // with it an OFD lock, until it is unmapped.
  auto done = [fd](Result<MappedLog> result) {
    unlock_contents(fd);
    ::close(fd);
    return result;
  };
  struct stat st{};
  if (::fstat(fd, &st) != 0) return done(fail(Errc::io_error, fmt::format("cannot stat {}: {}", path, errno_text())));
  const auto size = static_cast<std::size_t>(st.st_size);
  MappedLog log;
  if (size == 0) {
    log.file = std::make_shared<MappedFile>(MappedFile::Key{}, nullptr, 0);
    return done(std::move(log));
  }
  // MAP_POPULATE maps the whole file in one call: page by page, the faults
  // cost more than the reading.
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) return done(fail(Errc::io_error, fmt::format("cannot map {}: {}", path, errno_text())));
  log.file = std::make_shared<MappedFile>(MappedFile::Key{}, static_cast<const char*>(base), size);
  const std::string_view text = log.file->text();
  // The start of the last complete line: just past the newline before the last one.
  std::size_t start = 0;
  if (const std::size_t last = text.rfind('\n'); last != std::string_view::npos && last > 0) {
    const std::size_t previous = text.rfind('\n', last - 1);
    start = previous == std::string_view::npos ? 0 : previous + 1;
  }
  log.head = text.substr(0, start);
  log.tail = std::string(text.substr(start));
  return done(std::move(log));
}

Result<std::string> read_first_line(const std::string& path, std::size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno == ENOENT ? Errc::not_found : Errc::io_error, fmt::format("cannot open {}: {}", path, errno_text()));
  std::string line;
  char buffer[4096];
  off_t offset = 0;
  while (line.size() < limit) {
    ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view chunk(buffer, static_cast<std::size_t>(n));
    if (auto newline = chunk.find('\n'); newline != std::string_view::npos) {
      line.append(chunk.substr(0, newline));
      break;
    }
    line.append(chunk);
    offset += n;
  }
  ::close(fd);
  return line;
}

Status write_all(int fd, std::string_view data, long long offset, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::io_error, fmt::format("cannot write {}: {}", path, errno_text()));
    data.remove_prefix(static_cast<std::size_t>(n));
    offset += n;
  }
  return {};
}

Status sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(Errc::io_error, fmt::format("cannot open directory {}: {}", dir, errno_text()));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return fail(Errc::io_error, fmt::format("cannot sync directory {}: {}", dir, errno_text()));
  return {};
}

}  // namespace cairn
