// The server's token file: made with one random token when it is missing,
// refused when others may read it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "cairn/serve/server.hpp"

namespace cairn::serve {

Result<std::vector<std::string>> load_tokens(const std::filesystem::path& file, bool& created) {
  created = false;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno != ENOENT) return fail(Errc::io_error, fmt::format("token file {}: {}", file.string(), std::strerror(errno)));
    std::error_code ec;
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
    std::random_device random;
    std::string token;
    for (int i = 0; i < 8; ++i) token += fmt::format("{:08x}", random());
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return fail(Errc::io_error, fmt::format("cannot create token file {}: {}", file.string(), std::strerror(errno)));
    const std::string line = token + "\n";
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!written) return fail(Errc::io_error, fmt::format("cannot write token file {}", file.string()));
    created = true;
    return std::vector<std::string>{token};
  }
  if ((st.st_mode & 077) != 0) {
    return fail(Errc::invalid_argument,
                fmt::format("token file {} may be read by others (mode {:o}); chmod 600 it", file.string(), st.st_mode & 0777));
  }
  std::ifstream in(file);
  if (!in) return fail(Errc::io_error, fmt::format("cannot read token file {}", file.string()));
  std::vector<std::string> tokens;
  for (std::string line; std::getline(in, line);) {
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line.front() == '#') continue;
    if (line.size() < 16) return fail(Errc::invalid_argument, fmt::format("token file {}: a token is shorter than 16 characters", file.string()));
    tokens.push_back(line);
  }
  if (tokens.empty()) return fail(Errc::invalid_argument, fmt::format("token file {} holds no token", file.string()));
  return tokens;
}

}  // namespace cairn::serve
