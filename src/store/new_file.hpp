// A file that appears whole or not at all, under a name it never replaces.
//
//   auto file = NewFile::create(dir, "s1.jsonl");
//   file->write(...); ...
//   file->publish();   // already_exists when dir/s1.jsonl is taken
//
// The bytes go to an unnamed file in `dir` (O_TMPFILE), which publish()
// syncs and then links under its name, and syncs the directory. A process
// killed at any instant leaves the name absent or naming every byte, and
// nothing else: the unnamed file dies with its descriptor. Where the file
// system has no unnamed files, a hidden name stands in (".NAME.partial-PID-N",
// a name no store lists), removed unless the process dies first.
#pragma once

#include <string>
#include <string_view>

#include "cairn/error.hpp"

namespace cairn {

class NewFile {
 public:
  static Result<NewFile> create(const std::string& dir, const std::string& name);
  NewFile(NewFile&& other) noexcept;
  NewFile& operator=(NewFile&&) = delete;
  NewFile(const NewFile&) = delete;
  NewFile& operator=(const NewFile&) = delete;
  ~NewFile();

  // Appends `data`.
  [[nodiscard]] Status write(std::string_view data);
  // Makes the file durable under its name; already_exists (and nothing
  // published) when the name is taken.
  [[nodiscard]] Status publish();

  const std::string& path() const { return path_; }

 private:
  NewFile(int fd, std::string dir, std::string path, std::string hidden_path)
      : fd_(fd), dir_(std::move(dir)), path_(std::move(path)), hidden_path_(std::move(hidden_path)) {}

  int fd_ = -1;
  std::string dir_;
  std::string path_;
  std::string hidden_path_;  // empty: the file is unnamed (O_TMPFILE)
  long long length_ = 0;
  bool published_ = false;
};

}  // namespace cairn
