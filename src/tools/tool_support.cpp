#include "tool_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "cairn/utf8.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

fs::path resolve_path(const fs::path& cwd, const std::string& path) {
  if (path == "~" || path.starts_with("~/")) {
    const char* home = std::getenv("HOME");
    if (home != nullptr && *home != '\0') {
      return path == "~" ? fs::path(home) : fs::path(home) / path.substr(2);
    }
  }
  fs::path p(path);
  if (p.is_absolute()) return p.lexically_normal();
  return (cwd / p).lexically_normal();
}

std::string format_size(std::uintmax_t bytes) {
  if (bytes < 1024) return fmt::format("{}B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f}KB", static_cast<double>(bytes) / 1024.0);
  return fmt::format("{:.1f}MB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

std::size_t utf8_length(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    i += n == 0 ? 1 : n;
    ++count;
  }
  return count;
}

std::string_view utf8_prefix(std::string_view text, std::size_t chars) {
  std::size_t i = 0;
  for (std::size_t count = 0; i < text.size() && count < chars; ++count) {
    const std::size_t n = utf8_sequence_length(text, i);
    i += n == 0 ? 1 : n;
  }
  return text.substr(0, i);
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (static_cast<unsigned char>(bytes[i]) << 16) |
                            (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Errc::io_error, fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return fail(Errc::io_error, fmt::format("cannot read {}", path.string()));
  return content;
}

namespace {

// Closes a descriptor and removes a temporary file unless released.
struct TempFile {
  int fd = -1;
  std::string path;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

}  // namespace

Status write_file_atomically(const fs::path& requested, std::string_view content) {
  std::error_code ec;
  fs::path path = requested;
  // Writing through a symlink replaces its target, not the link.
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    fs::path target = fs::canonical(path, ec);
    if (!ec) path = target;
  }
  std::optional<mode_t> keep_mode;
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0) {
    if (S_ISDIR(existing.st_mode)) return fail(Errc::io_error, fmt::format("{} is a directory", requested.string()));
    keep_mode = existing.st_mode & 07777;
  }
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  // Created with 0666 so that a new file gets the process's umask, as any
  // editor's would; a replaced file keeps its own mode below.
  TempFile temp;
  std::random_device random;
  for (int attempt = 0; temp.fd < 0; ++attempt) {
    const std::string name = fmt::format(".{}.cairn-{:08x}", path.filename().string(), random());
    temp.fd = ::open((dir / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (temp.fd >= 0) {
      temp.path = (dir / name).string();
    } else if (errno != EEXIST || attempt > 16) {
      return fail(Errc::io_error, fmt::format("cannot create a file in {}: {}", dir.string(), std::strerror(errno)));
    }
  }
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(temp.fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Errc::io_error, fmt::format("cannot write {}: {}", requested.string(), std::strerror(errno)));
    }
    written += static_cast<std::size_t>(n);
  }
  if ((keep_mode && ::fchmod(temp.fd, *keep_mode) != 0) || ::fsync(temp.fd) != 0) {
    return fail(Errc::io_error, fmt::format("cannot write {}: {}", requested.string(), std::strerror(errno)));
  }
  ::close(temp.fd);
  temp.fd = -1;
  if (::rename(temp.path.c_str(), path.c_str()) != 0) {
    return fail(Errc::io_error, fmt::format("cannot replace {}: {}", requested.string(), std::strerror(errno)));
  }
  temp.path.clear();
  return {};
}

std::optional<ToolResult> not_a_directory(const fs::path& dir, std::string_view shown) {
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (!fs::exists(status)) return error_result(fmt::format("Path not found: {}", shown));
  if (!fs::is_directory(status)) return error_result(fmt::format("Not a directory: {}", shown));
  return std::nullopt;
}

Json object_schema(Json properties, std::vector<std::string> required) {
  return Json{{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

Json parameter(std::string_view type, std::string_view description) {
  return Json{{"type", type}, {"description", description}};
}

ToolResult error_result(std::string message) { return ToolResult::text(std::move(message), true); }

std::optional<std::string> string_arg(const Json& args, const char* key) {
  if (!args.is_object()) return std::nullopt;
  const auto it = args.find(key);
  if (it == args.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::int64_t> integer_arg(const Json& args, const char* key) {
  if (!args.is_object()) return std::nullopt;
  const auto it = args.find(key);
  if (it == args.end() || !it->is_number()) return std::nullopt;
  const double value = it->get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  if (value > 1e15) return static_cast<std::int64_t>(1e15);
  if (value < -1e15) return static_cast<std::int64_t>(-1e15);
  return static_cast<std::int64_t>(std::floor(value));
}

std::optional<bool> bool_arg(const Json& args, const char* key) {
  if (!args.is_object()) return std::nullopt;
  const auto it = args.find(key);
  if (it == args.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

}  // namespace cairn::tools

namespace cairn::tools {

Truncation truncate_tail(std::string_view text, std::size_t max_lines, std::size_t max_bytes) {
  Truncation result;
  std::string_view body = text;
  if (!body.empty() && body.back() == '\n') body.remove_suffix(1);
  if (text.empty()) return result;
  result.total_lines = static_cast<std::size_t>(std::count(body.begin(), body.end(), '\n')) + 1;
  // Walk back line by line while both limits hold; the kept text is
  // body[begin, end), and the line before it ends at begin - 1.
  std::size_t begin = body.size() + 1;
  std::size_t lines = 0;
  while (lines < max_lines && begin > 0) {
    const std::size_t line_end = begin - 1;
    const std::size_t nl = line_end == 0 ? std::string_view::npos : body.rfind('\n', line_end - 1);
    const std::size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
    if (body.size() - line_start > max_bytes) {
      result.by_bytes = true;
      break;
    }
    begin = line_start;
    ++lines;
  }
  if (lines == 0) {
    // The last line alone is over the byte limit: its end is shown.
    std::size_t cut = body.size() - max_bytes;
    while (cut < body.size() && (static_cast<unsigned char>(body[cut]) & 0xC0) == 0x80) ++cut;
    result.text = std::string(body.substr(cut));
    if (body.size() < text.size()) result.text += '\n';
    result.truncated = true;
    result.by_bytes = true;
    result.partial_line = true;
    result.shown_lines = 1;
    return result;
  }
  result.text = std::string(body.substr(begin));
  if (body.size() < text.size()) result.text += '\n';  // the final newline is kept
  result.shown_lines = lines;
  result.truncated = lines < result.total_lines;
  if (!result.truncated) result.by_bytes = false;
  return result;
}

std::string clean_output(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == 0x1B) {
      if (i + 1 < bytes.size() && bytes[i + 1] == '[') {
        // CSI: parameters and intermediates, then one final byte 0x40-0x7E.
        std::size_t k = i + 2;
        while (k < bytes.size() && (static_cast<unsigned char>(bytes[k]) < 0x40 || static_cast<unsigned char>(bytes[k]) > 0x7E)) ++k;
        i = k;
      } else if (i + 1 < bytes.size() && bytes[i + 1] == ']') {
        // OSC: up to BEL or ESC backslash.
        std::size_t k = i + 2;
        while (k < bytes.size() && bytes[k] != '\a' && !(bytes[k] == 0x1B && k + 1 < bytes.size() && bytes[k + 1] == '\\')) ++k;
        i = (k < bytes.size() && bytes[k] == 0x1B) ? k + 1 : k;
      } else {
        ++i;  // a two-byte escape
      }
      continue;
    }
    if (c < 0x20 && c != '\n' && c != '\t') continue;
    if (c == 0x7F) continue;
    out += static_cast<char>(c);
  }
  return to_valid_utf8(out);
}

}  // namespace cairn::tools

namespace cairn::tools {

Tool coding_tool(std::string name, std::string description, Json parameters, std::string approval_subject) {
  Tool tool{.name = std::move(name), .description = std::move(description), .parameters = std::move(parameters)};
  tool.approval_subject = std::move(approval_subject);
  return tool;
}

Tool file_tool(std::string name, std::string description, std::string_view verb, Json parameters,
               std::vector<std::string> required) {
  Json properties = {{"path", parameter("string", fmt::format("Path to the file to {} (relative or absolute)", verb))}};
  for (auto& [key, schema] : parameters.items()) properties[key] = std::move(schema);
  required.insert(required.begin(), "path");
  return coding_tool(std::move(name), std::move(description), object_schema(std::move(properties), std::move(required)),
                     "path");
}

std::expected<std::string, ToolResult> path_argument(const Json& args, std::string_view tool) {
  auto path = string_arg(args, "path");
  if (!path || path->empty()) return std::unexpected(error_result(fmt::format("{}: the path argument is required", tool)));
  return std::move(*path);
}

std::expected<SearchArguments, ToolResult> search_arguments(const Json& args, std::string_view tool,
                                                           const std::filesystem::path& cwd, std::int64_t default_limit) {
  SearchArguments out;
  const auto pattern = string_arg(args, "pattern");
  if (!pattern || pattern->empty()) return std::unexpected(error_result(fmt::format("{}: the pattern argument is required", tool)));
  out.pattern = *pattern;
  out.shown = string_arg(args, "path").value_or(".");
  out.limit = integer_arg(args, "limit").value_or(default_limit);
  if (out.limit < 1) return std::unexpected(error_result(fmt::format("{}: limit must be at least 1", tool)));
  out.target = resolve_path(cwd, out.shown.empty() ? "." : out.shown);
  return out;
}

}  // namespace cairn::tools
