#include "new_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "file_io.hpp"

namespace cairn {

Result<NewFile> NewFile::create(const std::string& dir, const std::string& name) {
  const std::string path = fmt::format("{}/{}", dir, name);
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) return NewFile(fd, dir, path, {});
  // EOPNOTSUPP: the file system has no unnamed files; EISDIR: the kernel
  // does not know O_TMPFILE. Anything else is a reason to say.
  if (errno != EOPNOTSUPP && errno != EISDIR) {
    return fail(Errc::io_error, fmt::format("cannot create {}: {}", path, errno_text()));
  }
  static std::atomic<unsigned> counter{0};
  const std::string hidden = fmt::format("{}/.{}.partial-{}-{}", dir, name, ::getpid(), counter++);
  const int named = ::open(hidden.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (named < 0) return fail(Errc::io_error, fmt::format("cannot create {}: {}", hidden, errno_text()));
  return NewFile(named, dir, path, hidden);
}

NewFile::NewFile(NewFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      dir_(std::move(other.dir_)),
      path_(std::move(other.path_)),
      hidden_path_(std::move(other.hidden_path_)),
      length_(other.length_),
      published_(std::exchange(other.published_, true)) {}

NewFile::~NewFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!published_ && !hidden_path_.empty()) ::unlink(hidden_path_.c_str());
}

Status NewFile::write(std::string_view data) {
  if (auto written = write_all(fd_, data, length_, path_); !written) return written;
  length_ += static_cast<long long>(data.size());
  return {};
}

Status NewFile::publish() {
  if (::fsync(fd_) != 0) return fail(Errc::io_error, fmt::format("cannot sync {}: {}", path_, errno_text()));
  // link, never rename: a name that exists is never replaced.
  int linked;
  if (hidden_path_.empty()) {
    const std::string self = fmt::format("/proc/self/fd/{}", fd_);
    linked = ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path_.c_str(), AT_SYMLINK_FOLLOW);
  } else {
    linked = ::link(hidden_path_.c_str(), path_.c_str());
  }
  if (linked != 0) {
    if (errno == EEXIST) return fail(Errc::already_exists, fmt::format("{} already exists", path_));
    return fail(Errc::io_error, fmt::format("cannot create {}: {}", path_, errno_text()));
  }
  published_ = true;
  if (!hidden_path_.empty()) ::unlink(hidden_path_.c_str());
  return sync_directory(dir_);
}

}  // namespace cairn
