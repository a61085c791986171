// What opening a damaged JSONL session does, case by case.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "log/checksum.hpp"
#include "cairn/store/store.hpp"
#include "store/file_io.hpp"
#include "support/test_support.hpp"

namespace cairn {
namespace {

using testing::user_entry;

class JsonlRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(*open_store("jsonl:" + dir_.str(), {SyncPolicy::full}));
    auto session = store_->create({.id = "s", .cwd = "/w"});
    ASSERT_TRUE(session);
    ASSERT_TRUE((*session)->append({user_entry("one", std::nullopt, "e0"), user_entry("two", "e0", "e1"),
                                    user_entry("three", "e1", "e2")}));
  }
  std::string path() const { return dir_.str() + "/s.jsonl"; }
  std::string read() const {
    std::ifstream in(path(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }
  void write(const std::string& text) const { std::ofstream(path(), std::ios::binary | std::ios::trunc) << text; }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::stringstream in(read());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  void write_lines(const std::vector<std::string>& ls, const std::string& tail = {}) const {
    std::string text;
    for (const auto& l : ls) text += l + "\n";
    write(text + tail);
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(JsonlRecovery, TornTailIsCutAndReported) {
  const std::string intact = read();
  const std::string torn = R"({"type":"message","seq":3,"id":"e3","par)";
  write(intact + torn);
  auto reader = store_->open("s", {.read_only = true});
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_TRUE((*reader)->open_report().tail_cut);
  EXPECT_EQ(read().size(), intact.size() + torn.size());  // reading never changes the file
  reader->reset();

  auto session = store_->open("s");
  ASSERT_TRUE(session) << session.error().message;
  const OpenReport& report = (*session)->open_report();
  EXPECT_TRUE(report.tail_cut);
  EXPECT_EQ(report.bytes_cut, static_cast<std::int64_t>(torn.size()));
  EXPECT_EQ(report.last_good_seq, 2);
  EXPECT_NE(report.detail.find("s.jsonl:5"), std::string::npos) << report.detail;
  EXPECT_EQ(read(), intact);
  auto appended = (*session)->append(user_entry("four", "e2", "e3"));
  ASSERT_TRUE(appended);
  EXPECT_EQ(appended->first_seq, 3);
}

// A reader maps the file, so it must never map a group that may yet be cut:
// a writer whose write fails truncates it away, and a mapped page past the
// new end would fault. The writer holds the contents lock from write to sync
// (or cut); a reader opening meanwhile waits, and sees what survived.
TEST_F(JsonlRecovery, ReaderWaitsForAGroupInFlightAndNeverSeesACutOne) {
  const std::string intact = read();
  const int fd = ::open(path().c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(lock_contents(fd, /*exclusive=*/true, path()));
  const std::string in_flight =
      R"({"type":"message","seq":3,"id":"e3","parentId":"e2","timestamp":"2026-11-30T10:00:00.000Z",)"
      R"("message":{"role":"user","content":"four","timestamp":1}})"
      "\n";
  ASSERT_EQ(::pwrite(fd, in_flight.data(), in_flight.size(), static_cast<off_t>(intact.size())),
            static_cast<ssize_t>(in_flight.size()));

  std::atomic<bool> opened{false};
  std::int64_t seen = -1;
  std::thread reader([&] {
    auto session = store_->open("s", {.read_only = true});
    if (session) seen = (*session)->size();
    opened = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(opened.load()) << "the reader mapped the file while a group was in flight";
  // The group's sync failed: the writer cuts it, then lets readers in.
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(intact.size())), 0);
  unlock_contents(fd);
  reader.join();
  ::close(fd);
  EXPECT_EQ(seen, 3);
}

// From 256 KiB up, a file's lines are parsed on a second thread ahead of the
// indexing; what opening finds must not change: every record read back as
// written, and damage in the middle named by its line and seq.
TEST_F(JsonlRecovery, LargeSessionReadsBackAndMidFileDamageIsNamed) {
  auto session = store_->open("s");
  ASSERT_TRUE(session) << session.error().message;
  std::vector<Record> batch;
  std::string parent = "e2";
  for (int i = 3; i < 3003; ++i) {
    std::string id = fmt::format("e{}", i);
    batch.push_back(user_entry(fmt::format("{} {}", i, std::string(300, 'x')), parent, id));
    parent = id;
  }
  ASSERT_TRUE((*session)->append(std::move(batch)));
  const std::vector<LogLine> written = (*session)->get_log().value();
  auto context = (*session)->build_context();
  ASSERT_TRUE(context);
  session->reset();
  ASSERT_GT(read().size(), std::size_t{1} << 20);

  auto reopened = store_->open("s", {.read_only = true});
  ASSERT_TRUE(reopened) << reopened.error().message;
  const std::vector<LogLine> read_back = (*reopened)->get_log().value();
  ASSERT_EQ(read_back.size(), written.size());
  for (std::size_t i = 0; i < written.size(); ++i) ASSERT_EQ(read_back[i].json, written[i].json) << "seq " << i;
  auto context_back = (*reopened)->build_context();
  ASSERT_TRUE(context_back);
  EXPECT_EQ(context_back->entry_ids, context->entry_ids);
  EXPECT_EQ(context_back->entry_ids.size(), 3003u);
  reopened->reset();

  auto damaged = lines();
  damaged[1999] = damaged[1999].substr(0, 40) + "#";  // line 2000 holds seq 1998
  write_lines(damaged);
  auto refused = store_->open("s", {.read_only = true});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "corrupt_log");
  EXPECT_NE(refused.error().message.find("s.jsonl:2000: seq 1998:"), std::string::npos) << refused.error().message;

  damaged = lines();
  damaged[1999] = lines()[2000];  // seq 1999 where 1998 belongs
  write_lines(damaged);
  refused = store_->open("s", {.read_only = true});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("s.jsonl:2000: seq 1998: seq gap"), std::string::npos)
      << refused.error().message;
}

TEST_F(JsonlRecovery, ZeroFilledTailIsCut) {
  const std::string intact = read();
  write(intact + std::string(4096, '\0'));
  auto session = store_->open("s");
  ASSERT_TRUE(session) << session.error().message;
  EXPECT_EQ((*session)->open_report().bytes_cut, 4096);
  EXPECT_EQ((*session)->size(), 3);
  EXPECT_EQ(read(), intact);
}

// A complete last line (its newline is there) was written whole: if it is
// damaged now it may be an acknowledged record, so it is refused like damage
// anywhere, never cut, and repair replaces it by a placeholder of its seq.
TEST_F(JsonlRecovery, CompleteButDamagedLastLineIsDamageNotATornTail) {
  auto ls = lines();
  ls.back() = ls.back().substr(0, ls.back().size() / 2) + std::string(5, '\0');
  write_lines(ls);
  const std::string damaged = read();
  auto session = store_->open("s");
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code, "corrupt_log");
  EXPECT_NE(session.error().message.find(fmt::format("s.jsonl:{}: seq 2", ls.size())), std::string::npos)
      << session.error().message;
  EXPECT_EQ(read(), damaged);

  auto repaired = store_->repair("s");
  ASSERT_TRUE(repaired) << repaired.error().message;
  EXPECT_EQ(repaired->replaced.size(), 1u);
  auto reopened = store_->open("s");
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_EQ((*reopened)->size(), 3);
  EXPECT_FALSE((*reopened)->open_report().tail_cut);
}

TEST_F(JsonlRecovery, DamageBeforeTheTailRefusesTheSession) {
  auto ls = lines();
  ls[2] = R"({"type":"message","seq":1,"id":"e1",GARBAGE)";
  write_lines(ls);
  const std::string damaged = read();
  auto session = store_->open("s");
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code, "corrupt_log");
  EXPECT_NE(session.error().message.find("s.jsonl:3: seq 1: not valid JSON"), std::string::npos)
      << session.error().message;
  EXPECT_EQ(read(), damaged);  // refused, untouched

  // Repair keeps every intact record, byte for byte, and the original bytes
  // in a backup; the damaged record becomes a placeholder of the same seq,
  // with the id its bytes still show, so that its child keeps its parent.
  const auto intact = lines();
  auto report = store_->repair("s");
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->records, 3);
  EXPECT_EQ(report->intact, 2);
  ASSERT_EQ(report->replaced.size(), 1u);
  EXPECT_NE(report->replaced[0].find("seq 1 (message"), std::string::npos) << report->replaced[0];
  ASSERT_TRUE(report->backup);
  std::ifstream backup(*report->backup, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(backup), {}), damaged);
  const auto repaired_lines = lines();
  ASSERT_EQ(repaired_lines.size(), 4u);
  EXPECT_EQ(repaired_lines[0], intact[0]);
  EXPECT_EQ(repaired_lines[1], intact[1]);
  EXPECT_EQ(repaired_lines[3], intact[3]);
  auto repaired = store_->open("s");
  ASSERT_TRUE(repaired) << repaired.error().message;
  EXPECT_EQ((*repaired)->size(), 3);
  auto placeholder = (*repaired)->get_entry("e1");
  ASSERT_TRUE(placeholder && *placeholder);
  const auto* body = std::get_if<DamagedEntry>(&(*placeholder)->body);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(body->damage.was, RecordType::message);
  EXPECT_EQ((*placeholder)->parent_id, "e0");
  EXPECT_EQ((*repaired)->leaf(), "e2");
  EXPECT_EQ((*repaired)->path_to("e2").size(), 3u);
  ASSERT_TRUE((*repaired)->append(user_entry("four", "e2", "e3")));  // repaired sessions are written again

  // A second repair has nothing to do.
  repaired->reset();
  auto again = store_->repair("s");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->changed());
  EXPECT_EQ(again->intact, 4);
}

// Repair writes the repaired log to a new file and renames it over the old
// one: a reader that mapped the file before keeps the bytes it mapped.
TEST_F(JsonlRecovery, RepairLeavesAReaderTheFileItMapped) {
  auto ls = lines();
  ls[2] = R"({"type":"message","seq":1,"id":"e1",GARBAGE)";
  write_lines(ls);
  const std::string damaged = read();
  const int reader = ::open(path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  auto report = store_->repair("s");
  ASSERT_TRUE(report) << report.error().message;
  std::string seen(damaged.size() + 16, '\0');
  const ssize_t n = ::pread(reader, seen.data(), seen.size(), 0);
  ::close(reader);
  ASSERT_GE(n, 0);
  seen.resize(static_cast<std::size_t>(n));
  EXPECT_EQ(seen, damaged);
  EXPECT_NE(read(), damaged);
}

TEST_F(JsonlRecovery, SeqGapRefusesTheSession) {
  auto ls = lines();
  ls.erase(ls.begin() + 2);  // drop seq 1
  write_lines(ls);
  auto session = store_->open("s");
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code, "corrupt_log");
  EXPECT_NE(session.error().message.find("s.jsonl:3: seq 1: seq gap: expected seq 1, found 2"), std::string::npos)
      << session.error().message;
}

TEST_F(JsonlRecovery, UnknownRequiredTypeRefusesEvenAtTheTail) {
  auto ls = lines();
  ls.push_back(R"({"type":"quantum_entanglement","seq":3,"id":"q1"})");
  write_lines(ls);
  auto session = store_->open("s");
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code, "unknown_type");
  EXPECT_NE(session.error().message.find("s.jsonl:5: seq 3: unknown record type 'quantum_entanglement'"),
            std::string::npos)
      << session.error().message;
}

TEST_F(JsonlRecovery, IgnorableUnknownTypeIsAccepted) {
  auto ls = lines();
  std::string unknown = R"({"type":"quantum_entanglement","seq":3,"ignorable":true,"spin":"up"})";
  add_checksum(unknown);  // a newer cairn seals what it writes as this one does
  ls.push_back(unknown);
  write_lines(ls);
  auto session = store_->open("s");
  ASSERT_TRUE(session) << session.error().message;
  EXPECT_EQ((*session)->size(), 4);
  EXPECT_FALSE((*session)->open_report().tail_cut);
  EXPECT_EQ((*session)->get_log().value()[3].json, ls.back());
  EXPECT_EQ((*session)->build_context()->messages.size(), 3u);
}

TEST_F(JsonlRecovery, NewerFormatVersionRefusesTheSession) {
  auto ls = lines();
  Json header = Json::parse(ls[0]);
  header["version"] = kLogFormatVersion + 1;
  ls[0] = header.dump();
  write_lines(ls);
  auto session = store_->open("s");
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code, "newer_version");
  EXPECT_NE(session.error().message.find(fmt::format("s.jsonl:1: session format version {} is newer than this cairn "
                                                     "reads ({})",
                                                     kLogFormatVersion + 1, kLogFormatVersion)),
            std::string::npos)
      << session.error().message;
}

TEST_F(JsonlRecovery, APiFileIsRefusedWithAHint) {
  write_lines({R"({"type":"session","version":3,"id":"pi1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})",
               R"({"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}})"});
  auto session = store_->open("s");
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code, "newer_version");
  EXPECT_NE(session.error().message.find("cairn import pi"), std::string::npos) << session.error().message;
}

TEST_F(JsonlRecovery, RecordWithoutSeqIsRefusedWithAHint) {
  auto ls = lines();
  ls.insert(ls.begin() + 2, R"({"type":"message","id":"a","parentId":null,"timestamp":"x","message":{"role":"user","content":"hi"}})");
  write_lines(ls);
  auto session = store_->open("s");
  ASSERT_FALSE(session);
  EXPECT_NE(session.error().message.find("cairn import pi"), std::string::npos) << session.error().message;
}

// A write the operating system refuses (here: the file size limit) leaves no
// partial record behind and faults the session.
TEST_F(JsonlRecovery, FailedWriteTruncatesBack) {
  const std::string intact = read();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    auto session = store_->open("s");
    if (!session) ::_exit(10);
    rlimit limit{static_cast<rlim_t>(intact.size() + 40), static_cast<rlim_t>(intact.size() + 40)};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto appended = (*session)->append(user_entry(std::string(500, 'x'), "e2", "big"));
    if (appended || appended.error().code != "io_error") ::_exit(11);
    auto after = (*session)->append(user_entry("small", "e2", "small"));
    if (after || after.error().code != "faulted") ::_exit(12);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read(), intact);
  auto session = store_->open("s");
  ASSERT_TRUE(session);
  EXPECT_FALSE((*session)->open_report().tail_cut);
  EXPECT_EQ((*session)->size(), 3);
}

// A writer in another process is refused with a message that names us.
TEST_F(JsonlRecovery, SecondWriterProcessIsRefusedNamingTheHolder) {
  auto held = store_->open("s");
  ASSERT_TRUE(held) << held.error().message;
  const std::string holder = fmt::format("pid {} on ", ::getpid());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = open_store("jsonl:" + dir_.str());
    auto session = (*store)->open("s", {.lock_timeout = std::chrono::milliseconds(50)});
    if (session) ::_exit(10);
    if (session.error().code != "locked") ::_exit(11);
    if (session.error().message.find(holder) == std::string::npos) ::_exit(12);
    if (session.error().message.find("generation 2") == std::string::npos) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace cairn
