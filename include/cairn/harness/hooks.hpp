// Hooks: the awaited control points of a run (durable-harness-design.txt,
// section "Hooks"). Handlers run in registration order on the run's thread,
// with no harness lock held; each sees what the previous one returned. A
// handler that throws is skipped and reported as a handler_error event.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cairn/harness/compaction.hpp"
#include "cairn/harness/events.hpp"
#include "cairn/harness/tool.hpp"
#include "cairn/llm/provider.hpp"
#include "cairn/log/record.hpp"

namespace cairn {

struct HookContext {
  std::string ref;
  std::string run_id;
};

// Once per run, before durable acceptance; its effective output is persisted.
struct BeforeRunEvent {
  std::vector<UserBlock> prompt;
  std::string system_prompt;
};
struct [[nodiscard]] BeforeRunResult {
  std::vector<AgentMessage> messages;  // appended after the prompt, as session entries
  std::optional<std::string> system_prompt;  // fixed for the whole run, resume included
  std::optional<Json> resume_data;  // handed back to before_resume
};

// On resume(), before any effect. Must be idempotent: a crash can rerun it.
struct BeforeResumeEvent {
  OperationKind kind = OperationKind::run;
  std::vector<UserBlock> prompt;
  std::optional<std::string> system_prompt_override;
  std::optional<Json> resume_data;
};

struct BeforeRunEndEvent {
  std::vector<AgentMessage> messages;  // this run's messages
};
struct [[nodiscard]] BeforeRunEndResult {
  std::optional<std::string> follow_up;
};

struct TransformContextEvent {
  std::vector<AgentMessage> messages;
};

struct BeforeRequestEvent {
  Model model;
  GenerationPurpose purpose = GenerationPurpose::step;
  std::int64_t attempt = 1;
  StreamOptions stream_options;
};

struct AfterResponseEvent {
  int status = 0;
  std::map<std::string, std::string> headers;
  AssistantMessage message;
};

struct BeforeToolEvent {
  std::string tool_call_id;
  std::string tool_name;
  Json args;
};
struct [[nodiscard]] BeforeToolResult {
  std::optional<Json> args;
  std::optional<std::string> block;  // the reason
};

struct AfterToolEvent {
  std::string tool_call_id;
  std::string tool_name;
  Json args;
  ToolResult result;
};
struct [[nodiscard]] AfterToolResult {
  std::optional<std::vector<UserBlock>> content;
  std::optional<Json> details;
  std::optional<bool> is_error;
};

// Before a compaction summarises anything: may cancel it, or supply the
// summary (no model request is made then).
struct BeforeCompactionEvent {
  CompactionReason reason = CompactionReason::manual;
  CompactionPreparation preparation;
  std::optional<std::string> custom_instructions;
};
struct SuppliedSummary {
  std::string summary;
  std::optional<Json> details;
};
struct [[nodiscard]] BeforeCompactionResult {
  bool cancel = false;
  std::optional<SuppliedSummary> compaction;
};

// Before a navigation moves the leaf: may cancel it, or supply the branch
// summary.
struct BeforeNavigationEvent {
  std::string target_id;
  BranchPreparation preparation;
};
struct [[nodiscard]] BeforeNavigationResult {
  bool cancel = false;
  std::optional<SuppliedSummary> summary;
};

template <class Event, class Out>
using HookFn = std::function<std::optional<Out>(const HookContext&, const Event&)>;

// The hook registry of one harness. Thread-safe.
class Hooks {
 public:
  template <class Fn>
  using List = std::map<std::uint64_t, Fn>;

  struct Lists {
    List<HookFn<BeforeRunEvent, BeforeRunResult>> before_run;
    List<std::function<void(const HookContext&, const BeforeResumeEvent&)>> before_resume;
    List<HookFn<BeforeRunEndEvent, BeforeRunEndResult>> before_run_end;
    List<HookFn<TransformContextEvent, std::vector<AgentMessage>>> transform_context;
    List<HookFn<BeforeRequestEvent, StreamOptions>> before_request;
    List<std::function<std::optional<Json>(const HookContext&, const Model&, const Json&)>> before_payload;
    List<HookFn<AfterResponseEvent, AssistantMessage>> after_response;
    List<HookFn<BeforeToolEvent, BeforeToolResult>> before_tool;
    List<HookFn<AfterToolEvent, AfterToolResult>> after_tool;
    List<HookFn<BeforeCompactionEvent, BeforeCompactionResult>> before_compaction;
    List<HookFn<BeforeNavigationEvent, BeforeNavigationResult>> before_navigation;
  };

  Subscription before_run(HookFn<BeforeRunEvent, BeforeRunResult> fn) { return add(&Lists::before_run, std::move(fn)); }
  Subscription before_resume(std::function<void(const HookContext&, const BeforeResumeEvent&)> fn) {
    return add(&Lists::before_resume, std::move(fn));
  }
  Subscription before_run_end(HookFn<BeforeRunEndEvent, BeforeRunEndResult> fn) {
    return add(&Lists::before_run_end, std::move(fn));
  }
  Subscription transform_context(HookFn<TransformContextEvent, std::vector<AgentMessage>> fn) {
    return add(&Lists::transform_context, std::move(fn));
  }
  Subscription before_request(HookFn<BeforeRequestEvent, StreamOptions> fn) {
    return add(&Lists::before_request, std::move(fn));
  }
  Subscription before_payload(std::function<std::optional<Json>(const HookContext&, const Model&, const Json&)> fn) {
    return add(&Lists::before_payload, std::move(fn));
  }
  Subscription after_response(HookFn<AfterResponseEvent, AssistantMessage> fn) {
    return add(&Lists::after_response, std::move(fn));
  }
  Subscription before_tool(HookFn<BeforeToolEvent, BeforeToolResult> fn) { return add(&Lists::before_tool, std::move(fn)); }
  Subscription after_tool(HookFn<AfterToolEvent, AfterToolResult> fn) { return add(&Lists::after_tool, std::move(fn)); }
  Subscription before_compaction(HookFn<BeforeCompactionEvent, BeforeCompactionResult> fn) {
    return add(&Lists::before_compaction, std::move(fn));
  }
  Subscription before_navigation(HookFn<BeforeNavigationEvent, BeforeNavigationResult> fn) {
    return add(&Lists::before_navigation, std::move(fn));
  }

  // The handlers of one hook, copied, for calling without the lock.
  template <class Fn>
  std::vector<Fn> handlers(List<Fn> Lists::*list) const {
    std::lock_guard lock(state_->mu);
    std::vector<Fn> out;
    for (const auto& [id, fn] : state_->lists.*list) out.push_back(fn);
    return out;
  }

 private:
  struct State {
    std::mutex mu;
    std::uint64_t next_id = 1;
    Lists lists;
  };

  // A subscription may outlive the harness: it holds the registry weakly.
  template <class Fn>
  Subscription add(List<Fn> Lists::*list, Fn fn) {
    std::lock_guard lock(state_->mu);
    const std::uint64_t id = state_->next_id++;
    (state_->lists.*list).emplace(id, std::move(fn));
    return Subscription([weak = std::weak_ptr<State>(state_), list, id] {
      if (auto state = weak.lock()) {
        std::lock_guard guard(state->mu);
        (state->lists.*list).erase(id);
      }
    });
  }

  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace cairn
