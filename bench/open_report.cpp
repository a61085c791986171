// See open_report.hpp.
#include "open_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace cairn::bench {

namespace {

constexpr const char* kBegin = "<!-- cairn_bench_open: begin (written by the bench; edits here are overwritten) -->";
constexpr const char* kEnd = "<!-- cairn_bench_open: end -->";

std::string size_name(std::uint64_t entries) {
  if (entries >= 1'000'000 && entries % 1'000'000 == 0) return fmt::format("{}M", entries / 1'000'000);
  if (entries >= 1'000 && entries % 1'000 == 0) return fmt::format("{}k", entries / 1'000);
  return std::to_string(entries);
}

double peak_mb(const Row& row) { return static_cast<double>(row.figures.peak_kib) / 1024.0; }

std::string verdict(const Row& row) {
  if (!row.meets) return "";
  return *row.meets ? "yes" : "**no**";
}

const char* store_title(const std::string& store) {
  if (store == "jsonl") return "JSONL";
  if (store == "sqlite") return "SQLite";
  if (store == "postgres") return "PostgreSQL";
  return "pi 1.6.0";
}

}  // namespace

void print_header() {
  std::printf("%-10s %7s %-8s %-31s %9s %17s %8s %8s %6s %7s  %s\n", "shape", "entries", "store", "work", "median ms",
              "min-max ms", "peak MB", "file MB", "peak/f", "msgs", "acceptance (meets)");
}

void print_row(const Row& row) {
  if (!row.note.empty()) {
    std::printf("%-10s %7s %-8s %-31s %s\n", row.shape.c_str(), size_name(row.entries).c_str(), row.store.c_str(),
                row.work.c_str(), row.note.c_str());
  } else {
    const bool counts_messages = row.work == kLibraryOpen || row.work == kPiOpen;
    std::printf("%-10s %7s %-8s %-31s %9.1f %8.1f-%-8.1f %8.1f %8.1f %6.2f %7s  %s%s\n", row.shape.c_str(),
                size_name(row.entries).c_str(), row.store.c_str(), row.work.c_str(), row.figures.median_ms,
                row.figures.min_ms, row.figures.max_ms, peak_mb(row), row.file_mb, peak_mb(row) * 1.048576 / row.file_mb,
                counts_messages ? std::to_string(row.figures.middle).c_str() : "-", row.reference.c_str(),
                row.meets ? (*row.meets ? " (yes)" : " (NO)") : "");
  }
  std::fflush(stdout);
}

bool write_doc(const std::string& doc, const std::string& svg, const RunInfo& info, const std::vector<Row>& rows) {
  std::string text;
  {
    std::ifstream in(doc, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  std::string section = fmt::format("{}\n\nRun {} on {}:\n\n    {}\n\npi: {}.\n\n", kBegin, info.date, info.machine,
                                    info.command, info.pi);
  const auto relative = std::filesystem::relative(svg, std::filesystem::path(doc).parent_path());
  section += fmt::format("![open + context against the session's size, log axes](./{})\n\n", relative.string());
  section +=
      "| shape | entries | store | work | median ms | min–max ms | peak MB | file MB | peak / file | context "
      "messages | acceptance | meets |\n|---|--:|---|---|--:|--:|--:|--:|--:|--:|---|---|\n";
  for (const Row& row : rows) {
    if (!row.note.empty()) {
      section += fmt::format("| {} | {} | {} | {} | — | — | — | — | — | — | {} | |\n", row.shape, size_name(row.entries),
                             store_title(row.store), row.work, row.note);
      continue;
    }
    const bool counts_messages = row.work == kLibraryOpen || row.work == kPiOpen;
    section += fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f}–{:.1f} | {:.1f} | {:.1f} | {:.2f} | {} | {} | {} |\n",
                           row.shape, size_name(row.entries), store_title(row.store), row.work, row.figures.median_ms,
                           row.figures.min_ms, row.figures.max_ms, peak_mb(row), row.file_mb,
                           peak_mb(row) * 1.048576 / row.file_mb,
                           counts_messages ? std::to_string(row.figures.middle) : std::string("—"),
                           row.reference.empty() ? "—" : row.reference, verdict(row));
  }
  section += fmt::format("\n{}", kEnd);
  const auto begin = text.find(kBegin);
  const auto end = text.find(kEnd);
  if (begin != std::string::npos && end != std::string::npos && end > begin) {
    text.replace(begin, end + std::string(kEnd).size() - begin, section);
  } else {
    text += (text.empty() || text.ends_with("\n") ? "\n" : "\n\n") + section + "\n";
  }
  std::ofstream out(doc, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

bool write_plot(const std::string& svg, const std::string& work_dir, const std::vector<Row>& rows) {
  struct Series {
    std::string store;
    std::string work;
    std::string title;
    std::string style;
  };
  const std::vector<Series> series = {
      {"jsonl", kLibraryOpen, "cairn JSONL", "lc rgb '#1f77b4' pt 7"},
      {"sqlite", kLibraryOpen, "cairn SQLite", "lc rgb '#2ca02c' pt 5"},
      {"postgres", kLibraryOpen, "cairn PostgreSQL", "lc rgb '#9467bd' pt 9"},
      {"pi", kPiOpen, "pi 1.6.0", "lc rgb '#d62728' pt 13 dt 2"},
  };
  std::string script = fmt::format(
      "set terminal svg size 1000,440 dynamic font 'sans,12' background '#ffffff'\n"
      "set output '{}'\n"
      "set multiplot layout 1,2 title 'open + build context, median of fresh processes (lower is better)'\n"
      "set logscale xy\nset grid xtics ytics mxtics mytics lc rgb '#dddddd'\n"
      "set xlabel 'entries in the session'\nset ylabel 'ms'\nset key top left\n"
      "set format x '10^{{%L}}'\nset xrange [500:2000000]\n",
      svg);
  for (const char* shape : {"linear", "compacting"}) {
    std::vector<std::string> plots;
    for (const Series& line : series) {
      const std::string data = fmt::format("{}/{}-{}.dat", work_dir, shape, line.store);
      std::ofstream out(data);
      int points = 0;
      for (const Row& row : rows) {
        if (row.shape == shape && row.store == line.store && row.work == line.work && row.note.empty()) {
          out << row.entries << ' ' << row.figures.median_ms << '\n';
          ++points;
        }
      }
      if (points > 0) {
        plots.push_back(fmt::format("'{}' using 1:2 with linespoints lw 2 {} title '{}'", data, line.style, line.title));
      }
    }
    script += fmt::format("set title '{} ({})'\n", shape,
                          std::string(shape) == "linear" ? "one branch, no compaction"
                                                         : "a compaction every 1,000 entries");
    if (plots.empty()) {
      script += "set label 1 'no figures' at graph 0.5,0.5 center\nplot 1/0 notitle\nunset label 1\n";
      continue;
    }
    script += "plot ";
    for (std::size_t i = 0; i < plots.size(); ++i) script += (i ? ", \\\n     " : "") + plots[i];
    script += "\n";
  }
  script += "unset multiplot\n";
  const std::string script_path = work_dir + "/plot.gp";
  std::ofstream(script_path) << script;
  const int status = std::system(fmt::format("gnuplot '{}'", script_path).c_str());
  if (status != 0) {
    std::fprintf(stderr, "gnuplot failed (status %d) on %s; is gnuplot-nox installed?\n", status, script_path.c_str());
    return false;
  }
  return true;
}

}  // namespace cairn::bench
