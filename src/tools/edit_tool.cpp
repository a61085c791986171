// edit: exact text replacements in one file. Every oldText must occur exactly
// once in the original file and no two edits may overlap; then all are
// applied at once, or — on any failure — none. Replay never: a replayed
// edit could find its oldText gone (or, worse, present again).
#include <algorithm>
#include <cmath>
#include <system_error>

#include <fmt/format.h>

#include "tool_support.hpp"
#include "tools.hpp"

namespace cairn::tools {

namespace fs = std::filesystem;

namespace {

struct Edit {
  std::string label;  // "edits[2]", or "oldText" for the single-edit form
  std::string old_text;
  std::string new_text;
  std::size_t pos = 0;  // where old_text is in the (LF-normalised) original
};

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = text.find(from, pos)) != std::string::npos) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
  return text;
}

std::vector<std::string_view> split_edit_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (true) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(start));
      return lines;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
}

std::string_view trim_edit_line(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string without_whitespace(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

// Character bigrams, sorted, for the Dice coefficient.
std::vector<std::uint16_t> bigrams(std::string_view line) {
  line = trim_edit_line(line);
  std::vector<std::uint16_t> out;
  for (std::size_t i = 0; i + 1 < line.size(); ++i) {
    out.push_back(static_cast<std::uint16_t>((static_cast<unsigned char>(line[i]) << 8) | static_cast<unsigned char>(line[i + 1])));
  }
  std::sort(out.begin(), out.end());
  return out;
}

double dice(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b, std::string_view la, std::string_view lb) {
  if (a.empty() || b.empty()) return trim_edit_line(la) == trim_edit_line(lb) ? 1.0 : 0.0;
  std::size_t common = 0, i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      ++common, ++i, ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return 2.0 * static_cast<double>(common) / static_cast<double>(a.size() + b.size());
}

std::size_t line_of(std::string_view text, std::size_t pos) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

std::string numbered(const std::vector<std::string_view>& lines, std::size_t first, std::size_t count) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(count, 10);
  for (std::size_t k = 0; k < shown && first + k < lines.size(); ++k) {
    out += fmt::format("{:>6}\t{}\n", first + k + 1, to_valid_utf8(utf8_prefix(lines[first + k], 300)));
  }
  if (count > shown) out += fmt::format("       … ({} more lines)\n", count - shown);
  return out;
}

// The region of `content` most like `old_text`, line by line, for a
// not-found error: the model usually misremembered whitespace or a line.
std::string closest_match(std::string_view content, std::string_view old_text) {
  std::string_view old_body = old_text;
  if (old_body.size() > 1 && old_body.back() == '\n') old_body.remove_suffix(1);
  const auto file_lines = split_edit_lines(content);
  const auto old_lines = split_edit_lines(old_body);
  const std::size_t k = old_lines.size();
  // Bound the work on huge files: score fewer lines of the oldText.
  const std::size_t scored = std::clamp<std::size_t>(2'000'000 / std::max<std::size_t>(file_lines.size(), 1), 1, std::min<std::size_t>(k, 30));
  std::vector<std::vector<std::uint16_t>> file_grams, old_grams;
  for (auto line : file_lines) file_grams.push_back(bigrams(line));
  for (std::size_t j = 0; j < scored; ++j) old_grams.push_back(bigrams(old_lines[j]));

  double best = -1;
  std::size_t best_start = 0;
  const std::size_t last_start = file_lines.size() > k ? file_lines.size() - k : 0;
  for (std::size_t i = 0; i <= last_start; ++i) {
    double sum = 0;
    std::size_t n = 0;
    for (std::size_t j = 0; j < scored && i + j < file_lines.size(); ++j, ++n) {
      sum += dice(old_grams[j], file_grams[i + j], old_lines[j], file_lines[i + j]);
    }
    const double score = n == 0 ? 0 : sum / static_cast<double>(scored);
    if (score > best) {
      best = score;
      best_start = i;
    }
  }
  if (best < 0.4) return "No similar text was found; read the file to see its current content.";
  const std::size_t count = std::min(k, file_lines.size() - best_start);
  std::string window;
  for (std::size_t j = 0; j < count; ++j) {
    window += file_lines[best_start + j];
    window += '\n';
  }
  std::string out = fmt::format("Closest match (line{} {}, {}% similar):\n", count > 1 ? "s" : "",
                                count > 1 ? fmt::format("{}-{}", best_start + 1, best_start + count) : fmt::format("{}", best_start + 1),
                                static_cast<int>(std::lround(best * 100)));
  out += numbered(file_lines, best_start, count);
  if (without_whitespace(window) == without_whitespace(old_body)) {
    out += "It differs from oldText only in whitespace (indentation, spaces or line breaks).\n";
  }
  out += "oldText must match the file exactly, including whitespace and indentation.";
  return out;
}

// A unified-style diff of the applied edits, with up to 2 lines of context.
struct DiffResult {
  std::string diff;
  Json changes = Json::array();
  std::size_t first_changed_line = 0;
};

DiffResult make_diff(std::string_view original, const std::vector<Edit>& sorted_edits) {
  DiffResult result;
  const auto old_lines = split_edit_lines(original);
  std::ptrdiff_t shift = 0;  // new line number minus old line number, after the edits so far
  for (const Edit& edit : sorted_edits) {
    // The whole lines the replaced text touches.
    const std::size_t first = line_of(original, edit.pos);
    const std::size_t end_pos = edit.old_text.empty() ? edit.pos : edit.pos + edit.old_text.size() - 1;
    const std::size_t last = line_of(original, end_pos);
    std::size_t region_begin = 0;
    if (edit.pos > 0) {
      const std::size_t nl = original.rfind('\n', edit.pos - 1);
      region_begin = nl == std::string_view::npos ? 0 : nl + 1;
    }
    // Past the newline that ends line `last` (or the end of the file).
    std::size_t region_end = original.find('\n', end_pos);
    region_end = region_end == std::string_view::npos ? original.size() : region_end + 1;
    const std::size_t old_end = edit.pos + edit.old_text.size();
    std::string new_region = std::string(original.substr(region_begin, edit.pos - region_begin)) + edit.new_text +
                             std::string(original.substr(old_end, region_end - old_end));
    if (!new_region.empty() && new_region.back() == '\n') new_region.pop_back();
    auto new_lines = new_region.empty() && region_end > region_begin && original[region_end - 1] == '\n'
                         ? std::vector<std::string_view>{}
                         : split_edit_lines(new_region);
    const std::size_t old_count = last - first + 1;
    const std::size_t new_start = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(first) + shift);
    const std::size_t before = std::min<std::size_t>(2, first - 1);
    const std::size_t after = std::min<std::size_t>(2, old_lines.size() - last);
    result.diff += fmt::format("@@ -{},{} +{},{} @@\n", first - before, old_count + before + after, new_start - before,
                               new_lines.size() + before + after);
    for (std::size_t l = first - before; l < first; ++l) result.diff += fmt::format(" {}\n", old_lines[l - 1]);
    for (std::size_t l = first; l <= last; ++l) result.diff += fmt::format("-{}\n", old_lines[l - 1]);
    for (auto line : new_lines) result.diff += fmt::format("+{}\n", line);
    for (std::size_t l = last + 1; l <= last + after; ++l) result.diff += fmt::format(" {}\n", old_lines[l - 1]);
    result.changes.push_back({{"edit", edit.label},
                              {"oldStart", first},
                              {"oldLines", old_count},
                              {"newStart", new_start},
                              {"newLines", new_lines.size()}});
    if (result.first_changed_line == 0) result.first_changed_line = new_start;
    shift += static_cast<std::ptrdiff_t>(new_lines.size()) - static_cast<std::ptrdiff_t>(old_count);
  }
  if (result.diff.size() > kMaxBytes) {
    result.diff.resize(utf8_floor(result.diff, kMaxBytes));
    result.diff += "\n[diff cut]\n";
  }
  result.diff = to_valid_utf8(result.diff);
  return result;
}

}  // namespace

Tool make_edit_tool(const CodingToolsOptions& options) {
  std::string description =
      "Edit a file by exact text replacement. Each edit's oldText must match exactly one place in the current file, "
      "including whitespace and indentation (do not include the line numbers read shows); include enough surrounding "
      "lines to make it unique. Several edits of one file go in one call: they are matched against the original file, "
      "must not overlap, and are applied all together or not at all. The file's line endings (LF or CRLF) are kept.";
  const Json edit_schema =
      object_schema({{"oldText", parameter("string", "Exact text to replace; must occur exactly once in the file")},
                     {"newText", parameter("string", "Text to put in its place")}},
                    {"oldText", "newText"});
  Json edits = parameter("array", "The replacements");
  edits["items"] = edit_schema;
  edits["minItems"] = 1;
  Tool tool = file_tool("edit", std::move(description), "edit",
                        {{"edits", std::move(edits)},
                         {"oldText", parameter("string", "Single-edit form: exact text to replace")},
                         {"newText", parameter("string", "Single-edit form: text to put in its place")}});
  tool.replay = Replay::never;
  tool.parallel = false;  // two edits of one batch to the same file must not race
  tool.execute = [cwd = options.cwd](const Json& args, const ToolContext&) -> ToolResult {
    const auto path_arg = path_argument(args, "edit");
    if (!path_arg) return path_arg.error();
    const std::string& shown = *path_arg;

    std::vector<Edit> edits;
    const bool has_list = args.contains("edits");
    const bool has_single = args.contains("oldText") || args.contains("newText");
    if (has_list && has_single) return error_result(fmt::format("edit {}: give either edits or oldText/newText, not both", shown));
    if (has_list) {
      if (!args["edits"].is_array() || args["edits"].empty()) {
        return error_result(fmt::format("edit {}: edits must be a non-empty array of {{oldText, newText}}", shown));
      }
      for (std::size_t i = 0; i < args["edits"].size(); ++i) {
        const Json& e = args["edits"][i];
        const auto old_text = string_arg(e, "oldText");
        const auto new_text = string_arg(e, "newText");
        if (!old_text || !new_text) {
          return error_result(fmt::format("edit {}: edits[{}] needs string fields oldText and newText", shown, i));
        }
        edits.push_back(Edit{.label = fmt::format("edits[{}]", i), .old_text = *old_text, .new_text = *new_text});
      }
    } else {
      const auto old_text = string_arg(args, "oldText");
      const auto new_text = string_arg(args, "newText");
      if (!old_text || !new_text) {
        return error_result(fmt::format("edit {}: give edits: [{{oldText, newText}}, ...] (or oldText and newText)", shown));
      }
      edits.push_back(Edit{.label = "oldText", .old_text = *old_text, .new_text = *new_text});
    }

    const fs::path path = resolve_path(cwd, shown);
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (!fs::exists(status)) return error_result(fmt::format("File not found: {}", shown));
    if (fs::is_directory(status)) return error_result(fmt::format("Cannot edit {}: it is a directory", shown));
    auto raw = read_file(path);
    if (!raw) return error_result(fmt::format("Cannot read {}: {}", shown, raw.error().message));

    // Matching happens on LF text; the file's BOM and CRLF come back on write.
    std::string_view body = *raw;
    const bool bom = body.starts_with("\xEF\xBB\xBF");
    if (bom) body.remove_prefix(3);
    const std::size_t first_nl = body.find('\n');
    const bool crlf = first_nl != std::string_view::npos && first_nl > 0 && body[first_nl - 1] == '\r';
    const std::string content = replace_all(std::string(body), "\r\n", "\n");

    std::vector<std::string> errors;
    std::vector<Edit*> located;
    for (Edit& edit : edits) {
      edit.old_text = replace_all(std::move(edit.old_text), "\r\n", "\n");
      edit.new_text = replace_all(std::move(edit.new_text), "\r\n", "\n");
      if (edit.old_text.empty()) {
        errors.push_back(fmt::format("{}: oldText is empty; it must be text that occurs once in the file", edit.label));
        continue;
      }
      if (edit.old_text == edit.new_text) {
        errors.push_back(fmt::format("{}: oldText and newText are identical; nothing would change", edit.label));
        continue;
      }
      std::vector<std::size_t> found;
      for (std::size_t pos = content.find(edit.old_text); pos != std::string::npos; pos = content.find(edit.old_text, pos + 1)) {
        found.push_back(pos);
      }
      if (found.empty()) {
        errors.push_back(fmt::format("{}: oldText was not found in {}.\n{}", edit.label, shown, closest_match(content, edit.old_text)));
      } else if (found.size() > 1) {
        std::string lines;
        for (std::size_t k = 0; k < found.size() && k < 8; ++k) lines += fmt::format("{}{}", k ? ", " : "", line_of(content, found[k]));
        if (found.size() > 8) lines += ", …";
        errors.push_back(fmt::format("{}: oldText was found {} times in {} (at lines {}); it must occur exactly once — "
                                     "include more surrounding lines to make it unique",
                                     edit.label, found.size(), shown, lines));
      } else {
        edit.pos = found.front();
        located.push_back(&edit);
      }
    }
    std::sort(located.begin(), located.end(), [](const Edit* a, const Edit* b) { return a->pos < b->pos; });
    for (std::size_t k = 1; k < located.size(); ++k) {
      const Edit& a = *located[k - 1];
      const Edit& b = *located[k];
      if (b.pos < a.pos + a.old_text.size()) {
        errors.push_back(fmt::format("{} overlaps {} (both change line {}); merge them into one edit", b.label, a.label,
                                     line_of(content, b.pos)));
      }
    }
    if (!errors.empty()) {
      std::string message = fmt::format("No edits were applied; {} is unchanged.\n", shown);
      for (const auto& error : errors) message += "\n" + error + "\n";
      ToolResult result = error_result(std::move(message));
      result.details = Json{{"path", path.string()}, {"failed", errors.size()}, {"edits", edits.size()}};
      return result;
    }

    std::vector<Edit> sorted;
    for (const Edit* e : located) sorted.push_back(*e);
    std::string updated;
    std::size_t at = 0;
    for (const Edit& edit : sorted) {
      updated.append(content, at, edit.pos - at);
      updated += edit.new_text;
      at = edit.pos + edit.old_text.size();
    }
    updated.append(content, at);
    DiffResult diff = make_diff(content, sorted);

    std::string output = crlf ? replace_all(updated, "\n", "\r\n") : updated;
    if (bom) output.insert(0, "\xEF\xBB\xBF");
    if (auto written = write_file_atomically(path, output); !written) {
      return error_result(fmt::format("Cannot write {}: {}; the file is unchanged", shown, written.error().message));
    }

    std::string ranges;
    for (const auto& change : diff.changes) {
      const std::size_t start = change["newStart"].get<std::size_t>();
      const std::size_t count = change["newLines"].get<std::size_t>();
      if (!ranges.empty()) ranges += ", ";
      ranges += count == 0   ? fmt::format("{} (deleted)", start)
                : count == 1 ? fmt::format("{}", start)
                             : fmt::format("{}-{}", start, start + count - 1);
    }
    ToolResult result = ToolResult::text(fmt::format("Applied {} edit{} to {} (new line numbers: {}).", sorted.size(),
                                                     sorted.size() == 1 ? "" : "s", shown, ranges));
    result.details = Json{{"path", path.string()},
                          {"diff", diff.diff},
                          {"firstChangedLine", diff.first_changed_line},
                          {"changes", diff.changes},
                          {"lineEnding", crlf ? "crlf" : "lf"}};
    return result;
  };
  return tool;
}

}  // namespace cairn::tools
