// The memory store: sessions live in this process only. Reopening a session
// rebuilds its index from the stored lines through the same checks as a file,
// so tests that "crash" (drop a Session) and reopen see what a restart would.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cairn/store/store.hpp"
#include "session_ids.hpp"
#include "store/log_medium.hpp"

namespace cairn {
namespace {

std::uint64_t next_serial() {
  static std::atomic<std::uint64_t> serial{0};
  return ++serial;
}

struct MemorySession {
  SessionHeader header;
  std::uint64_t serial = next_serial();  // tells a session made again under an old id from the old one
  std::vector<std::string> lines;
  bool has_writer = false;
  std::int64_t generation = 0;
};

struct MemoryShared {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<MemorySession>, std::less<>> sessions;
  std::int64_t appends_left = -1;  // fault injection; negative: unlimited
};

class MemoryMedium final : public LogMedium {
 public:
  MemoryMedium(std::shared_ptr<MemoryShared> shared, std::shared_ptr<MemorySession> session)
      : shared_(std::move(shared)), session_(std::move(session)), generation_(session_->generation) {}
  ~MemoryMedium() override {
    std::lock_guard lock(shared_->mu);
    if (session_->generation == generation_) session_->has_writer = false;
  }

  Status append(const std::vector<PreparedRecord>& records) override {
    std::lock_guard lock(shared_->mu);
    if (session_->generation != generation_) {
      return fail(Errc::stale_writer, fmt::format("session {}: this writer's generation {} is stale (now {})",
                                              session_->header.id, generation_, session_->generation));
    }
    if (shared_->appends_left == 0) {
      return fail(Errc::io_error, fmt::format("session {}: the store stopped accepting appends (injected)", session_->header.id));
    }
    if (shared_->appends_left > 0) --shared_->appends_left;
    for (const PreparedRecord& record : records) session_->lines.push_back(record.line);
    return {};
  }

  std::string describe() const override { return fmt::format("memory session {}", session_->header.id); }

 private:
  std::shared_ptr<MemoryShared> shared_;
  std::shared_ptr<MemorySession> session_;
  std::int64_t generation_;
};

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(StoreOptions options) : options_(options), shared_(std::make_shared<MemoryShared>()) {}

  std::string uri() const override { return "memory:"; }
  SyncPolicy sync_policy() const override { return options_.sync; }

  Result<std::vector<SessionHeader>> list() override {
    std::lock_guard lock(shared_->mu);
    std::vector<SessionHeader> headers;
    for (const auto& [id, session] : shared_->sessions) headers.push_back(session->header);
    std::sort(headers.begin(), headers.end(), [](const SessionHeader& a, const SessionHeader& b) {
      return a.timestamp != b.timestamp ? a.timestamp > b.timestamp : a.id > b.id;
    });
    return headers;
  }

  Result<std::shared_ptr<Session>> create(const CreateOptions& options) override {
    auto header = new_session_header(options, "memory");
    if (!header) return std::unexpected(header.error());
    auto session = std::make_shared<MemorySession>();
    session->header = std::move(*header);
    {
      std::lock_guard lock(shared_->mu);
      if (!shared_->sessions.emplace(session->header.id, session).second) {
        return fail(Errc::already_exists, fmt::format("session {} already exists in memory:", session->header.id));
      }
    }
    return open(session->header.id, OpenOptions{});
  }

  Result<std::shared_ptr<Session>> create_with_log(const SessionHeader& header, const std::vector<LogLine>& log) override {
    if (!valid_session_id(header.id)) return fail(Errc::invalid_argument, fmt::format("memory: {}", invalid_session_id(header.id)));
    auto session = std::make_shared<MemorySession>();
    session->header = header;
    session->lines.reserve(log.size());
    for (const LogLine& line : log) session->lines.push_back(line.json);
    {
      std::lock_guard lock(shared_->mu);
      if (!shared_->sessions.emplace(header.id, session).second) {
        return fail(Errc::already_exists, fmt::format("session {} already exists in memory:", header.id));
      }
    }
    auto opened = open(header.id, OpenOptions{});
    if (!opened) {
      // The lines did not make a log (open checks what an append would): no
      // session is left half-made.
      std::lock_guard lock(shared_->mu);
      shared_->sessions.erase(header.id);
    }
    return opened;
  }

  Result<std::shared_ptr<Session>> open(std::string_view id, const OpenOptions& options) override {
    const auto deadline = std::chrono::steady_clock::now() + options.lock_timeout;
    std::unique_lock lock(shared_->mu);
    auto it = shared_->sessions.find(id);
    if (it == shared_->sessions.end()) return fail(Errc::not_found, fmt::format("no session {} in memory:", id));
    std::shared_ptr<MemorySession> session = it->second;
    if (!options.read_only) {
      while (session->has_writer && !options.break_lock) {
        if (std::chrono::steady_clock::now() >= deadline) {
          return fail(Errc::locked, fmt::format("session {} in memory: is being written by another writer in this process "
                                            "(generation {})",
                                            id, session->generation));
        }
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        lock.lock();
      }
      session->has_writer = true;
      ++session->generation;
    }

    SessionIndex index;
    for (std::size_t i = 0; i < session->lines.size(); ++i) {
      auto meta = scan_line(session->lines[i]);
      Status status = meta ? check_invariants(*meta, index) : Status(std::unexpected(meta.error()));
      if (!status) {
        if (!options.read_only) session->has_writer = false;
        return fail(Errc::corrupt_log, fmt::format("memory session {}: seq {}: {}", id, i, status.error().message));
      }
      index.add(*meta, session->lines[i]);
    }
    lock.unlock();

    std::unique_ptr<LogMedium> medium;
    if (!options.read_only) medium = std::make_unique<MemoryMedium>(shared_, session);
    return std::make_shared<Session>(session->header, std::move(index), std::move(medium), OpenReport{});
  }

  Result<std::string> log_stamp(std::string_view id) override {
    std::lock_guard lock(shared_->mu);
    auto it = shared_->sessions.find(id);
    if (it == shared_->sessions.end()) return fail(Errc::not_found, fmt::format("no session {} in memory:", id));
    // Memory sessions are never repaired: which session, and its length.
    return fmt::format("{}:{}", it->second->serial, it->second->lines.size());
  }

  Status remove(std::string_view id) override {
    std::lock_guard lock(shared_->mu);
    auto it = shared_->sessions.find(id);
    if (it == shared_->sessions.end()) return fail(Errc::not_found, fmt::format("no session {} in memory:", id));
    if (it->second->has_writer) return fail(Errc::locked, fmt::format("session {} in memory: is open for writing", id));
    shared_->sessions.erase(it);
    return {};
  }

  Result<RepairReport> repair(std::string_view id) override {
    std::lock_guard lock(shared_->mu);
    if (!shared_->sessions.contains(id)) return fail(Errc::not_found, fmt::format("no session {} in memory:", id));
    // Memory sessions hold only validated records: there is never damage.
    RepairReport report;
    report.location = fmt::format("memory session {}", id);
    report.records = static_cast<std::int64_t>(shared_->sessions.find(id)->second->lines.size());
    report.intact = report.records;
    return report;
  }

  void fail_after(std::int64_t appends) {
    std::lock_guard lock(shared_->mu);
    shared_->appends_left = appends;
  }

 private:
  StoreOptions options_;
  std::shared_ptr<MemoryShared> shared_;
};

}  // namespace

std::unique_ptr<Store> make_memory_store(const StoreOptions& options) { return std::make_unique<MemoryStore>(options); }

void memory_store_fail_after(Store& store, std::int64_t appends) {
  if (auto* memory = dynamic_cast<MemoryStore*>(&store)) memory->fail_after(appends);
}

}  // namespace cairn
