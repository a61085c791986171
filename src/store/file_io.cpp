#include "file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace cairn {

std::string errno_text() { return std::strerror(errno); }

Result<std::string> read_file(const std::string& path, std::size_t padding) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno == ENOENT ? "not_found" : "io_error", fmt::format("cannot open {}: {}", path, errno_text()));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return fail("io_error", fmt::format("cannot stat {}: {}", path, errno_text()));
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
        status = fail("io_error", fmt::format("cannot read {}: {}", path, errno_text()));
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

Result<std::string> read_first_line(const std::string& path, std::size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno == ENOENT ? "not_found" : "io_error", fmt::format("cannot open {}: {}", path, errno_text()));
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
    if (n < 0) return fail("io_error", fmt::format("cannot write {}: {}", path, errno_text()));
    data.remove_prefix(static_cast<std::size_t>(n));
    offset += n;
  }
  return {};
}

Status sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail("io_error", fmt::format("cannot open directory {}: {}", dir, errno_text()));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return fail("io_error", fmt::format("cannot sync directory {}: {}", dir, errno_text()));
  return {};
}

}  // namespace cairn
