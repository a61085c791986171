// The JSONL store: DIR/<id>.jsonl holds one session, a header line and then
// one record per line; DIR/<id>.lock is its writer lock.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "file_io.hpp"
#include "file_lock.hpp"
#include "jsonl_reader.hpp"
#include "new_file.hpp"
#include "session_ids.hpp"
#include "store/log_medium.hpp"

namespace cairn {
namespace {

// Appends records to the end of one session file. Each group is one pwrite
// and, under sync `full`, one fdatasync. A failed write or sync truncates the
// file back to where the group began, so a later open sees no partial group.
// The file's contents lock is held meanwhile, so no reader maps a group that
// may yet be cut (see MappedFile).
class JsonlMedium final : public LogMedium {
 public:
  JsonlMedium(std::string path, int fd, long long length, SyncPolicy sync, FileLock lock)
      : path_(std::move(path)), fd_(fd), length_(length), sync_(sync), lock_(std::move(lock)) {}
  ~JsonlMedium() override { ::close(fd_); }

  Status append(const std::vector<PreparedRecord>& records) override {
    if (auto current = lock_.check_current(); !current) return current;
    buffer_.clear();
    for (const PreparedRecord& record : records) {
      buffer_.append(record.line);
      buffer_.push_back('\n');
    }
    if (auto locked = lock_contents(fd_, /*exclusive=*/true, path_); !locked) return locked;
    Status status = write_all(fd_, buffer_, length_, path_);
    if (status && sync_ == SyncPolicy::full && ::fdatasync(fd_) != 0) {
      status = fail(Errc::io_error, fmt::format("cannot sync {}: {}", path_, errno_text()));
    }
    if (!status) {
      // Best effort: the session faults either way, and the next open cuts
      // anything left past the last complete line.
      if (::ftruncate(fd_, static_cast<off_t>(length_)) == 0 && sync_ == SyncPolicy::full) ::fdatasync(fd_);
      unlock_contents(fd_);
      return status;
    }
    unlock_contents(fd_);
    length_ += static_cast<long long>(buffer_.size());
    return {};
  }

  std::string describe() const override { return fmt::format("jsonl file {}", path_); }

 private:
  std::string path_;
  int fd_;
  long long length_;
  SyncPolicy sync_;
  FileLock lock_;
  std::string buffer_;
};


// A session file's first line.
std::string header_line(const SessionHeader& header) { return encode(header).dump() + "\n"; }

class JsonlStore final : public Store {
 public:
  JsonlStore(std::string dir, StoreOptions options) : dir_(std::move(dir)), options_(options) {}

  std::string uri() const override { return "jsonl:" + dir_; }
  SyncPolicy sync_policy() const override { return options_.sync; }

  Result<std::vector<SessionHeader>> list() override {
    std::vector<SessionHeader> headers;
    DIR* dir = ::opendir(dir_.c_str());
    if (!dir) return fail(Errc::io_error, fmt::format("cannot list {}: {}", dir_, errno_text()));
    std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, ::closedir);
    while (dirent* entry = ::readdir(dir)) {
      std::string_view name = entry->d_name;
      if (!name.ends_with(".jsonl")) continue;
      auto line = read_first_line(dir_ + "/" + std::string(name));
      if (!line) continue;
      Json json = Json::parse(*line, nullptr, false);
      if (json.is_discarded()) continue;
      if (auto header = decode_header(json)) headers.push_back(std::move(*header));
    }
    std::sort(headers.begin(), headers.end(), [](const SessionHeader& a, const SessionHeader& b) {
      return a.timestamp != b.timestamp ? a.timestamp > b.timestamp : a.id > b.id;
    });
    return headers;
  }

  Result<std::shared_ptr<Session>> create(const CreateOptions& options) override {
    auto made = new_session_header(options, "jsonl");
    if (!made) return std::unexpected(made.error());
    SessionHeader& header = *made;

    const std::string path = file_of(header.id);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) return fail(Errc::already_exists, fmt::format("session {} already exists in {}", header.id, dir_));
      return fail(Errc::io_error, fmt::format("cannot create {}: {}", path, errno_text()));
    }
    const std::string line = header_line(header);
    Status status = write_all(fd, line, 0, path);
    if (status && ::fsync(fd) != 0) status = fail(Errc::io_error, fmt::format("cannot sync {}: {}", path, errno_text()));
    ::close(fd);
    if (status) status = sync_directory(dir_);
    if (!status) {
      ::unlink(path.c_str());
      return std::unexpected(status.error());
    }
    return open(header.id, OpenOptions{});
  }

  Result<std::shared_ptr<Session>> create_with_log(const SessionHeader& header, const std::vector<LogLine>& log) override {
    if (!valid_session_id(header.id)) return fail(Errc::invalid_argument, fmt::format("jsonl: {}", invalid_session_id(header.id)));
    auto file = NewFile::create(dir_, header.id + ".jsonl");
    if (!file) return std::unexpected(file.error());
    // Written a megabyte at a time: a long log is not copied whole once more.
    constexpr std::size_t kChunk = 1 << 20;
    std::string buffer = header_line(header);
    for (const LogLine& line : log) {
      buffer.append(line.json);
      buffer.push_back('\n');
      if (buffer.size() < kChunk) continue;
      if (auto written = file->write(buffer); !written) return std::unexpected(written.error());
      buffer.clear();
    }
    if (auto written = file->write(buffer); !written) return std::unexpected(written.error());
    if (auto published = file->publish(); !published) {
      if (published.error().is(Errc::already_exists)) {
        return fail(Errc::already_exists, fmt::format("session {} already exists in {}", header.id, dir_));
      }
      return std::unexpected(published.error());
    }
    return open(header.id, OpenOptions{});
  }

  Result<std::shared_ptr<Session>> open(std::string_view id, const OpenOptions& options) override {
    if (!valid_session_id(id)) return fail(Errc::not_found, fmt::format("no session {} in {}", id, dir_));
    const std::string path = file_of(id);
    if (::access(path.c_str(), F_OK) != 0) return fail(Errc::not_found, fmt::format("no session {} in {}", id, dir_));

    std::optional<FileLock> lock;
    if (!options.read_only) {
      auto acquired = FileLock::acquire(lock_of(id), fmt::format("session {} in {}", id, dir_), options.lock_timeout,
                                        options.break_lock);
      if (!acquired) return std::unexpected(acquired.error());
      lock.emplace(std::move(*acquired));
    }

    auto contents = read_jsonl_session(path);
    if (!contents) return std::unexpected(contents.error());
    if (options.read_only) {
      return std::make_shared<Session>(std::move(contents->header), std::move(contents->index), nullptr,
                                       std::move(contents->report));
    }

    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return fail(Errc::io_error, fmt::format("cannot open {} for writing: {}", path, errno_text()));
    if (contents->report.tail_cut) {
      // The torn tail was never acknowledged; cut it so appends follow the
      // last complete record.
      if (auto locked = lock_contents(fd, /*exclusive=*/true, path); !locked) {
        ::close(fd);
        return std::unexpected(locked.error());
      }
      const bool cut = ::ftruncate(fd, static_cast<off_t>(contents->good_length)) == 0 && ::fdatasync(fd) == 0;
      const std::string reason = errno_text();
      unlock_contents(fd);
      if (!cut) {
        ::close(fd);
        return fail(Errc::io_error, fmt::format("cannot cut the torn tail of {}: {}", path, reason));
      }
    }
    auto medium = std::make_unique<JsonlMedium>(path, fd, contents->good_length, options_.sync, std::move(*lock));
    return std::make_shared<Session>(std::move(contents->header), std::move(contents->index), std::move(medium),
                                     std::move(contents->report));
  }

  Result<std::string> log_stamp(std::string_view id) override {
    if (!valid_session_id(id)) return fail(Errc::not_found, fmt::format("no session {} in {}", id, dir_));
    const std::string path = file_of(id);
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return fail(Errc::not_found, fmt::format("no session {} in {}", id, dir_));
      return fail(Errc::io_error, fmt::format("cannot stat {}: {}", path, errno_text()));
    }
    // A repair rewrites the file (another inode); appends grow it.
    return fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }

  Status remove(std::string_view id) override {
    if (!valid_session_id(id)) return fail(Errc::not_found, fmt::format("no session {} in {}", id, dir_));
    auto lock = FileLock::acquire(lock_of(id), fmt::format("session {} in {}", id, dir_), std::chrono::milliseconds(0), false);
    if (!lock) return std::unexpected(lock.error());
    const std::string path = file_of(id);
    if (::unlink(path.c_str()) != 0) {
      return fail(errno == ENOENT ? Errc::not_found : Errc::io_error, fmt::format("cannot remove {}: {}", path, errno_text()));
    }
    ::unlink(lock_of(id).c_str());
    return sync_directory(dir_);
  }

  Result<RepairReport> repair(std::string_view id) override {
    if (!valid_session_id(id)) return fail(Errc::not_found, fmt::format("no session {} in {}", id, dir_));
    const std::string path = file_of(id);
    if (::access(path.c_str(), F_OK) != 0) return fail(Errc::not_found, fmt::format("no session {} in {}", id, dir_));
    auto lock = FileLock::acquire(lock_of(id), fmt::format("session {} in {}", id, dir_), std::chrono::milliseconds(0), false);
    if (!lock) return std::unexpected(lock.error());
    return repair_jsonl_session(path, id);
  }

 private:
  std::string file_of(std::string_view id) const { return fmt::format("{}/{}.jsonl", dir_, id); }
  std::string lock_of(std::string_view id) const { return fmt::format("{}/{}.lock", dir_, id); }

  std::string dir_;
  StoreOptions options_;
};

}  // namespace

Result<std::unique_ptr<Store>> make_jsonl_store(const std::string& dir, const StoreOptions& options) {
  if (dir.empty()) return fail(Errc::invalid_argument, "jsonl: needs a directory, e.g. jsonl:/var/lib/cairn");
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir, error)) {
    return fail(Errc::io_error, fmt::format("jsonl store directory {} cannot be created: {}", dir, error.message()));
  }
  return std::make_unique<JsonlStore>(dir, options);
}

}  // namespace cairn
