// read: a text file as numbered lines, or an image as an image block. Replay
// safe. The output stops at kMaxLines lines or kMaxBytes bytes, whichever
// comes first, with a note giving the offset to continue from.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

namespace {

// The image formats the providers take, by their magic bytes.
std::optional<std::string> image_mime_type(std::string_view head) {
  if (head.starts_with("\x89PNG\r\n\x1a\n")) return "image/png";
  if (head.starts_with("\xFF\xD8\xFF")) return "image/jpeg";
  if (head.starts_with("GIF87a") || head.starts_with("GIF89a")) return "image/gif";
  if (head.size() >= 12 && head.starts_with("RIFF") && head.substr(8, 4) == "WEBP") return "image/webp";
  return std::nullopt;
}

// Providers refuse larger images (Anthropic: 5 MB), and cairn does not resize.
constexpr std::uintmax_t kMaxImageBytes = 5 * 1024 * 1024;

ToolResult read_image(const fs::path& path, const std::string& shown, const std::string& mime, std::uintmax_t size) {
  if (size > kMaxImageBytes) {
    return error_result(fmt::format("Cannot read image {}: it is {}, over the {} the model providers accept; make a "
                                    "smaller copy first (e.g. with ImageMagick's convert -resize)",
                                    shown, format_size(size), format_size(kMaxImageBytes)));
  }
  auto bytes = read_file(path);
  if (!bytes) return error_result(fmt::format("Cannot read {}: {}", shown, bytes.error().message));
  ToolResult result;
  result.content.push_back(TextContent{.text = fmt::format("Read image file {} [{}, {}]", shown, mime, format_size(size))});
  result.content.push_back(ImageContent{.data = base64_encode(*bytes), .mime_type = mime});
  result.details = Json{{"path", path.string()}, {"mimeType", mime}, {"bytes", size}};
  return result;
}

}  // namespace

Tool make_read_tool(const CodingToolsOptions& options) {
  Tool tool = file_tool(
      "read",
      fmt::format("Read the contents of a file. Text files come back as numbered lines (line number, tab, text); images "
                  "(png, jpeg, gif, webp) are attached as images. Text output is cut at {} lines or {} (whichever "
                  "comes first) and lines longer than {} characters are cut; a note then gives the offset to continue "
                  "from. Use offset/limit to read a large file in parts.",
                  kMaxLines, format_size(kMaxBytes), kMaxLineChars),
      "read",
      {{"offset", parameter("number", "Line number to start reading from (1-indexed)")},
       {"limit", parameter("number", "Maximum number of lines to read")}});
  tool.replay = Replay::safe;
  tool.execute = [cwd = options.cwd](const Json& args, const ToolContext&) -> ToolResult {
    const auto path_arg = path_argument(args, "read");
    if (!path_arg) return path_arg.error();
    const std::string& shown = *path_arg;
    const fs::path path = resolve_path(cwd, shown);
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (!fs::exists(status)) return error_result(fmt::format("File not found: {}", shown));
    if (fs::is_directory(status)) return error_result(fmt::format("Cannot read {}: it is a directory (use ls to list it)", shown));
    const std::uintmax_t size = fs::file_size(path, ec);

    std::ifstream in(path, std::ios::binary);
    if (!in) return error_result(fmt::format("Cannot read {}: {}", shown, std::strerror(errno)));
    std::string head(8192, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (auto mime = image_mime_type(head)) return read_image(path, shown, *mime, size);
    if (head.find('\0') != std::string::npos) {
      return error_result(fmt::format("Cannot read {}: it is a binary file ({}); read shows text files and png, jpeg, "
                                      "gif and webp images",
                                      shown, format_size(size)));
    }
    in.clear();
    in.seekg(0);

    const std::int64_t offset = std::max<std::int64_t>(1, integer_arg(args, "offset").value_or(1));
    const auto limit = integer_arg(args, "limit");
    if (limit && *limit < 1) return error_result(fmt::format("read {}: limit must be at least 1", shown));
    // The line cap: the caller's limit, within the tool's own.
    const std::size_t max_lines = limit ? std::min<std::size_t>(static_cast<std::size_t>(*limit), kMaxLines) : kMaxLines;
    const auto start = static_cast<std::size_t>(offset);

    std::string out;
    std::size_t total = 0, first_shown = 0, last_shown = 0;
    bool cut_by_bytes = false, lines_cut = false;
    std::string line;
    while (std::getline(in, line)) {
      ++total;
      if (total < start || (first_shown > 0 && (last_shown - first_shown + 1 >= max_lines || cut_by_bytes))) continue;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      std::string text = to_valid_utf8(line);
      if (const std::size_t chars = utf8_length(text); chars > kMaxLineChars) {
        text = fmt::format("{}… [line cut at {} of {} characters]", utf8_prefix(text, kMaxLineChars), kMaxLineChars, chars);
        lines_cut = true;
      }
      std::string numbered = fmt::format("{:>6}\t{}\n", total, text);
      if (first_shown > 0 && out.size() + numbered.size() > kMaxBytes) {
        cut_by_bytes = true;
        continue;
      }
      out += numbered;
      if (first_shown == 0) first_shown = total;
      last_shown = total;
    }
    if (in.bad()) return error_result(fmt::format("Cannot read {}: read error", shown));

    Json details = {{"path", path.string()}, {"totalLines", total}};
    if (total == 0) {
      ToolResult result = ToolResult::text(fmt::format("{} is empty", shown));
      result.details = std::move(details);
      return result;
    }
    if (first_shown == 0) {
      return error_result(fmt::format("read {}: offset {} is beyond the end of the file ({} lines)", shown, offset, total));
    }
    details["startLine"] = first_shown;
    details["endLine"] = last_shown;
    if (last_shown < total) {
      const std::size_t next = last_shown + 1;
      if (cut_by_bytes) {
        out += fmt::format("\n[Showing lines {}-{} of {} ({} limit). Use offset={} to continue.]", first_shown, last_shown,
                           total, format_size(kMaxBytes), next);
        details["truncatedBy"] = "bytes";
      } else if (limit && static_cast<std::size_t>(*limit) <= kMaxLines) {
        out += fmt::format("\n[{} more lines in file. Use offset={} to continue.]", total - last_shown, next);
      } else {
        out += fmt::format("\n[Showing lines {}-{} of {}. Use offset={} to continue.]", first_shown, last_shown, total, next);
        details["truncatedBy"] = "lines";
      }
    }
    if (lines_cut) {
      out += fmt::format("\n[Some lines were longer than {} characters and are cut; use bash (e.g. sed -n 'Np' {} | cut -c 2001-) for the rest.]",
                         kMaxLineChars, shown);
    }
    ToolResult result = ToolResult::text(std::move(out));
    result.details = std::move(details);
    return result;
  };
  return tool;
}

}  // namespace cairn::tools
