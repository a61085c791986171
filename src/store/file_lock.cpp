#include "file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "cairn/json.hpp"
#include "cairn/store/session.hpp"

namespace cairn {
namespace {

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
  return buffer;
}

std::optional<LockHolder> parse_holder(const std::string& text) {
  Json json = Json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  LockHolder holder;
  holder.pid = json.value("pid", std::int64_t{0});
  holder.host = json.value("host", std::string{});
  holder.generation = json.value("generation", std::int64_t{0});
  holder.since = json.value("since", std::string{});
  return holder;
}

std::string read_fd(int fd) {
  std::string text;
  char buffer[512];
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buffer, sizeof buffer, offset);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  return text;
}

}  // namespace

std::string describe(const LockHolder& holder) {
  return fmt::format("pid {} on {} since {} (generation {})", holder.pid, holder.host, holder.since, holder.generation);
}

std::optional<LockHolder> FileLock::read_holder(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text = read_fd(fd);
  ::close(fd);
  return parse_holder(text);
}

Result<FileLock> FileLock::acquire(const std::string& path, const std::string& what, std::chrono::milliseconds timeout,
                                   bool break_lock) {
  std::int64_t previous_generation = 0;
  if (break_lock) {
    // The old holder keeps its flock on the old inode; removing the file makes
    // a new inode that we lock, and the new generation makes the old one stale.
    if (auto holder = read_holder(path)) previous_generation = holder->generation;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return fail(Errc::io_error, fmt::format("cannot remove lock {}: {}", path, std::strerror(errno)));
    }
  }
  FileLock lock;
  lock.path_ = path;
  lock.what_ = what;
  lock.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0) return fail(Errc::io_error, fmt::format("cannot open lock {}: {}", path, std::strerror(errno)));

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return fail(Errc::io_error, fmt::format("cannot lock {}: {}", path, std::strerror(errno)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      auto holder = parse_holder(read_fd(lock.fd_));
      return fail(Errc::locked, fmt::format("{} is being written by another writer: {}{}", what,
                                        holder ? describe(*holder) : std::string("holder unknown"),
                                        timeout.count() > 0 ? fmt::format(" (waited {} ms)", timeout.count()) : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  if (auto holder = parse_holder(read_fd(lock.fd_))) previous_generation = std::max(previous_generation, holder->generation);
  lock.generation_ = previous_generation + 1;
  const std::string text = Json{{"pid", static_cast<std::int64_t>(::getpid())},
                                {"host", host_name()},
                                {"generation", lock.generation_},
                                {"since", now_iso8601()}}
                               .dump() +
                           "\n";
  if (::ftruncate(lock.fd_, 0) != 0 ||
      ::pwrite(lock.fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()) || ::fsync(lock.fd_) != 0) {
    return fail(Errc::io_error, fmt::format("cannot write lock {}: {}", path, std::strerror(errno)));
  }
  struct stat st{};
  ::fstat(lock.fd_, &st);
  lock.inode_ = st.st_ino;
  return lock;
}

FileLock::FileLock(FileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      what_(std::move(other.what_)),
      generation_(other.generation_),
      inode_(other.inode_) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    what_ = std::move(other.what_);
    generation_ = other.generation_;
    inode_ = other.inode_;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

Status FileLock::check_current() const {
  struct stat st{};
  if (::stat(path_.c_str(), &st) == 0 && st.st_ino == inode_) return {};
  auto holder = read_holder(path_);
  return fail(Errc::stale_writer, fmt::format("{}: this writer's generation {} is stale; the session is now held by {}",
                                          what_, generation_, holder ? describe(*holder) : std::string("nobody")));
}

}  // namespace cairn
