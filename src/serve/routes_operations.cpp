// POST /v1/sessions/{id}/refs/{ref}/{prompt, steer, follow-up, next-run,
// abort, resume, compact, navigate}: what a ref does next.
#include <chrono>

#include "json_views.hpp"
#include "operation_start.hpp"
#include "routes.hpp"

namespace cairn::serve {

namespace {

// How long a prompt sent with whileRunning waits for a run that has stopped
// taking messages to end, before it says busy.
constexpr auto kEndingRunWait = std::chrono::seconds(2);

// A prompt sent with whileRunning: a run on an idle ref, or the text queued
// on the running one. A client's idea of the ref's state is always a moment
// old: a run can end between its look and its message. Each refusal below
// changed nothing, so the other way is tried, and the client sees one
// answer. Busy and yet no run to queue on: a run writing its end
// (milliseconds), or another operation (a compaction), which is still busy
// after a while. The retries wait on the scheduler, holding no thread.
class WhileRunning : public std::enable_shared_from_this<WhileRunning> {
 public:
  WhileRunning(ApiState& api, std::shared_ptr<SessionHost> host, AgentRef ref, std::string text, bool steer)
      : pool_(api.pool), metrics_(api.metrics), work_(api.work), host_(std::move(host)), ref_(std::move(ref)),
        text_(std::move(text)), steer_(steer), give_up_(std::chrono::steady_clock::now() + kEndingRunWait) {}

  // The first try, on the request's worker: most answers come from it.
  Reply first() {
    if (auto reply = attempt()) return std::move(*reply);
    retry_later();
    return Reply{.deferred = deferred_};
  }

 private:
  std::optional<Reply> attempt() {
    OperationStart started = start_and_wait(pool_, metrics_, host_, ref_, {EventType::run_start},
                                            [text = text_](AgentRef& r) { return r.prompt(text); });
    const bool busy = !started.started && started.done && !started.done->ok() && started.done->run_id.empty() &&
                      started.done->error && started.done->error->is(Errc::busy);
    if (!busy) return started_reply(started);
    QueueResult queued = steer_ ? ref_.steer(text_) : ref_.follow_up(text_);
    if (queued.ok()) return json_reply(Json{{"queued", steer_ ? "steer" : "follow-up"}});
    if (!queued.error || !queued.error->is(Errc::no_active_run)) {
      return error_reply(queued.error.value_or(Error{Errc::internal_error, "not queued"}));
    }
    if (std::chrono::steady_clock::now() >= give_up_) return started_reply(started);
    return std::nullopt;
  }

  void retry_later() {
    pause_ = std::min(pause_ * 2, std::chrono::milliseconds(50));
    const bool posted = work_->post_after(pause_, [self = shared_from_this()] {
      if (self->deferred_->abandoned()) return;
      if (auto reply = self->attempt()) return self->deferred_->fulfil(std::move(*reply));
      self->retry_later();
    });
    if (!posted) deferred_->fulfil(Reply{error_response(503, "closed", "the server is stopping")});
  }

  SessionPool& pool_;
  Metrics& metrics_;
  std::shared_ptr<WorkQueue> work_;
  std::shared_ptr<SessionHost> host_;
  AgentRef ref_;
  std::string text_;
  bool steer_;
  std::chrono::steady_clock::time_point give_up_;
  std::chrono::milliseconds pause_{1};
  std::shared_ptr<DeferredReply> deferred_ = std::make_shared<DeferredReply>();
};

Reply start(RouteCall& call, std::vector<EventType> start_types, std::function<RunResult(AgentRef&)> operation) {
  return started_reply(start_and_wait(call.api.pool, call.api.metrics, call.host, *call.ref, std::move(start_types),
                                      std::move(operation)));
}

// A body of {text} alone, queued on the ref's run by `queue`.
Reply queue_text(RouteCall& call, std::string_view what, QueueResult (*queue)(AgentRef&, std::string)) {
  auto body = call.body({"text"});
  if (!body) return error_reply(body.error());
  auto text = body->required_string("text");
  if (!text) return error_reply(text.error());
  QueueResult queued = queue(*call.ref, std::move(*text));
  if (!queued.ok()) return error_reply(queued.error.value_or(Error{Errc::internal_error, "not queued"}));
  return json_reply(Json{{"queued", what}});
}

}  // namespace

// {text, whileRunning?: "steer" | "followUp"}
Reply prompt(RouteCall& call) {
  auto body = call.body({"text", "whileRunning"});
  if (!body) return error_reply(body.error());
  auto text = body->required_string("text");
  if (!text) return error_reply(text.error());
  auto while_running = body->string("whileRunning");
  if (!while_running) return error_reply(while_running.error());
  if (*while_running && **while_running != "steer" && **while_running != "followUp") {
    return error_reply(Error{Errc::invalid_argument, "field 'whileRunning' must be steer or followUp"});
  }
  if (!*while_running) return start(call, {EventType::run_start}, [text = *text](AgentRef& r) { return r.prompt(text); });
  return std::make_shared<WhileRunning>(call.api, call.host, *call.ref, *text, **while_running == "steer")->first();
}

Reply steer(RouteCall& call) {
  return queue_text(call, "steer", [](AgentRef& ref, std::string text) { return ref.steer(std::move(text)); });
}
Reply follow_up(RouteCall& call) {
  return queue_text(call, "follow-up", [](AgentRef& ref, std::string text) { return ref.follow_up(std::move(text)); });
}
Reply next_run(RouteCall& call) {
  return queue_text(call, "next-run", [](AgentRef& ref, std::string text) { return ref.next_run(std::move(text)); });
}

Reply abort_run(RouteCall& call) {
  auto body = call.body({});
  if (!body) return error_reply(body.error());
  AbortResult aborted = call.ref->abort();
  if (!aborted.ok() && aborted.error) return error_reply(*aborted.error);
  return json_reply(to_json(aborted));
}

Reply resume(RouteCall& call) {
  auto body = call.body({});
  if (!body) return error_reply(body.error());
  return start(call, {EventType::run_resume}, [](AgentRef& r) { return r.resume(); });
}

// {instructions?}
Reply compact(RouteCall& call) {
  auto body = call.body({"instructions"});
  if (!body) return error_reply(body.error());
  auto instructions = body->string("instructions");
  if (!instructions) return error_reply(instructions.error());
  return start(call, {EventType::run_start, EventType::compaction_start},
               [instructions = *instructions](AgentRef& r) { return r.compact(instructions); });
}

// {targetId, summarize?, instructions?, label?}: answered at its end, which
// may be a model's summary away (deferred; no worker waits).
Reply navigate(RouteCall& call) {
  auto body = call.body({"targetId", "summarize", "instructions", "label"});
  if (!body) return error_reply(body.error());
  auto target = body->required_string("targetId");
  auto summarize = body->boolean("summarize");
  auto instructions = body->string("instructions");
  auto label = body->string("label");
  if (!target) return error_reply(target.error());
  if (!summarize) return error_reply(summarize.error());
  if (!instructions) return error_reply(instructions.error());
  if (!label) return error_reply(label.error());
  NavigateOptions options{.summarize = *summarize, .custom_instructions = *instructions, .label = *label};
  auto deferred = std::make_shared<DeferredReply>();
  call.api.pool.run_detached(call.host, [deferred, ref = *call.ref, target = *target, options]() mutable {
    deferred->fulfil(started_reply(OperationStart{.done = ref.navigate_tree(target, options)}));
  });
  return Reply{.deferred = std::move(deferred)};
}

}  // namespace cairn::serve
