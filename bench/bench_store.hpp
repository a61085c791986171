// A benchmark's sessions in cairn's stores: a pi file imported with the
// library's pi import, and the library's open + build_context of one in a
// fresh process (`BENCH --open-once URI ID`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cairn::bench {

struct Imported {
  std::string id;
  std::string file;  // the store's file (JSONL log, SQLite database); empty for PostgreSQL
  std::int64_t bytes = 0;  // its size (SQLite: with its WAL folded in)
};

// Imports `pi_file` into the store at `uri` (sync none: the figures are
// about reading); prints why and returns nullopt on failure.
std::optional<Imported> import_pi(const std::string& uri, const std::string& pi_file);

// The body of `BENCH --open-once URI ID`: the library's read-only open and
// build_context of main, timed in this fresh process; prints
// "MS MESSAGES PEAK_KIB".
int open_once_main(const std::string& uri, const std::string& id);

}  // namespace cairn::bench
