// A harness over a memory session with the faux provider and a few tools,
// recording every event; shared by the harness tests.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/harness/harness.hpp"
#include "cairn/llm/faux.hpp"
#include "cairn/store/store.hpp"

namespace cairn::testing {

// Counts executions per tool call id, across harness instances (a "process
// restart" keeps the counter: it stands for the outside world).
struct ToolEffects {
  std::mutex mu;
  std::map<std::string, int> runs;  // "tool:callId" -> executions
  int count(const std::string& tool, const std::string& call_id) {
    std::lock_guard lock(mu);
    return runs[tool + ":" + call_id];
  }
  void note(const std::string& tool, const Json& args) {
    std::lock_guard lock(mu);
    ++runs[tool + ":" + args.value("id", std::string())];
  }
};

// echo (replay safe), effect (replay never), slow (waits for cancellation or
// `ms`), serial (not parallel). Every tool counts its runs in `effects`, keyed
// by the "id" argument.
std::vector<Tool> test_tools(std::shared_ptr<ToolEffects> effects);

// Invariant 5 on a log: every tool call of every assistant message has
// exactly one result on its branch before the next assistant message of that
// branch (and by the end of the branch when a ref's leaf is there).
void expect_every_call_answered_once(const std::vector<Record>& log);

// The tool results that answer `call_id` on the log.
std::vector<ToolResultMessage> results_for(const std::vector<Record>& log, const std::string& call_id);

class EventLog {
 public:
  void add(const Event& event) {
    std::lock_guard lock(mu_);
    events_.push_back(event);
  }
  std::vector<Event> all() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  // Event types, without the ephemeral message_update / tool_update.
  std::vector<std::string> types(bool with_updates = false) const;
  std::size_t count(EventType type) const;
  void clear() {
    std::lock_guard lock(mu_);
    events_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

class HarnessTest : public ::testing::Test {
 protected:
  HarnessTest();

  HarnessOptions options();
  // (Re)creates the harness over the current session; fails the test on error.
  AgentHarness& make_harness();
  // The same with these options.
  AgentHarness& make_harness_with(HarnessOptions options);
  // Drops the harness and the session (a crash: nothing is closed in order)
  // and reopens the session from the store.
  void reopen();

  // Record types of the whole log, in seq order.
  std::vector<std::string> record_types() const;
  std::vector<Record> records() const;

  std::unique_ptr<Store> store_;
  std::shared_ptr<Session> session_;
  std::string session_id_;
  std::shared_ptr<FauxProvider> faux_ = std::make_shared<FauxProvider>();
  std::shared_ptr<ToolEffects> effects_ = std::make_shared<ToolEffects>();
  EventLog events_;
  std::optional<AgentHarness> harness_;
  std::vector<SuspendedOperation> suspended_;
  Subscription listener_;
  RetryPolicy retry_{.max_attempts = 3, .base_delay = std::chrono::milliseconds(1), .max_delay = std::chrono::milliseconds(5)};
};

// Whether a request is a summary's (compaction or branch summary) rather than a step's.
inline bool is_summary_request(const LlmContext& context) { return context.system_prompt.starts_with("You summarise"); }

// The arguments of the echo tool of these tests.
inline Json args(std::string id, std::string text = "hi") {
  return Json{{"id", std::move(id)}, {"text", std::move(text)}};
}

}  // namespace cairn::testing
