// Repair, then resume or abort, record by record: in a finished session of
// 20 steps of a replay-never tool and in one whose run was killed mid-call,
// on both file stores, each record in turn is damaged four ways (a byte
// flipped inside a string, its type, its seq, a run of NULs). After every
// one: repair keeps every other record byte for byte and the original bytes
// in its backup; what the harness then finds suspended is resumed where that
// is allowed and aborted where it is not; no tool call has run twice (the
// tool appends its call id to a marker file, the outside world's record);
// the log passes verify and the session takes new appends.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "cairn/harness/harness.hpp"
#include "cairn/llm/faux.hpp"
#include "cairn/store/store.hpp"
#include "cairn/store/verify.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 20;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A replay-never tool whose every run is a line in `markers`.
Tool marker_tool(const fs::path& markers) {
  return Tool{.name = "mark",
              .description = "Marks that it ran",
              .parameters = Json{{"type", "object"}},
              .replay = Replay::never,
              .parallel = false,
              .execute = [markers](const Json&, const ToolContext& context) {
                std::ofstream(markers, std::ios::app) << context.tool_call_id << "\n";
                return ToolResult::text("marked");
              }};
}

// The model: one call per step, named after how many results it has seen,
// then a final answer. It reads the context, so it continues any log.
FauxProvider::Script stepper() {
  return [](const LlmContext& context) {
    int results = 0;
    for (const auto& message : context.messages) {
      if (std::holds_alternative<ToolResultMessage>(message)) ++results;
    }
    if (results >= kSteps) return FauxResponse::text("done");
    return FauxResponse::tool_call(fmt::format("call-{}", results + 1), "mark", Json::object());
  };
}

struct Harnessed {
  std::shared_ptr<FauxProvider> faux = std::make_shared<FauxProvider>(stepper());
  std::optional<AgentHarness> harness;
  std::vector<SuspendedOperation> suspended;
};

Result<Harnessed> harness_over(std::shared_ptr<Session> session, const fs::path& markers) {
  Harnessed out;
  out.faux->record_requests(false);
  HarnessOptions options;
  options.session = std::move(session);
  options.models.add(FauxProvider::model(), out.faux);
  options.model = FauxProvider::model();
  options.tools = {marker_tool(markers)};
  options.retry.base_delay = std::chrono::milliseconds(0);
  auto created = AgentHarness::create(std::move(options));
  if (!created) return std::unexpected(created.error());
  out.harness.emplace(std::move(created->harness));
  out.suspended = std::move(created->suspended);
  return out;
}

// Each call id's runs, from the marker file.
std::map<std::string, int> runs_of(const fs::path& markers) {
  std::map<std::string, int> runs;
  std::istringstream in(slurp(markers));
  for (std::string line; std::getline(in, line);) ++runs[line];
  return runs;
}

enum class Damage { string_byte, type, seq, nul_run };
constexpr Damage kDamages[] = {Damage::string_byte, Damage::type, Damage::seq, Damage::nul_run};
const char* name_of(Damage damage) {
  switch (damage) {
    case Damage::string_byte: return "a byte inside a string";
    case Damage::type: return "the type";
    case Damage::seq: return "the seq";
    case Damage::nul_run: return "a run of NULs";
  }
  return "?";
}

// `line` damaged as `damage` says; its length and its newline-free shape stay.
std::string damaged(std::string line, Damage damage) {
  switch (damage) {
    case Damage::string_byte: {
      // Inside the id's value: the hardest byte to lose, since others refer to it.
      const std::size_t at = line.find("\"id\":\"");
      const std::size_t byte = at == std::string::npos ? line.size() / 2 : at + 7;
      line[byte] = line[byte] == 'x' ? 'y' : 'x';
      break;
    }
    case Damage::type: {
      const std::size_t at = line.find("\"type\":\"") + 9;
      line[at] = line[at] == 'q' ? 'z' : 'q';
      break;
    }
    case Damage::seq: {
      const std::size_t at = line.find("\"seq\":") + 6;
      line[at] = line[at] == '9' ? '8' : static_cast<char>(line[at] + 1);
      break;
    }
    case Damage::nul_run: {
      const std::size_t at = line.size() / 3;
      for (std::size_t i = at; i < at + 12 && i < line.size(); ++i) line[i] = '\0';
      break;
    }
  }
  return line;
}

// One backend: how the pristine sessions are copied, damaged and compared.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string uri(const fs::path& dir) const = 0;
  virtual void copy(const fs::path& from, const fs::path& to) const = 0;
  // The stored records of session `id`, in seq order.
  virtual std::vector<std::string> records(const fs::path& dir, const std::string& id) const = 0;
  virtual void replace(const fs::path& dir, const std::string& id, std::size_t seq, const std::string& bytes) const = 0;
  virtual std::string name() const = 0;
};

class JsonlBackend final : public Backend {
 public:
  std::string uri(const fs::path& dir) const override { return "jsonl:" + dir.string(); }
  std::string name() const override { return "jsonl"; }
  void copy(const fs::path& from, const fs::path& to) const override {
    fs::create_directories(to);
    for (const auto& entry : fs::directory_iterator(from)) {
      if (entry.path().extension() == ".jsonl") fs::copy_file(entry.path(), to / entry.path().filename());
    }
  }
  std::vector<std::string> lines(const fs::path& dir, const std::string& id) const {
    std::vector<std::string> out;
    std::istringstream in(slurp(dir / (id + ".jsonl")));
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  std::vector<std::string> records(const fs::path& dir, const std::string& id) const override {
    auto all = lines(dir, id);
    return {all.begin() + 1, all.end()};
  }
  void replace(const fs::path& dir, const std::string& id, std::size_t seq, const std::string& bytes) const override {
    auto all = lines(dir, id);
    all[seq + 1] = bytes;
    std::ofstream out(dir / (id + ".jsonl"), std::ios::binary | std::ios::trunc);
    for (const auto& line : all) out << line << '\n';
  }
};

class SqliteBackend final : public Backend {
 public:
  std::string uri(const fs::path& dir) const override { return "sqlite:" + (dir / "s.db").string(); }
  std::string name() const override { return "sqlite"; }
  void copy(const fs::path& from, const fs::path& to) const override {
    fs::create_directories(to);
    // The pristine store is closed: its WAL was checkpointed into the file.
    fs::copy_file(from / "s.db", to / "s.db");
  }
  template <class Each>
  void query(const fs::path& dir, const std::string& sql, Each each) const {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "s.db").string().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    each(statement);
    sqlite3_finalize(statement);
    sqlite3_close(db);
  }
  std::vector<std::string> records(const fs::path& dir, const std::string& id) const override {
    std::vector<std::string> out;
    query(dir,
          "SELECT payload FROM (SELECT seq, payload FROM session_entries WHERE session_id = ?1 UNION ALL SELECT seq, "
          "payload FROM harness_entries WHERE session_id = ?1 UNION ALL SELECT seq, payload FROM ignorable_entries "
          "WHERE session_id = ?1) ORDER BY seq",
          [&](sqlite3_stmt* statement) {
            sqlite3_bind_text(statement, 1, id.c_str(), -1, SQLITE_TRANSIENT);
            while (sqlite3_step(statement) == SQLITE_ROW) {
              out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)),
                               static_cast<std::size_t>(sqlite3_column_bytes(statement, 0)));
            }
          });
    return out;
  }
  void replace(const fs::path& dir, const std::string& id, std::size_t seq, const std::string& bytes) const override {
    for (const char* table : {"session_entries", "harness_entries"}) {
      query(dir, fmt::format("UPDATE {} SET payload = ?1 WHERE session_id = ?2 AND seq = ?3", table),
            [&](sqlite3_stmt* statement) {
              sqlite3_bind_text(statement, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
              sqlite3_bind_text(statement, 2, id.c_str(), -1, SQLITE_TRANSIENT);
              sqlite3_bind_int64(statement, 3, static_cast<sqlite3_int64>(seq));
              ASSERT_EQ(sqlite3_step(statement), SQLITE_DONE);
            });
    }
  }
};

class RepairMatrix : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "jsonl") {
      backend_ = std::make_unique<JsonlBackend>();
    } else {
      backend_ = std::make_unique<SqliteBackend>();
    }
  }

  // A session with one finished run of kSteps tool calls, and its markers.
  void make_finished(const fs::path& dir) {
    auto store = open_store(backend_->uri(dir), {SyncPolicy::none});
    ASSERT_TRUE(store) << store.error().message;
    auto session = (*store)->create({.id = "s", .cwd = "/w"});
    ASSERT_TRUE(session) << session.error().message;
    auto harnessed = harness_over(*session, dir / "markers");
    ASSERT_TRUE(harnessed) << harnessed.error().message;
    const RunResult run = harnessed->harness->main().prompt("go");
    ASSERT_EQ(run.outcome, Outcome::ok) << (run.error ? run.error->message : "");
  }

  // The same run, killed while its 12th call ran: the log ends with that
  // call's tool_started, and the call had run (its marker is there).
  void make_suspended(const fs::path& finished, const fs::path& dir) {
    backend_->copy(finished, dir);
    const auto records = backend_->records(dir, "s");
    std::size_t cut = 0, started = 0;
    for (std::size_t seq = 0; seq < records.size(); ++seq) {
      if (records[seq].find("\"type\":\"tool_started\"") != std::string::npos && ++started == 12) cut = seq + 1;
    }
    ASSERT_GT(cut, 0u);
    truncate(dir, cut);
    std::string markers;
    for (int call = 1; call <= 12; ++call) markers += fmt::format("call-{}\n", call);
    std::ofstream(dir / "markers", std::ios::trunc) << markers;
  }

  void truncate(const fs::path& dir, std::size_t keep) {
    if (backend_->name() == "jsonl") {
      auto lines = static_cast<const JsonlBackend&>(*backend_).lines(dir, "s");
      lines.resize(keep + 1);
      std::ofstream out(dir / "s.jsonl", std::ios::binary | std::ios::trunc);
      for (const auto& line : lines) out << line << '\n';
      return;
    }
    const auto& sqlite = static_cast<const SqliteBackend&>(*backend_);
    for (const char* table : {"session_entries", "harness_entries", "ignorable_entries"}) {
      sqlite.query(dir, fmt::format("DELETE FROM {} WHERE seq >= {}", table, keep),
                   [](sqlite3_stmt* statement) { ASSERT_EQ(sqlite3_step(statement), SQLITE_DONE); });
    }
  }

  // Damages record `seq` of a copy of `pristine` and checks everything the
  // header comment promises.
  void damage_and_recover(const fs::path& pristine, const fs::path& dir, std::size_t seq, Damage damage) {
    SCOPED_TRACE(fmt::format("{}: seq {}, {}", backend_->name(), seq, name_of(damage)));
    fs::remove_all(dir);
    backend_->copy(pristine, dir);
    fs::copy_file(pristine / "markers", dir / "markers");
    const auto before = backend_->records(dir, "s");
    const std::string bad = damaged(before[seq], damage);
    backend_->replace(dir, "s", seq, bad);

    auto store = open_store(backend_->uri(dir), {SyncPolicy::none});
    ASSERT_TRUE(store) << store.error().message;
    auto report = (*store)->repair("s");
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_TRUE(report->changed());
    ASSERT_TRUE(report->backup);
    EXPECT_TRUE(fs::exists(*report->backup));
    if (backend_->name() == "jsonl") {
      EXPECT_NE(slurp(*report->backup).find(bad), std::string::npos);
    }
    // Every damaged line keeps its newline here, so none is a torn tail, the
    // last one included: it is replaced, never cut.
    const auto after = backend_->records(dir, "s");
    ASSERT_EQ(after.size(), before.size());
    for (std::size_t other = 0; other < after.size(); ++other) {
      if (other != seq) {
        EXPECT_EQ(after[other], before[other]) << "seq " << other << " changed";
      }
    }
    EXPECT_GE(report->intact, static_cast<std::int64_t>(before.size()) - 2);  // at most one intact orphan kept inside

    auto session = (*store)->open("s");
    ASSERT_TRUE(session) << session.error().message;
    const auto ran_before = runs_of(dir / "markers");
    {
      auto harnessed = harness_over(*session, dir / "markers");
      ASSERT_TRUE(harnessed) << harnessed.error().code << ": " << harnessed.error().message;
      for (const SuspendedOperation& suspended : harnessed->suspended) {
        auto ref = harnessed->harness->ref(suspended.ref);
        ASSERT_TRUE(ref);
        const bool abort_only = std::find(report->abort_only_runs.begin(), report->abort_only_runs.end(),
                                          suspended.id) != report->abort_only_runs.end();
        EXPECT_EQ(suspended.damaged.has_value(), abort_only);
        if (abort_only) {
          const ResumeResult refused = ref->resume();
          EXPECT_EQ(refused.outcome, Outcome::rejected);
          ASSERT_TRUE(refused.error);
          EXPECT_EQ(refused.error->code, "damaged_log");
          const AbortResult aborted = ref->abort();
          EXPECT_NE(aborted.outcome, Outcome::faulted) << (aborted.error ? aborted.error->message : "");
        } else {
          const ResumeResult resumed = ref->resume();
          EXPECT_TRUE(resumed.outcome == Outcome::ok || resumed.outcome == Outcome::failed)
              << (resumed.error ? resumed.error->message : "");
        }
        ref->wait_for_idle();
      }
      harnessed->harness->close();
    }
    for (const auto& [call, runs] : runs_of(dir / "markers")) {
      EXPECT_EQ(runs, 1) << call << " ran " << runs << " times";
      if (ran_before.contains(call)) {
        EXPECT_EQ(ran_before.at(call), runs) << call << " ran again";
      }
    }
    auto verified = verify(**session);
    ASSERT_TRUE(verified) << verified.error().message;
    for (const VerifyCheck& check : verified->checks) {
      EXPECT_TRUE(check.ok()) << check.name << ": " << (check.failures.empty() ? "" : check.failures.front());
    }
    // Repaired, the session is written again.
    auto more = (*session)->append(
        Record{.body = TreeEntry{.body = Custom{.custom_type = "after-repair"}}});
    EXPECT_TRUE(more) << more.error().message;
  }

  void run_matrix(const fs::path& pristine) {
    const auto records = backend_->records(pristine, "s");
    ASSERT_GT(records.size(), 40u);
    // Every record, or every few under the sanitizers (CAIRN_TEST_SCALE).
    const auto every = static_cast<std::size_t>(std::max(1L, std::lround(1.0 / testing::test_scale())));
    for (std::size_t seq = 0; seq < records.size(); seq += every) {
      for (Damage damage : kDamages) {
        damage_and_recover(pristine, dir_.path() / "case", seq, damage);
        if (HasFatalFailure() || ::testing::Test::HasFailure()) return;  // one case's failures are enough to read
      }
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<Backend> backend_;
};

TEST_P(RepairMatrix, AFinishedSessionDamagedAnywhereIsRepairedAndNothingRunsTwice) {
  make_finished(dir_.path() / "finished");
  run_matrix(dir_.path() / "finished");
}

TEST_P(RepairMatrix, ASuspendedSessionDamagedAnywhereIsRepairedAndNothingRunsTwice) {
  make_finished(dir_.path() / "finished");
  make_suspended(dir_.path() / "finished", dir_.path() / "suspended");
  run_matrix(dir_.path() / "suspended");
}

INSTANTIATE_TEST_SUITE_P(Stores, RepairMatrix, ::testing::Values("jsonl", "sqlite"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cairn
