// Helpers shared by the tests, the crash child and the benchmarks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cairn/log/record.hpp"
#include "cairn/store/store.hpp"

namespace cairn::testing {

// A directory removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Record builders. Ids and timestamps are left empty when not given: the
// session fills them in.
Record user_entry(std::string text, std::optional<std::string> parent, std::string id = {}, std::string ref = {});
Record assistant_entry(std::string text, std::optional<std::string> parent, std::string id = {},
                       std::vector<ToolCall> calls = {}, std::string ref = {});
Record tool_result_entry(const std::string& call_id, const std::string& tool, std::string text,
                         std::optional<std::string> parent, std::string id = {}, std::string ref = {});
Record tree(TreeBody body, std::optional<std::string> parent, std::string id = {}, std::string ref = {});
Record harness(HarnessBody body, std::string ref = "main", std::string id = {});

// Generates random, valid record batches: tree entries of every type on
// several refs with branches, operations opened and closed with their harness
// records, refs created and deleted, ignorable records. Deterministic for a seed.
class RandomLog {
 public:
  explicit RandomLog(std::uint64_t seed, std::string timestamp_base = "2026-11-30T10:00:00.000Z");
  std::vector<Record> next_batch(std::size_t max_records = 6);
  // The state the generator believes the log is in; append every batch it
  // returns, in order, or the next ones may not be valid.
  std::int64_t appended() const { return count_; }

 private:
  Record random_record();
  std::string fresh_id();
  std::string pick_tree_id();
  std::mt19937_64 rng_;
  std::int64_t count_ = 0;
  std::int64_t id_counter_ = 0;
  std::vector<std::string> tree_ids_;
  struct Ref {
    std::string name;
    std::optional<std::string> leaf;
    std::optional<std::string> open_run;
  };
  std::vector<Ref> refs_;
};

// Everything a session shows through its read API, as one comparable JSON.
Json snapshot_reads(const Session& session);

// The lines of `text`, without their newlines.
std::vector<std::string> lines_of(const std::string& text);

// The argv or envp of an exec: a pointer to each of `strings` (which must
// outlive it), then a null pointer.
std::vector<char*> exec_strings(std::vector<std::string>& strings);

// The share of their repetitions the long randomised and real-process tests
// run: CAIRN_TEST_SCALE, a fraction in (0, 1], 1 when unset. scripts/test
// lowers it under the sanitizers, where each repetition costs several times
// more; the release build runs every test whole.
double test_scale();
// `count` repetitions scaled by test_scale(), at least one.
int scaled(int count);

}  // namespace cairn::testing
