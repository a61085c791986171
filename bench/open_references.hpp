// Issue 45's acceptance, figure by figure: what each row of cairn_bench_open
// is held to, and whether it meets it. Some references come from the same
// run — pi's time on the same shape and size, the 1k-entry session's figure
// — so rows are judged in the order they are taken: pi first, 1k first.
#pragma once

#include <map>
#include <string>
#include <tuple>

#include "open_report.hpp"

namespace cairn::bench {

class References {
 public:
  // Sets row.reference and row.meets (none when the acceptance names no
  // figure for it), and remembers the row's figure for the rows after it.
  void judge(Row& row);

 private:
  std::map<std::tuple<std::string, std::uint64_t>, double> pi_ms_;                  // (shape, entries)
  std::map<std::tuple<std::string, std::string, std::string>, double> one_k_ms_;  // (shape, store, work)
};

}  // namespace cairn::bench
