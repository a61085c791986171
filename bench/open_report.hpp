// cairn_bench_open's figures: one row per (shape, size, store, work), each
// beside issue 45's acceptance reference; printed as it is taken, then
// written as a Markdown table into a document and drawn with gnuplot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench_process.hpp"

namespace cairn::bench {

struct Row {
  std::string shape;   // linear | compacting
  std::uint64_t entries = 0;
  std::string store;   // jsonl | sqlite | postgres | pi
  std::string work;    // what was timed
  Figures figures;
  double file_mb = 0;  // the store's file (PostgreSQL: the same log as JSONL); pi: its own file
  std::string reference;      // the acceptance's figure, or empty
  std::optional<bool> meets;  // whether the figure meets it, when there is one
  std::string note;           // why a figure is missing
};

// The works timed, as the rows and the plot name them.
inline constexpr const char* kLibraryOpen = "open + context (library)";
inline constexpr const char* kContextJson = "context --json (process)";
inline constexpr const char* kResume = "resume to 1st request (process)";
inline constexpr const char* kPiOpen = "pi open + context (in process)";

void print_header();
void print_row(const Row& row);

struct RunInfo {
  std::string date;     // UTC, ISO 8601
  std::string command;  // as it was run
  std::string machine;  // nproc, memory, kernel
  std::string pi;       // pi's package and version, node's version, or why there is none
};

// Replaces what lies between the markers in `doc` (appending them when
// absent) with the run's description, the plot and the table.
bool write_doc(const std::string& doc, const std::string& svg, const RunInfo& info, const std::vector<Row>& rows);

// Draws the library's open + context (one line per store) and pi's against
// the session's size, log axes, one panel per shape, into `svg` with gnuplot;
// `work_dir` holds its data files. False (and says why) when gnuplot fails.
bool write_plot(const std::string& svg, const std::string& work_dir, const std::vector<Row>& rows);

}  // namespace cairn::bench
