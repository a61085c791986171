// The status line under the transcript: model and thinking level, the ref,
// the session's tokens in and out and cost so far, how full the context is
// (from context_usage events), what the ref is doing and what is queued.
//
//   openai/gpt-4o (think off) | main | in 12k out 1.3k | $0.042 | ctx 12% | running bash | queued 1 steer
//   ↳ find the tests: running grep          (a line per running subagent)
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cairn/harness/events.hpp"

namespace cairn::cli::tui {

struct StatusState {
  std::string model;  // provider/id
  std::string thinking_level = "off";
  std::string ref = "main";
  std::int64_t input_tokens = 0;   // billed over the session
  std::int64_t output_tokens = 0;
  double cost = 0;
  std::optional<double> context_percent;  // share of the window the next request carries
  std::int64_t context_tokens = 0;
  std::string activity;  // empty when idle
  std::size_t queued_steer = 0;
  std::size_t queued_follow_up = 0;
  // Tools run with the user's full rights (--sandbox off): said on every line.
  bool sandbox_off = false;
  // The subagents (task calls) running now, in the order they started:
  // what each is for and what it is doing. One line each under the status.
  struct Subagent {
    std::string session;
    std::string label;
    std::string activity;
  };
  std::vector<Subagent> subagents;
};

// 340, 1.2k, 12k, 1.2M
std::string format_tokens(std::int64_t tokens);
std::string format_cost(double dollars);
std::string format_status(const StatusState& state, std::size_t width);

// Keeps a StatusState current from a ref's events. Spend arrives per
// operation (context_usage's operationSpend counts from the operation's
// start), so the session's totals are what finished operations spent plus
// the running one's.
class StatusTracker {
 public:
  // The totals of everything before now (the assistant messages already in
  // the session).
  void set_totals(std::int64_t input, std::int64_t output, double cost);
  void apply(const Event& event);
  StatusState& state() { return state_; }
  const StatusState& state() const { return state_; }

 private:
  void settle();  // the running operation's spend joins the totals
  void apply_child(const Json& data);
  std::map<std::string, std::string> task_labels_;  // task call id → its description

  StatusState state_;
  std::int64_t base_input_ = 0, base_output_ = 0;
  double base_cost_ = 0;
  std::int64_t op_input_ = 0, op_output_ = 0;
  double op_cost_ = 0;
};

}  // namespace cairn::cli::tui
